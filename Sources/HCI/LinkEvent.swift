import Capture

/// Who sent a packet: the capturing host's view for HCI captures, the link's for sniffed ones.
public enum PacketDirection: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// HCI host to controller: the local device sent it.
    case sent
    /// HCI controller to host: the peer sent it.
    case received
    case centralToPeripheral
    case peripheralToCentral
    case unknown

    public var description: String {
        switch self {
        case .sent: "sent"
        case .received: "received"
        case .centralToPeripheral: "central->peripheral"
        case .peripheralToCentral: "peripheral->central"
        case .unknown: "unknown"
        }
    }

    /// The short arrow form used in text output.
    public var arrow: String {
        switch self {
        case .sent: ">"
        case .received: "<"
        case .centralToPeripheral: "C>P"
        case .peripheralToCentral: "P>C"
        case .unknown: "?"
        }
    }

    init(_ d: Direction) {
        self = d == .sent ? .sent : d == .received ? .received : .unknown
    }
}

/// Which layer a malformed packet failed in.
public enum Layer: String, Sendable, Hashable {
    case record, hci, acl, l2cap, linkLayer = "ll", smp, signalling, att
}

/// What the HCI/link layer saw in one record. The decoder produces these in record order.
public enum LinkEvent: Sendable {
    /// A controller appeared in a monitor capture.
    case controllerAdded(index: UInt16, name: String, address: BDAddr?)
    case controllerRemoved(index: UInt16)
    indirect case connectionComplete(ConnectionInfo)
    /// A connection attempt that failed (Connection Complete with a non-zero status).
    case connectionFailed(status: HCIStatus, peer: BDAddr?)
    indirect case disconnection(ConnectionInfo, reason: HCIStatus)
    case encryptionChange(ConnectionKey, enabled: Bool, status: HCIStatus, keySize: UInt8?)
    case encryptionKeyRefresh(ConnectionKey, status: HCIStatus)
    case connectionUpdate(ConnectionKey, interval: UInt16, latency: UInt16, timeout: UInt16)
    case dataLengthChange(ConnectionKey, maxTxOctets: UInt16, maxRxOctets: UInt16)
    case ltkRequest(ConnectionKey, rand: UInt64, ediv: UInt16)
    /// The host answered an LTK request: the LTK is a secret.
    case ltkReply(ConnectionKey, ltk: Secret)
    case ltkNegativeReply(ConnectionKey)
    case startEncryption(ConnectionKey, ltk: Secret, rand: UInt64, ediv: UInt16)
    /// The key size an encrypted link uses (Read Encryption Key Size, as hosts ask after encrypting).
    case encryptionKeySize(ConnectionKey, size: UInt8)
    /// A BR/EDR link key: handed to the host (Link Key Notification) or back to the controller
    /// (Link Key Request Reply). Classic links share phone captures with LE ones.
    case linkKey(peer: BDAddr, key: Secret, fromController: Bool)
    /// LE Add Device To Resolving List: the peer's IRK and the local one (all-zero ones, which
    /// mean "none", are left out).
    case resolvingListAdd(peer: BDAddr, peerIRK: Secret?, localIRK: Secret?)
    /// LE Encrypt: the host asks the controller to AES-encrypt with a key (used to make keys).
    case leEncrypt(key: Secret)
    case disconnectCommand(ConnectionKey, reason: HCIStatus)
    case createConnection(peer: BDAddr, peerType: UInt8)
    case commandFailed(opcode: UInt16, status: HCIStatus)
    indirect case smp(ConnectionKey, PacketDirection, SMPPDU)
    /// A complete L2CAP SDU on a fixed or dynamic channel. Its bytes are in `LinkDecoder.payload`.
    case l2cap(ConnectionKey, cid: UInt16, direction: PacketDirection)
    case signalling(ConnectionKey, PacketDirection, code: UInt8, identifier: UInt8)
    /// A link-layer control PDU of a sniffed connection.
    case llControl(ConnectionKey, PacketDirection, opcode: UInt8)
    /// A data PDU of a sniffed link that stays encrypted: nothing above the link layer is read.
    case encrypted(ConnectionKey, PacketDirection, EncryptedPDU)
    /// An LTK given for decryption verified (its MIC checked) on a sniffed link: what follows
    /// on it is decrypted.
    case decrypting(ConnectionKey)
    case malformed(ConnectionKey?, Layer, reason: String)
    /// Something odd about a packet that was decoded all the same (as Wireshark reads it
    /// without error): an LL length beyond the bytes the sniffer received on a control PDU or
    /// a continuation. Not malformed.
    case note(ConnectionKey?, Layer, String)
    /// One advertising report: from an HCI LE (Directed, Extended) Advertising Report (one event
    /// per report inside it) or an advertising-channel PDU a sniffer caught.
    indirect case advertising(AdvertisingReport)
    case text(String)
}

