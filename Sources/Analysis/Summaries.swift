import ATT
import GATT
import Profiles

/// Each device's outcome and one-line summary, from its events and findings.
enum Summaries {
    static func summarise(_ t: inout Timeline, protocols: [any ProtocolAnalysis.Type]) {
        let positions = t.eventPositionsByDevice()
        for d in t.devices.indices {
            let events = TimelineEventSelection(t.events, at: positions[d])
            t.devices[d].linkCounts = counts(events, timeline: t, device: d)
            let (outcome, line) = story(events, timeline: t, device: d, protocols: protocols)
            t.devices[d].outcome = outcome
            t.devices[d].summary = line
        }
    }

    static func counts(_ events: TimelineEventSelection, timeline t: Timeline, device d: Int) -> LinkCounts {
        var n = LinkCounts()
        for c in t.devices[d].connections {
            let connection = t.connections[c]
            if connection.disconnectReason?.rawValue == 0x3E { n.neverEstablished += 1 } else { n.established += 1 }
            if connection.encryptedAt != nil { n.encrypted += 1 }
        }
        for e in events where e.kind == "link.connect-failed" || e.kind == "link.connect-cancelled" {
            if e.kind == "link.connect-failed" { n.failedAttempts += 1 }
            n.attempted += 1
        }
        n.attempted += t.devices[d].connections.count
        return n
    }

    /// "3 connections (1 never established, 2 attempts failed), 1 encrypted, 35.7 s": the
    /// numbers that matter, the rest left out.
    static func links(_ n: LinkCounts, connections: Int, span: String) -> String {
        var line = "\(connections) connection\(connections == 1 ? "" : "s")"
        var trouble: [String] = []
        if n.neverEstablished > 0 { trouble.append("\(n.neverEstablished) never established") }
        if n.failedAttempts > 0 { trouble.append("\(n.failedAttempts) attempt\(n.failedAttempts == 1 ? "" : "s") failed") }
        if !trouble.isEmpty { line += " (\(trouble.joined(separator: ", ")))" }
        if n.encrypted > 0 { line += ", \(n.encrypted) encrypted" }
        return line + ", \(span)"
    }

    static func story(_ events: TimelineEventSelection, timeline t: Timeline, device d: Int,
                      protocols: [any ProtocolAnalysis.Type]) -> (TimelineDevice.Outcome, String) {
        let span = TimelineBuilder.seconds(t.devices[d].end - t.devices[d].start)
        let n = t.devices[d].linkCounts
        let links = links(n, connections: t.devices[d].connections.count, span: span)
        for p in protocols {
            if let story = p.story(of: events, in: t, device: d, links: links) { return story }
        }
        // Failed only if no attempt ever got through: one bad attempt among good ones is a finding.
        if n.established == 0, n.neverEstablished + n.failedAttempts > 0 {
            return (.failed, "connection never established; \(links)")
        }
        if let known = knownServices(t.devices[d].services) { return (.unknown, "\(known); \(links)") }
        return (.unknown, "no device protocol recognised; \(links)")
    }

    /// What a device's discovered services say when no device protocol GATTLab decodes was
    /// seen: "no provisioning or OTA protocol; services: Heart Rate, Battery, Nordic Secure DFU",
    /// with the services the SIG's assigned numbers or the vendor table name (Generic Access and
    /// Generic Attribute, on every device, left out) and a count of unknown ones. Nil when
    /// discovery was not seen or named nothing.
    static func knownServices(_ services: [BluetoothUUID]) -> String? {
        var names: [String] = []
        var unknown = 0
        var decodable = false
        for s in services where s.uuid16 != 0x1800 && s.uuid16 != 0x1801 {
            guard let known = KnownUUIDs.service(s) else { unknown += 1; continue }
            if !names.contains(known.name) { names.append(known.name) }
            if known.source == .deviceProtocol { decodable = true }
        }
        guard !names.isEmpty else { return nil }
        let more = unknown == 0 ? "" : " and \(unknown) unknown"
        // A protocol GATTLab decodes was offered but never used.
        let what = decodable ? "no provisioning or OTA traffic" : "no provisioning or OTA protocol"
        return "\(what); services: \(names.joined(separator: ", "))\(more)"
    }
}
