import ATT
import Capture
import Profiles

/// The ChaoticVolt speaker's OTA protocol (PROTOCOLS.md section 3): credentials, firmware URL,
/// control commands and an 8-byte status, on four characteristics of one service.
public enum SpeakerOTA {
    public static let service = BluetoothUUID(high: 0x0000_0001_1234_5678, low: 0x9ABC_DEF0_1234_5678)
    public static let credentials = BluetoothUUID(high: 0x0000_0005_1234_5678, low: 0x9ABC_DEF0_1234_5678)
    public static let url = BluetoothUUID(high: 0x0000_0006_1234_5678, low: 0x9ABC_DEF0_1234_5678)
    public static let control = BluetoothUUID(high: 0x0000_0007_1234_5678, low: 0x9ABC_DEF0_1234_5678)
    public static let status = BluetoothUUID(high: 0x0000_0008_1234_5678, low: 0x9ABC_DEF0_1234_5678)

    /// Limits from the device team's document.
    public static let maxCredentialsLength = 98
    public static let maxSSIDLength = 32
    public static let maxPasswordLength = 64
    public static let maxURLLength = 256
    public static let statusLength = 8

    public enum State: UInt8, Sendable, CaseIterable, CustomStringConvertible {
        case idle = 0x00, credentialsReceived = 0x01, urlReceived = 0x02, wifiConnecting = 0x03
        case wifiConnected = 0x04, downloading = 0x05, verifying = 0x06, success = 0x07
        case pendingVerify = 0x08, error = 0xFF

        public var description: String {
            switch self {
            case .idle: "IDLE"
            case .credentialsReceived: "CREDS_RECEIVED"
            case .urlReceived: "URL_RECEIVED"
            case .wifiConnecting: "WIFI_CONNECTING"
            case .wifiConnected: "WIFI_CONNECTED"
            case .downloading: "DOWNLOADING"
            case .verifying: "VERIFYING"
            case .success: "SUCCESS"
            case .pendingVerify: "PENDING_VERIFY"
            case .error: "ERROR"
            }
        }
    }

    public enum ErrorCode: UInt8, Sendable, CaseIterable, CustomStringConvertible {
        case none = 0x00, wifiConnect = 0x01, httpConnect = 0x02, httpResponse = 0x03, download = 0x04
        case verify = 0x05, write = 0x06, noCredentials = 0x07, noURL = 0x08, invalidImage = 0x09
        case cancelled = 0x0A, rollbackFailed = 0x0B

        public var description: String {
            switch self {
            case .none: "NONE"
            case .wifiConnect: "WIFI_CONNECT"
            case .httpConnect: "HTTP_CONNECT"
            case .httpResponse: "HTTP_RESPONSE"
            case .download: "DOWNLOAD"
            case .verify: "VERIFY"
            case .write: "WRITE"
            case .noCredentials: "NO_CREDENTIALS"
            case .noURL: "NO_URL"
            case .invalidImage: "INVALID_IMAGE"
            case .cancelled: "CANCELLED"
            case .rollbackFailed: "ROLLBACK_FAILED"
            }
        }

        /// Whether retrying can help: the device team lists 01, 02, 04 as retryable and 05, 06,
        /// 09 as not; the others are not failures of the update itself (nil).
        public var retryable: Bool? {
            switch self {
            case .wifiConnect, .httpConnect, .download: true
            case .verify, .write, .invalidImage: false
            default: nil
            }
        }
    }

    public enum Command: UInt8, Sendable, CaseIterable, CustomStringConvertible {
        case start = 0x10, cancel = 0x11, reboot = 0x12, getVersion = 0x13, rollback = 0x14, validate = 0x15

        public var description: String {
            switch self {
            case .start: "START"
            case .cancel: "CANCEL"
            case .reboot: "REBOOT"
            case .getVersion: "GET_VERSION"
            case .rollback: "ROLLBACK"
            case .validate: "VALIDATE"
            }
        }
    }
}
