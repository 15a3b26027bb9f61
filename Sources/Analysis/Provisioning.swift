import Profiles

/// The Wi-Fi provisioning story of nRF7 and ESP-IDF devices, read from a finished timeline's
/// events: the phases (security or session, scan, config, apply, connection) and why a join
/// failed (wrong password, access point not found, a 5 GHz-only SSID).
enum Provisioning {
    // MARK: Join failures

    /// What a failed join means, from the device's reason and what its scan saw.
    enum Failure: Equatable {
        case wrongPassword
        case apNotFound
        /// The SSID is on 5 GHz only (the scan saw it there and nowhere else, or its name says
        /// 5 GHz and a scan of 2.4 GHz networks does not list it).
        case fiveGHzOnly
    }

    /// One failed join: where, the reason as the device named it, and what it means.
    struct Join {
        var event: TimelineEvent
        var protocolName: String
        var reason: String?
        var failure: Failure?
        var ssid: String?
        /// The device's scan results before the failure (nil when it did not scan).
        var scanned: [WiFiNetwork]?
    }

    /// Every failed join of every device, once per failure (repeated status polls of the same
    /// failure count once).
    static func failedJoins(_ timeline: Timeline) -> [Join] {
        var joins: [Join] = []
        let byDevice = Dictionary(grouping: timeline.events.filter { $0.device != nil }) { $0.device ?? -1 }
        for d in byDevice.keys.sorted() {
            var ssid: [UInt8]?
            var scanned: [WiFiNetwork]?
            var failing = false
            for e in byDevice[d] ?? [] {
                switch e.message {
                case let r as NRF7.Request:
                    if let s = r.config?.wifi?.ssid { ssid = s }
                    if r.opCode?.raw == 2 { scanned = [] }
                case let r as NRF7.Result:
                    if let rec = r.scanRecord, let n = WiFiNetwork(rec) { scanned = (scanned ?? []) + [n] }
                    guard let state = r.state?.raw else { break }
                    if state == 5 {
                        let failure: Failure? = switch r.reason?.raw {
                        case 0?: .wrongPassword
                        case 1?: .apNotFound
                        default: nil
                        }
                        joins.append(classify(Join(event: e, protocolName: "nRF7", reason: r.reason?.description, failure: failure,
                                                   ssid: ssid.map { ProtocolText.display($0) }, scanned: scanned)))
                    }
                case let m as ESPProvisioning.ConfigMessage:
                    switch m.payload {
                    case .setConfig(let c): ssid = c.ssid
                    case .status(let r):
                        guard r.stationState.raw == 3 else { failing = false; break }
                        guard !failing else { break }
                        failing = true
                        var reason: ProtoEnumValue?
                        if case .failReason(let f) = r.detail { reason = f }
                        let failure: Failure? = switch reason?.raw {
                        case 0?: .wrongPassword
                        case 1?: .apNotFound
                        default: nil
                        }
                        joins.append(classify(Join(event: e, protocolName: "ESP", reason: reason?.description, failure: failure,
                                                   ssid: ssid.map { ProtocolText.display($0) }, scanned: scanned)))
                    default: break
                    }
                case let m as ESPProvisioning.ScanMessage:
                    if case .start = m.payload { scanned = [] }
                    if case .resultResponse(let entries) = m.payload { scanned = (scanned ?? []) + entries.map(WiFiNetwork.init) }
                default: break
                }
            }
        }
        return joins
    }

    /// A not-found (or unexplained) failure whose SSID the scan saw only on 5 GHz, or whose name
    /// says 5 GHz while the scan of 2.4 GHz networks lacks it, is a 5 GHz-only SSID.
    static func classify(_ j: Join) -> Join {
        var j = j
        guard j.failure != .wrongPassword, let ssid = j.ssid, let scanned = j.scanned else { return j }
        let sightings = scanned.filter { $0.ssidText == ssid }
        if !sightings.isEmpty, sightings.allSatisfy(\.is5GHz) {
            j.failure = .fiveGHzOnly
        } else if sightings.isEmpty, j.failure == .apNotFound, looks5GHz(ssid), !scanned.isEmpty, !scanned.contains(where: \.is5GHz) {
            j.failure = .fiveGHzOnly
        }
        return j
    }

    /// `HomeNet-5G`, `Cafe_5GHz`, `Office 5G`: the names routers give their 5 GHz networks.
    static func looks5GHz(_ ssid: String) -> Bool {
        let lower = ssid.lowercased()
        return ["5g", "5ghz", "5 ghz", "5.0ghz"].contains { suffix in
            guard lower.hasSuffix(suffix) else { return false }
            let before = lower.dropLast(suffix.count)
            return before.isEmpty || before.last.map { !$0.isLetter && !$0.isNumber } == true
        }
    }

