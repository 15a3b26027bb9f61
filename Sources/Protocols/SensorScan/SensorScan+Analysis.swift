import ATT
import Analysis
import Profiles

extension SensorScanProtocol: ProtocolAnalysis {
    public static var lane: TimelineEvent.Lane { .scan }

    /// SCAN is answered by notifications of the same characteristic.
    public static func answersNeedSubscription(to message: any ProfileMessage) -> (characteristic: BluetoothUUID, name: String)? {
        message is SensorScan.Request ? (SensorScan.characteristic, "the scan characteristic") : nil
    }

    /// `scan.no-end` tells a truncated answer.
    public static var problemsToldElsewhere: Set<String> { ["scan.truncated"] }

    /// The last scan's answer, or a SCAN never answered.
    public static func story(of events: TimelineEventSelection, in timeline: Timeline, device: Int, links: String) -> (TimelineDevice.Outcome, String)? {
        let scans = events.compactMap { $0.message(as: SensorScan.Response.self) }
        if let last = scans.last {
            let n = last.networks.count
            return last.complete ? (.succeeded, "Wi-Fi scan: \(n) network\(n == 1 ? "" : "s") (\(scans.count) scan\(scans.count == 1 ? "" : "s")); \(links)")
                : (.failed, "Wi-Fi scan truncated: \(n) network\(n == 1 ? "" : "s") and no END; \(links)")
        }
        if events.contains(where: { $0.message is SensorScan.Request }) {
            return (.failed, "SCAN sent, no answer; \(links)")
        }
        return nil
    }

    // MARK: Diagnoses

    public static var diagnoses: [Diagnoses.Rule] {
        [
            Diagnoses.Rule(id: "scan.no-end", severity: .warning, title: "A scan answer ended without END",
                 advice: "The answer is truncated (link dropped, a timeout, or a new SCAN); the app should fall back to the networks it has and may repeat the scan.",
                 find: scanWithoutEnd),
        ]
    }

    private static func scanWithoutEnd(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        c.events(carrying: SensorScan.Response.self).compactMap { e in
            guard let r = e.message(as: SensorScan.Response.self), !r.complete else { return nil }
            if r.chunks == 0 {
                return Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames,
                           evidence: "SCAN was never answered: no notification and no END (at \(c.seconds(e.time)))")
            }
            return Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames,
                       evidence: "\(r.networks.count) network\(r.networks.count == 1 ? "" : "s") arrived in \(r.chunks) notification\(r.chunks == 1 ? "" : "s") and END never came (at \(c.seconds(e.time)))"
                           + (r.markerStyle == "none" ? "" : "; markers until then: \(r.markerStyle)"))
        }
    }
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
