import Capture

/// One network from a device's Wi-Fi scan, in the same shape whichever protocol reported it
/// (the sensor's `SSID,RSSI` lines, nRF7 ScanRecord, ESP-IDF WiFiScanResult): what JSON output
/// and the diagnoses use. Fields a protocol does not carry are nil. Each protocol makes them from
/// its own records (an initializer in its folder).
public struct WiFiNetwork: Sendable, Hashable {
    public var ssid: [UInt8]
    public var bssid: [UInt8]?
    public var channel: Int?
    public var rssi: Int?
    /// The auth mode's name (`WPA2_PSK`), or `unknown(N)`.
    public var authMode: String?
    /// `2.4 GHz` or `5 GHz`: as reported, else from the channel.
    public var band: String?

    public init(ssid: [UInt8], bssid: [UInt8]? = nil, channel: Int? = nil, rssi: Int? = nil, authMode: String? = nil, band: String? = nil) {
        self.ssid = ssid
        self.bssid = bssid.flatMap { $0.isEmpty ? nil : $0 }
        self.channel = channel.flatMap { $0 == 0 ? nil : $0 }
        self.rssi = rssi
        self.authMode = authMode
        self.band = band ?? self.channel.flatMap(Self.band(ofChannel:))
    }

    public var ssidText: String { ProtocolText.display(ssid) }
    /// `AA:BB:CC:DD:EE:FF`.
    public var bssidText: String? { bssid.map { $0.map { Hex.string([$0]).uppercased() }.joined(separator: ":") } }
    public var is5GHz: Bool { band == "5 GHz" }
    public var is24GHz: Bool { band == "2.4 GHz" }

    /// Channels 1-14 are 2.4 GHz, 32-177 are 5 GHz (6 GHz numbers overlap both: the protocols
    /// here name no 6 GHz band).
    public static func band(ofChannel c: Int) -> String? {
        switch c {
        case 1...14: "2.4 GHz"
        case 32...177: "5 GHz"
        default: nil
        }
    }
}
