import Analysis
import Profiles

extension SensorScanProtocol: ProtocolAnalysis {
    public static var lane: TimelineEvent.Lane { .scan }
}

// MARK: Timeline lines

extension SensorScan.Request: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) { ("SCAN", []) }
}

extension SensorScan.Response: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        let names = networks.map { "\(ProtocolText.display($0.ssid)) \($0.rssi)" }
        var summary = "\(networks.count) network\(networks.count == 1 ? "" : "s") in \(chunks) notification\(chunks == 1 ? "" : "s")"
        if !complete { summary += ", truncated (no END)" }
        if markerStyle != "none" { summary += ", markers \(markerStyle)" }
        if !names.isEmpty { summary += ": " + names.prefix(12).joined(separator: ", ") + (names.count > 12 ? ", ..." : "") }
        var fields = [Field("networks", .networks(networks.map(WiFiNetwork.init))),
                      Field("complete", .bool(complete)), Field("chunks", .int(chunks)), Field("markerStyle", .string(markerStyle))]
        if markerStyles.count > 1 { fields.append(Field("markerStyles", .strings(markerStyles))) }
        return (summary, fields)
    }
}
