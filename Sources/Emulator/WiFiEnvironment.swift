/// The Wi-Fi networks around an emulated device: what its scans find and what a join does.
/// Provisioning devices (nRF7, ESP-IDF) join for real in the emulation: the SSID must be in
/// range on a band the radio has, and the passphrase must match, or the join fails the way the
/// firmware reports it.
public struct WiFiEnvironment: Sendable, Hashable {
    public enum Band: Sendable, Hashable { case ghz2_4, ghz5 }

    /// WPA auth modes, numbered as both nRF7 and ESP-IDF number them (0 OPEN ... 6 WPA3_PSK).
    public enum Auth: Int, Sendable, Hashable {
        case open = 0, wep, wpaPSK, wpa2PSK, wpaWPA2PSK, wpa2Enterprise, wpa3PSK
    }

    public struct Network: Sendable, Hashable {
        public var ssid: String
        public var passphrase: String
        public var bssid: [UInt8]
        public var band: Band
        public var channel: UInt32
        public var auth: Auth
        public var rssi: Int32

        public init(ssid: String, passphrase: String, bssid: [UInt8], band: Band, channel: UInt32, auth: Auth, rssi: Int32) {
            self.ssid = ssid
            self.passphrase = passphrase
            self.bssid = bssid
            self.band = band
            self.channel = channel
            self.auth = auth
            self.rssi = rssi
        }
    }

    /// Why a join failed, in terms both protocols can express.
    public enum JoinFailure: Error, Sendable, Hashable {
        /// The 4-way handshake failed: wrong passphrase.
        case authentication
        /// No such SSID on a band the radio has.
        case notFound
    }

    public var networks: [Network]

    public init(networks: [Network]) { self.networks = networks }

    /// The scenarios' home network and its passphrase.
    public static let homeSSID = "HomeNet"
    public static let homePassphrase = "correct horse battery staple"
    /// A passphrase one letter off the home network's: the join fails on authentication.
    public static let wrongPassphrase = "correct horse battery stapler"

    /// A neighbourhood that is the same for the same seed: the home network on 2.4 GHz, its
    /// 5 GHz twin (same passphrase), and neighbours.
    public static func neighbourhood(seed: UInt64) -> WiFiEnvironment {
        var r = SeededRandom(seed: seed &+ 11)
        func bssid() -> [UInt8] {
            var b = (0..<6).map { _ in UInt8(truncatingIfNeeded: r.next()) }
            b[0] &= 0xFC  // unicast, globally administered
            return b
        }
        let list: [(String, Band, UInt32, Auth)] = [
            (homeSSID, .ghz2_4, 6, .wpa2PSK), ("HomeNet-5G", .ghz5, 36, .wpa2PSK),
            ("Office, 2nd floor", .ghz2_4, 1, .wpa2Enterprise), ("Café Olé", .ghz2_4, 11, .open),
            ("FRITZ!Box 7590 XY", .ghz2_4, 1, .wpaWPA2PSK), ("TP-Link_4F2A", .ghz2_4, 11, .wpa3PSK),
        ]
        let networks = list.map { ssid, band, channel, auth in
            Network(ssid: ssid, passphrase: ssid.hasPrefix("HomeNet") ? homePassphrase : "neighbour-\(r.below(10_000))",
                    bssid: bssid(), band: band, channel: channel, auth: auth, rssi: -38 - Int32(r.below(50)))
        }
        return WiFiEnvironment(networks: networks.sorted { $0.rssi > $1.rssi })
    }

    /// The networks a radio with these bands sees.
    public func visible(dualBand: Bool) -> [Network] {
        networks.filter { dualBand || $0.band == .ghz2_4 }
    }

    /// The result of joining `ssid` with `passphrase`: the network, or why not.
    public func join(ssid: [UInt8], passphrase: [UInt8], dualBand: Bool) -> Result<Network, JoinFailure> {
        guard let n = visible(dualBand: dualBand).first(where: { Array($0.ssid.utf8) == ssid }) else { return .failure(.notFound) }
        guard n.auth == .open || Array(n.passphrase.utf8) == passphrase else { return .failure(.authentication) }
        return .success(n)
    }
}
