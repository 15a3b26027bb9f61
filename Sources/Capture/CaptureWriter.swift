import CPcap
#if canImport(Glibc)
import Glibc
#endif

/// Formats GATTLab writes: what Android and btmon write, and what libpcap's live devices give.
public enum OutputFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    /// btsnoop datalink 1002 (H4), what Android writes: one controller.
    case btsnoopH4 = "btsnoop"
    /// btsnoop datalink 2001 (Linux monitor), what `btmon -w` writes: several controllers.
    case btsnoopMonitor = "btsnoop-monitor"
    /// pcap DLT 201 (H4 with a direction header), what libpcap's hciN devices give: one controller.
    case pcapH4 = "pcap"
    /// pcap DLT 254 (Linux monitor), libpcap's bluetooth-monitor device: several controllers.
    case pcapMonitor = "pcap-monitor"

    public var description: String { rawValue }

    /// Whether records keep their controller index.
    public var keepsControllers: Bool { self == .btsnoopMonitor || self == .pcapMonitor }

    /// The usual format for a file name, when the user names none: `.pcap` gives pcap, anything
    /// else btsnoop; monitor flavour when the source has several controllers.
    public static func guess(path: String, monitor: Bool) -> OutputFormat {
        let pcap = path.hasSuffix(".pcap") || path.hasSuffix(".pcapng")
        return pcap ? (monitor ? .pcapMonitor : .pcapH4) : (monitor ? .btsnoopMonitor : .btsnoopH4)
    }
}

/// Writes records to a new capture. Output goes to a temporary file beside the target and is
/// renamed into place by `finish()`, so an interrupted run never leaves a half-written capture
/// under the final name.
public final class CaptureWriter {
    public let path: String
    public let format: OutputFormat
    /// Records the format could not hold (text notes into H4, link-layer packets), counted not lost silently.
    public private(set) var skipped = 0
    public private(set) var written = 0
    /// Bytes the file holds so far (header included, buffered records too): what a ring buffer
    /// of captures measures against its size limit.
    public private(set) var bytes: Int64 = 0
    private let temporaryPath: String
    private var sink: Sink
    private var scratch: [UInt8] = []
    private var finished = false

    private enum Sink {
        case btsnoop(fd: Int32, buffer: [UInt8])
        case pcap(dead: OpaquePointer, dumper: OpaquePointer)
    }

