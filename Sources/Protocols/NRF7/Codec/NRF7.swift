import ATT
import Capture
import Profiles

/// Nordic nRF7 Wi-Fi provisioning over BLE (PROTOCOLS.md section 5): protobuf (proto2) messages
/// on three characteristics. Info is read; Request is written to the Control Point, which
/// indicates the Response; Result is notified on Data Out.
///
/// The message types here are GATTLab's own small values, filled from the generated protobuf
/// code (Generated/, from Protos/nrf7) so the rest of the project never sees SwiftProtobuf.
/// Unknown enum numbers and unknown fields are kept, reported and encoded again.
public enum NRF7 {
    public static let service = BluetoothUUID(high: 0x1438_7800_130C_49E7, low: 0xB877_2881_C89C_B258)
    public static let info = BluetoothUUID(high: 0x1438_7801_130C_49E7, low: 0xB877_2881_C89C_B258)
    public static let controlPoint = BluetoothUUID(high: 0x1438_7802_130C_49E7, low: 0xB877_2881_C89C_B258)
    public static let dataOut = BluetoothUUID(high: 0x1438_7803_130C_49E7, low: 0xB877_2881_C89C_B258)

    public static let maxSSIDLength = 32
    public static let maxPassphraseLength = 64
    public static let bssidLength = 6

    static let opCodeNames = ["RESERVED", "GET_STATUS", "START_SCAN", "STOP_SCAN", "SET_CONFIG", "FORGET_CONFIG"]
    static let statusNames = ["SUCCESS", "INVALID_ARGUMENT", "INVALID_PROTO", "INTERNAL_ERROR"]
    static let stateNames = ["DISCONNECTED", "AUTHENTICATION", "ASSOCIATION", "OBTAINING_IP", "CONNECTED", "CONNECTION_FAILED"]
    static let reasonNames = ["AUTH_ERROR", "NETWORK_NOT_FOUND", "TIMEOUT", "FAIL_IP", "FAIL_CONN"]
    static let authNames = ["OPEN", "WEP", "WPA_PSK", "WPA2_PSK", "WPA_WPA2_PSK", "WPA2_ENTERPRISE", "WPA3_PSK"]
    static let bandNames = ["ANY", "2.4 GHz", "5 GHz"]

    static func named(_ raw: Int, _ names: [String]) -> ProtoEnumValue {
        ProtoEnumValue(raw: raw, name: names.indices.contains(raw) ? names[raw] : nil)
    }

    public static func opCode(_ raw: Int) -> ProtoEnumValue { named(raw, opCodeNames) }
    public static func status(_ raw: Int) -> ProtoEnumValue { named(raw, statusNames) }
    public static func state(_ raw: Int) -> ProtoEnumValue { named(raw, stateNames) }
    public static func reason(_ raw: Int) -> ProtoEnumValue { named(raw, reasonNames) }
    public static func auth(_ raw: Int) -> ProtoEnumValue { named(raw, authNames) }
    public static func band(_ raw: Int) -> ProtoEnumValue { named(raw, bandNames) }

    /// WifiInfo: one network.
    public struct WifiInfo: Sendable, Hashable {
        public var ssid: [UInt8]?
        public var bssid: [UInt8]?
        public var band: ProtoEnumValue?
        public var channel: UInt32?
        public var auth: ProtoEnumValue?
        /// Fields this decoder does not know, as wire bytes (kept for encoding).
        public var unknownFields: [UInt8] = []

        public init(ssid: [UInt8]? = nil, bssid: [UInt8]? = nil, band: ProtoEnumValue? = nil, channel: UInt32? = nil,
                    auth: ProtoEnumValue? = nil, unknownFields: [UInt8] = []) {
            self.ssid = ssid
            self.bssid = bssid
            self.band = band
            self.channel = channel
            self.auth = auth
            self.unknownFields = unknownFields
        }

        public init(ssid: String, bssid: [UInt8]? = nil, band: Int? = nil, channel: UInt32? = nil, auth: Int? = nil) {
            self.init(ssid: Array(ssid.utf8), bssid: bssid, band: band.map(NRF7.band), channel: channel, auth: auth.map(NRF7.auth))
        }

        public var ssidText: String? { ssid.map { ProtocolText.decode($0).text } }
        /// `AA:BB:CC:DD:EE:FF`.
        public var bssidText: String? { bssid.map(\.macText) }
    }

    /// ScanParams: how the device should scan (also reported back as DeviceStatus.scan_info).
    public struct ScanParams: Sendable, Hashable {
        public var band: ProtoEnumValue?
        public var passive: Bool?
        public var periodMs: UInt32?
        public var groupChannels: UInt32?
        public var unknownFields: [UInt8] = []

        public init(band: ProtoEnumValue? = nil, passive: Bool? = nil, periodMs: UInt32? = nil, groupChannels: UInt32? = nil,
                    unknownFields: [UInt8] = []) {
            self.band = band
            self.passive = passive
            self.periodMs = periodMs
            self.groupChannels = groupChannels
            self.unknownFields = unknownFields
        }
    }

