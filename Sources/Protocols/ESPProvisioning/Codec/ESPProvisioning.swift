import ATT
import Capture
import Profiles

/// Espressif ESP-IDF unified provisioning over BLE (protocomm; PROTOCOLS.md section 6).
/// Endpoints are characteristics named by their 0x2901 user description (`prov-session`,
/// `prov-config`, ...), with default UUIDs as fallback. A request is a write to an endpoint and
/// its response a read of it. Session setup is on `prov-session`; with security 1 every other
/// endpoint except `proto-ver` carries AES-256-CTR ciphertext.
///
/// These are GATTLab's own values, filled from the generated protobuf code (Generated/, from
/// Protos/esp), so the rest of the project does not depend on SwiftProtobuf.
public enum ESPProvisioning {
    public enum Endpoint: String, Sendable, CaseIterable {
        case control = "prov-ctrl"
        case scan = "prov-scan"
        case session = "prov-session"
        case config = "prov-config"
        case version = "proto-ver"

        /// The default characteristic: 0xFF4F... in bytes 2-3 of the default service UUID
        /// 021a9004-0382-4aea-bff4-6b3f1c5adfb4.
        public var defaultUUID: BluetoothUUID {
            let short: UInt64 = switch self {
            case .control: 0xFF4F
            case .scan: 0xFF50
            case .session: 0xFF51
            case .config: 0xFF52
            case .version: 0xFF53
            }
            return BluetoothUUID(high: 0x021A_0000_0382_4AEA | short << 32, low: 0xBFF4_6B3F_1C5A_DFB4)
        }

        public init?(uuid: BluetoothUUID) {
            guard let e = Self.allCases.first(where: { $0.defaultUUID == uuid }) else { return nil }
            self = e
        }
    }

    public static let service = BluetoothUUID(high: 0x021A_9004_0382_4AEA, low: 0xBFF4_6B3F_1C5A_DFB4)

    static let statusNames = ["Success", "InvalidSecScheme", "InvalidProto", "TooManySessions", "InvalidArgument",
                              "InternalError", "CryptoError", "InvalidSession"]
    static let stationStateNames = ["Connected", "Connecting", "Disconnected", "ConnectionFailed"]
    static let failReasonNames = ["AuthError", "NetworkNotFound"]
    static let authNames = ["Open", "WEP", "WPA_PSK", "WPA2_PSK", "WPA_WPA2_PSK", "WPA2_ENTERPRISE", "WPA3_PSK", "WPA2_WPA3_PSK"]
    static let configTypeNames = ["CmdGetStatus", "RespGetStatus", "CmdSetConfig", "RespSetConfig", "CmdApplyConfig", "RespApplyConfig"]
    static let scanTypeNames = ["CmdScanStart", "RespScanStart", "CmdScanStatus", "RespScanStatus", "CmdScanResult", "RespScanResult"]
    static let secSchemeNames = ["SecScheme0", "SecScheme1", "SecScheme2"]
    static let sec0TypeNames = ["S0_Session_Command", "S0_Session_Response"]
    static let sec1TypeNames = ["Session_Command0", "Session_Response0", "Session_Command1", "Session_Response1"]
    static let sec2TypeNames = ["S2Session_Command0", "S2Session_Response0", "S2Session_Command1", "S2Session_Response1"]

    static func named(_ raw: Int, _ names: [String]) -> ProtoEnumValue {
        ProtoEnumValue(raw: raw, name: names.indices.contains(raw) ? names[raw] : nil)
    }

    public static func status(_ raw: Int) -> ProtoEnumValue { named(raw, statusNames) }
    public static func stationState(_ raw: Int) -> ProtoEnumValue { named(raw, stationStateNames) }
    public static func failReason(_ raw: Int) -> ProtoEnumValue { named(raw, failReasonNames) }
    public static func auth(_ raw: Int) -> ProtoEnumValue { named(raw, authNames) }

    // MARK: proto-ver

    /// The `proto-ver` answer: JSON such as `{"prov":{"ver":"v1.1","sec_ver":1,"cap":["wifi_scan","no_pop"]}}`.
    public struct Version: ProfileMessage, Hashable {
        public var text: String
        public var version: String?
        public var securityVersion: Int?
        public var capabilities: [String]

