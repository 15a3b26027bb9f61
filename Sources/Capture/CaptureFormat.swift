#if canImport(Glibc)
import Glibc
#endif

/// File formats GATTLab reads, told apart by their first bytes, never by file name: Android
/// names btsnoop files .log, .cfa or .cap, and many ".pcapng" files are plain pcap.
public enum CaptureFormat: Sendable, Hashable, CustomStringConvertible {
    case btsnoop
    case packetLogger(bigEndian: Bool)
    case pcap
    case pcapng

    public var description: String {
        switch self {
        case .btsnoop: "btsnoop"
        case .packetLogger(let be): "Apple PacketLogger (\(be ? "big" : "little")-endian)"
        case .pcap: "pcap"
        case .pcapng: "pcapng"
        }
    }

    /// Detects the format from the first bytes of a file (at least 16 when the file has them).
    public static func detect(_ head: UnsafeRawBufferPointer) -> CaptureFormat? {
        if head.count >= 8, Array(head[0..<8]) == Array("btsnoop\0".utf8) { return .btsnoop }
        if head.count >= 4 {
            switch head.u32be(0) {
            case 0x0A0D_0D0A: return .pcapng
            case 0xA1B2_C3D4, 0xD4C3_B2A1, 0xA1B2_3C4D, 0x4D3C_B2A1: return .pcap
            default: break
            }
        }
        if let bigEndian = PacketLoggerReader.looksLikePacketLogger(head) {
            return .packetLogger(bigEndian: bigEndian)
        }
        return nil
    }
}

extension CaptureFormat {
    /// The format of the file at `path` from its first 16 bytes, or nil when it is no capture
    /// GATTLab reads (or cannot be read): how folders are searched, so rotated logs
    /// (`btsnoop_hci.log.last`, `.cfa`, `.log.1`) count and notes beside them do not.
    public static func sniff(path: String) -> CaptureFormat? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 16)
        let n = head.withUnsafeMutableBytes { read(fd, $0.baseAddress, 16) }
        guard n > 0 else { return nil }
        return head.withUnsafeBytes { detect(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    }
}

/// Link types, in pcap's numbering; btsnoop's datalinks map onto the HCI ones.
public enum LinkType: UInt32, Sendable, Hashable, CustomStringConvertible {
    case ppi = 192
    case user0 = 147
    case bluetoothHCIH4 = 187
    case bluetoothHCIH4WithPHDR = 201
    case bluetoothLELL = 251
    case bluetoothLinuxMonitor = 254
    case bluetoothLELLWithPHDR = 256
    case nordicBLE = 272
    /// btsnoop datalink 1001: HCI without the H4 type byte; the flags tell command/event/data.
    case btsnoopUnencapsulatedHCI = 1001
    /// btsnoop datalink 1002: H4 (what Android writes).
    case btsnoopH4 = 1002
    /// btsnoop datalink 2001: Linux monitor (what `btmon -w` writes).
    case btsnoopMonitor = 2001
    /// Apple PacketLogger has no link type; this stands for its own record layout.
    case packetLogger = 0xFFFF_0001

    public var description: String {
        switch self {
        case .ppi: "DLT 192 (PPI)"
        case .user0: "DLT 147 (USER0, as LE link layer)"
        case .bluetoothHCIH4: "DLT 187 (BLUETOOTH_HCI_H4)"
        case .bluetoothHCIH4WithPHDR: "DLT 201 (BLUETOOTH_HCI_H4_WITH_PHDR)"
        case .bluetoothLELL: "DLT 251 (BLUETOOTH_LE_LL)"
        case .bluetoothLinuxMonitor: "DLT 254 (BLUETOOTH_LINUX_MONITOR)"
        case .bluetoothLELLWithPHDR: "DLT 256 (BLUETOOTH_LE_LL_WITH_PHDR)"
        case .nordicBLE: "DLT 272 (NORDIC_BLE)"
        case .btsnoopUnencapsulatedHCI: "btsnoop datalink 1001 (HCI, unencapsulated)"
        case .btsnoopH4: "btsnoop datalink 1002 (HCI UART/H4)"
        case .btsnoopMonitor: "btsnoop datalink 2001 (Linux monitor)"
        case .packetLogger: "PacketLogger"
        }
    }

