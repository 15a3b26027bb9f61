import ATT
import GATT
import Profiles

/// Each device's outcome and one-line summary, from its events and findings.
enum Summaries {
    static func summarise(_ t: inout Timeline) {
        let byDevice = Dictionary(grouping: t.events.filter { $0.device != nil }) { $0.device ?? -1 }
        for d in t.devices.indices {
            let events = byDevice[d] ?? []
            t.devices[d].linkCounts = counts(events, timeline: t, device: d)
            let (outcome, line) = story(events, timeline: t, device: d)
            t.devices[d].outcome = outcome
            t.devices[d].summary = line
        }
    }

    static func counts(_ events: [TimelineEvent], timeline t: Timeline, device d: Int) -> LinkCounts {
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

    static func story(_ events: [TimelineEvent], timeline t: Timeline, device d: Int) -> (TimelineDevice.Outcome, String) {
        let span = TimelineBuilder.seconds(t.devices[d].end - t.devices[d].start)
        let n = t.devices[d].linkCounts
        let links = links(n, connections: t.devices[d].connections.count, span: span)
        let statuses = events.compactMap { e -> (SpeakerOTA.Status, TimelineEvent)? in
            if let s = e.message as? SpeakerOTA.Status { return (s, e) }
            return nil
        }
        let lastDisconnect = events.last { $0.kind == "link.disconnected" }
        if let (last, _) = statuses.last {
            let started = statuses.contains { $0.0.state == .wifiConnecting }
            let validated = events.contains { if let c = $0.message as? SpeakerOTA.ControlCommand { c.command == .validate } else { false } }
            let everSucceeded = statuses.contains { $0.0.state == .success }
            switch last.state {
            case .error?:
                let e = last.error.map { "\($0) (\(Meanings.otaError($0)))" } ?? "unknown error"
                return (.failed, "OTA update failed: ERROR \(e); \(links)")
            case .success?:
                return (.succeeded, "OTA update downloaded and verified (SUCCESS), not yet rebooted; \(links)")
            case .pendingVerify?:
                return (.incomplete, "new firmware booted (PENDING_VERIFY) but not validated: it will roll back; \(links)")
            case .idle? where everSucceeded || statuses.contains(where: { $0.0.state == .pendingVerify }):
                return validated ? (.succeeded, "OTA update installed and validated; \(links)")
                    : (.failed, "the device rolled back to its old firmware (no VALIDATE); \(links)")
            case .downloading?, .verifying?, .wifiConnecting?, .wifiConnected?:
                let state = last.state?.description ?? "?"
                let at = last.state == .downloading ? " at \(last.progress) %" : ""
                let why = lastDisconnect.map { " when the link ended (\($0.fields.first { $0.name == "reason" }.map { f -> String in if case .string(let s) = f.value { s } else { "" } } ?? ""))" } ?? " when the capture ended"
                return (.interrupted, "OTA update interrupted in \(state)\(at)\(why); \(links)")
            default:
                return (started ? .incomplete : .unknown, "OTA \(started ? "started" : "not started"), last status \(last.state?.description ?? "unknown"); \(links)")
            }
        }
        let scans = events.compactMap { e -> SensorScan.Response? in
            if let r = e.message as? SensorScan.Response { return r }
            return nil
        }
        if let last = scans.last {
            let n = last.networks.count
            return last.complete ? (.succeeded, "Wi-Fi scan: \(n) network\(n == 1 ? "" : "s") (\(scans.count) scan\(scans.count == 1 ? "" : "s")); \(links)")
                : (.failed, "Wi-Fi scan truncated: \(n) network\(n == 1 ? "" : "s") and no END; \(links)")
        }
        if events.contains(where: { $0.message is SensorScan.Request }) {
            return (.failed, "SCAN sent, no answer; \(links)")
        }
        if let state = events.compactMap({ e -> (NRF7.Result)? in if let r = e.message as? NRF7.Result, r.state != nil { return r }; return nil }).last {
            if state.state?.raw == 4 { return (.succeeded, "nRF7 provisioned: CONNECTED; \(links)") }
            if state.state?.raw == 5 { return (.failed, "nRF7 provisioning failed: CONNECTION_FAILED\(state.reason.map { " (\($0))" } ?? ""); \(links)") }
            return (.interrupted, "nRF7 provisioning stopped in \(state.state?.description ?? "?"); \(links)")
        }
        if events.contains(where: { $0.kind.hasPrefix("nrf7.") }) {
            let refused = events.contains { if let r = $0.message as? NRF7.Response { (r.status?.raw ?? 0) != 0 } else { false } }
            return (refused ? .failed : .incomplete, refused ? "nRF7 refused a request; \(links)" : "nRF7 provisioning not applied; \(links)")
        }
        let espStatus = events.compactMap { e -> ESPProvisioning.StatusReport? in
            if let m = e.message as? ESPProvisioning.ConfigMessage, case .status(let r) = m.payload { return r }
            return nil
        }
        if let last = espStatus.last {
            switch last.stationState.raw {
            case 0: return (.succeeded, "ESP provisioned: station Connected; \(links)")
            case 3:
                var reason = ""
                if case .failReason(let r) = last.detail { reason = " (\(r))" }
                return (.failed, "ESP provisioning failed: ConnectionFailed\(reason); \(links)")
            default: return (.interrupted, "ESP provisioning stopped while \(last.stationState); \(links)")
            }
        }
        if events.contains(where: { $0.kind.hasPrefix("esp.") }) {
            let encrypted = events.contains { if let o = $0.message as? ESPProvisioning.OpaquePayload { o.encrypted } else { false } }
            if t.findings.contains(where: { $0.device == d && $0.id == "esp.session-refused" }) {
                return (.failed, "ESP refused the session; \(links)")
            }
            return (.unknown, encrypted ? "ESP provisioning, encrypted (give --esp-pop and --esp-client-key to read it); \(links)"
                                        : "ESP provisioning without a station status; \(links)")
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