    static func evidence(_ j: Join, _ c: Diagnoses.Context) -> String {
        var t = "\(j.protocolName) \(j.protocolName == "ESP" ? "station ConnectionFailed" : "CONNECTION_FAILED")"
            + (j.reason.map { " (\($0))" } ?? "") + " at \(c.seconds(j.event.time))"
        t += j.ssid.map { "; SSID \"\($0)\"" } ?? "; SSID not in the capture"
        guard let scanned = j.scanned else { return t + "; the device did not scan in this capture" }
        guard !scanned.isEmpty else { return t + "; the device scanned, but no scan result is in the capture" }
        let ssid = j.ssid ?? ""
        let sightings = scanned.filter { $0.ssidText == ssid }
        if sightings.isEmpty {
            let bands = Set(scanned.compactMap(\.band)).sorted()
            t += "; not among the \(scanned.count) network\(scanned.count == 1 ? "" : "s") the device's scan found"
                + (bands.isEmpty ? "" : " (\(bands.joined(separator: ", ")))")
            if let twin = twin(of: ssid, in: scanned) { t += "; \"\(twin.ssidText)\" is there on \(twin.band ?? "channel \(twin.channel.map(String.init) ?? "?")")" }
        } else {
            t += "; the scan saw it on " + sightings.map { n in
                [n.band, n.channel.map { "channel \($0)" }, n.rssi.map { "\($0) dBm" }].compactMap { $0 }.joined(separator: " ")
            }.joined(separator: ", ")
        }
        return t
    }

    /// The 2.4 GHz network the 5 GHz name belongs with: `HomeNet` for `HomeNet-5G`.
    static func twin(of ssid: String, in scanned: [WiFiNetwork]) -> WiFiNetwork? {
        guard looks5GHz(ssid) else { return nil }
        var base = Substring(ssid.lowercased())
        for suffix in ["5.0ghz", "5 ghz", "5ghz", "5g"] where base.hasSuffix(suffix) {
            base = base.dropLast(suffix.count)
            break
        }
        while let l = base.last, !l.isLetter, !l.isNumber { base = base.dropLast() }
        return scanned.first { $0.ssidText.lowercased() == base && !$0.is5GHz }
    }

    static func hits(_ c: Diagnoses.Context, _ failure: Failure) -> [Diagnoses.Hit] {
        failedJoins(c.timeline).filter { $0.failure == failure }.map { j in
            Diagnoses.Hit(device: j.event.device, time: j.event.time, frames: j.event.frames, evidence: evidence(j, c))
        }
    }

    /// Whether a failure event has a precise diagnosis (the generic connection-failed rules
    /// leave it to that one).
    static func explained(_ e: TimelineEvent, in c: Diagnoses.Context) -> Bool {
        failedJoins(c.timeline).contains { $0.event.frames == e.frames && $0.event.time == e.time && $0.failure != nil }
    }

    // MARK: Phases

    /// The provisioning phases of each device. ESP: `session` (its security scheme; sec2 says it
    /// cannot be decrypted), `scan`, `config`, `apply`, `connection`; nRF7: `security` (pairing
    /// until the link is encrypted), `scan`, `config`, `connection`. Each from its first message
    /// to the answer that ends it, with the outcome; one never answered is `open` at the end of
    /// the capture, or `interrupted` when the link dropped first.
    static func phases(_ t: Timeline) -> [Phase] {
        var phases: [Phase] = []
        let byDevice = Dictionary(grouping: t.events.filter { $0.device != nil }) { $0.device ?? -1 }
        let end = t.lastTime ?? 0
        for d in byDevice.keys.sorted() {
            let events = byDevice[d] ?? []
            let protocols = t.devices.indices.contains(d) ? t.devices[d].protocols : []
            guard protocols.contains("esp-prov") || protocols.contains("nrf7") else { continue }
            var builder = PhaseBuilder(device: d)
            for e in events { builder.add(e) }
            builder.finish(at: end)
            phases += builder.phases
        }
        return phases
    }

    /// Walks one device's events, opening and closing phases.
    struct PhaseBuilder {
        let device: Int
        var phases: [Phase] = []
        var open: [String: Phase] = [:]
        var order: [String] = []
        var security: Int?
        var capabilities: [String] = []

        init(device: Int) { self.device = device }

