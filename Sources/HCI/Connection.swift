import Capture

/// Identifies one connection in a capture: the controller and the HCI connection handle, or for
/// over-the-air captures the link layer's access address (controller 0xFFFF).
public struct ConnectionKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var controller: UInt16
    /// HCI connection handle (12 bits), or the access address for sniffer captures.
    public var id: UInt32

    public static let linkLayerController: UInt16 = 0xFFFF

    public init(controller: UInt16, handle: UInt16) {
        self.controller = controller
        self.id = UInt32(handle)
    }

    public init(accessAddress: UInt32) {
        self.controller = Self.linkLayerController
        self.id = accessAddress
    }

    public var isLinkLayer: Bool { controller == Self.linkLayerController }

    /// Handle 0x0EDC of an HCI log: Qualcomm controllers write their own diagnostics into Android
    /// logs as ACL on it. Not a connection unless the log shows one made with that handle.
    public var isVendorDiagnostics: Bool { !isLinkLayer && id == 0x0EDC }

    /// "0x0040" for HCI handles (with "hci1/" when not controller 0), "aa:0x50654b2a" for sniffed links.
    public var description: String {
        if isLinkLayer { return "aa:0x" + String(id, radix: 16).leftPadded(8) }
        let handle = "0x" + String(id, radix: 16).leftPadded(4)
        return controller == 0 ? handle : "hci\(controller)/\(handle)"
    }

    public static func < (a: ConnectionKey, b: ConnectionKey) -> Bool {
        (a.controller, a.id) < (b.controller, b.id)
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// The local controller's role in a connection (HCI), or who sent a sniffed packet.
public enum Role: String, Sendable, Hashable {
    case central, peripheral, unknown
}

/// What is known of one connection, from its events.
public struct ConnectionInfo: Sendable, Hashable {
    public var key: ConnectionKey
    /// Local role (HCI captures); for sniffed links `.unknown`, see `centralAddress`.
    public var role: Role = .unknown
    public var peerAddress: BDAddr?
    public var peerAddressType: AddressType?
    /// Sniffed links: the initiator and the advertiser of CONNECT_IND.
    public var centralAddress: BDAddr?
    public var peripheralAddress: BDAddr?
    /// Connection interval in units of 1.25 ms, latency in events, supervision timeout in 10 ms.
    public var interval: UInt16?
    public var latency: UInt16?
    public var supervisionTimeout: UInt16?
    public var connectedAt: Int64?
    public var connectedFrame: Int?
    public var disconnectedAt: Int64?
    public var disconnectedFrame: Int?
    public var disconnectReason: HCIStatus?
    /// This host ended the link: the capture has its HCI_Disconnect for the handle, accepted
    /// (Command Status success) before the Disconnection Complete. The reason the host gave in
    /// the command; the event's code is `disconnectReason`, which controllers do not all set
    /// alike (Bumble's virtual controller says 0x13 where real ones say 0x16).
    public var hostDisconnectReason: HCIStatus?
    /// Current encryption state, and whether the link was ever encrypted, with the first frame.
    public var encrypted = false
    public var firstEncryptedFrame: Int?
    public var encryptionKeySize: UInt8?
    /// Seen only through data: the capture started after the connection was made.
    public var implicit = false
    /// A BR/EDR (classic) link: made by Connection Complete, not LE Connection Complete.
    public var classic = false
    /// Where the connection was first seen (its Connection Complete, or its first packet).
    public var firstFrame: Int
    public var firstTime: Int64

    public init(key: ConnectionKey, frame: Int, time: Int64) {
        self.key = key
        firstFrame = frame
        firstTime = time
    }

    public var intervalMicroseconds: Int? { interval.map { Int($0) * 1250 } }
    public var supervisionTimeoutMicroseconds: Int? { supervisionTimeout.map { Int($0) * 10_000 } }
}
