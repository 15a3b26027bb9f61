import ATT
import Capture
import GATT
import HCI
import Profiles
import Report

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

    static func summary(_ message: (any ProfileMessage)?, reveal: Bool) -> String {
        switch message {
        case let c as SpeakerOTA.Credentials:
            return "OTA credentials SSID \"\(c.ssidText)\" password \(reveal ? "\"\(ProtocolText.display(c.password.unsafeBytes))\"" : c.password.redacted)"
        case let u as SpeakerOTA.FirmwareURL:
            return "OTA URL \(u.display(reveal: reveal))"
        case let c as SpeakerOTA.ControlCommand:
            return "OTA control \(c.command?.description ?? "0x" + Hex.string([c.rawCommand])) (parameter \(c.parameter))"
        case let s as SpeakerOTA.Status:
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
        case let r as SensorScan.Request:
            return "Scan request \"\(ProtocolText.display(r.bytes))\""
        case let r as SensorScan.Response:
            let list = r.networks.map { "\($0.ssidText) (\($0.rssi))" }.joined(separator: ", ")
            let style = r.markerStyle == "none" ? "" : ", markers \(r.markerStyle)" + (r.markerStyles.count > 1 ? " (\(r.markerStyles.joined(separator: ", ")))" : "")
            return "Scan result \(r.complete ? "" : "TRUNCATED ")\(r.networks.count) networks in \(r.chunks) notifications\(style)\(list.isEmpty ? "" : ": " + list)"
        case let i as NRF7.Info:
            return "nRF7 info version \(i.version.map(String.init) ?? "(none)")"
        case let r as NRF7.Request:
            return NRF7Text.request(r, reveal: reveal)
        case let r as NRF7.Response:
            return NRF7Text.response(r)
        case let r as NRF7.Result:
            return NRF7Text.result(r)
        case let v as ESPProvisioning.Version:
            return "ESP version \(v.version ?? "(none)") security \(v.securityVersion.map(String.init) ?? "?")"
                + (v.capabilities.isEmpty ? "" : " capabilities " + v.capabilities.joined(separator: ","))
        case let m as ESPProvisioning.SessionMessage:
            return ESPText.session(m)
        case let m as ESPProvisioning.ConfigMessage:
            return ESPText.config(m, reveal: reveal)
        case let m as ESPProvisioning.ScanMessage:
            return ESPText.scan(m)
        case let o as ESPProvisioning.OpaquePayload:
            return "ESP \(o.endpoint) \(o.length) bytes: \(o.reason)"
        default:
            // nil, or a message type this renderer does not know (none yet).
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
            case let c as SpeakerOTA.Credentials:
                o.string("ssid", c.ssidText)
                o.string("password", self.reveal ? ProtocolText.display(c.password.unsafeBytes) : c.password.redacted)
            case let u as SpeakerOTA.FirmwareURL:
                o.string("url", u.display(reveal: reveal))
                if let s = u.scheme { o.string("scheme", s) }
            case let c as SpeakerOTA.ControlCommand:
                o.int("command", Int(c.rawCommand))
                if let name = c.command?.description { o.string("commandName", name) }
                o.int("parameter", Int(c.parameter))
            case let s as SpeakerOTA.Status:
                o.int("state", Int(s.rawState))
                if let n = s.state?.description { o.string("stateName", n) }
                o.int("error", Int(s.rawError))
                if let n = s.error?.description { o.string("errorName", n) }
                if let r = s.error?.retryable { o.bool("retryable", r) }
                o.int("progress", Int(s.progress))
                o.int("downloadedKB", Int(s.downloadedKB))
                o.int("totalKB", Int(s.totalKB))
                o.int("rssi", Int(s.rssi))
            case let r as SensorScan.Request:
                o.string("request", ProtocolText.display(r.bytes))
            case let r as SensorScan.Response:
                o.bool("complete", r.complete)
                o.int("chunks", r.chunks)
                o.string("markerStyle", r.markerStyle)
                if r.markerStyles.count > 1 { o.raw("markerStyles", "[" + r.markerStyles.map { JSONString.quote($0) }.joined(separator: ",") + "]") }
                o.raw("networks", NetworkJSON.array(r.networks.map(WiFiNetwork.init)))
            case let i as NRF7.Info:
                if let v = i.version { o.int("version", Int(v)) }
            case let r as NRF7.Request:
                NRF7JSON.request(r, reveal: self.reveal, o)
            case let r as NRF7.Response:
                NRF7JSON.response(r, o)
            case let r as NRF7.Result:
                NRF7JSON.result(r, o)
            case let v as ESPProvisioning.Version:
                var b = JSONBuild()
                b.string("ver", v.version)
                b.int("secVer", v.securityVersion)
                b.raw("cap", "[" + v.capabilities.map { JSONString.quote($0) }.joined(separator: ",") + "]")
                o.merge(b)
            case let m as ESPProvisioning.SessionMessage:
                o.merge(ESPJSON.session(m))
            case let m as ESPProvisioning.ConfigMessage:
                o.merge(ESPJSON.config(m, reveal: self.reveal))
            case let m as ESPProvisioning.ScanMessage:
                o.merge(ESPJSON.scan(m))
            case let x as ESPProvisioning.OpaquePayload:
                var b = JSONBuild()
                b.string("endpoint", x.endpoint)
                b.bool("encrypted", x.encrypted)
                b.int("security", x.security)
                b.int("length", x.length)
                b.string("reason", x.reason)
                o.merge(b)
            default:
                // nil, or a message type this renderer does not know (none yet).
                break
            }
            if !e.problems.isEmpty {
                o.raw("problems", "[" + e.problems.map { "{\"id\":\(JSONString.quote($0.id)),\"message\":\(JSONString.quote($0.message))}" }.joined(separator: ",") + "]")
            }
        }
    }
}

