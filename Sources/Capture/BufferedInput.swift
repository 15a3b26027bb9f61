#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sequential reads through one large buffer, so readers parse records in place.
///
/// Memory is the buffer (1 MiB, grown only up to the largest record a format allows), whatever the
/// file's size: this is what keeps decoding in constant memory.
final class BufferedInput {
    let path: String
    private let fd: Int32
    private var buffer: UnsafeMutableRawPointer
    private var capacity: Int
    private var start = 0
    private var end = 0
    private var atEOF = false
    /// File offset of the cursor.
    private(set) var offset: Int64 = 0

    /// Standard input, for `gattlab decode -` at the end of a pipe.
    static let standardInputPath = "-"

    private let ownsDescriptor: Bool

    init(path: String, capacity: Int = 1 << 20) throws(CaptureError) {
        self.path = path
        if path == Self.standardInputPath {
            fd = 0
            ownsDescriptor = false
            self.capacity = capacity
            buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
            return
        }
        ownsDescriptor = true
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            throw CaptureError(.cannotOpen, path: path, String(cString: strerror(errno)))
        }
        var st = stat()
        if fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            throw CaptureError(.cannotOpen, path: path, "is a directory, not a capture file")
        }
        self.fd = fd
        self.capacity = capacity
        self.buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    /// Bytes already in memory (a fuzzer's input): no descriptor, the end of file is at their end.
    init(bytes: [UInt8], name: String) {
        path = name
        fd = -1
        ownsDescriptor = false
        capacity = max(16, bytes.count)
        buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        bytes.withUnsafeBytes { if let base = $0.baseAddress { buffer.copyMemory(from: base, byteCount: bytes.count) } }
        end = bytes.count
        atEOF = true
    }

    deinit {
        if ownsDescriptor { close(fd) }
        buffer.deallocate()
    }

    /// Copies up to `count` bytes into `destination` and advances: a plain read interface for
    /// libpcap when it reads through this buffer (pcap from standard input).
    func drain(into destination: UnsafeMutableRawPointer, count: Int) throws(CaptureError) -> Int {
        let available = min(count, try fill(min(count, capacity)))
        if available > 0 {
            destination.copyMemory(from: buffer + start, byteCount: available)
            advance(available)
        }
        return available
    }

    /// Bytes available at the cursor without reading more.
    var buffered: Int { end - start }

    /// Makes at least `n` bytes available at the cursor unless the file ends first; returns how
    /// many are available (fewer than `n` only at the end of the file).
    @inline(__always)
    func fill(_ n: Int) throws(CaptureError) -> Int {
        if end - start >= n { return end - start }
        return try refill(n)
    }

    private func refill(_ n: Int) throws(CaptureError) -> Int {
        if n > capacity {
            // Only the readers' own record-size limits reach here, so growth is bounded by them.
            let newCapacity = max(n, capacity * 2)
            let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
            grown.copyMemory(from: buffer + start, byteCount: end - start)
            buffer.deallocate()
            buffer = grown
            capacity = newCapacity
            end -= start
            start = 0
        } else if start > 0 {
            let kept = end - start
            if kept > 0 { memmove(buffer, buffer + start, kept) }
            start = 0
            end = kept
        }
        while end - start < n && !atEOF {
            let got = read(fd, buffer + end, capacity - end)
            if got < 0 {
                if errno == EINTR { continue }
                throw CaptureError(.cannotOpen, path: path, offset: offset + Int64(end - start),
                                   "read failed: \(String(cString: strerror(errno)))")
            }
            if got == 0 { atEOF = true } else { end += got }
        }
        return end - start
    }

    /// `n` bytes at the cursor; valid until the next `fill`. Callers have filled at least `n`.
    @inline(__always)
    func bytes(_ n: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: buffer + start, count: n)
    }

    @inline(__always)
    func advance(_ n: Int) {
        start += n
        offset += Int64(n)
    }
}
