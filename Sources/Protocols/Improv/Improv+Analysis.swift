import ATT
import Analysis
import Profiles

/// Improv in the timeline: its phases (authorization, scan, provisioning) from Current State,
/// Error State and the RPC commands; the device's story; and its diagnoses.
extension ImprovProtocol: ProtocolAnalysis {
    public static func provisioningPhaseReader() -> (any ProvisioningPhaseReading)? { ImprovPhaseReader() }

    /// WIFI_SETTINGS is one frame; a plain write longer than MTU-3 cuts it (clients cut it
    /// into several writes themselves, which `improv.rpc-split` notes).
    public static func isWholeValueWrite(_ e: ProfileEvent) -> Bool {
        e.message(as: Improv.Command.self)?.command.raw == 0x01 && e.message(as: Improv.Command.self)?.writes == 1
    }

    /// Commands are answered on RPC Result (and by Current State / Error State notifications).
    public static func answersNeedSubscription(to message: any ProfileMessage) -> (characteristic: BluetoothUUID, name: String)? {
        guard let c = message as? Improv.Command, c.command.raw != 0x02 else { return nil }  // IDENTIFY has no result
        return c.command.raw == 0x01 ? (Improv.currentState, "Improv Current State") : (Improv.rpcResult, "Improv RPC Result")
    }

    public static var problemsToldElsewhere: Set<String> {
        ["improv.bad-checksum", "improv.bad-length", "improv.frame-cut", "improv.checksum-missing", "improv.unknown-command",
         // Expected in a redacted capture, and shown on its event.
         "improv.checksum-after-redaction"]
    }

    /// The last state or error the device reported.
    public static func story(of events: TimelineEventSelection, in timeline: Timeline, device: Int, links: String) -> (TimelineDevice.Outcome, String)? {
        guard events.contains(where: { $0.kind.hasPrefix("improv.") }) else { return nil }
        var state: Int?
        var error = 0
        var url: [UInt8]?
        for e in events {
            switch e.message {
            case let s as Improv.CurrentState:
                state = s.state.raw
                if s.state.raw == 3 { error = 0 }
            case let x as Improv.ErrorState: error = x.error.raw
            case let r as Improv.Result: if let u = r.redirectURL { url = u }
            default: break
            }
        }
        if state == 4 {
            return (.succeeded, "Improv provisioned" + (url.map { " (next: \(ProtocolText.display($0)))" } ?? "") + "; \(links)")
        }
        if error != 0 { return (.failed, "Improv provisioning failed: \(Improv.error(error)); \(links)") }
        if state == 3 { return (.interrupted, "Improv provisioning never finished (PROVISIONING); \(links)") }
        if state == 1 { return (.incomplete, "Improv device still waits for authorization; \(links)") }
        return (.incomplete, "Improv provisioning not applied\(state.map { " (\(Improv.state($0)))" } ?? ""); \(links)")
    }

    // MARK: Diagnoses

