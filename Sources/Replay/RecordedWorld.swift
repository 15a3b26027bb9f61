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
    /// values the replay will send: `ReplayRunner.values()`). Nil when the recording shows no Wi-Fi.
    public static func from(_ script: SessionScript, values: [Int: [UInt8]], settings: [String: String] = [:]) -> RecordedWorld? {
        var world = RecordedWorld()
        var sensor = SensorScan.Joiner()
        var sensorChunks = 0
        var scanned = false
        for (i, step) in script.steps.enumerated() {
            guard let text = step.characteristic, let uuid = BluetoothUUID(string: text) else { continue }
            // ESP-IDF security 1 steps carry their plaintext when the session was decrypted.
            let answer = (step.expect?.plain ?? step.expect?.value).flatMap(Hex.bytes)
            // The world keeps the recorded password, so that `--set password=...` with another
            // one meets the recorded access point and fails as a changed password would; a
            // redacted script's password is known only from what the replay sends.
            let sent = step.credentials?.redacted == true || script.redacted ? values[i] : (step.plain ?? step.value).flatMap(Hex.bytes)
            switch (uuid, step.action) {
            case (SensorScan.characteristic, .notification):
                if let answer, !sensor.complete {
                    sensor.add(answer)
                    sensorChunks += 1
                }
            case (NRF7.dataOut, .notification):
                guard let answer, let r = NRF7.Result.decode(answer).0 else { continue }
                if let record = r.scanRecord, let wifi = record.wifi, let ssid = wifi.ssid {
                    scanned = true
                    world.add(ssid: ssid, bssid: wifi.bssid, channel: wifi.channel, band: wifi.band?.raw,
                              auth: wifi.auth?.raw, rssi: record.rssi)
                }
                if let state = r.state {
                    if state.raw == 4 { world.join = .joined }
                    if state.raw == 5 || r.reason != nil {
                        world.join = switch r.reason?.raw { case 0?: .wrongPassword; case 1?: .notFound; default: world.join }
                    }
                }
            case (NRF7.controlPoint, .write):
                guard let sent, let request = NRF7.Request.decode(sent).0, let config = request.config else { continue }
                world.ssid = config.wifi?.ssid ?? world.ssid
                world.password = config.passphrase?.unsafeBytes ?? world.password
            case (ESPProvisioning.Endpoint.scan.defaultUUID, .read):
                // Security 0, or security 1 decrypted; ciphertext does not decode.
                guard let answer, case .resultResponse(let entries)? = ESPProvisioning.ScanMessage.decode(answer).0?.payload else { continue }
                scanned = true
                for e in entries {
                    world.add(ssid: e.ssid, bssid: e.bssid, channel: e.channel, band: nil, auth: e.auth.raw, rssi: e.rssi)
                }
            case (ESPProvisioning.Endpoint.config.defaultUUID, .write):
                // The plaintext as recorded (its password '*' when redacted; a security 1 value is
                // ciphertext, so the replay's `values` cannot stand in for it).
                let message = (step.plain ?? step.value).flatMap(Hex.bytes) ?? sent ?? []
                guard case .setConfig(let c)? = ESPProvisioning.ConfigMessage.decode(message).0?.payload else { continue }
                world.ssid = settings["ssid"].map { Array($0.utf8) } ?? c.ssid
                // A redacted plaintext holds '*' for the password: the one --set gives is it.
                let redacted = step.credentials?.redacted == true || script.redacted
                world.password = redacted ? settings["password"].map { Array($0.utf8) } : c.passphrase.unsafeBytes
            case (ESPProvisioning.Endpoint.config.defaultUUID, .read):
                guard let answer, case .status(let report)? = ESPProvisioning.ConfigMessage.decode(answer).0?.payload else { continue }
                switch report.detail {
                case .connected: world.join = .joined
                case .failReason(let reason): world.join = reason.raw == 1 ? .notFound : .wrongPassword
                case .none, .attemptFailed: break
                }
            default:
                continue
            }
        }
        if sensorChunks > 0 {
            scanned = true
            for n in sensor.response().networks {
                world.add(ssid: n.ssid, bssid: nil, channel: nil, band: nil, auth: nil, rssi: Int32(clamping: n.rssi))
            }
        }
        // A scan that found nothing is a world too: an emulated device in it finds nothing.
        return scanned || world.ssid != nil ? world : nil
    }

    private mutating func add(ssid: [UInt8], bssid: [UInt8]?, channel: UInt32?, band: Int?, auth: Int?, rssi: Int32?) {
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
