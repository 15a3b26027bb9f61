import ATT
import Emulator
import Profiles

/// The Wi-Fi world a recorded session shows: the networks the recorded device's scans found,
/// and what became of its join. A replay against an emulated device (`emu:NAME`) puts the
/// device in this world (`EmulatedDeviceSpec.inEnvironment`), so a session recorded next to
/// other access points than the emulator's neighbourhood finds the same networks, and a join
/// that succeeded (or failed) in the recording succeeds (or fails) again with the same password.
/// `--table emulator` leaves the emulator's own neighbourhood.
public struct RecordedWorld: Sendable, Hashable {
    public enum Join: String, Sendable, Hashable {
        case joined, wrongPassword = "wrong-password", notFound = "not-found"
    }

    /// The networks seen, by SSID, in the order first seen.
    public var networks: [WiFiEnvironment.Network] = []
    /// The SSID the phone gave the device, and the password it gave.
    public var ssid: [UInt8]?
    public var password: [UInt8]?
    /// What became of the join in the recording, when it says.
    public var join: Join?
    /// SSIDs already in `networks`.
    private var seen: Set<[UInt8]> = []

    /// Reads the world from a script's recorded answers and writes (for a redacted script, the
    /// values the replay will send: `ReplayRunner.values()`), each protocol its own steps
    /// (`ReplayingProtocol.worldReader`). Nil when the recording shows no Wi-Fi.
    public static func from(_ script: SessionScript, values: [Int: [UInt8]], settings: [String: String] = [:],
                            protocols: ProtocolSet) -> RecordedWorld? {
        var world = RecordedWorld()
        var readers = protocols.replaying.compactMap { $0.worldReader() }
        guard !readers.isEmpty else { return nil }
        var scanned = false
        for (i, step) in script.steps.enumerated() {
            guard let text = step.characteristic, let uuid = BluetoothUUID(string: text) else { continue }
            let redacted = step.credentials?.redacted == true || script.redacted
            let seen = RecordedWorldStep(
                step: step, characteristic: uuid,
                // ESP-IDF security 1 steps carry their plaintext when the session was decrypted.
                answer: (step.expect?.plain ?? step.expect?.value).flatMap(Hex.bytes),
                // The world keeps the recorded password, so that `--set password=...` with another
                // one meets the recorded access point and fails as a changed password would; a
                // redacted script's password is known only from what the replay sends.
                sent: redacted ? values[i] : (step.plain ?? step.value).flatMap(Hex.bytes),
                redacted: redacted, settings: settings)
            for r in readers.indices where readers[r].read(seen, into: &world) { scanned = true }
        }
        for r in readers.indices where readers[r].finish(into: &world) { scanned = true }
        // A scan that found nothing is a world too: an emulated device in it finds nothing.
        return scanned || world.ssid != nil ? world : nil
    }

    /// Adds a network seen (once per SSID, in the order first seen); what a protocol does not
    /// say (BSSID, channel, band, security, RSSI) is made up stably.
    public mutating func add(ssid: [UInt8], bssid: [UInt8]?, channel: UInt32?, band: Int?, auth: Int?, rssi: Int32?) {
        // A hostile capture may list a network thousands of times: a set, not a search.
        guard seen.insert(ssid).inserted else { return }
        let text = String(decoding: ssid, as: UTF8.self)
        let channel = channel ?? 6
        // nRF7 names the band (1 2.4 GHz, 2 5 GHz); otherwise the channel says it.
        let is5 = band.map { $0 == 2 } ?? (channel > 14)
        var b = bssid ?? []
        if b.count != 6 {
            // A stable, locally administered BSSID made from the SSID, for protocols that carry none.
            var h: UInt64 = 0xCBF2_9CE4_8422_2325
            for byte in ssid { h = (h ^ UInt64(byte)) &* 0x100_0000_01B3 }
            b = (0..<6).map { UInt8(truncatingIfNeeded: h >> (8 * UInt64($0))) }
            b[0] = (b[0] & 0xFC) | 0x02
        }
        networks.append(WiFiEnvironment.Network(ssid: text, passphrase: "", bssid: b, band: is5 ? .ghz5 : .ghz2_4,
                                                channel: channel, auth: auth.flatMap(WiFiEnvironment.Auth.init(rawValue:)) ?? .wpa2PSK,
                                                rssi: rssi ?? -60))
    }

    /// The world as an emulator environment: the recorded networks, the joined network's
    /// passphrase the recorded one when the recording joined (another when the recording's
    /// password was refused; the network absent when it was not found).
    public var environment: WiFiEnvironment {
        var list = networks
        if let ssid, let text = Optional(String(decoding: ssid, as: UTF8.self)) {
            let password = String(decoding: password ?? [], as: UTF8.self)
            if !list.contains(where: { $0.ssid == text }), join != .notFound {
                // The phone typed an SSID the scan did not list (a hidden network): it is there.
                var hidden = RecordedWorld()
                hidden.add(ssid: ssid, bssid: nil, channel: nil, band: nil, auth: nil, rssi: nil)
                list += hidden.networks
            }
            switch join {
            case .notFound?:
                list.removeAll { $0.ssid == text }
            case .wrongPassword?:
                for i in list.indices where list[i].ssid == text { list[i].passphrase = "not " + password }
            case .joined?, nil:
                for i in list.indices where list[i].ssid == text { list[i].passphrase = password }
            }
        }
        return WiFiEnvironment(networks: list)
    }
}
