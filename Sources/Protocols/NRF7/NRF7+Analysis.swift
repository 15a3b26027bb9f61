import ATT
import Analysis
import Profiles

extension NRF7Protocol: ProtocolAnalysis {
    public static func provisioningPhaseReader() -> (any ProvisioningPhaseReading)? { NRF7PhaseReader() }

    /// A request carries the whole configuration (SSID, passphrase) in one write.
    public static func isWholeValueWrite(_ e: ProfileEvent) -> Bool { e.message is NRF7.Request }

    /// Requests are answered by Control Point indications.
    public static func answersNeedSubscription(to message: any ProfileMessage) -> (characteristic: BluetoothUUID, name: String)? {
        message is NRF7.Request ? (NRF7.controlPoint, "the nRF7 Control Point") : nil
    }

    /// The last Wi-Fi state the device reported, or a refused request.
    public static func story(of events: TimelineEventSelection, in timeline: Timeline, device: Int, links: String) -> (TimelineDevice.Outcome, String)? {
        if let last = events.compactMap({ e -> NRF7.Result? in e.message(as: NRF7.Result.self).flatMap { $0.state == nil ? nil : $0 } }).last {
            if last.state?.raw == 4 { return (.succeeded, "nRF7 provisioned: CONNECTED; \(links)") }
            if last.state?.raw == 5 { return (.failed, "nRF7 provisioning failed: CONNECTION_FAILED\(last.reason.map { " (\($0))" } ?? ""); \(links)") }
            return (.interrupted, "nRF7 provisioning stopped in \(last.state?.description ?? "?"); \(links)")
        }
        guard events.contains(where: { $0.kind.hasPrefix("nrf7.") }) else { return nil }
        let refused = events.contains { ($0.message(as: NRF7.Response.self)?.status?.raw ?? 0) != 0 }
        return (refused ? .failed : .incomplete, refused ? "nRF7 refused a request; \(links)" : "nRF7 provisioning not applied; \(links)")
    }

    // MARK: Diagnoses

    public static var diagnoses: [Diagnoses.Rule] {
        [
            Diagnoses.Rule(id: "nrf7.connection-failed", severity: .error, title: "The nRF7 device could not connect to Wi-Fi",
                 advice: "AUTH_ERROR: wrong passphrase; NETWORK_NOT_FOUND: SSID not in range or misspelled; FAIL_IP: no DHCP answer.",
                 find: nrf7Failed),
            Diagnoses.Rule(id: "nrf7.request-failed", severity: .error, title: "The nRF7 device refused a request",
                 advice: "INVALID_ARGUMENT: a field out of range (SSID over 32 bytes, passphrase over 64); INVALID_PROTO: the message did not parse.",
                 find: nrf7Refused),
            Diagnoses.Rule(id: "nrf7.response-missing", severity: .warning, title: "An nRF7 request got no Response",
                 advice: "Zephyr does not send an indication longer than MTU-3: at a small MTU a Response with the device status is lost. Exchange a larger MTU (the nRF7 app asks for 498) before provisioning.",
                 find: nrf7ResponseMissing),
        ]
    }

    private static func nrf7Failed(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        c.events(carrying: NRF7.Result.self).compactMap { e in
            guard let r = e.message(as: NRF7.Result.self), r.state?.raw == 5, !c.isExplainedJoinFailure(e) else { return nil }
            return Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames,
                       evidence: "CONNECTION_FAILED\(r.reason.map { " (\($0))" } ?? "") at \(c.seconds(e.time))")
        }
    }

    private static func nrf7Refused(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        c.events(carrying: NRF7.Response.self).compactMap { e in
            guard let r = e.message(as: NRF7.Response.self), let s = r.status, s.raw != 0 else { return nil }
            return Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames,
                       evidence: "\(r.requestOpCode?.description ?? "request") answered \(s) at \(c.seconds(e.time))")
        }
    }

    private static func nrf7ResponseMissing(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        var hits: [Diagnoses.Hit] = []
        var open: [Int: TimelineEvent] = [:]  // connection -> unanswered request
        func unanswered(_ conn: Int, _ why: String) {
            guard let r = open.removeValue(forKey: conn) else { return }
            let mtu = c.timeline.connections[conn].mtu
            hits.append(Diagnoses.Hit(device: r.device, time: r.time, frames: r.frames,
                            evidence: "\(r.summary) at \(c.seconds(r.time)) and no Response before \(why); MTU \(mtu)"))
        }
        for e in c.events(carrying: [NRF7.Request.self, NRF7.Response.self], kinds: ["link.disconnected"]) {
            guard let conn = e.connection else { continue }
            switch e.message {
            case is NRF7.Request:
                unanswered(conn, "the next request")
                if c.facts.subscribed[conn]?.contains(NRF7.controlPoint) == true { open[conn] = e }
            case is NRF7.Response: open[conn] = nil
            default:
                if e.kind == "link.disconnected" { unanswered(conn, "the link ended") }
            }
        }
        for conn in open.keys.sorted() { unanswered(conn, "the capture ended") }
        return hits
    }
}

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

