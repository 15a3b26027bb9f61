import Analysis
import Profiles

extension NRF7Protocol: ProtocolAnalysis {}

// MARK: Timeline lines

extension NRF7.Info: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        ("nRF7 protocol version \(version.map(String.init) ?? "?")", version.map { [Field("version", .int(Int($0)))] } ?? [])
    }
}

extension NRF7.Request: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        var fields = [Field("op", .string(opCode?.description ?? "none"))]
        var summary = "request \(opCode?.description ?? "without op code")"
        if let c = config {
            let ssid = c.wifi?.ssid.map { ProtocolText.display($0) } ?? ""
            fields.append(Field("ssid", .string(ssid)))
            if let p = c.passphrase { fields.append(Field("passphrase", .secret(p))) }
            summary += " for \"\(ssid)\"" + (c.passphrase.map { " (passphrase \($0.count) bytes)" } ?? "")
        }
        return (summary, fields)
    }
}

extension NRF7.Response: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        var fields = [Field("op", .string(requestOpCode?.description ?? "none")), Field("status", .string(status?.description ?? "none"))]
        var summary = "response to \(requestOpCode?.description ?? "?"): \(status?.description ?? "no status")"
        if let s = deviceStatus {
            if let st = s.state { fields.append(Field("state", .string(st.description))); summary += ", state \(st)" }
            if let ssid = s.provisioningInfo?.ssid { fields.append(Field("ssid", .string(ProtocolText.display(ssid)))); summary += ", \"\(ProtocolText.display(ssid))\"" }
            if let ip = s.ip4Text { fields.append(Field("ip", .string(ip))); summary += ", IP \(ip)" }
        }
        return (summary, fields)
    }
}

extension NRF7.Result: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        if let rec = scanRecord {
            let ssid = rec.wifi?.ssid.map { ProtocolText.display($0) } ?? "?"
            let network = WiFiNetwork(rec)
            var summary = "scan record \"\(ssid)\"" + (rec.rssi.map { " \($0) dBm" } ?? "")
            if let n = network, let band = n.band { summary += ", \(band)" + (n.channel.map { " channel \($0)" } ?? "") }
            return (summary, [Field("ssid", .string(ssid))] + (rec.rssi.map { [Field("rssi", .int(Int($0)))] } ?? [])
                        + [Field("networks", .networks(network.map { [$0] } ?? []))])
        }
        var fields: [Field] = []
        var summary = "state \(state?.description ?? "?")"
        if let s = state { fields.append(Field("state", .string(s.description))) }
        if let reason { fields.append(Field("reason", .string(reason.description))); summary += " (\(reason))" }
        return (summary, fields)
    }
}