/// Scan results in the shape every protocol shares: an array of objects with `ssid`, `bssid`,
/// `channel`, `rssi`, `authMode` (named) and `band`, each present when the protocol reports it.
enum NetworkJSON {
    static func object(_ n: WiFiNetwork) -> String {
        var b = JSONBuild()
        b.string("ssid", n.ssidText)
        b.string("bssid", n.bssidText)
        b.int("channel", n.channel)
        b.int("rssi", n.rssi)
        b.string("authMode", n.authMode)
        b.string("band", n.band)
        return b.text
    }

    static func array(_ list: [WiFiNetwork]) -> String { "[" + list.map(object).joined(separator: ",") + "]" }
}

/// A JSON object built as text, for nested protocol values.
struct JSONBuild {
    var parts: [(key: String, json: String)] = []
    mutating func string(_ k: String, _ v: String?) { if let v { parts.append((k, JSONString.quote(v))) } }
    mutating func int(_ k: String, _ v: Int?) { if let v { parts.append((k, String(v))) } }
    mutating func bool(_ k: String, _ v: Bool?) { if let v { parts.append((k, v ? "true" : "false")) } }
    mutating func raw(_ k: String, _ json: String?) { if let json { parts.append((k, json)) } }
    /// An enum as its number and, when known, `<key>Name`.
    mutating func enumValue(_ k: String, _ v: ProtoEnumValue?) {
        guard let v else { return }
        int(k, v.raw)
        string(k + "Name", v.name)
    }
    var text: String { "{" + parts.map { JSONString.quote($0.key) + ":" + $0.json }.joined(separator: ",") + "}" }
}

extension EventRenderer.JSONFields {
    /// Writes a built object's fields at the top level of the line.
    func merge(_ b: JSONBuild) {
        for p in b.parts { raw(p.key, p.json) }
    }
}

/// One-line summaries of nRF7 messages.
enum NRF7Text {
    static func wifi(_ w: NRF7.WifiInfo) -> String {
        var t = w.ssidText.map { "SSID \"\(ProtocolText.display(Array($0.utf8)))\"" } ?? "no SSID"
        if let b = w.bssidText { t += " BSSID \(b)" }
        if let b = w.band { t += " band \(b)" }
        if let c = w.channel { t += " channel \(c)" }
        if let a = w.auth { t += " auth \(a)" }
        return t
    }