    public static var diagnoses: [Diagnoses.Rule] {
        [
            Diagnoses.Rule(id: "improv.unable-to-connect", severity: .error, title: "The Improv device could not connect to Wi-Fi",
                 advice: "Improv reports UNABLE_TO_CONNECT without a reason: check the password (the most common cause), that the SSID is in range on 2.4 GHz, and that the network is WPA2/WPA3-personal.",
                 find: { c in errorHits(c, raw: 3) }),
            Diagnoses.Rule(id: "improv.not-authorized", severity: .error, title: "The Improv device refused a command: not authorized",
                 advice: "The device is in AUTHORIZATION_REQUIRED: press its button (or whatever its authorizer is) before sending WIFI_SETTINGS, and send it before the authorization times out (ESPHome: 1 minute).",
                 find: { c in errorHits(c, raw: 4) }),
            Diagnoses.Rule(id: "improv.bad-checksum", severity: .error, title: "An Improv RPC frame had a bad checksum or length",
                 advice: "The checksum is the low byte of the sum of every byte before it (command, length, data); the length byte counts the data only. The device answers INVALID_RPC_PACKET.",
                 find: badFrames),
            Diagnoses.Rule(id: "improv.result-truncated", severity: .error, title: "An Improv RPC result was cut at the MTU",
                 advice: "A notification carries at most MTU-3 bytes and Improv sends each result in one: at MTU 23 a device info or network result longer than 20 bytes arrives cut and the client drops it. Exchange a larger MTU first (Home Assistant's client asks for 517).",
                 find: truncatedResults),
            Diagnoses.Rule(id: "improv.checksum-missing", severity: .info, title: "An Improv frame without its checksum byte",
                 advice: "Accepted and read: some firmware leaves the checksum out (improv-wifi/sdk-cpp can build frames without it). Home Assistant's client refuses such results, so add the checksum if that client must read them.",
                 find: missingChecksums),
            Diagnoses.Rule(id: "improv.unknown-command", severity: .warning, title: "An Improv command the device does not know",
                 advice: "Commands 0x05 HOSTNAME and 0x06 DEVICE_NAME are spec 2.3/2.4: older firmware answers UNKNOWN_RPC_COMMAND. Check the Capabilities value before sending.",
                 find: unknownCommands),
            Diagnoses.Rule(id: "improv.rpc-split", severity: .info, title: "An Improv RPC command was split across writes",
                 advice: "Normal: clients cut a command longer than the MTU allows into several writes and the device joins them. Shown so the record numbers of every piece are at hand.",
                 find: splitCommands),
            Diagnoses.Rule(id: "improv.provisioning-unfinished", severity: .warning, title: "Improv provisioning never finished",
                 advice: "WIFI_SETTINGS was sent but the device reported neither PROVISIONED nor an error: it may have reset while joining, or the phone left before the join ended (subscribe to Current State and wait).",
                 find: unfinished),
        ]
    }

    private static func errorHits(_ c: Diagnoses.Context, raw: Int) -> [Diagnoses.Hit] {
        c.events(carrying: Improv.ErrorState.self).compactMap { e in
            guard let x = e.message(as: Improv.ErrorState.self), x.error.raw == raw else { return nil }
            if raw == 3, c.isExplainedJoinFailure(e) { return nil }
            return Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames, evidence: "Error State \(x.error) at \(c.seconds(e.time))")
        }
    }

    /// Events where the decoder found one of `problems` in a frame, or where the device's Error
    /// State said `deviceError` (its own word for the same fault).
    private static func frameFaults(_ c: Diagnoses.Context, problems: Set<String>, deviceError: Int, named name: String,
                                    evidence: @escaping (Diagnoses.Context, TimelineEvent, ProtocolProblem) -> String) -> [Diagnoses.Hit] {
        c.events(carrying: [Improv.ErrorState.self], problems: true).compactMap { e in
            if let p = e.problems.first(where: { problems.contains($0.id) }) {
                return Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames, evidence: evidence(c, e, p))
            }
            if let x = e.message(as: Improv.ErrorState.self), x.error.raw == deviceError {
                return Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames, evidence: "the device answered \(name) at \(c.seconds(e.time))")
            }
            return nil
        }
    }

    private static func badFrames(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        frameFaults(c, problems: ["improv.bad-checksum", "improv.bad-length"], deviceError: 1, named: "INVALID_RPC_PACKET") { c, e, p in
            "\(e.kind) at \(c.seconds(e.time)): \(p.message)"
        }
    }

    /// The connection's MTU at an event, when the timeline knows it.
    private static func mtu(_ e: TimelineEvent, _ c: Diagnoses.Context) -> Int? {
        e.connection.flatMap { c.timeline.connections.indices.contains($0) ? c.timeline.connections[$0].mtu : nil }
    }

    /// A result without its checksum byte that fills a notification: cut by the MTU, one byte short.
    private static func isCutByOneByte(_ e: TimelineEvent, mtu: Int?) -> Bool {
        guard let r = e.message(as: Improv.Result.self), let mtu else { return false }
        return r.checksum == .absent && r.frameLength == mtu - 3
    }

    /// A result notification as long as the link allows that is shorter than its length byte says.
    private static func truncatedResults(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        c.events(kind: "improv.result").compactMap { e in
            let mtu = mtu(e, c)
            if let p = e.problems.first(where: { $0.id == "improv.frame-cut" }) {
                return Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames,
                                     evidence: "a result at \(c.seconds(e.time)): \(p.message)\(mtu.map { "; MTU \($0)" } ?? "")")
            }
            if isCutByOneByte(e, mtu: mtu), let r = e.message(as: Improv.Result.self), let mtu {
                return Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames,
                                     evidence: "result to \(r.command) at \(c.seconds(e.time)) fills the \(mtu - 3) bytes of a notification at MTU \(mtu) and lacks its checksum: cut one byte short")
            }
            return nil
        }
    }

    /// Frames without a checksum byte that are not a cut result.
    private static func missingChecksums(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        c.eventsWithProblems.compactMap { e in
            guard e.problems.contains(where: { $0.id == "improv.checksum-missing" }) else { return nil }
            if isCutByOneByte(e, mtu: mtu(e, c)) { return nil }
            return Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames, evidence: "\(e.kind) at \(c.seconds(e.time)) has no checksum byte")
        }
    }

    private static func unknownCommands(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        frameFaults(c, problems: ["improv.unknown-command"], deviceError: 2, named: "UNKNOWN_RPC_COMMAND") { c, e, p in
            "\(p.message) at \(c.seconds(e.time))"
        }
    }

    private static func splitCommands(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        c.events(carrying: Improv.Command.self).compactMap { e in
            guard let m = e.message(as: Improv.Command.self), m.writes > 1 else { return nil }
            return Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames,
                                 evidence: "\(m.command) joined from \(m.writes) writes, records \(e.frames.map(String.init).joined(separator: ", "))")
        }
    }

    private static func unfinished(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        var open: [Int: TimelineEvent] = [:]  // device -> WIFI_SETTINGS not yet answered
        for e in c.events(carrying: [Improv.Command.self, Improv.CurrentState.self, Improv.ErrorState.self]) {
            guard let d = e.device else { continue }
            switch e.message {
            case let m as Improv.Command where m.command.raw == 0x01: open[d] = e
            case let s as Improv.CurrentState where s.state.raw == 4: open[d] = nil
            case let x as Improv.ErrorState where x.error.raw != 0: open[d] = nil
            default: break
            }
        }
        return open.keys.sorted().compactMap { d in
            guard let e = open[d] else { return nil }
            return Diagnoses.Hit(device: d, time: e.time, frames: e.frames,
                                 evidence: "WIFI_SETTINGS at \(c.seconds(e.time)), then neither PROVISIONED nor an error before the capture ended")
        }
    }
}

