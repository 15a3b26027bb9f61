/// Which way an HCI packet travelled, as the capturing host saw it.
public enum Direction: UInt8, Sendable, Hashable {
    /// Host to controller: commands and outgoing ACL data ("sent").
    case sent
    /// Controller to host: events and incoming ACL data ("received").
    case received
    /// The format does not say (DLT 187, some monitor records).
    case unknown
}

/// What a record holds once its file encapsulation is removed.
public enum RecordKind: UInt8, Sendable, Hashable {
    case command, event, acl, sco, iso
    /// An LE link-layer packet from an over-the-air sniffer; see `LinkLayerInfo`.
    case linkLayer
    /// Linux monitor bookkeeping: a controller appeared, went away, opened, closed, or described itself.
    case newIndex, deleteIndex, openIndex, closeIndex, indexInfo
    /// Human-readable text: monitor system notes and user logging, PacketLogger notes, errors, power.
    case text
    /// Anything else a format may carry (vendor diagnostics, control channel traffic).
    case other
}

/// Direction of an LE link-layer data PDU.
public enum LinkLayerDirection: UInt8, Sendable, Hashable {
    case centralToPeripheral, peripheralToCentral, unknown
}

/// What an over-the-air sniffer said about one packet, beside the packet itself.
public struct LinkLayerInfo: Sendable, Hashable {
    /// The channel index (0-36 data, 37-39 primary advertising).
    public var channel: UInt8?
    public var rssi: Int8?
    public var direction: LinkLayerDirection = .unknown
    /// nil when the sniffer did not check the CRC.
    public var crcOK: Bool?
    /// The sniffer saw the packet encrypted; `micOK` true means it also decrypted it.
    public var encrypted: Bool = false
    public var micOK: Bool?
    /// Whether the sniffer says if a packet is encrypted (nRF Sniffer always does; DLT 256 when
    /// its decrypted or MIC-checked flag is set). When it does not, the link layer decoder
    /// follows the encryption procedure itself.
    public var encryptionReported = false
    /// Whether the last 3 bytes of the record are the CRC.
    public var hasCRC: Bool = true
    /// Sent on the LE Coded PHY: a Coding Indicator byte follows the access address (nRF
    /// Sniffer says so in its flags).
    public var coded = false
    /// Where the PDU header starts in the record's data: after the access address and, on the
    /// Coded PHY, the Coding Indicator. The CRC covers the PDU from here on (not the indicator).
    /// Every reader of sniffed packets (decoding, redaction) finds the header here.
    public var pduOffset: Int { coded ? 5 : 4 }
    /// The PDU type field of DLT 256's flags, when present.
    public var pduType: UInt8?
    /// The PHY the sniffer received on, as HCI numbers them (1 LE 1M, 2 LE 2M, 3 LE Coded), when it says.
    public var phy: UInt8?
    /// Set when the sniffer's own header is inconsistent: the packet is not decoded.
    public var problem: String? { headerProblem?.description }
    /// The same, kept as numbers rather than text: a record is then plain data, copied through
    /// every layer without a reference to count (a String here made each copy a retain).
    public var headerProblem: SnifferHeaderProblem?
    public init() {}
    public init(headerProblem: SnifferHeaderProblem) { self.headerProblem = headerProblem }
}

/// Why a sniffer's per-packet header cannot be trusted (`LinkLayerInfo.headerProblem`).
public enum SnifferHeaderProblem: Sendable, Hashable, CustomStringConvertible {
    /// The record is shorter than the nRF Sniffer header.
    case nordicRecordShorterThanHeader(recordLength: Int)
    /// The nRF Sniffer header's lengths disagree with the record's.
    case nordicLengthMismatch(headerSays: Int, recordLength: Int)

    public var description: String {
        switch self {
        case .nordicRecordShorterThanHeader(let n): "nRF Sniffer record of \(n) bytes is shorter than its 17-byte header"
        case .nordicLengthMismatch(let says, let n): "nRF Sniffer header says \(says) bytes, the record has \(n)"
        }
    }
}

/// One record of a capture, its payload borrowed from the reader.
///
/// `data` points into the reader's buffer and is valid only until the next call to `next()`:
/// whoever keeps bytes copies them. This keeps decoding free of per-record allocation.
public struct CaptureRecord {
    /// 1-based record number, as Wireshark numbers frames.
    public var number: Int
    /// Byte offset of the record (its header) in the file.
    public var fileOffset: Int64
    /// Microseconds since the Unix epoch.
    public var timestamp: Int64
    /// Controller (adapter) index; 0 when the format knows of one controller only.
    public var controller: UInt16
    public var direction: Direction
    public var kind: RecordKind
    /// The format's own type code (H4 type, monitor opcode, PacketLogger type) for display and conversion.
    public var rawType: UInt16
    /// Length of the packet on the wire; more than `data.count` when the capture cut it.
    public var originalLength: Int
    /// Payload without encapsulation: no H4 byte, no pseudo-header.
    public var data: UnsafeRawBufferPointer
    /// The packet as the file stores it, its format's pseudo-header (H4 byte, monitor header,
    /// sniffer header) included: `data` lies inside it. Redaction maps offsets in `data` to
    /// file offsets through it.
    public var packet: UnsafeRawBufferPointer
    public var linkLayer: LinkLayerInfo?

    public init(number: Int, fileOffset: Int64, timestamp: Int64, controller: UInt16 = 0,
                direction: Direction, kind: RecordKind, rawType: UInt16 = 0, originalLength: Int,
                data: UnsafeRawBufferPointer, linkLayer: LinkLayerInfo? = nil) {
        self.number = number
        self.fileOffset = fileOffset
        self.timestamp = timestamp
        self.controller = controller
        self.direction = direction
        self.kind = kind
        self.rawType = rawType
        self.originalLength = originalLength
        self.data = data
        packet = data
        self.linkLayer = linkLayer
    }

    /// Where `data` starts inside `packet` (0 when the reader kept no header).
    public var dataOffsetInPacket: Int {
        guard let d = data.baseAddress, let p = packet.baseAddress, d >= p, d - p <= packet.count else { return 0 }
        return d - p
    }

    /// Whether the capture kept fewer bytes than were on the wire.
    public var isCut: Bool { data.count < originalLength }
}

extension RecordKind {
    /// H4 packet indicator for the HCI kinds (01 command, 02 ACL, 03 SCO, 04 event, 05 ISO).
    public var h4Type: UInt8? {
        switch self {
        case .command: 0x01
        case .acl: 0x02
        case .sco: 0x03
        case .event: 0x04
        case .iso: 0x05
        default: nil
        }
    }

    public init?(h4Type: UInt8) {
        switch h4Type {
        case 0x01: self = .command
        case 0x02: self = .acl
        case 0x03: self = .sco
        case 0x04: self = .event
        case 0x05: self = .iso
        default: return nil
        }
    }

    public var isHCI: Bool { h4Type != nil }
}