    static func scan(_ s: NRF7.ScanParams) -> String {
        var t: [String] = []
        if let b = s.band { t.append("band \(b)") }
        if let p = s.passive { t.append(p ? "passive" : "active") }
        if let p = s.periodMs { t.append("period \(p) ms") }
        if let g = s.groupChannels { t.append("group \(g) channels") }
        return t.joined(separator: " ")
    }

    static func request(_ r: NRF7.Request, reveal: Bool) -> String {
        var t = "nRF7 request \(r.opCode?.description ?? "(no op code)")"
        if let s = r.scanParams { t += " scan " + scan(s) }
        if let c = r.config {
            if let w = c.wifi { t += " " + wifi(w) }
            if let p = c.passphrase {
                t += " password " + (reveal ? "\"\(ProtocolText.display(p.unsafeBytes))\"" : p.redacted)
            }
            if let v = c.volatileMemory { t += v ? " (volatile)" : " (persistent)" }
        }
        return t
    }

    static func response(_ r: NRF7.Response) -> String {
        var t = "nRF7 response to \(r.requestOpCode?.description ?? "(no op code)"): \(r.status?.description ?? "(no status)")"
        if let d = r.deviceStatus {
            if let s = d.state { t += " state \(s)" }
            if let p = d.provisioningInfo { t += " provisioned " + wifi(p) }
            if let ip = d.ip4Text { t += " IP \(ip)" }
            if let s = d.scanInfo { t += " scanning " + scan(s) }
        }
        return t
    }

    static func result(_ r: NRF7.Result) -> String {
        var t = "nRF7 result"
        if let s = r.scanRecord {
            t += " scan " + (s.wifi.map(wifi) ?? "(no network)")
            if let rssi = s.rssi { t += " RSSI \(rssi) dBm" }
        }
        if let s = r.state { t += " state \(s)" }
        if let reason = r.reason { t += " reason \(reason)" }
        return t
    }
}

/// JSON fields of nRF7 messages.
enum NRF7JSON {
    static func wifi(_ w: NRF7.WifiInfo) -> String {
        var b = JSONBuild()
        b.string("ssid", w.ssidText)
        b.string("bssid", w.bssidText)
        b.enumValue("band", w.band)
        b.int("channel", w.channel.map(Int.init))
        b.enumValue("auth", w.auth)
        return b.text
    }

    static func scan(_ s: NRF7.ScanParams) -> String {
        var b = JSONBuild()
        b.enumValue("band", s.band)
        b.bool("passive", s.passive)
        b.int("periodMs", s.periodMs.map(Int.init))
        b.int("groupChannels", s.groupChannels.map(Int.init))
        return b.text
    }

    static func unknown(_ bytes: [UInt8], _ b: inout JSONBuild) {
        if !bytes.isEmpty { b.string("unknownFields", Hex.string(bytes)) }
    }

    static func request(_ r: NRF7.Request, reveal: Bool, _ o: EventRenderer.JSONFields) {
        var b = JSONBuild()
        b.enumValue("opCode", r.opCode)
        b.raw("scanParams", r.scanParams.map(scan))
        if let c = r.config {
            var cb = JSONBuild()
            cb.raw("wifi", c.wifi.map(wifi))
            if let p = c.passphrase {
                cb.string("passphrase", reveal ? ProtocolText.display(p.unsafeBytes) : p.redacted)
            }
            cb.bool("volatileMemory", c.volatileMemory)
            cb.int("certsBytes", c.certs?.count)
            b.raw("config", cb.text)
        }
        unknown(r.unknownFields, &b)
        o.merge(b)
    }