// MARK: Timeline lines

extension Improv.CurrentState: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        ("state \(state)", [Field("state", .string(state.description))])
    }
}

extension Improv.ErrorState: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        ("error \(error)", [Field("error", .string(error.description))])
    }
}

extension Improv.Capabilities: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        ("capabilities \(names.isEmpty ? "none" : names.joined(separator: ", "))", [Field("capabilities", .strings(names))])
    }
}

extension Improv.Command: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        var fields = [Field("command", .string(command.description))]
        var summary = "command \(command)"
        if let ssid {
            fields.append(Field("ssid", .string(ProtocolText.display(ssid))))
            summary += " for \"\(ProtocolText.display(ssid))\""
        }
        if let password {
            fields.append(Field("password", .secret(password)))
            summary += " (password \(password.count) bytes, plaintext)"
        } else if !strings.isEmpty {
            let texts = strings.map { ProtocolText.display($0) }
            fields.append(Field("strings", .strings(texts)))
            summary += " " + texts.map { "\"\($0)\"" }.joined(separator: " ")
        }
        if checksum == .absent { fields.append(Field("checksum", .string("absent"))); summary += ", no checksum" }
        if writes > 1 { fields.append(Field("writes", .int(writes))); summary += ", joined from \(writes) writes" }
        return (summary, fields)
    }
}

