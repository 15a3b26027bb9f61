import ATT
import Analysis
import Profiles

extension ESPProvisioningProtocol: ProtocolAnalysis {
    public static func provisioningPhaseReader() -> (any ProvisioningPhaseReading)? { ESPPhaseReader() }

    /// The audit tells a security 0 passphrase (`esp.cleartext-passphrase`).
    public static var problemsToldElsewhere: Set<String> { ["esp.cleartext-passphrase"] }

    /// The last station status, a refused session, or encrypted traffic that cannot be read.
    public static func story(of events: TimelineEventSelection, in timeline: Timeline, device: Int, links: String) -> (TimelineDevice.Outcome, String)? {
        let statuses = events.compactMap { e -> ESPProvisioning.StatusReport? in
            if let m = e.message(as: ESPProvisioning.ConfigMessage.self), case .status(let r) = m.payload { return r }
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
        let encrypted = events.contains { $0.message(as: ESPProvisioning.OpaquePayload.self)?.encrypted == true }
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
        for e in c.events(carrying: ESPProvisioning.ConfigMessage.self) {
            guard let m = e.message(as: ESPProvisioning.ConfigMessage.self), case .status(let r) = m.payload, let d = e.device else { continue }
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
        for e in c.events(carrying: [ESPProvisioning.SessionMessage.self], kinds: ["att.error"]) {
            if e.kind == "att.error", case .string(let ch)? = e.fields.first(where: { $0.name == "characteristic" })?.value,
               ch.contains("prov-session") {
                hits.append(Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames, evidence: "\(e.summary) at \(c.seconds(e.time))"))
            }
            if let s = e.message(as: ESPProvisioning.SessionMessage.self) {
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

/// ESP-IDF: session (its security scheme; sec2 says it cannot be decrypted), scan, config,
/// apply and the station's connection status.
struct ESPPhaseReader: ProvisioningPhaseReading {
    var security: Int?
    var capabilities: [String] = []

    private var sessionDetail: String {
        switch security {
        case 0?: return "security 0: plaintext"
        case 1?: return capabilities.contains("no_pop") ? "security 1 (X25519 + AES-CTR), no PoP" : "security 1 (X25519 + AES-CTR) with PoP"
        case 2?: return "security 2 (SRP6a + AES-GCM): encrypted, not decryptable from a capture"
        case let s?: return "security \(s)"
        case nil: return "security unknown"
        }
    }

    mutating func read(_ e: TimelineEvent, into phases: inout ProvisioningPhases) {
        switch e.message {
        case nil where e.kind == "att.error":
            let field = { (name: String) -> FieldValue? in e.fields.first { $0.name == name }?.value }
            let characteristic = if case .string(let c)? = field("characteristic") { c } else { "" }
            let error = if case .string(let x)? = field("error") { x } else { "an ATT error" }
            if characteristic.contains("prov-session"), phases.openPhase("session") != nil {
                phases.close("session", e, .failed, detail: sessionDetail + "; refused: \(error)")
            }
        case let v as ESPProvisioning.Version:
            if security == nil { security = v.securityVersion }
            capabilities = v.capabilities
        case let s as ESPProvisioning.SessionMessage:
            security = s.securityVersion.raw
            switch s.payload {
            case .sec0Response(let st), .sec1Response1(let st, _):
                phases.close("session", e, st.raw == 0 ? .ok : .failed, detail: sessionDetail + (st.raw == 0 ? "" : "; refused: \(st)"))
            case .sec1Response0(let st, _, _) where st.raw != 0:
                phases.close("session", e, .failed, detail: sessionDetail + "; refused: \(st)")
            case .sec2(let step) where step.raw == 3:
                phases.close("session", e, .ok, detail: sessionDetail)
            default:
                phases.start("session", e, detail: sessionDetail)
            }
        case let m as ESPProvisioning.ScanMessage:
            if phases.openPhase("session") != nil { phases.close("session", e, .ok) }
            switch m.payload {
            case .resultResponse(let entries):
                let n = (phases.openPhase("scan")?.detail.flatMap { Int($0.split(separator: " ").first ?? "") } ?? 0) + entries.count
                phases.touch("scan", e, detail: "\(n) network\(n == 1 ? "" : "s")")
            default:
                phases.touch("scan", e)
            }
            if m.status.raw != 0 { phases.close("scan", e, .failed, detail: "status \(m.status)") }
        case let m as ESPProvisioning.ConfigMessage:
            if phases.openPhase("session") != nil { phases.close("session", e, .ok) }
            if phases.openPhase("scan") != nil { phases.close("scan", e, .ok) }
            switch m.payload {
            case .setConfig(let c): phases.start("config", e, detail: "CmdSetConfig \"\(ProtocolText.display(c.ssid))\"")
            case .setConfigResponse(let st): phases.close("config", e, st.raw == 0 ? .ok : .failed, detail: st.raw == 0 ? nil : "RespSetConfig \(st)")
            case .applyConfig: phases.start("apply", e)
            case .applyConfigResponse(let st):
                phases.close("apply", e, st.raw == 0 ? .ok : .failed, detail: st.raw == 0 ? nil : "RespApplyConfig \(st)")
                if st.raw == 0 { phases.start("connection", e) }
            case .status(let r):
                switch r.stationState.raw {
                case 0: phases.close("connection", e, .ok, detail: "Connected")
                case 3:
                    var reason = ""
                    if case .failReason(let f) = r.detail { reason = " (\(f))" }
                    phases.close("connection", e, .failed, detail: "ConnectionFailed" + reason)
                default: phases.touch("connection", e, detail: r.stationState.description)
                }
            default: break
            }
        case let o as ESPProvisioning.OpaquePayload where o.encrypted:
            // Encrypted traffic: one phase per endpoint, saying why it cannot be read.
            if phases.openPhase("session") != nil { phases.close("session", e, .ok) }
            let why = o.security == 2 ? "encrypted, sec2: not decryptable from a capture"
                : o.security == 1 ? "encrypted, sec1 (give --esp-pop and --esp-client-key to read it)" : "encrypted"
            let name = e.kind == "esp.scan" ? "scan" : e.kind == "esp.config" ? "config" : nil
            if let name {
                if name == "config", phases.openPhase("scan") != nil { phases.close("scan", e, .ok) }
                phases.touch(name, e, detail: why)
            }
        default:
            break
        }
    }
}

// MARK: Wi-Fi joins

extension ESPProvisioning.ConfigMessage: WiFiJoinReporting {
    public var wifiJoinSteps: [WiFiJoinStep] {
        switch payload {
        case .setConfig(let c): return [.ssid(c.ssid)]
        case .status(let r):
            guard r.stationState.raw == 3 else { return [.station(failure: nil)] }
            var reason: ProtoEnumValue?
            if case .failReason(let f) = r.detail { reason = f }
            let cause: WiFiJoinCause? = switch reason?.raw {
            case 0?: .wrongPassword
            case 1?: .apNotFound
            default: nil
            }
            return [.station(failure: WiFiJoinFailure(what: "ESP station ConnectionFailed", reason: reason?.description, cause: cause))]
        default: return []
        }
    }
}

extension ESPProvisioning.ScanMessage: WiFiJoinReporting {
    public var wifiJoinSteps: [WiFiJoinStep] {
        switch payload {
        case .start: [.scanStarted]
        case .resultResponse(let entries): [.scanned(entries.map(WiFiNetwork.init))]
        default: []
        }
    }
}
