import ATT
import Capture
import Emulator
import Profiles
import Replay

/// ESP-IDF provisioning in replay: the configuration rebuilt for `--set`, and the Wi-Fi world
/// (scan results, the configured network, the join's outcome) read from a recording.
extension ESPProvisioningProtocol: ReplayingProtocol {
    public static func rebuildCredentials(_ recorded: [UInt8], format: String, redacted: Bool,
                                          settings: CredentialSettings) throws(CredentialRebuildError) -> [UInt8]? {
        guard format == "esp-set-config" else { return nil }
        if redacted, settings.password == nil { throw .needs("password") }
        guard settings.ssid != nil || settings.password != nil else { return recorded }
        guard var message = ESPProvisioning.ConfigMessage.decode(recorded).0, case .setConfig(var c) = message.payload else {
            throw .undecodable("the recorded ESP config message")
        }
        if let password = settings.password { c.passphrase = Secret(password, label: "Wi-Fi password") }
        if let ssid = settings.ssid { c.ssid = ssid }
        message.payload = .setConfig(c)
        return message.encode()
    }

    public static func worldReader() -> (any RecordedWorldReading)? { ProvisioningWorld() }

    /// Scan results read from the scan endpoint, the configured network written to the config
    /// endpoint and its status read back. Security 0, or security 1 decrypted: ciphertext does
    /// not decode.
    struct ProvisioningWorld: RecordedWorldReading {
        mutating func read(_ step: RecordedWorldStep, into world: inout RecordedWorld) -> Bool {
            switch (step.characteristic, step.step.action) {
            case (ESPProvisioning.Endpoint.scan.defaultUUID, .read):
                guard let answer = step.answer, case .resultResponse(let entries)? = ESPProvisioning.ScanMessage.decode(answer).0?.payload else { return false }
                for e in entries {
                    world.add(ssid: e.ssid, bssid: e.bssid, channel: e.channel, band: nil, auth: e.auth.raw, rssi: e.rssi)
                }
                return true
            case (ESPProvisioning.Endpoint.config.defaultUUID, .write):
                // The plaintext as recorded (its password '*' when redacted; a security 1 value is
                // ciphertext, so the replay's values cannot stand in for it).
                let message = (step.step.plain ?? step.step.value).flatMap(Replay.Hex.bytes) ?? step.sent ?? []
                guard case .setConfig(let c)? = ESPProvisioning.ConfigMessage.decode(message).0?.payload else { return false }
                world.ssid = step.settings["ssid"].map { Array($0.utf8) } ?? c.ssid
                // A redacted plaintext holds '*' for the password: the one --set gives is it.
                world.password = step.redacted ? step.settings["password"].map { Array($0.utf8) } : c.passphrase.unsafeBytes
                return false
            case (ESPProvisioning.Endpoint.config.defaultUUID, .read):
                guard let answer = step.answer, case .status(let report)? = ESPProvisioning.ConfigMessage.decode(answer).0?.payload else { return false }
                switch report.detail {
                case .connected: world.join = .joined
                case .failReason(let reason): world.join = reason.raw == 1 ? .notFound : .wrongPassword
                case .none, .attemptFailed: break
                }
                return false
            default:
                return false
            }
        }
    }
}
