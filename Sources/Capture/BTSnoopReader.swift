/// btsnoop, as Android, BlueZ's btmon (datalink 2001) and most tools write it.
///
/// Layout: 16-byte header (`btsnoop\0`, version u32 BE, datalink u32 BE), then records of
/// original length, included length, flags, cumulative drops (u32 BE each), timestamp (i64 BE,
/// microseconds since year 0) and the packet.
public final class BTSnoopReader: CaptureReader {
    /// The largest packet any datalink carries: an H4 ACL packet (1 + 4 + 65535), with slack for
    /// monitor text records. A length above this is damage, not data, and is never allocated.
    public static let maxRecordLength = 65_600
    static let epochOffset: Int64 = 0x00DC_DDB3_0F2F_8000

    public let path: String
    public let format = CaptureFormat.btsnoop
    public let linkType: LinkType
    private let input: BufferedInput
    private var recordNumber = 0

    init(input: BufferedInput) throws(CaptureError) {
        self.path = input.path
        self.input = input
        let available = try input.fill(16)
        if available < 16 {
            throw CaptureError(.truncated, path: path, offset: 0,
                               "btsnoop header is cut short (\(available) of 16 bytes)")
        }
        let header = input.bytes(16)
        let version = header.u32be(8)
        let datalink = header.u32be(12)
        guard version == 1 else {
            throw CaptureError(.corrupt, path: path, offset: 8, "btsnoop version \(version) is not 1")
        }
        switch datalink {
        case 1001: linkType = .btsnoopUnencapsulatedHCI
        case 1002: linkType = .btsnoopH4
        case 2001: linkType = .btsnoopMonitor
        default:
            throw CaptureError(.unsupported, path: path, offset: 12,
                               "btsnoop datalink \(datalink) is not one GATTLab decodes (1001, 1002, 2001)")
        }
        input.advance(16)
    }

    public func next() throws(CaptureError) -> CaptureRecord? {
        let recordOffset = input.offset
        let have = try input.fill(24)
        if have == 0 { return nil }
        let number = recordNumber + 1
        if have < 24 {
            throw CaptureError(.truncated, path: path, record: number, offset: recordOffset,
                               "the file ends \(have) bytes into a 24-byte record header (cut short while being written?)")
        }
        let h = input.bytes(24)
        let originalLength = Int(h.u32be(0))
        let includedLength = Int(h.u32be(4))
        let flags = h.u32be(8)
        let timestamp = h.i64be(16) &- Self.epochOffset
        if includedLength > Self.maxRecordLength {
            throw CaptureError(.corrupt, path: path, record: number, offset: recordOffset,
                               "included length \(includedLength) is larger than any HCI packet (at most \(Self.maxRecordLength)); the length field is damaged")
        }
        let total = 24 + includedLength
        let got = try input.fill(total)
        if got < total {
            throw CaptureError(.truncated, path: path, record: number, offset: recordOffset,
                               "record of \(includedLength) bytes is cut short: the file ends after \(got - 24) (cut short while being written?)")
        }
        recordNumber = number
        let data = input.bytes(total).dropping(24)
        input.advance(total)

        var record = CaptureRecord(number: number, fileOffset: recordOffset, timestamp: timestamp,
                                   direction: .unknown, kind: .other,
                                   originalLength: max(originalLength, includedLength), data: data)
        switch linkType {
        case .btsnoopH4:
            record.direction = flags & 1 == 0 ? .sent : .received
            if let type = data.first {
                record.rawType = UInt16(type)
                record.kind = RecordKind(h4Type: type) ?? .other
                record.data = data.dropping(1)
                record.originalLength = max(0, record.originalLength - 1)
            }
        case .btsnoopUnencapsulatedHCI:
            let received = flags & 1 != 0
            record.direction = received ? .received : .sent
            record.kind = flags & 2 != 0 ? (received ? .event : .command) : .acl
            record.rawType = UInt16(record.kind.h4Type ?? 0)
        default:
            record.controller = UInt16(truncatingIfNeeded: flags >> 16)
            record.rawType = UInt16(truncatingIfNeeded: flags)
            (record.kind, record.direction) = MonitorOpcode.classify(record.rawType)
        }
        return record
    }
}
