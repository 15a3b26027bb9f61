/// Apple PacketLogger (.pklg) from iOS sysdiagnose, macOS PacketLogger and BTstack.
///
/// No file header. Each record: length u32 (counting everything after itself), seconds u32,
/// microseconds u32, type u8, payload. Older files are big-endian, newer little-endian.
public final class PacketLoggerReader: CaptureReader {
    /// A payload never exceeds an ACL packet plus slack for text records.
    public static let maxRecordLength = 65_600

    public let path: String
    public let format: CaptureFormat
    public let linkType = LinkType.packetLogger
    private let input: BufferedInput
    private let bigEndian: Bool
    private var recordNumber = 0

    init(input: BufferedInput, bigEndian: Bool) {
        self.path = input.path
        self.input = input
        self.bigEndian = bigEndian
        self.format = .packetLogger(bigEndian: bigEndian)
    }

    static let knownTypes: Set<UInt8> = [0x00, 0x01, 0x02, 0x03, 0x08, 0x09, 0x0A, 0x0B, 0x12, 0x13,
                                         0xF7, 0xF8, 0xF9, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE]

    /// Whether the bytes look like a PacketLogger file, and in which byte order. There is no
    /// magic number: a plausible first record (length, microseconds below one million, a known
    /// type) in exactly one byte order decides.
    static func looksLikePacketLogger(_ head: UnsafeRawBufferPointer) -> Bool? {
        guard head.count >= 13 else { return nil }
        func plausible(_ be: Bool) -> Bool {
            let length = be ? head.u32be(0) : head.u32le(0)
            let micros = be ? head.u32be(8) : head.u32le(8)
            return length >= 9 && length <= UInt32(maxRecordLength) && micros < 1_000_000
                && knownTypes.contains(head[12])
        }
        switch (plausible(true), plausible(false)) {
        case (true, false): return true
        case (false, true): return false
        case (true, true): return head.u32be(0) <= head.u32le(0)
        default: return nil
        }
    }

    public func next() throws(CaptureError) -> CaptureRecord? {
        let recordOffset = input.offset
        let have = try input.fill(13)
        if have == 0 { return nil }
        let number = recordNumber + 1
        if have < 13 {
            throw CaptureError(.truncated, path: path, record: number, offset: recordOffset,
                               "the file ends \(have) bytes into a 13-byte record header")
        }
        let h = input.bytes(13)
        let length = Int(bigEndian ? h.u32be(0) : h.u32le(0))
        let seconds = Int64(bigEndian ? h.u32be(4) : h.u32le(4))
        let micros = Int64(bigEndian ? h.u32be(8) : h.u32le(8))
        let type = h[12]
        guard length >= 9, length - 9 <= Self.maxRecordLength else {
            throw CaptureError(.corrupt, path: path, record: number, offset: recordOffset,
                               "record length \(length) is impossible (9 to \(Self.maxRecordLength + 9)); the length field is damaged")
        }
        let total = 4 + length
        let got = try input.fill(total)
        if got < total {
            throw CaptureError(.truncated, path: path, record: number, offset: recordOffset,
                               "record of \(length - 9) payload bytes is cut short: the file ends after \(max(0, got - 13))")
        }
        recordNumber = number
        let data = input.bytes(total).dropping(13)
        input.advance(total)
        let (kind, direction): (RecordKind, Direction) = switch type {
        case 0x00: (.command, .sent)
        case 0x01: (.event, .received)
        case 0x02: (.acl, .sent)
        case 0x03: (.acl, .received)
        case 0x08: (.sco, .sent)
        case 0x09: (.sco, .received)
        case 0x12: (.iso, .sent)
        case 0x13: (.iso, .received)
        case 0xF7, 0xF8, 0xF9, 0xFA, 0xFB, 0xFC: (.text, .unknown)
        default: (.other, .unknown)
        }
        return CaptureRecord(number: number, fileOffset: recordOffset,
                             timestamp: seconds * 1_000_000 + micros, direction: direction,
                             kind: kind, rawType: UInt16(type), originalLength: data.count, data: data)
    }
}
