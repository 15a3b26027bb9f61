import ATT
import Capture
import GATT
import HCI
import Profiles

/// Text and JSON for device-protocol events. Secrets (the Wi-Fi password) are redacted unless
/// revealed, like every other output.
extension EventRenderer {
    func render(_ events: [ProfileEvent], record: CaptureRecord) {
        for e in events {
            guard !attOnly, passesProfile(e) else { continue }
            json ? jsonProfile(e, record) : textProfile(e, record)
        }
    }

    private func passesProfile(_ e: ProfileEvent) -> Bool {
        guard passesConnection(e.connection) else { return false }
        if !handleFilter.isEmpty, !handleFilter.contains(e.handle) { return false }
        if !uuidFilter.isEmpty { return uuidFilter.contains { $0.matches(e.characteristic) } }
        return true
    }

    static func summary(_ message: ProfileMessage?, reveal: Bool) -> String {
        switch message {
        case .otaCredentials(let c)?:
            return "OTA credentials SSID \"\(c.ssidText)\" password \(reveal ? "\"\(ProtocolTextForDisplay.text(c.password.unsafeBytes))\"" : c.password.redacted)"
        case .otaURL(let u)?:
            return "OTA URL \(u.text)"
        case .otaControl(let c)?:
            return "OTA control \(c.command?.description ?? "0x" + Hex.string([c.rawCommand])) (parameter \(c.parameter))"
        case .otaStatus(let s)?:
            var t = "OTA status \(s.state?.description ?? "state 0x" + Hex.string([s.rawState]))"
            if s.rawError != 0 || s.state == .error {
                t += " error \(s.error?.description ?? "0x" + Hex.string([s.rawError]))"
                if let r = s.error?.retryable { t += r ? " (retryable)" : " (not retryable)" }
            }
            if s.state == .downloading || s.progress > 0 || s.totalKB > 0 {
                t += " \(s.progress)% \(s.downloadedKB)/\(s.totalKB) KB"
            }
            if s.rssi != 0 { t += " RSSI \(s.rssi) dBm" }
            return t
        case .scanRequest(let r)?:
            return "Scan request \"\(ProtocolTextForDisplay.text(r))\""
        case .scanResult(let r)?:
            let list = r.networks.map { "\($0.ssidText) (\($0.rssi))" }.joined(separator: ", ")
            return "Scan result \(r.complete ? "" : "TRUNCATED ")\(r.networks.count) networks in \(r.chunks) notifications\(list.isEmpty ? "" : ": " + list)"
        case nil:
            return "(not decoded)"
        }
    }

    private func textProfile(_ e: ProfileEvent, _ record: CaptureRecord) {
        var body = style.cyan(Self.summary(e.message, reveal: reveal))
        if e.firstFrame != e.frame { body += style.dim(" (from frame \(e.firstFrame))") }
        for p in e.problems { body += " " + style.red("[\(p.id): \(p.message)]") }
        lineForProfile(record, e.connection, body)
    }

    private func jsonProfile(_ e: ProfileEvent, _ record: CaptureRecord) {
        jsonLineForProfile(record, e.connection) { o in
            o.string("protocol", e.protocolName)
            o.string("kind", e.kind)
            o.int("handle", Int(e.handle))
            if e.firstFrame != e.frame { o.int("firstFrame", e.firstFrame) }
            switch e.message {
            case .otaCredentials(let c)?:
                o.string("ssid", c.ssidText)
                o.string("password", self.reveal ? ProtocolTextForDisplay.text(c.password.unsafeBytes) : c.password.redacted)
            case .otaURL(let u)?:
                o.string("url", u.text)
                if let s = u.scheme { o.string("scheme", s) }
            case .otaControl(let c)?:
                o.int("command", Int(c.rawCommand))
                if let name = c.command?.description { o.string("commandName", name) }
                o.int("parameter", Int(c.parameter))
            case .otaStatus(let s)?:
                o.int("state", Int(s.rawState))
                if let n = s.state?.description { o.string("stateName", n) }
                o.int("error", Int(s.rawError))
                if let n = s.error?.description { o.string("errorName", n) }
                if let r = s.error?.retryable { o.bool("retryable", r) }
                o.int("progress", Int(s.progress))
                o.int("downloadedKB", Int(s.downloadedKB))
                o.int("totalKB", Int(s.totalKB))
                o.int("rssi", Int(s.rssi))
            case .scanRequest(let r)?:
                o.string("request", ProtocolTextForDisplay.text(r))
            case .scanResult(let r)?:
                o.bool("complete", r.complete)
                o.int("chunks", r.chunks)
                o.raw("networks", "[" + r.networks.map { "{\"ssid\":\(JSONText.quote($0.ssidText)),\"rssi\":\($0.rssi)}" }.joined(separator: ",") + "]")
            case nil:
                break
            }
            if !e.problems.isEmpty {
                o.raw("problems", "[" + e.problems.map { "{\"id\":\(JSONText.quote($0.id)),\"message\":\(JSONText.quote($0.message))}" }.joined(separator: ",") + "]")
            }
        }
    }
}

/// Bytes as text for display: UTF-8 where valid, control characters escaped.
enum ProtocolTextForDisplay {
    static func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self).unicodeScalars.map { s -> String in
            s.value < 0x20 || s.value == 0x7F ? "\\x" + Hex.string([UInt8(s.value)]) : String(s)
        }.joined()
    }
}

/// JSON string quoting for the few fields built as text.
enum JSONText {
    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 { out += "\\u00" + Hex.string([UInt8(u.value)]) } else { out.unicodeScalars.append(u) }
            }
        }
        return out + "\""
    }
}
