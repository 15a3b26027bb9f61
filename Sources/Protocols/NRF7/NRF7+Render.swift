import Capture
import Profiles
import Report

// How `gattlab decode` shows nRF7 Wi-Fi provisioning messages: the nested protobuf messages
// are shared by requests, responses and results, so each has its text and JSON once here.

extension NRF7.Info: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String { "nRF7 info version \(version.map(String.init) ?? "(none)")" }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.int("version", version.map(Int.init))
    }
}

extension NRF7.Request: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String {
        var t = "nRF7 request \(opCode?.description ?? "(no op code)")"
        if let s = scanParams { t += " scan " + s.text }
        if let c = config {
            if let w = c.wifi { t += " " + w.text }
            if let p = c.passphrase { t += " password " + p.decodeText(reveal: reveal) }
            if let v = c.volatileMemory { t += v ? " (volatile)" : " (persistent)" }
        }
        return t
    }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.enumValue("opCode", opCode)
        json.raw("scanParams", scanParams?.json)
        if let c = config {
            var cb = JSONBuild()
            cb.raw("wifi", c.wifi?.json)
            cb.string("passphrase", c.passphrase?.decodeJSONText(reveal: reveal))
            cb.bool("volatileMemory", c.volatileMemory)
            cb.int("certsBytes", c.certs?.count)
            json.raw("config", cb.text)
        }
        json.unknownFields(unknownFields)
    }
}

extension NRF7.Response: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String {
        var t = "nRF7 response to \(requestOpCode?.description ?? "(no op code)"): \(status?.description ?? "(no status)")"
        if let d = deviceStatus {
            if let s = d.state { t += " state \(s)" }
            if let p = d.provisioningInfo { t += " provisioned " + p.text }
            if let ip = d.ip4Text { t += " IP \(ip)" }
            if let s = d.scanInfo { t += " scanning " + s.text }
        }
        return t
    }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.enumValue("requestOpCode", requestOpCode)
        json.enumValue("status", status)
        if let d = deviceStatus {
            var db = JSONBuild()
            db.enumValue("state", d.state)
            db.raw("provisioningInfo", d.provisioningInfo?.json)
            db.string("ip4", d.ip4Text)
            db.raw("scanInfo", d.scanInfo?.json)
            json.raw("deviceStatus", db.text)
        }
        json.unknownFields(unknownFields)
    }
}

extension NRF7.Result: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String {
        var t = "nRF7 result"
        if let s = scanRecord {
            t += " scan " + (s.wifi?.text ?? "(no network)")
            if let rssi = s.rssi { t += " RSSI \(rssi) dBm" }
        }
        if let s = state { t += " state \(s)" }
        if let reason { t += " reason \(reason)" }
        return t
    }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        if let s = scanRecord {
            var sb = JSONBuild()
            sb.raw("wifi", s.wifi?.json)
            sb.int("rssi", s.rssi.map(Int.init))
            json.raw("scanRecord", sb.text)
            // The same network in the shape every protocol's scan results share.
            json.raw("networks", NetworkJSON.array(WiFiNetwork(s).map { [$0] } ?? []))
        }
        json.enumValue("state", state)
        json.enumValue("reason", reason)
        json.unknownFields(unknownFields)
    }
}

extension NRF7.WifiInfo {
    fileprivate var text: String {
        var t = ssidText.map { "SSID \"\(ProtocolText.display(Array($0.utf8)))\"" } ?? "no SSID"
        if let b = bssidText { t += " BSSID \(b)" }
        if let b = band { t += " band \(b)" }
        if let c = channel { t += " channel \(c)" }
        if let a = auth { t += " auth \(a)" }
        return t
    }

    fileprivate var json: String {
        var b = JSONBuild()
        b.string("ssid", ssidText)
        b.string("bssid", bssidText)
        b.enumValue("band", band)
        b.int("channel", channel.map(Int.init))
        b.enumValue("auth", auth)
        return b.text
    }
}

extension NRF7.ScanParams {
    fileprivate var text: String {
        var t: [String] = []
        if let b = band { t.append("band \(b)") }
        if let p = passive { t.append(p ? "passive" : "active") }
        if let p = periodMs { t.append("period \(p) ms") }
        if let g = groupChannels { t.append("group \(g) channels") }
        return t.joined(separator: " ")
    }

    fileprivate var json: String {
        var b = JSONBuild()
        b.enumValue("band", band)
        b.bool("passive", passive)
        b.int("periodMs", periodMs.map(Int.init))
        b.int("groupChannels", groupChannels.map(Int.init))
        return b.text
    }
}

extension JSONBuild {
    /// Protobuf fields this decoder does not know, kept as hex.
    fileprivate mutating func unknownFields(_ bytes: [UInt8]) {
        if !bytes.isEmpty { string("unknownFields", Hex.string(bytes)) }
    }
}