        mutating func start(_ name: String, _ e: TimelineEvent, detail: String? = nil) {
            if var p = open[name] {
                // A repeated start extends the phase (polls, pages, retries).
                p.end = e.time
                p.lastFrame = e.frames.last ?? p.lastFrame
                if let detail { p.detail = detail }
                open[name] = p
                return
            }
            open[name] = Phase(device: device, connection: e.connection, name: name, start: e.time, end: e.time, outcome: .open,
                               detail: detail, firstFrame: e.frames.first ?? 0, lastFrame: e.frames.last ?? 0)
            order.append(name)
        }

        mutating func touch(_ name: String, _ e: TimelineEvent, detail: String? = nil) {
            guard var p = open[name] else { return start(name, e, detail: detail) }
            p.end = e.time
            p.lastFrame = e.frames.last ?? p.lastFrame
            if let detail { p.detail = detail }
            open[name] = p
        }

        mutating func close(_ name: String, _ e: TimelineEvent, _ outcome: Phase.Outcome, detail: String? = nil) {
            if open[name] == nil { start(name, e) }
            guard var p = open.removeValue(forKey: name) else { return }
            p.end = e.time
            p.lastFrame = e.frames.last ?? p.lastFrame
            p.outcome = outcome
            if let detail { p.detail = detail }
            if name == "scan", p.detail == nil { p.detail = "no scan result in the capture" }
            order.removeAll { $0 == name }
            phases.append(p)
        }

        mutating func closeAll(_ outcome: Phase.Outcome, at time: Int64, frame: Int?, why: String?) {
            for name in order {
                guard var p = open[name] else { continue }
                p.end = max(p.end, time)
                if let frame { p.lastFrame = frame }
                p.outcome = outcome
                if let why { p.detail = (p.detail.map { $0 + "; " } ?? "") + why }
                phases.append(p)
            }
            open = [:]
            order = []
        }

        var sessionDetail: String {
            switch security {
            case 0?: return "security 0: plaintext"
            case 1?: return capabilities.contains("no_pop") ? "security 1 (X25519 + AES-CTR), no PoP" : "security 1 (X25519 + AES-CTR) with PoP"
            case 2?: return "security 2 (SRP6a + AES-GCM): encrypted, not decryptable from a capture"
            case let s?: return "security \(s)"
            case nil: return "security unknown"
            }
        }