    static func response(_ r: NRF7.Response, _ o: EventRenderer.JSONFields) {
        var b = JSONBuild()
        b.enumValue("requestOpCode", r.requestOpCode)
        b.enumValue("status", r.status)
        if let d = r.deviceStatus {
            var db = JSONBuild()
            db.enumValue("state", d.state)
            db.raw("provisioningInfo", d.provisioningInfo.map(wifi))
            db.string("ip4", d.ip4Text)
            db.raw("scanInfo", d.scanInfo.map(scan))
            b.raw("deviceStatus", db.text)
        }
        unknown(r.unknownFields, &b)
        o.merge(b)
    }

    static func result(_ r: NRF7.Result, _ o: EventRenderer.JSONFields) {
        var b = JSONBuild()
        if let s = r.scanRecord {
            var sb = JSONBuild()
            sb.raw("wifi", s.wifi.map(wifi))
            sb.int("rssi", s.rssi.map(Int.init))
            b.raw("scanRecord", sb.text)
            // The same network in the shape every protocol's scan results share.
            b.raw("networks", NetworkJSON.array(WiFiNetwork(s).map { [$0] } ?? []))
        }
        b.enumValue("state", r.state)
        b.enumValue("reason", r.reason)
        unknown(r.unknownFields, &b)
        o.merge(b)
    }
}

/// One-line summaries of ESP-IDF provisioning messages.
enum ESPText {
    static func session(_ m: ESPProvisioning.SessionMessage) -> String {
        var t = "ESP session \(m.securityVersion)"
        switch m.payload {
        case .none: t += " (no payload)"
        case .sec0Command: t += " command"
        case .sec0Response(let s): t += " response \(s)"
        case .sec1Command0(let k): t += " SessionCmd0 client key \(Hex.string(k))"
        case .sec1Response0(let s, let k, let r): t += " SessionResp0 \(s) device key \(Hex.string(k)) random \(Hex.string(r))"
        case .sec1Command1(let d): t += " SessionCmd1 client verify \(d.count) bytes"
        case .sec1Response1(let s, let d): t += " SessionResp1 \(s) device verify \(d.count) bytes"
        case .sec2(let step): t += " \(step) (encrypted, sec2)"
        }
        return t
    }

    static func config(_ m: ESPProvisioning.ConfigMessage, reveal: Bool) -> String {
        var t = "ESP config \(m.messageType)"
        switch m.payload {
        case .none, .getStatus, .applyConfig: break
        case .status(let s):
            t += " \(s.status) station \(s.stationState)"
            switch s.detail {
            case .none: break
            case .failReason(let f): t += " reason \(f)"
            case .connected(let c):
                t += " SSID \"\(ProtocolText.display(c.ssid))\" IP \(c.ip4Address) auth \(c.authMode) channel \(c.channel)"
                if !c.bssid.isEmpty { t += " BSSID \(ESPJSON.mac(c.bssid))" }
            case .attemptFailed(let n): t += " \(n) attempts remaining"
            }
        case .setConfig(let c):
            t += " SSID \"\(ProtocolText.display(c.ssid))\" password "
                + (reveal ? "\"\(ProtocolText.display(c.passphrase.unsafeBytes))\"" : c.passphrase.redacted)
            if !c.bssid.isEmpty { t += " BSSID \(ESPJSON.mac(c.bssid))" }
            if c.channel != 0 { t += " channel \(c.channel)" }
        case .setConfigResponse(let s), .applyConfigResponse(let s): t += " \(s)"
        }
        return t
    }

    static func scan(_ m: ESPProvisioning.ScanMessage) -> String {
        var t = "ESP scan \(m.messageType)"
        if m.status.raw != 0 { t += " status \(m.status)" }
        switch m.payload {
        case .none, .startResponse, .status: break
        case .start(let blocking, let passive, let group, let period):
            t += (blocking ? " blocking" : "") + (passive ? " passive" : " active") + " group \(group) period \(period) ms"
        case .statusResponse(let finished, let count): t += finished ? " finished, \(count) results" : " scanning, \(count) results"
        case .result(let start, let count): t += " from \(start) count \(count)"
        case .resultResponse(let entries):
            t += entries.count == 1 ? " 1 entry" : " \(entries.count) entries"
            if !entries.isEmpty {
                t += ": " + entries.map { "\(ProtocolText.display($0.ssid)) (ch \($0.channel), \($0.rssi) dBm, \($0.auth))" }.joined(separator: ", ")
            }
        }
        return t
    }
}