/// nRF7: the link's security (read by the engine), then scan, config and connection from the
/// requests, responses and results.
struct NRF7PhaseReader: ProvisioningPhaseReading {
    mutating func read(_ e: TimelineEvent, into phases: inout ProvisioningPhases) {
        switch e.message {
        case let r as NRF7.Request:
            switch r.opCode?.raw {
            case 2?: phases.start("scan", e)
            case 3?: if phases.openPhase("scan") != nil { phases.close("scan", e, .ok) }
            case 4?:
                if phases.openPhase("scan") != nil { phases.close("scan", e, .ok) }
                let ssid = r.config?.wifi?.ssid.map { "\"\(ProtocolText.display($0))\"" } ?? "no SSID"
                phases.start("config", e, detail: "SET_CONFIG \(ssid)")
            default: break
            }
        case let r as NRF7.Response:
            if r.requestOpCode?.raw == 4, phases.openPhase("config") != nil {
                let ok = (r.status?.raw ?? 0) == 0
                phases.close("config", e, ok ? .ok : .failed, detail: ok ? nil : "refused: \(r.status?.description ?? "?")")
                if ok { phases.start("connection", e) }
            } else if r.requestOpCode?.raw == 2, (r.status?.raw ?? 0) != 0, phases.openPhase("scan") != nil {
                phases.close("scan", e, .failed, detail: "refused: \(r.status?.description ?? "?")")
            }
        case let r as NRF7.Result:
            if r.scanRecord != nil {
                let n = (phases.openPhase("scan")?.detail.flatMap { Int($0.split(separator: " ").first ?? "") } ?? 0) + 1
                phases.touch("scan", e, detail: "\(n) network\(n == 1 ? "" : "s")")
            }
            if let state = r.state {
                if phases.openPhase("scan") != nil { phases.close("scan", e, .ok) }
                if let config = phases.openPhase("config") {
                    // The Response was lost (at MTU 23 it does not fit): the states tell it was taken.
                    phases.close("config", e, .ok, detail: (config.detail.map { $0 + "; " } ?? "") + "no Response seen")
                }
                switch state.raw {
                case 4: phases.close("connection", e, .ok, detail: "CONNECTED")
                case 5: phases.close("connection", e, .failed, detail: "CONNECTION_FAILED" + (r.reason.map { " (\($0))" } ?? ""))
                default: phases.touch("connection", e, detail: state.description)
                }
            }
        default:
            break
        }
    }
}

// MARK: Wi-Fi joins

extension NRF7.Request: WiFiJoinReporting {
    public var wifiJoinSteps: [WiFiJoinStep] {
        var steps: [WiFiJoinStep] = []
        if let ssid = config?.wifi?.ssid { steps.append(.ssid(ssid)) }
        if opCode?.raw == 2 { steps.append(.scanStarted) }
        return steps
    }
}

extension NRF7.Result: WiFiJoinReporting {
    public var wifiJoinSteps: [WiFiJoinStep] {
        var steps: [WiFiJoinStep] = []
        if let record = scanRecord, let network = WiFiNetwork(record) { steps.append(.scanned([network])) }
        if state?.raw == 5 {
            let cause: WiFiJoinCause? = switch reason?.raw {
            case 0?: .wrongPassword
            case 1?: .apNotFound
            default: nil
            }
            steps.append(.failed(WiFiJoinFailure(what: "nRF7 CONNECTION_FAILED", reason: reason?.description, cause: cause)))
        }
        return steps
    }
}
