/// The Linux Bluetooth monitor channel's opcodes (btsnoop datalink 2001, pcap DLT 254, btmon).
public enum MonitorOpcode: UInt16, Sendable {
    case newIndex = 0, deleteIndex = 1, command = 2, event = 3, aclTX = 4, aclRX = 5
    case scoTX = 6, scoRX = 7, openIndex = 8, closeIndex = 9, indexInfo = 10, vendorDiag = 11
    case systemNote = 12, userLogging = 13, controlOpen = 14, controlClose = 15
    case controlCommand = 16, controlEvent = 17, isoTX = 18, isoRX = 19

    /// Kind and direction of a record with this opcode.
    public static func classify(_ raw: UInt16) -> (RecordKind, Direction) {
        switch MonitorOpcode(rawValue: raw) {
        case .command: (.command, .sent)
        case .event: (.event, .received)
        case .aclTX: (.acl, .sent)
        case .aclRX: (.acl, .received)
        case .scoTX: (.sco, .sent)
        case .scoRX: (.sco, .received)
        case .isoTX: (.iso, .sent)
        case .isoRX: (.iso, .received)
        case .newIndex: (.newIndex, .unknown)
        case .deleteIndex: (.deleteIndex, .unknown)
        case .openIndex: (.openIndex, .unknown)
        case .closeIndex: (.closeIndex, .unknown)
        case .indexInfo: (.indexInfo, .unknown)
        case .systemNote, .userLogging: (.text, .unknown)
        default: (.other, .unknown)
        }
    }

    /// The opcode that carries an HCI packet of this kind and direction, for writers.
    public static func opcode(for kind: RecordKind, direction: Direction) -> UInt16? {
        switch (kind, direction) {
        case (.command, _): MonitorOpcode.command.rawValue
        case (.event, _): MonitorOpcode.event.rawValue
        case (.acl, .sent): MonitorOpcode.aclTX.rawValue
        case (.acl, _): MonitorOpcode.aclRX.rawValue
        case (.sco, .sent): MonitorOpcode.scoTX.rawValue
        case (.sco, _): MonitorOpcode.scoRX.rawValue
        case (.iso, .sent): MonitorOpcode.isoTX.rawValue
        case (.iso, _): MonitorOpcode.isoRX.rawValue
        case (.newIndex, _): MonitorOpcode.newIndex.rawValue
        case (.deleteIndex, _): MonitorOpcode.deleteIndex.rawValue
        case (.openIndex, _): MonitorOpcode.openIndex.rawValue
        case (.closeIndex, _): MonitorOpcode.closeIndex.rawValue
        case (.indexInfo, _): MonitorOpcode.indexInfo.rawValue
        case (.text, _): MonitorOpcode.systemNote.rawValue
        default: nil
        }
    }
}