        mutating func add(_ e: TimelineEvent) {
            if e.kind == "link.disconnected" {
                // What could not be read cannot be called interrupted: it stays open.
                for (name, p) in open where p.detail?.contains("encrypted") == true { close(name, e, .open) }
                closeAll(.interrupted, at: e.time, frame: e.frames.last, why: "the link ended")
                return
            }
            switch e.message {
            // nRF7: the link's security, then requests and results.
            case nil where e.kind == "att.error":
                let field = { (name: String) -> FieldValue? in e.fields.first { $0.name == name }?.value }
                let characteristic = if case .string(let c)? = field("characteristic") { c } else { "" }
                let error = if case .string(let x)? = field("error") { x } else { "an ATT error" }
                if case .bool(true)? = field("pairFirst") {
                    start("security", e, detail: "the device asked for an encrypted link (\(error))")
                } else if characteristic.contains("prov-session"), open["session"] != nil {
                    close("session", e, .failed, detail: sessionDetail + "; refused: \(error)")
                }
            case nil where e.kind == "link.pairing":
                start("security", e, detail: "pairing")
            case nil where e.kind == "link.encryption":
                // nRF7's Control Point needs an encrypted link: the security phase ends here.
                let ok = e.fields.contains { $0.name == "enabled" && { if case .bool(true) = $0.value { true } else { false } }($0) }
                let asked = open["security"]?.detail.map { $0 + "; " } ?? ""
                close("security", e, ok ? .ok : .failed, detail: asked + (ok ? "link encrypted" : "encryption failed"))
            case let r as NRF7.Request:
                switch r.opCode?.raw {
                case 2?: start("scan", e)
                case 3?: if open["scan"] != nil { close("scan", e, .ok) }
                case 4?:
                    if open["scan"] != nil { close("scan", e, .ok) }
                    let ssid = r.config?.wifi?.ssid.map { "\"\(ProtocolText.display($0))\"" } ?? "no SSID"
                    start("config", e, detail: "SET_CONFIG \(ssid)")
                default: break
                }
            case let r as NRF7.Response:
                if r.requestOpCode?.raw == 4, open["config"] != nil {
                    let ok = (r.status?.raw ?? 0) == 0
                    close("config", e, ok ? .ok : .failed, detail: ok ? nil : "refused: \(r.status?.description ?? "?")")
                    if ok { start("connection", e) }
                } else if r.requestOpCode?.raw == 2, (r.status?.raw ?? 0) != 0, open["scan"] != nil {
                    close("scan", e, .failed, detail: "refused: \(r.status?.description ?? "?")")
                }
            case let r as NRF7.Result:
                if r.scanRecord != nil {
                    let n = (open["scan"]?.detail.flatMap { Int($0.split(separator: " ").first ?? "") } ?? 0) + 1
                    touch("scan", e, detail: "\(n) network\(n == 1 ? "" : "s")")
                }
                if let state = r.state {
                    if open["scan"] != nil { close("scan", e, .ok) }
                    if let config = open["config"] {
                        // The Response was lost (at MTU 23 it does not fit): the states tell it was taken.
                        close("config", e, .ok, detail: (config.detail.map { $0 + "; " } ?? "") + "no Response seen")
                    }
                    switch state.raw {
                    case 4: close("connection", e, .ok, detail: "CONNECTED")
                    case 5: close("connection", e, .failed, detail: "CONNECTION_FAILED" + (r.reason.map { " (\($0))" } ?? ""))
                    default: touch("connection", e, detail: state.description)
                    }
                }
            // ESP-IDF: session, scan, config, apply, connection status.
            case let v as ESPProvisioning.Version:
                if security == nil { security = v.securityVersion }
                capabilities = v.capabilities
            case let s as ESPProvisioning.SessionMessage:
                security = s.securityVersion.raw
                switch s.payload {
                case .sec0Response(let st), .sec1Response1(let st, _):
                    close("session", e, st.raw == 0 ? .ok : .failed, detail: sessionDetail + (st.raw == 0 ? "" : "; refused: \(st)"))
                case .sec1Response0(let st, _, _) where st.raw != 0:
                    close("session", e, .failed, detail: sessionDetail + "; refused: \(st)")
                case .sec2(let step) where step.raw == 3:
                    close("session", e, .ok, detail: sessionDetail)
                default:
                    start("session", e, detail: sessionDetail)
                }
            case let m as ESPProvisioning.ScanMessage:
                if open["session"] != nil { close("session", e, .ok) }
                switch m.payload {
                case .resultResponse(let entries):
                    let n = (open["scan"]?.detail.flatMap { Int($0.split(separator: " ").first ?? "") } ?? 0) + entries.count
                    touch("scan", e, detail: "\(n) network\(n == 1 ? "" : "s")")
                default:
                    touch("scan", e)
                }
                if m.status.raw != 0 { close("scan", e, .failed, detail: "status \(m.status)") }
            case let m as ESPProvisioning.ConfigMessage:
                if open["session"] != nil { close("session", e, .ok) }
                if open["scan"] != nil { close("scan", e, .ok) }
                switch m.payload {
                case .setConfig(let c): start("config", e, detail: "CmdSetConfig \"\(ProtocolText.display(c.ssid))\"")
                case .setConfigResponse(let st): close("config", e, st.raw == 0 ? .ok : .failed, detail: st.raw == 0 ? nil : "RespSetConfig \(st)")
                case .applyConfig: start("apply", e)
                case .applyConfigResponse(let st):
                    close("apply", e, st.raw == 0 ? .ok : .failed, detail: st.raw == 0 ? nil : "RespApplyConfig \(st)")
                    if st.raw == 0 { start("connection", e) }
                case .status(let r):
                    switch r.stationState.raw {
                    case 0: close("connection", e, .ok, detail: "Connected")
                    case 3:
                        var reason = ""
                        if case .failReason(let f) = r.detail { reason = " (\(f))" }
                        close("connection", e, .failed, detail: "ConnectionFailed" + reason)
                    default: touch("connection", e, detail: r.stationState.description)
                    }
                default: break
                }
            case let o as ESPProvisioning.OpaquePayload where o.encrypted:
                // Encrypted traffic: one phase per endpoint, saying why it cannot be read.
                if open["session"] != nil { close("session", e, .ok) }
                let why = o.security == 2 ? "encrypted, sec2: not decryptable from a capture"
                    : o.security == 1 ? "encrypted, sec1 (give --esp-pop and --esp-client-key to read it)" : "encrypted"
                let name = e.kind == "esp.scan" ? "scan" : e.kind == "esp.config" ? "config" : nil
                if let name {
                    if name == "config", open["scan"] != nil { close("scan", e, .ok) }
                    touch(name, e, detail: why)
                }
            default:
                break
            }
        }

        mutating func finish(at end: Int64) {
            closeAll(.open, at: end, frame: nil, why: nil)
            phases.sort { ($0.start, $0.name) < ($1.start, $1.name) }
        }
    }
}