    /// Creates the output. Refuses an existing file unless `overwrite`, and never writes over `protecting` (the input).
    public init(path: String, format: OutputFormat, overwrite: Bool = false,
                protecting inputs: [String] = []) throws(CaptureError) {
        self.path = path
        self.format = format
        var st = stat()
        if stat(path, &st) == 0 {
            for input in inputs {
                var inSt = stat()
                if stat(input, &inSt) == 0, inSt.st_dev == st.st_dev, inSt.st_ino == st.st_ino {
                    throw CaptureError(.cannotWrite, path: path, "is one of the inputs; choose another output name")
                }
            }
            if !overwrite {
                throw CaptureError(.cannotWrite, path: path, "already exists; use --force to replace it")
            }
        }
        let slash = path.lastIndex(of: "/")
        let dir = slash.map { String(path[...$0]) } ?? ""
        let base = slash.map { String(path[path.index(after: $0)...]) } ?? path
        temporaryPath = "\(dir).\(base).gattlab-\(getpid()).tmp"

        switch format {
        case .btsnoopH4, .btsnoopMonitor:
            let fd = open(temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            if fd < 0 {
                throw CaptureError(.cannotWrite, path: path, String(cString: strerror(errno)))
            }
            var header = Array("btsnoop\0".utf8)
            header.appendBE(UInt32(1))
            header.appendBE(UInt32(format == .btsnoopH4 ? 1002 : 2001))
            header.reserveCapacity(1 << 20)
            bytes = Int64(header.count)
            sink = .btsnoop(fd: fd, buffer: header)
        case .pcapH4, .pcapMonitor:
            let dlt: Int32 = format == .pcapH4 ? 201 : 254
            guard let dead = pcap_open_dead_with_tstamp_precision(dlt, 262_144, UInt32(PCAP_TSTAMP_PRECISION_MICRO)) else {
                throw CaptureError(.cannotWrite, path: path, "libpcap could not set up a writer")
            }
            guard let dumper = pcap_dump_open(dead, temporaryPath) else {
                let message = String(cString: pcap_geterr(dead))
                pcap_close(dead)
                throw CaptureError(.cannotWrite, path: path, message)
            }
            sink = .pcap(dead: dead, dumper: dumper)
            bytes = 24  // pcap's file header
        }
    }

    /// The bytes `write` adds to the file for a record it accepts: a ring buffer rotates before a
    /// record would take the file past its limit.
    public func encodedSize(of record: CaptureRecord) -> Int {
        let pseudoHeader = format.keepsControllers ? 4 : (format == .pcapH4 ? 5 : 1)
        switch format {
        case .btsnoopH4, .btsnoopMonitor: return 24 + (format.keepsControllers ? 0 : 1) + record.data.count
        case .pcapH4, .pcapMonitor: return 16 + pseudoHeader + record.data.count
        }
    }

    deinit {
        if !finished {
            close()
            unlink(temporaryPath)
        }
    }

    /// Writes one record; returns false when the format cannot hold it (it is counted in `skipped`).
    @discardableResult
    public func write(_ record: CaptureRecord, sourceIsMonitor: Bool) throws(CaptureError) -> Bool {
        let monitorOpcode: UInt16?
        if format.keepsControllers {
            monitorOpcode = sourceIsMonitor ? record.rawType
                : MonitorOpcode.opcode(for: record.kind, direction: record.direction)
        } else {
            monitorOpcode = nil
        }
        guard record.kind != .linkLayer, format.keepsControllers ? monitorOpcode != nil : record.kind.isHCI else {
            skipped += 1
            return false
        }
        let received = record.direction == .received
        switch sink {
        case .btsnoop(let fd, var buffer):
            sink = .btsnoop(fd: fd, buffer: [])  // keep the buffer uniquely referenced while appending
            let flags: UInt32
            var length = record.data.count
            // A record the capture cut keeps its length on the wire, so readers still know it was cut.
            var original = max(record.originalLength, record.data.count)
            if let monitorOpcode {
                flags = UInt32(record.controller) << 16 | UInt32(monitorOpcode)
            } else {
                let commandOrEvent: UInt32 = record.kind == .command || record.kind == .event ? 2 : 0
                flags = commandOrEvent | (received ? 1 : 0)
                length += 1
                original += 1
            }
            buffer.appendBE(UInt32(truncatingIfNeeded: original))
            buffer.appendBE(UInt32(length))
            buffer.appendBE(flags)
            buffer.appendBE(UInt32(0))
            buffer.appendBE(record.timestamp &+ BTSnoopReader.epochOffset)
            if monitorOpcode == nil, let h4 = record.kind.h4Type { buffer.append(h4) }
            buffer.append(contentsOf: record.data)
            if buffer.count >= 1 << 20 { try flush(fd: fd, &buffer) }
            sink = .btsnoop(fd: fd, buffer: buffer)
        case .pcap(_, let dumper):
            scratch.removeAll(keepingCapacity: true)
            if let monitorOpcode {
                scratch.appendBE(record.controller)
                scratch.appendBE(monitorOpcode)
            } else {
                scratch.appendBE(UInt32(received ? 1 : 0))
                scratch.append(record.kind.h4Type ?? 0)
            }
            scratch.append(contentsOf: record.data)
            var header = pcap_pkthdr()
            // pcap stores unsigned seconds: times before 1970 (btsnoop files with zero
            // timestamps have them) are written as 1970-01-01 rather than wrapped.
            let timestamp = max(0, record.timestamp)
            header.ts.tv_sec = Int(timestamp / 1_000_000)
            header.ts.tv_usec = Int(timestamp % 1_000_000)
            header.caplen = UInt32(scratch.count)
            header.len = UInt32(scratch.count + max(0, record.originalLength - record.data.count))
            scratch.withUnsafeBufferPointer { bytes in
                pcap_dump(UnsafeMutableRawPointer(dumper).assumingMemoryBound(to: UInt8.self), &header, bytes.baseAddress)
            }
        }
        written += 1
        bytes += Int64(encodedSize(of: record))
        return true
    }

    /// Pushes buffered records to the temporary file, so a live capture that is killed outright
    /// (SIGKILL, power loss) still leaves them on disk beside the target.
    public func flush() throws(CaptureError) {
        guard !finished, !closed else { return }
        switch sink {
        case .btsnoop(let fd, var buffer):
            sink = .btsnoop(fd: fd, buffer: [])
            defer { sink = .btsnoop(fd: fd, buffer: buffer) }
            try flush(fd: fd, &buffer)
        case .pcap(_, let dumper):
            if pcap_dump_flush(dumper) != 0 {
                throw CaptureError(.cannotWrite, path: path, "writing failed (disk full?)")
            }
        }
    }

    private func flush(fd: Int32, _ buffer: inout [UInt8]) throws(CaptureError) {
        let failure = buffer.withUnsafeBytes { writeAll(fd, $0) }
        buffer.removeAll(keepingCapacity: true)
        if failure != 0 {
            throw CaptureError(.cannotWrite, path: path, String(cString: strerror(failure)))
        }
    }

    /// Flushes, closes and moves the file into place.
    public func finish() throws(CaptureError) {
        guard !finished else { return }
        switch sink {
        case .btsnoop(let fd, var buffer):
            try flush(fd: fd, &buffer)
            sink = .btsnoop(fd: fd, buffer: buffer)
            if fsync(fd) != 0 && errno != EINVAL {
                throw CaptureError(.cannotWrite, path: path, String(cString: strerror(errno)))
            }
        case .pcap(_, let dumper):
            if pcap_dump_flush(dumper) != 0 || ferror(pcap_dump_file(dumper)) != 0 {
                throw CaptureError(.cannotWrite, path: path, "writing failed (disk full?)")
            }
        }
        close()
        finished = true
        if rename(temporaryPath, path) != 0 {
            let message = String(cString: strerror(errno))
            unlink(temporaryPath)
            throw CaptureError(.cannotWrite, path: path, message)
        }
    }

    private var closed = false
    private func close() {
        guard !closed else { return }
        closed = true
        switch sink {
        case .btsnoop(let fd, _): _ = Glibc.close(fd)
        case .pcap(let dead, let dumper):
            pcap_dump_close(dumper)
            pcap_close(dead)
        }
    }
}
