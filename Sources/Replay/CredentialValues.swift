import ATT
import Capture
import Profiles

/// The values in a script that carry credentials: how to find the secret bytes in them (to
/// overwrite with '*' when extracting without `--reveal-secrets`) and how to rebuild them with the
/// values of `--set ssid=... --set password=... --set url=...` at run time, so a customer's
/// recorded credentials never reach a lab device unless asked for.
enum CredentialValues {
    static let filler: UInt8 = 0x2A  // '*'

    /// The format of a value on `characteristic` (named `endpoint` by its user description), with
    /// its secret bytes and SSID, or nil when it carries no credentials.
    static func classify(_ bytes: [UInt8], characteristic: BluetoothUUID, endpoint: String?)
        -> (format: String, fields: [String], secret: [Range<Int>], ssid: [UInt8]?)? {
        if characteristic == SpeakerOTA.credentials {
            guard let nul = bytes.firstIndex(of: 0) else { return ("speaker-credentials", ["ssid", "password"], [0..<bytes.count], nil) }
            return ("speaker-credentials", ["ssid", "password"], [(nul + 1)..<bytes.count], Array(bytes[..<nul]))
        }
        if characteristic == SpeakerOTA.url {
            let url = SpeakerOTA.FirmwareURL(bytes: bytes)
            return ("speaker-url", ["url"], url.secretParts.map(\.range), nil)
        }
        if characteristic == NRF7.controlPoint {
            // Request.config (11) . WifiConfig.passphrase (2); SSID at config.wifi (1) . ssid (1).
            guard let range = ProtoWire.bytesField([11, 2], in: bytes) else { return nil }
            let ssid = ProtoWire.bytesField([11, 1, 1], in: bytes).map { Array(bytes[$0]) }
            return ("nrf7-set-config", ["ssid", "password"], [range], ssid)
        }
        if characteristic == ESPProvisioning.Endpoint.config.defaultUUID || endpoint == ESPProvisioning.Endpoint.config.rawValue {
            // WiFiConfigPayload.cmd_set_config (12) . passphrase (2), in the clear (security 0).
            guard case .setConfig(let c)? = ESPProvisioning.ConfigMessage.decode(bytes).0?.payload,
                  let range = ProtoWire.bytesField([12, 2], in: bytes) else { return nil }
            return ("esp-set-config", ["ssid", "password"], [range], c.ssid)
        }
        return nil
    }

    /// `bytes` with the secret ranges overwritten.
    static func redact(_ bytes: [UInt8], _ ranges: [Range<Int>]) -> [UInt8] {
        var out = bytes
        for r in ranges where r.lowerBound >= 0 && r.upperBound <= out.count {
            for i in r { out[i] = filler }
        }
        return out
    }

    /// The value to send: the recorded one with `settings` applied. Throws when the recorded secret
    /// was redacted and no `--set` gives it, or when the format's codec cannot rebuild the value.
    static func rebuild(_ recorded: [UInt8], _ field: ReplayStep.CredentialField, settings: [String: String],
                        step: Int) throws(ReplayError) -> [UInt8] {
        let ssid = settings["ssid"].map { Array($0.utf8) }
        let password = settings["password"].map { Array($0.utf8) }
        func need(_ name: String) throws(ReplayError) {
            throw .usage("step \(step) writes \(field.format) whose \(name) was redacted at extraction; give it with --set \(name)=...")
        }
        switch field.format {
        case "speaker-credentials":
            if field.redacted, password == nil { try need("password") }
            guard let nul = recorded.firstIndex(of: 0) else {
                guard let password else { return recorded }
                return (ssid ?? []) + [0] + password
            }
            return (ssid ?? Array(recorded[..<nul])) + [0] + (password ?? Array(recorded[(nul + 1)...]))
        case "speaker-url":
            if let url = settings["url"] { return Array(url.utf8) }
            if field.redacted { try need("url") }
            return recorded
        case "nrf7-set-config":
            if field.redacted, password == nil { try need("password") }
            guard ssid != nil || password != nil else { return recorded }
            guard var request = NRF7.Request.decode(recorded).0, var config = request.config else {
                throw .usage("step \(step): the recorded nRF7 request does not decode, so --set cannot rebuild it")
            }
            if let password { config.passphrase = Secret(password, label: "Wi-Fi password") }
            if let ssid {
                var wifi = config.wifi ?? NRF7.WifiInfo()
                wifi.ssid = ssid
                config.wifi = wifi
            }
            request.config = config
            return request.encode()
        case "esp-set-config":
            if field.redacted, password == nil { try need("password") }
            guard ssid != nil || password != nil else { return recorded }
            guard var message = ESPProvisioning.ConfigMessage.decode(recorded).0, case .setConfig(var c) = message.payload else {
                throw .usage("step \(step): the recorded ESP config message does not decode, so --set cannot rebuild it")
            }
            if let password { c.passphrase = Secret(password, label: "Wi-Fi password") }
            if let ssid { c.ssid = ssid }
            message.payload = .setConfig(c)
            return message.encode()
        default:
            throw .usage("step \(step): unknown credentials format '\(field.format)'")
        }
    }
}