/// JSON fields of ESP-IDF provisioning messages.
enum ESPJSON {
    static func mac(_ b: [UInt8]) -> String { b.map { Hex.string([$0]).uppercased() }.joined(separator: ":") }

    static func session(_ m: ESPProvisioning.SessionMessage) -> JSONBuild {
        var b = JSONBuild()
        b.enumValue("secVer", m.securityVersion)
        b.enumValue("msg", m.messageType)
        switch m.payload {
        case .none, .sec0Command: break
        case .sec0Response(let s): b.enumValue("status", s)
        case .sec1Command0(let k): b.string("clientPubkey", Hex.string(k))
        case .sec1Response0(let s, let k, let r):
            b.enumValue("status", s)
            b.string("devicePubkey", Hex.string(k))
            b.string("deviceRandom", Hex.string(r))
        case .sec1Command1(let d): b.string("clientVerifyData", Hex.string(d))
        case .sec1Response1(let s, let d):
            b.enumValue("status", s)
            b.string("deviceVerifyData", Hex.string(d))
        case .sec2: b.bool("encrypted", true)
        }
        return b
    }

    static func config(_ m: ESPProvisioning.ConfigMessage, reveal: Bool) -> JSONBuild {
        var b = JSONBuild()
        b.enumValue("msg", m.messageType)
        switch m.payload {
        case .none, .getStatus, .applyConfig: break
        case .status(let s):
            b.enumValue("status", s.status)
            b.enumValue("staState", s.stationState)
            switch s.detail {
            case .none: break
            case .failReason(let f): b.enumValue("failReason", f)
            case .connected(let c):
                var cb = JSONBuild()
                cb.string("ip4", c.ip4Address)
                cb.enumValue("authMode", c.authMode)
                cb.string("ssid", ProtocolText.display(c.ssid))
                cb.string("bssid", mac(c.bssid))
                cb.int("channel", Int(c.channel))
                b.raw("connected", cb.text)
            case .attemptFailed(let n): b.int("attemptsRemaining", Int(n))
            }
        case .setConfig(let c):
            b.string("ssid", ProtocolText.display(c.ssid))
            b.string("passphrase", reveal ? ProtocolText.display(c.passphrase.unsafeBytes) : c.passphrase.redacted)
            if !c.bssid.isEmpty { b.string("bssid", mac(c.bssid)) }
            b.int("channel", Int(c.channel))
        case .setConfigResponse(let s), .applyConfigResponse(let s): b.enumValue("status", s)
        }
        return b
    }

    static func scan(_ m: ESPProvisioning.ScanMessage) -> JSONBuild {
        var b = JSONBuild()
        b.enumValue("msg", m.messageType)
        b.enumValue("status", m.status)
        switch m.payload {
        case .none, .startResponse, .status: break
        case .start(let blocking, let passive, let group, let period):
            b.bool("blocking", blocking)
            b.bool("passive", passive)
            b.int("groupChannels", Int(group))
            b.int("periodMs", Int(period))
        case .statusResponse(let finished, let count):
            b.bool("scanFinished", finished)
            b.int("resultCount", Int(count))
        case .result(let start, let count):
            b.int("startIndex", Int(start))
            b.int("count", Int(count))
        case .resultResponse(let entries):
            b.raw("networks", NetworkJSON.array(entries.map(WiFiNetwork.init)))
            b.raw("entries", "[" + entries.map { e in
                var x = JSONBuild()
                x.string("ssid", ProtocolText.display(e.ssid))
                x.int("channel", Int(e.channel))
                x.int("rssi", Int(e.rssi))
                x.string("bssid", mac(e.bssid))
                x.enumValue("auth", e.auth)
                return x.text
            }.joined(separator: ",") + "]")
        }
        return b
    }
}
