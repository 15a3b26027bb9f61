import Capture
import Foundation

/// Random access to a capture file being rewritten in place: where each record's packet lies,
/// checked against the bytes the reader returned, and writes of changed bytes.
final class EditableCapture {
    let path: String
    let format: CaptureFormat
    private let fd: Int32

    init(path: String, format: CaptureFormat) throws(RedactionError) {
        self.path = path
        self.format = format
        fd = open(path, O_RDWR)
        guard fd >= 0 else { throw .output("\(path): cannot open for writing: \(String(cString: strerror(errno)))") }
    }

    deinit { close(fd) }

    func read(_ count: Int, at offset: Int64) -> [UInt8] {
        guard count > 0, offset >= 0 else { return [] }
        var out = [UInt8](repeating: 0, count: count)
        let got = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
        return got == count ? out : []
    }

    func write(_ bytes: [UInt8], at offset: Int64) throws(RedactionError) {
        let wrote = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, bytes.count, off_t(offset)) }
        guard wrote == bytes.count else { throw .output("\(path): write failed at byte \(offset): \(String(cString: strerror(errno)))") }
    }

    func sync() throws(RedactionError) {
        guard fsync(fd) == 0 else { throw .output("\(path): cannot flush to disk: \(String(cString: strerror(errno)))") }
    }

    /// The file offset of the record's stored packet (`record.packet`), verified byte for byte.
    func packetOffset(of record: CaptureRecord) throws(RedactionError) -> Int64 {
        let candidate: Int64?
        switch format {
        case .btsnoop: candidate = record.fileOffset + 24
        case .packetLogger: candidate = record.fileOffset + 13
        case .pcap: candidate = record.fileOffset + 16
        case .pcapng: candidate = pcapngPacketOffset(from: record.fileOffset, packet: record.packet)
        }
        let expected = Array(record.packet)
        guard let offset = candidate, record.fileOffset >= 0, read(expected.count, at: offset) == expected else {
            throw .internalError("record \(record.number): its bytes are not where the \(format) layout puts them (offset \(record.fileOffset)); nothing was changed")
        }
        return offset
    }

    /// pcapng: libpcap reports the offset before it read the record, which may be a block
    /// before the packet's own (interface descriptions, statistics): walk blocks to the packet.
    private func pcapngPacketOffset(from start: Int64, packet: UnsafeRawBufferPointer) -> Int64? {
        var offset = start
        // The first section's byte order; a later section header met on the way is re-read.
        var littleEndian = read(4, at: 8) != [0x1A, 0x2B, 0x3C, 0x4D]
        for _ in 0..<64 {
            let header = read(12, at: offset)
            guard header.count == 12 else { return nil }
            let type = u32(header, 0, littleEndian)
            if type == 0x0A0D_0D0A {
                let bom = read(4, at: offset + 8)
                if bom == [0x4D, 0x3C, 0x2B, 0x1A] { littleEndian = true } else if bom == [0x1A, 0x2B, 0x3C, 0x4D] { littleEndian = false }
            }
            let length = Int64(u32(header, 4, littleEndian))
            guard length >= 12, length % 4 == 0 else { return nil }
            let dataStart: Int64? = switch type {
            case 6, 2: offset + 28  // Enhanced Packet Block, (obsolete) Packet Block
            case 3: offset + 12  // Simple Packet Block
            default: nil
            }
            if let dataStart, dataStart + Int64(packet.count) <= offset + length { return dataStart }
            offset += length
        }
        return nil
    }

    private func u32(_ b: [UInt8], _ at: Int, _ le: Bool) -> UInt32 {
        guard b.count >= at + 4 else { return 0 }
        let v = UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
        return le ? v : v.byteSwapped
    }
}

/// Why a redaction did not produce a file.
public enum RedactionError: Error, Sendable, CustomStringConvertible {
    /// The input could not be read, or is damaged.
    case input(CaptureError)
    /// The output could not be written.
    case output(String)
    /// The redacted file failed a check; it was not kept.
    case verification([String])
    /// A mistake of GATTLab's: the file layout was not what the reader said.
    case internalError(String)

    public var description: String {
        switch self {
        case .input(let e): e.description
        case .output(let m): m
        case .verification(let failures): "verification failed, output not written: " + failures.joined(separator: "; ")
        case .internalError(let m): "internal error: " + m
        }
    }
}
