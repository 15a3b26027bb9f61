import Capture
import HCI

/// What codes mean to someone debugging a field failure, beyond their names.
public enum Meanings {
    /// Why a link ended, in field terms (PROTOCOLS.md §7).
    public static func disconnect(_ reason: HCIStatus) -> String {
        switch reason.rawValue {
        case 0x08: "supervision timeout: the device went silent (out of range, or it reset or rebooted)"
        case 0x13: "the peer hung up (the device or the app on the other side closed the link)"
        case 0x16: "this host hung up (the app or the OS closed the link)"
        case 0x15: "the peer powered off"
        case 0x14: "the peer ran out of resources"
        case 0x22: "a link-layer procedure timed out (the peer stopped answering control PDUs)"
        case 0x3B: "the connection parameters were refused"
        case 0x3D: "MIC failure: encryption keys do not match (stale bond, or an attack)"
        case 0x3E: "the connection was never established (the device did not answer the connect request)"
        case 0x05: "authentication failure: pairing or bonding failed"
        case 0x06: "PIN or key missing: the bond was deleted on one side"
        case 0x1F: "unspecified error"
        default: reason.name
        }
    }

    /// A link this host ended with its own HCI_Disconnect (`reason` is what the command gave).
    public static func disconnectedByHost(_ reason: HCIStatus) -> String {
        "this host hung up: it sent Disconnect (\(reason.name), 0x\(Hex.string([reason.rawValue])))"
    }
}