/// What is known of a link-layer PDU left encrypted, and why it was left so.
public struct EncryptedPDU: Sendable, Hashable {
    public enum Reason: Sendable, Hashable {
        /// No LTK was given for this link.
        case noKey
        /// The LL_ENC_REQ / LL_ENC_RSP exchange is not in the capture: no session key.
        case noKeyExchange
        /// The MIC failed under every packet counter near the expected one.
        case micFailed
        /// The MIC has now failed on this many PDUs in a row with none verified: the LTK is
        /// taken to be wrong for this link (reported once; later PDUs say `keyRejected`).
        case keyLikelyWrong(failures: Int)
        /// The LTK was rejected earlier on this link.
        case keyRejected
        /// Too short to hold a MIC, or cut by the capture's snapshot length: damaged on air or
        /// in the file, it says nothing about the key.
        case damaged
    }

    /// LLID of the header (1 continuation or empty, 2 start, 3 control).
    public var llid: UInt8
    /// Payload bytes, MIC included.
    public var length: Int
    public var reason: Reason

    public init(llid: UInt8, length: Int, reason: Reason) {
        self.llid = llid
        self.length = length
        self.reason = reason
    }

    /// One line for people: "encrypted LL data (27 bytes): no LTK given (--ltk)".
    public var summary: String {
        let what = llid == 3 ? "LL control" : "LL data"
        return "encrypted \(what) (\(length) bytes): \(reasonText)"
    }

    public var reasonText: String {
        switch reason {
        case .noKey: "not decrypted, no LTK for this link (--ltk)"
        case .noKeyExchange: "not decrypted, LL_ENC_REQ/LL_ENC_RSP not in the capture (no session key)"
        case .micFailed: "MIC check failed, not decrypted"
        case .keyLikelyWrong(let n): "MIC failed on \(n) PDUs in a row: the LTK is likely wrong for this link"
        case .keyRejected: "not decrypted, the LTK was rejected on this link"
        case .damaged: "not decrypted, too short for its MIC (damaged or cut)"
        }
    }

    /// A short machine name of the reason, for JSON.
    public var reasonName: String {
        switch reason {
        case .noKey: "no-key"
        case .noKeyExchange: "no-key-exchange"
        case .micFailed: "mic-failed"
        case .keyLikelyWrong: "key-likely-wrong"
        case .keyRejected: "key-rejected"
        case .damaged: "damaged"
        }
    }
}

extension LinkEvent {
    public static func signallingName(_ code: UInt8) -> String {
        switch code {
        case 0x01: "Command Reject"
        case 0x02: "Connection Request"
        case 0x03: "Connection Response"
        case 0x04: "Configuration Request"
        case 0x05: "Configuration Response"
        case 0x06: "Disconnection Request"
        case 0x07: "Disconnection Response"
        case 0x08: "Echo Request"
        case 0x09: "Echo Response"
        case 0x0A: "Information Request"
        case 0x0B: "Information Response"
        case 0x0C: "Create Channel Request"
        case 0x0D: "Create Channel Response"
        case 0x0E: "Move Channel Request"
        case 0x0F: "Move Channel Response"
        case 0x10: "Move Channel Confirmation"
        case 0x11: "Move Channel Confirmation Response"
        case 0x12: "Connection Parameter Update Request"
        case 0x13: "Connection Parameter Update Response"
        case 0x14: "LE Credit Based Connection Request"
        case 0x15: "LE Credit Based Connection Response"
        case 0x16: "Flow Control Credit"
        case 0x17: "Credit Based Connection Request"
        case 0x18: "Credit Based Connection Response"
        case 0x19: "Credit Based Reconfigure Request"
        case 0x1A: "Credit Based Reconfigure Response"
        default: "Signalling 0x\(Hex.string([code]))"
        }
    }

    public static func llControlName(_ opcode: UInt8) -> String {
        let names = ["LL_CONNECTION_UPDATE_IND", "LL_CHANNEL_MAP_IND", "LL_TERMINATE_IND", "LL_ENC_REQ",
                     "LL_ENC_RSP", "LL_START_ENC_REQ", "LL_START_ENC_RSP", "LL_UNKNOWN_RSP",
                     "LL_FEATURE_REQ", "LL_FEATURE_RSP", "LL_PAUSE_ENC_REQ", "LL_PAUSE_ENC_RSP",
                     "LL_VERSION_IND", "LL_REJECT_IND", "LL_PERIPHERAL_FEATURE_REQ",
                     "LL_CONNECTION_PARAM_REQ", "LL_CONNECTION_PARAM_RSP", "LL_REJECT_EXT_IND",
                     "LL_PING_REQ", "LL_PING_RSP", "LL_LENGTH_REQ", "LL_LENGTH_RSP", "LL_PHY_REQ",
                     "LL_PHY_RSP", "LL_PHY_UPDATE_IND", "LL_MIN_USED_CHANNELS_IND"]
        return Int(opcode) < names.count ? names[Int(opcode)] : "LL control 0x\(Hex.string([opcode]))"
    }
}