        public init(text: String, version: String?, securityVersion: Int?, capabilities: [String]) {
            self.text = text
            self.version = version
            self.securityVersion = securityVersion
            self.capabilities = capabilities
        }

        public var noPoP: Bool { capabilities.contains("no_pop") }
    }

    // MARK: prov-session

    /// SessionData: the security scheme and its handshake message.
    public struct SessionMessage: ProfileMessage, Hashable {
        public enum Payload: Sendable, Hashable {
            case none
            case sec0Command
            case sec0Response(status: ProtoEnumValue)
            /// Security 1: the phone's X25519 public key.
            case sec1Command0(clientPublicKey: [UInt8])
            case sec1Response0(status: ProtoEnumValue, devicePublicKey: [UInt8], deviceRandom: [UInt8])
            /// The device's public key encrypted with the session stream.
            case sec1Command1(clientVerifyData: [UInt8])
            case sec1Response1(status: ProtoEnumValue, deviceVerifyData: [UInt8])
            /// Security 2 (SRP6a): only the step is reported.
            case sec2(step: ProtoEnumValue)
        }

        public var securityVersion: ProtoEnumValue
        /// The message-type field (msg) of the sec0/sec1/sec2 payload.
        public var messageType: ProtoEnumValue?
        public var payload: Payload
        public var unknownFields: [UInt8] = []

        public init(securityVersion: ProtoEnumValue, messageType: ProtoEnumValue?, payload: Payload, unknownFields: [UInt8] = []) {
            self.securityVersion = securityVersion
            self.messageType = messageType
            self.payload = payload
            self.unknownFields = unknownFields
        }

        /// A session message with its scheme and message type filled in from the payload.
        public init(_ payload: Payload) {
            let (scheme, type, names): (Int, Int?, [String]) = switch payload {
            case .none: (0, nil, [])
            case .sec0Command: (0, 0, ESPProvisioning.sec0TypeNames)
            case .sec0Response: (0, 1, ESPProvisioning.sec0TypeNames)
            case .sec1Command0: (1, 0, ESPProvisioning.sec1TypeNames)
            case .sec1Response0: (1, 1, ESPProvisioning.sec1TypeNames)
            case .sec1Command1: (1, 2, ESPProvisioning.sec1TypeNames)
            case .sec1Response1: (1, 3, ESPProvisioning.sec1TypeNames)
            case .sec2(let step): (2, step.raw, ESPProvisioning.sec2TypeNames)
            }
            self.init(securityVersion: ESPProvisioning.named(scheme, ESPProvisioning.secSchemeNames),
                      messageType: type.map { ESPProvisioning.named($0, names) }, payload: payload)
        }
    }

    // MARK: prov-config

    public struct ConnectedState: Sendable, Hashable {
        public var ip4Address: String
        public var authMode: ProtoEnumValue
        public var ssid: [UInt8]
        public var bssid: [UInt8]
        public var channel: Int32

        public init(ip4Address: String, authMode: ProtoEnumValue, ssid: [UInt8], bssid: [UInt8], channel: Int32) {
            self.ip4Address = ip4Address
            self.authMode = authMode
            self.ssid = ssid
            self.bssid = bssid
            self.channel = channel
        }

        public var ssidText: String { ProtocolText.decode(ssid).text }
    }

    public struct StatusReport: Sendable, Hashable {
        public enum Detail: Sendable, Hashable {
            case none
            case failReason(ProtoEnumValue)
            case connected(ConnectedState)
            case attemptFailed(attemptsRemaining: UInt32)
        }

        public var status: ProtoEnumValue
        /// proto3: absent means 0, Connected.
        public var stationState: ProtoEnumValue
        public var detail: Detail

        public init(status: ProtoEnumValue, stationState: ProtoEnumValue, detail: Detail) {
            self.status = status
            self.stationState = stationState
            self.detail = detail
        }
    }

    public struct SetConfig: Sendable, Hashable {
        public var ssid: [UInt8]
        public var passphrase: Secret
        public var bssid: [UInt8]
        public var channel: Int32

        public init(ssid: [UInt8], passphrase: Secret, bssid: [UInt8] = [], channel: Int32 = 0) {
            self.ssid = ssid
            self.passphrase = passphrase
            self.bssid = bssid
            self.channel = channel
        }

