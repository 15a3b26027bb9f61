import ATT
import Analysis
import Profiles

extension ESPProvisioningProtocol: ProtocolAnalysis {
    /// The audit tells a security 0 passphrase (`esp.cleartext-passphrase`).
    public static var problemsToldElsewhere: Set<String> { ["esp.cleartext-passphrase"] }

    /// The last station status, a refused session, or encrypted traffic that cannot be read.
    public static func story(of events: [TimelineEvent], in timeline: Timeline, device: Int, links: String) -> (TimelineDevice.Outcome, String)? {
        let statuses = events.compactMap { e -> ESPProvisioning.StatusReport? in
            if let m = e.message as? ESPProvisioning.ConfigMessage, case .status(let r) = m.payload { return r }
            return nil
        }
        if let last = statuses.last {
            switch last.stationState.raw {
            case 0: return (.succeeded, "ESP provisioned: station Connected; \(links)")
            case 3:
                var reason = ""
                if case .failReason(let r) = last.detail { reason = " (\(r))" }
                return (.failed, "ESP provisioning failed: ConnectionFailed\(reason); \(links)")
            default: return (.interrupted, "ESP provisioning stopped while \(last.stationState); \(links)")
            }
        }
        guard events.contains(where: { $0.kind.hasPrefix("esp.") }) else { return nil }
        let encrypted = events.contains { ($0.message as? ESPProvisioning.OpaquePayload)?.encrypted == true }
        if timeline.findings.contains(where: { $0.device == device && $0.id == "esp.session-refused" }) {
            return (.failed, "ESP refused the session; \(links)")
        }
        return (.unknown, encrypted ? "ESP provisioning, encrypted (give --esp-pop and --esp-client-key to read it); \(links)"
                                    : "ESP provisioning without a station status; \(links)")
    }

    // MARK: Diagnoses

    public static var diagnoses: [Diagnoses.Rule] {
        [
            Diagnoses.Rule(id: "esp.connection-failed", severity: .error, title: "The ESP device could not connect to Wi-Fi",
                 advice: "AuthError: wrong passphrase; NetworkNotFound: SSID not in range, misspelled, or 5 GHz only (the ESP32 has a 2.4 GHz radio).",
                 find: espFailed),
            Diagnoses.Rule(id: "esp.session-refused", severity: .error, title: "The ESP device refused the provisioning session",
                 advice: "With security 1 this means the proof of possession (PoP) did not match the device's; check the PoP on the device's label.",
                 find: espSessionRefused),
        ]
    }

    private static func espFailed(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        var hits: [Diagnoses.Hit] = []
        var lastFailure: [Int: Int64] = [:]
        for e in c.events {
            guard let m = e.message as? ESPProvisioning.ConfigMessage, case .status(let r) = m.payload, let d = e.device else { continue }
            guard r.stationState.raw == 3 else { lastFailure[d] = nil; continue }
            guard lastFailure[d] == nil else { continue }
            lastFailure[d] = e.time
            // Wrong password, not found and 5 GHz-only have their own rules.
            if c.isExplainedJoinFailure(e) { continue }
            var reason = ""
            if case .failReason(let f) = r.detail { reason = " (\(f))" }
            hits.append(Diagnoses.Hit(device: d, time: e.time, frames: e.frames, evidence: "station ConnectionFailed\(reason) at \(c.seconds(e.time))"))
        }
        return hits
    }

    private static func espSessionRefused(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        var hits: [Diagnoses.Hit] = []
        for e in c.events {
            if e.kind == "att.error", case .string(let ch)? = e.fields.first(where: { $0.name == "characteristic" })?.value,
               ch.contains("prov-session") {
                hits.append(Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames, evidence: "\(e.summary) at \(c.seconds(e.time))"))
            }
            if let s = e.message as? ESPProvisioning.SessionMessage {
                switch s.payload {
                case .sec0Response(let st), .sec1Response0(let st, _, _), .sec1Response1(let st, _):
                    if st.raw != 0 {
                        hits.append(Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames, evidence: "\(e.summary) at \(c.seconds(e.time))"))
                    }
                default: break
                }
            }
        }
        return hits
    }
}

// MARK: Timeline lines

extension ESPProvisioning.Version: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        ("proto-ver \(version ?? "?"), security \(securityVersion.map(String.init) ?? "?"), capabilities \(capabilities.joined(separator: " "))",
         [Field("version", .string(version ?? "")), Field("security", .int(securityVersion ?? -1)),
          Field("capabilities", .strings(capabilities))])
    }
}

extension ESPProvisioning.SessionMessage: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        let type = messageType?.description ?? "?"
        var summary = "session \(securityVersion) \(type)"
        switch payload {
        case .sec0Response(let st), .sec1Response0(let st, _, _), .sec1Response1(let st, _): summary += ": \(st)"
        default: break
        }
        return (summary, [Field("scheme", .string(securityVersion.description)), Field("message", .string(type))])
    }
}

extension ESPProvisioning.ConfigMessage: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        switch payload {
        case .setConfig(let sc):
            let ssid = ProtocolText.display(sc.ssid)
            return ("CmdSetConfig \"\(ssid)\" (passphrase \(sc.passphrase.count) bytes)",
                    [Field("message", .string("CmdSetConfig")), Field("ssid", .string(ssid)), Field("passphrase", .secret(sc.passphrase))])
        case .status(let r):
            var fields = [Field("message", .string("RespGetStatus")), Field("station", .string(r.stationState.description))]
            var summary = "station \(r.stationState)"
            switch r.detail {
            case .failReason(let reason): fields.append(Field("reason", .string(reason.description))); summary += " (\(reason))"
            case .connected(let cs):
                fields.append(Field("ssid", .string(cs.ssidText))); fields.append(Field("ip", .string(cs.ip4Address)))
                summary += " to \"\(ProtocolText.display(cs.ssid))\", IP \(ProtocolText.display(cs.ip4Address))"
            case .attemptFailed(let n): summary += " (attempt failed, \(n) left)"
            case .none: break
            }
            return (summary, fields)
        case .setConfigResponse(let st), .applyConfigResponse(let st):
            return ("\(messageType): \(st)", [Field("message", .string(messageType.description)), Field("status", .string(st.description))])
        default:
            return ("\(messageType)", [Field("message", .string(messageType.description))])
        }
    }
}

extension ESPProvisioning.ScanMessage: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        var summary = "\(messageType)"
        if case .statusResponse(let finished, let n) = payload { summary += finished ? ": finished, \(n) results" : ": scanning" }
        var fields = [Field("message", .string(messageType.description))]
        if case .resultResponse(let entries) = payload {
            summary += ": " + entries.map { ProtocolText.display($0.ssid) }.joined(separator: ", ")
            fields.append(Field("networks", .networks(entries.map(WiFiNetwork.init))))
        }
        return (summary, fields)
    }
}

extension ESPProvisioning.OpaquePayload: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        (encrypted ? "\(endpoint): \(length) bytes, encrypted (security \(security.map(String.init) ?? "?"))"
                   : "\(endpoint): \(length) bytes",
         [Field("endpoint", .string(endpoint)), Field("encrypted", .bool(encrypted)), Field("length", .int(length))])
    }
}
