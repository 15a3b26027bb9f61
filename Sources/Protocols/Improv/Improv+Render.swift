import Capture
import Profiles
import Report

// How `gattlab decode` shows Improv values. The password appears only with --reveal-secrets.

extension Improv.CurrentState: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String { "Improv state \(state)" }
    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) { json.enumValue("state", state) }
}

extension Improv.ErrorState: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String { "Improv error \(error)" }
    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) { json.enumValue("error", error) }
}

extension Improv.Capabilities: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String {
        "Improv capabilities 0x\(Hex.string([raw]))" + (names.isEmpty ? "" : " (\(names.joined(separator: ", ")))")
    }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.int("capabilities", Int(raw))
        json.strings("capabilityNames", names)
    }
}

extension Improv.Command: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String {
        var t = "Improv command \(command)"
        if let ssid { t += " SSID \"\(ProtocolText.display(ssid))\"" }
        if let password { t += " password " + password.decodeText(reveal: reveal) + " (plaintext on the link)" }
        if ssid == nil, !strings.isEmpty { t += " " + strings.map { "\"\(ProtocolText.display($0))\"" }.joined(separator: " ") }
        if checksum == .absent { t += " (no checksum)" }
        if writes > 1 { t += " (joined from \(writes) writes)" }
        return t
    }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.enumValue("command", command)
        json.string("ssid", ssid.map { ProtocolText.display($0) })
        json.string("password", password?.decodeJSONText(reveal: reveal))
        if ssid == nil, !strings.isEmpty { json.strings("strings", strings.map { ProtocolText.display($0) }) }
        json.string("checksum", checksum.rawValue)
        if writes > 1 { json.int("writes", writes) }
    }
}

extension Improv.Result: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String {
        var t = "Improv result to \(command)"
        if command.raw == 0x04 {
            t += endsScan ? " (end of networks)" : " " + networks.map { "\"\($0.ssidText)\" \($0.rssi.map { "\($0) dBm" } ?? "?") \($0.authMode ?? "")" }.joined(separator: ", ")
        } else if !strings.isEmpty {
            t += " " + strings.map { "\"\(ProtocolText.display($0))\"" }.joined(separator: " ")
        }
        if checksum == .absent { t += " (no checksum)" }
        return t
    }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.enumValue("command", command)
        json.strings("strings", strings.map { ProtocolText.display($0) })
        if command.raw == 0x04, !endsScan { json.raw("networks", NetworkJSON.array(networks)) }
        json.string("checksum", checksum.rawValue)
    }
}
