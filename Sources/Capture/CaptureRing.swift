#if canImport(Glibc)
import Glibc
#endif

/// A capture written as one file, or as a ring of files of bounded size, record by record.
///
/// Without a size limit the capture is `path`. With `maxBytes` it is `path.1`, `path.2`, ...,
/// each file closed (complete, renamed into place) before the next opens; with `maxFiles` K as
/// well, `path.K` is followed by `path.1` again, replacing the oldest, so at most K files and
/// K x `maxBytes` bytes stay on disk (tcpdump's -C and -W, numbered from 1). Each file goes
/// through `CaptureWriter`, so no file ever holds a half-written record under its final name.
public final class CaptureRing {
    public let path: String
    public let format: OutputFormat
    public let maxBytes: Int64?
    public let maxFiles: Int?
    private let overwrite: Bool
    private var current: CaptureWriter?
    /// Sequence number of the current (or next) file, counting from 1 over the whole run.
    private var sequence = 0
    public private(set) var written = 0
    public private(set) var skipped = 0
    /// Files closed so far, in the order they were finished (a file the ring reused appears once, last).
    public private(set) var files: [String] = []

    /// Checks the names are free (or `overwrite`), creating nothing yet: a source that fails
    /// before its first record leaves no empty file behind.
    public init(path: String, format: OutputFormat, maxBytes: Int64? = nil, maxFiles: Int? = nil,
                overwrite: Bool = false) throws(CaptureError) {
        self.path = path
        self.format = format
        self.maxBytes = maxBytes
        self.maxFiles = maxBytes == nil ? nil : maxFiles
        self.overwrite = overwrite
        guard !overwrite else { return }
        if maxBytes == nil {
            if access(path, F_OK) == 0 {
                throw CaptureError(.cannotWrite, path: path, "already exists; use --force to replace it")
            }
        } else if let existing = Self.existingNumbered(path) {
            throw CaptureError(.cannotWrite, path: existing, "already exists (a ring of \(path).N files would replace it); use --force or another name")
        }
    }

    /// The name of file number `n` (1-based) of a ring on `path`.
    public static func numberedPath(_ path: String, _ n: Int) -> String { "\(path).\(n)" }

    /// The first `path.N` already in the folder, if any.
    static func existingNumbered(_ path: String) -> String? {
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[..<$0]) } ?? "."
        let base = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard let dir = opendir(folder.isEmpty ? "/" : folder) else { return nil }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasPrefix(base + "."), name.count > base.count + 1 else { continue }
            let suffix = name.dropFirst(base.count + 1)
            if suffix.allSatisfy({ $0.isASCII && $0.isNumber }) {
                return slash == nil ? name : folder + "/" + name
            }
        }
        return nil
    }

    /// The file being written now.
    public var currentPath: String? { current?.path }

    private func open() throws(CaptureError) -> CaptureWriter {
        sequence += 1
        let name: String
        if maxBytes == nil {
            name = path
        } else {
            let slot = maxFiles.map { (sequence - 1) % $0 + 1 } ?? sequence
            name = Self.numberedPath(path, slot)
        }
        // Past the first lap the ring replaces its own files; before it, only --force replaces.
        let writer = try CaptureWriter(path: name, format: format, overwrite: overwrite || sequence > (maxFiles ?? .max))
        current = writer
        return writer
    }

    /// Writes one record, first closing the current file if the record would take it past
    /// `maxBytes` (a file always takes at least one record, however large).
    @discardableResult
    public func write(_ record: CaptureRecord, sourceIsMonitor: Bool) throws(CaptureError) -> Bool {
        var writer: CaptureWriter
        if let current { writer = current } else { writer = try open() }
        if let maxBytes, writer.written > 0, writer.bytes + Int64(writer.encodedSize(of: record)) > maxBytes {
            try close(writer)
            writer = try open()
        }
        let ok = try writer.write(record, sourceIsMonitor: sourceIsMonitor)
        if ok { written += 1 } else { skipped += 1 }
        return ok
    }

    private func close(_ writer: CaptureWriter) throws(CaptureError) {
        current = nil
        try writer.finish()
        files.removeAll { $0 == writer.path }
        files.append(writer.path)
    }

    /// Pushes buffered records to disk (to the current file's temporary name).
    public func flush() throws(CaptureError) { try current?.flush() }

    /// Closes the current file into place; with no record at all, an empty (header-only) capture.
    public func finish() throws(CaptureError) {
        if current == nil && sequence == 0 { _ = try open() }
        if let current { try close(current) }
    }
}