    /// WifiConfig: the credentials SET_CONFIG carries. The passphrase is a `Secret`.
    public struct WifiConfig: Sendable, Hashable {
        public var wifi: WifiInfo?
        public var passphrase: Secret?
        public var volatileMemory: Bool?
        public var certs: [UInt8]?
        public var unknownFields: [UInt8] = []

        public init(wifi: WifiInfo? = nil, passphrase: Secret? = nil, volatileMemory: Bool? = nil, certs: [UInt8]? = nil,
                    unknownFields: [UInt8] = []) {
            self.wifi = wifi
            self.passphrase = passphrase
            self.volatileMemory = volatileMemory
            self.certs = certs
            self.unknownFields = unknownFields
        }

        public init(wifi: WifiInfo?, passphrase: String, volatileMemory: Bool? = nil) {
            self.init(wifi: wifi, passphrase: Secret(Array(passphrase.utf8), label: "Wi-Fi password"), volatileMemory: volatileMemory)
        }
    }

    /// DeviceStatus, in a GET_STATUS response.
    public struct DeviceStatus: Sendable, Hashable {
        public var state: ProtoEnumValue?
        public var provisioningInfo: WifiInfo?
        /// ConnectionInfo.ip4_addr: four bytes.
        public var ip4Address: [UInt8]?
        public var hasConnectionInfo: Bool
        public var scanInfo: ScanParams?
        public var unknownFields: [UInt8] = []
        public var connectionInfoUnknownFields: [UInt8] = []

        public init(state: ProtoEnumValue? = nil, provisioningInfo: WifiInfo? = nil, ip4Address: [UInt8]? = nil,
                    hasConnectionInfo: Bool? = nil, scanInfo: ScanParams? = nil, unknownFields: [UInt8] = [],
                    connectionInfoUnknownFields: [UInt8] = []) {
            self.state = state
            self.provisioningInfo = provisioningInfo
            self.ip4Address = ip4Address
            self.hasConnectionInfo = hasConnectionInfo ?? (ip4Address != nil)
            self.scanInfo = scanInfo
            self.unknownFields = unknownFields
            self.connectionInfoUnknownFields = connectionInfoUnknownFields
        }

        /// Dotted quad when the address has four bytes, else hex.
        public var ip4Text: String? {
            guard let a = ip4Address else { return nil }
            return a.count == 4 ? a.map(String.init).joined(separator: ".") : Hex.string(a)
        }
    }

    /// ScanRecord, in a Result: a network found and its RSSI.
    public struct ScanRecord: Sendable, Hashable {
        public var wifi: WifiInfo?
        public var rssi: Int32?
        public var unknownFields: [UInt8] = []

        public init(wifi: WifiInfo? = nil, rssi: Int32? = nil, unknownFields: [UInt8] = []) {
            self.wifi = wifi
            self.rssi = rssi
            self.unknownFields = unknownFields
        }
    }

    /// Info (read from ...801): the protocol version.
    public struct Info: ProfileMessage, Hashable {
        public var version: UInt32?
        public var unknownFields: [UInt8] = []

        public init(version: UInt32? = nil, unknownFields: [UInt8] = []) {
            self.version = version
            self.unknownFields = unknownFields
        }
    }

    /// Request (written to the Control Point).
    public struct Request: ProfileMessage, Hashable {
        public var opCode: ProtoEnumValue?
        public var scanParams: ScanParams?
        public var config: WifiConfig?
        public var unknownFields: [UInt8] = []

        public init(opCode: ProtoEnumValue? = nil, scanParams: ScanParams? = nil, config: WifiConfig? = nil, unknownFields: [UInt8] = []) {
            self.opCode = opCode
            self.scanParams = scanParams
            self.config = config
            self.unknownFields = unknownFields
        }
    }

    /// Response (indicated on the Control Point).
    public struct Response: ProfileMessage, Hashable {
        public var requestOpCode: ProtoEnumValue?
        public var status: ProtoEnumValue?
        public var deviceStatus: DeviceStatus?
        public var unknownFields: [UInt8] = []

        public init(requestOpCode: ProtoEnumValue? = nil, status: ProtoEnumValue? = nil, deviceStatus: DeviceStatus? = nil,
                    unknownFields: [UInt8] = []) {
            self.requestOpCode = requestOpCode
            self.status = status
            self.deviceStatus = deviceStatus
            self.unknownFields = unknownFields
        }
    }

    /// Result (notified on Data Out): a scan record or a connection state change.
    public struct Result: ProfileMessage, Hashable {
        public var scanRecord: ScanRecord?
        public var state: ProtoEnumValue?
        public var reason: ProtoEnumValue?
        public var unknownFields: [UInt8] = []

        public init(scanRecord: ScanRecord? = nil, state: ProtoEnumValue? = nil, reason: ProtoEnumValue? = nil, unknownFields: [UInt8] = []) {
            self.scanRecord = scanRecord
            self.state = state
            self.reason = reason
            self.unknownFields = unknownFields
        }
    }
}
