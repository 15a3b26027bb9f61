import Capture
import HCI
import Profiles

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

    /// What an OTA error code means (PROTOCOLS.md §3).
    public static func otaError(_ e: SpeakerOTA.ErrorCode) -> String {
        switch e {
        case .none: "no error"
        case .wifiConnect: "the device could not join the Wi-Fi network"
        case .httpConnect: "the device could not reach the firmware server"
        case .httpResponse: "the firmware server answered with an error status"
        case .download: "the download failed part way"
        case .verify: "the downloaded image failed verification"
        case .write: "writing the image to flash failed"
        case .noCredentials: "START or URL without Wi-Fi credentials first"
        case .noURL: "START without a firmware URL first"
        case .invalidImage: "the image is not a valid firmware image"
        case .cancelled: "the update was cancelled"
        case .rollbackFailed: "going back to the previous image failed"
        }
    }

    /// The OTA states the device team allows after each state (PROTOCOLS.md §3). ERROR and IDLE
    /// (cancel, rollback, validate) may follow anything.
    static let allowedNext: [SpeakerOTA.State: Set<SpeakerOTA.State>] = [
        .idle: [.idle, .credentialsReceived, .urlReceived, .pendingVerify],
        .credentialsReceived: [.credentialsReceived, .urlReceived, .wifiConnecting],
        .urlReceived: [.credentialsReceived, .urlReceived, .wifiConnecting],
        .wifiConnecting: [.wifiConnecting, .wifiConnected],
        .wifiConnected: [.wifiConnected, .downloading],
        .downloading: [.downloading, .verifying],
        .verifying: [.verifying, .success],
        .success: [.success, .pendingVerify],
        .pendingVerify: [.pendingVerify],
        .error: [.error, .credentialsReceived, .urlReceived, .wifiConnecting],
    ]

    static func transitionAllowed(from a: SpeakerOTA.State, to b: SpeakerOTA.State) -> Bool {
        if b == .error || b == .idle { return true }
        return allowedNext[a]?.contains(b) ?? true
    }

    /// Phase names for OTA states.
    static func phase(_ s: SpeakerOTA.State) -> String {
        switch s {
        case .idle: "idle"
        case .credentialsReceived: "credentials"
        case .urlReceived: "url"
        case .wifiConnecting: "wifi-join"
        case .wifiConnected: "http-connect"
        case .downloading: "download"
        case .verifying: "verification"
        case .success: "success"
        case .pendingVerify: "pending-verify"
        case .error: "error"
        }
    }
}