        public init(ssid: String, passphrase: String, bssid: [UInt8] = [], channel: Int32 = 0) {
            self.init(ssid: Array(ssid.utf8), passphrase: Secret(Array(passphrase.utf8), label: "Wi-Fi password"), bssid: bssid, channel: channel)
        }

        public var ssidText: String { ProtocolText.decode(ssid).text }
    }

    /// WiFiConfigPayload.
    public struct ConfigMessage: ProfileMessage, Hashable {
        public enum Payload: Sendable, Hashable {
            case none
            case getStatus
            case status(StatusReport)
            case setConfig(SetConfig)
            case setConfigResponse(status: ProtoEnumValue)
            case applyConfig
            case applyConfigResponse(status: ProtoEnumValue)
        }

        public var messageType: ProtoEnumValue
        public var payload: Payload
        public var unknownFields: [UInt8] = []

        public init(messageType: ProtoEnumValue, payload: Payload, unknownFields: [UInt8] = []) {
            self.messageType = messageType
            self.payload = payload
            self.unknownFields = unknownFields
        }

        public init(_ payload: Payload) {
            let type = switch payload {
            case .none, .getStatus: 0
            case .status: 1
            case .setConfig: 2
            case .setConfigResponse: 3
            case .applyConfig: 4
            case .applyConfigResponse: 5
            }
            self.init(messageType: ESPProvisioning.named(type, ESPProvisioning.configTypeNames), payload: payload)
        }
    }

    // MARK: prov-scan

    public struct ScanEntry: Sendable, Hashable {
        public var ssid: [UInt8]
        public var channel: UInt32
        public var rssi: Int32
        public var bssid: [UInt8]
        public var auth: ProtoEnumValue

        public init(ssid: [UInt8], channel: UInt32, rssi: Int32, bssid: [UInt8], auth: ProtoEnumValue) {
            self.ssid = ssid
            self.channel = channel
            self.rssi = rssi
            self.bssid = bssid
            self.auth = auth
        }

        public var ssidText: String { ProtocolText.decode(ssid).text }
    }

    /// WiFiScanPayload.
    public struct ScanMessage: ProfileMessage, Hashable {
        public enum Payload: Sendable, Hashable {
            case none
            case start(blocking: Bool, passive: Bool, groupChannels: UInt32, periodMs: UInt32)
            case startResponse
            case status
            case statusResponse(finished: Bool, resultCount: UInt32)
            case result(startIndex: UInt32, count: UInt32)
            case resultResponse([ScanEntry])
        }

        public var messageType: ProtoEnumValue
        public var status: ProtoEnumValue
        public var payload: Payload
        public var unknownFields: [UInt8] = []

        public init(messageType: ProtoEnumValue, status: ProtoEnumValue, payload: Payload, unknownFields: [UInt8] = []) {
            self.messageType = messageType
            self.status = status
            self.payload = payload
            self.unknownFields = unknownFields
        }

        public init(_ payload: Payload, status: Int = 0) {
            let type = switch payload {
            case .none, .start: 0
            case .startResponse: 1
            case .status: 2
            case .statusResponse: 3
            case .result: 4
            case .resultResponse: 5
            }
            self.init(messageType: ESPProvisioning.named(type, ESPProvisioning.scanTypeNames), status: ESPProvisioning.status(status), payload: payload)
        }
    }

    // MARK: what could not be read

    /// A payload on an encrypted endpoint that could not be decrypted, or an endpoint whose
    /// messages GATTLab does not decode (prov-ctrl, custom endpoints).
    public struct OpaquePayload: ProfileMessage, Hashable {
        public var endpoint: String
        /// 1 or 2 when encrypted by that security scheme; nil when not encrypted (or unknown).
        public var security: Int?
        public var encrypted: Bool
        public var length: Int
        /// Why it stays opaque, for people: "no --esp-pop and --esp-client-key given".
        public var reason: String

        public init(endpoint: String, security: Int?, encrypted: Bool, length: Int, reason: String) {
            self.endpoint = endpoint
            self.security = security
            self.encrypted = encrypted
            self.length = length
            self.reason = reason
        }
    }
}