    /// Over-the-air sniffer link types: LE link-layer packets, no HCI.
    public var isLinkLayer: Bool {
        switch self {
        case .ppi, .user0, .bluetoothLELL, .bluetoothLELLWithPHDR, .nordicBLE: true
        default: false
        }
    }

    /// Link types that carry a controller index (several controllers in one file).
    public var hasControllerIndex: Bool {
        self == .bluetoothLinuxMonitor || self == .btsnoopMonitor
    }
}

/// A source of records, one at a time.
public protocol CaptureReader: AnyObject {
    var path: String { get }
    var format: CaptureFormat { get }
    var linkType: LinkType { get }
    /// The next record, or nil at a clean end of file. A damaged record throws a `CaptureError`
    /// naming its record number and offset; everything returned before it stays valid.
    func next() throws(CaptureError) -> CaptureRecord?
}

/// Reads a btsnoop or PacketLogger capture held in memory (pcap and pcapng go through libpcap,
/// which reads files): what the fuzzer feeds the readers.
public func openCapture(bytes: [UInt8], name: String = "<memory>") throws(CaptureError) -> any CaptureReader {
    let input = BufferedInput(bytes: bytes, name: name)
    let head = Array(bytes.prefix(16))
    switch head.withUnsafeBytes({ CaptureFormat.detect($0) }) {
    case .btsnoop?: return try BTSnoopReader(input: input)
    case .packetLogger(let bigEndian)?: return PacketLoggerReader(input: input, bigEndian: bigEndian)
    default: throw CaptureError(.unknownFormat, path: name, offset: 0, "not a btsnoop or PacketLogger capture")
    }
}

/// Opens a capture of any supported format, detected from its first bytes; "-" is standard input.
public func openCapture(_ path: String) throws(CaptureError) -> any CaptureReader {
    let input = try BufferedInput(path: path)
    let available = try input.fill(16)
    if available == 0 {
        throw CaptureError(.unknownFormat, path: path, offset: 0, "the file is empty")
    }
    let head = input.bytes(available)
    guard let format = CaptureFormat.detect(head) else {
        let shown = Hex.string(head.prefix(8), separator: " ")
        var hint = "expected btsnoop, Apple PacketLogger, pcap or pcapng"
        if head.count >= 2, head[0] == 0x1F, head[1] == 0x8B {
            hint = "it is gzip-compressed: decompress it first (gunzip -k)"
        } else if head.count >= 4, head.u32be(0) == 0x504B_0304 {
            hint = "it is a zip archive (an Android bug report?): extract FS/data/misc/bluetooth/logs/btsnoop_hci.log from it"
        } else if head.count >= 7, Array(head.prefix(7)) == Array("=======".utf8) || Array(head.prefix(5)) == Array("-----".utf8) {
            hint = "it looks like text; an Android bug report's BTSNOOP_LOG_SUMMARY (btsnooz) is not read yet"
        }
        throw CaptureError(.unknownFormat, path: path, offset: 0,
                           "not a capture GATTLab reads (first bytes \(shown)); \(hint)")
    }
    switch format {
    case .btsnoop:
        return try BTSnoopReader(input: input)
    case .packetLogger(let bigEndian):
        return PacketLoggerReader(input: input, bigEndian: bigEndian)
    case .pcap, .pcapng:
        // libpcap reads through the buffer that already holds the first bytes: standard input
        // cannot be reopened, and a file's record offsets then cost no system call (below).
        return try PcapReader(path: path, format: format, input: input)
    }
}