extension Improv.Result: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        var fields = [Field("command", .string(command.description))]
        let texts = strings.map { ProtocolText.display($0) }
        var summary = "result to \(command)"
        switch command.raw {
        case 0x01:
            if let u = texts.first { fields.append(Field("url", .string(u))); summary += ": next \(u)" } else { summary += ": no URL" }
        case 0x03 where texts.count >= 4:
            fields += [Field("firmware", .string(texts[0])), Field("version", .string(texts[1])),
                       Field("hardware", .string(texts[2])), Field("name", .string(texts[3]))]
            summary += ": \(texts[0]) \(texts[1]) on \(texts[2]), \"\(texts[3])\""
        case 0x04:
            if endsScan { summary += ": end of networks" } else {
                fields.append(Field("networks", .networks(networks)))
                summary += ": " + networks.map { "\"\($0.ssidText)\"" + ($0.rssi.map { " \($0) dBm" } ?? "") }.joined(separator: ", ")
            }
        default:
            fields.append(Field("strings", .strings(texts)))
            summary += texts.isEmpty ? "" : ": " + texts.map { "\"\($0)\"" }.joined(separator: " ")
        }
        if checksum == .absent { fields.append(Field("checksum", .string("absent"))); summary += ", no checksum" }
        return (summary, fields)
    }
}

/// Improv's phases: `authorization` from AUTHORIZATION_REQUIRED to AUTHORIZED (or
/// NOT_AUTHORIZED), `scan` from GET_WIFI_NETWORKS to its empty result, `provisioning` from
/// WIFI_SETTINGS (or PROVISIONING) to PROVISIONED or the error.
struct ImprovPhaseReader: ProvisioningPhaseReading {
    private var networks = 0

    mutating func read(_ e: TimelineEvent, into phases: inout ProvisioningPhases) {
        switch e.message {
        case let s as Improv.CurrentState:
            switch s.state.raw {
            case 1: phases.start("authorization", e, detail: "AUTHORIZATION_REQUIRED")
            case 2: if phases.openPhase("authorization") != nil { phases.close("authorization", e, .ok, detail: "AUTHORIZED") }
            case 3:
                if phases.openPhase("authorization") != nil { phases.close("authorization", e, .ok, detail: "AUTHORIZED") }
                phases.touch("provisioning", e, detail: "PROVISIONING")
            case 4: phases.close("provisioning", e, .ok, detail: "PROVISIONED")
            default: break
            }
        case let x as Improv.ErrorState:
            switch x.error.raw {
            case 3: phases.close("provisioning", e, .failed, detail: "UNABLE_TO_CONNECT")
            case 4:
                if phases.openPhase("provisioning") != nil { phases.close("provisioning", e, .failed, detail: "NOT_AUTHORIZED") }
                phases.close("authorization", e, .failed, detail: "NOT_AUTHORIZED")
            case 1, 2, 5, 0xFF:
                if phases.openPhase("provisioning") != nil { phases.close("provisioning", e, .failed, detail: x.error.description) }
            default: break
            }
        case let c as Improv.Command:
            switch c.command.raw {
            case 0x01:
                if phases.openPhase("scan") != nil { phases.close("scan", e, .ok) }
                let ssid = c.ssid.map { "\"\(ProtocolText.display($0))\"" } ?? "no SSID"
                phases.start("provisioning", e, detail: "WIFI_SETTINGS \(ssid)")
            case 0x04:
                networks = 0
                phases.start("scan", e)
            default: break
            }
        case let r as Improv.Result where r.command.raw == 0x04:
            if r.endsScan {
                phases.close("scan", e, .ok, detail: "\(networks) network\(networks == 1 ? "" : "s")")
            } else {
                networks += r.networks.count
                phases.touch("scan", e, detail: "\(networks) network\(networks == 1 ? "" : "s")")
            }
        default:
            break
        }
    }
}

// MARK: Wi-Fi joins

extension Improv.Command: WiFiJoinReporting {
    public var wifiJoinSteps: [WiFiJoinStep] {
        switch command.raw {
        case 0x01: ssid.map { [.ssid($0)] } ?? []
        case 0x04: [.scanStarted]
        default: []
        }
    }
}

extension Improv.Result: WiFiJoinReporting {
    public var wifiJoinSteps: [WiFiJoinStep] { networks.isEmpty ? [] : [.scanned(networks)] }
}

extension Improv.ErrorState: WiFiJoinReporting {
    /// UNABLE_TO_CONNECT names no cause: the `wifi.*` rules tell one from the scan when they can.
    public var wifiJoinSteps: [WiFiJoinStep] {
        error.raw == 3 ? [.failed(WiFiJoinFailure(what: "Improv UNABLE_TO_CONNECT", reason: nil, cause: nil))] : []
    }
}
