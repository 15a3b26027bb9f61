import Profiles

/// What a Wi-Fi provisioning message says about the device's join, for the `wifi.*` rules.
public protocol WiFiJoinReporting: ProfileMessage {
    var wifiJoinSteps: [WiFiJoinStep] { get }
}

public enum WiFiJoinStep {
    /// The SSID the phone gave the device.
    case ssid([UInt8])
    /// The device starts a scan: the networks it finds follow.
    case scanStarted
    case scanned([WiFiNetwork])
    /// A join failed; each report is one failure.
    case failed(WiFiJoinFailure)
    /// A polled station state, with its failure when it is one: a failure polled again counts
    /// once, until the state changes.
    case station(failure: WiFiJoinFailure?)
}

/// A failed join as the device reported it.
public struct WiFiJoinFailure {
    /// The protocol and the device's word for it: "nRF7 CONNECTION_FAILED".
    public var what: String
    /// The reason as the device named it.
    public var reason: String?
    /// What the reason means, when the `wifi.*` rules know it.
    public var cause: WiFiJoinCause?

    public init(what: String, reason: String?, cause: WiFiJoinCause?) {
        self.what = what
        self.reason = reason
        self.cause = cause
    }
}

/// What a failed join means, from the device's reason and what its scan saw.
public enum WiFiJoinCause: Equatable, Sendable {
    case wrongPassword
    case apNotFound
    /// The SSID is on 5 GHz only (the scan saw it there and nowhere else, or its name says
    /// 5 GHz and a scan of 2.4 GHz networks does not list it).
    case fiveGHzOnly
}

/// The Wi-Fi provisioning story of a device, read from a finished timeline's events: the
/// phases (security or session, scan, config, apply, connection) its protocols read
/// (`ProtocolAnalysis.provisioningPhases`), and why a join failed (wrong password, access point
/// not found, a 5 GHz-only SSID) from the steps its messages report (`WiFiJoinReporting`).
enum Provisioning {
    // MARK: Join failures

    /// One failed join: where, the reason as the device named it, and what it means.
    struct Join {
        var event: TimelineEvent
        var report: WiFiJoinFailure
        var failure: WiFiJoinCause?
        var ssid: String?
        /// The device's scan results before the failure (nil when it did not scan).
        var scanned: [WiFiNetwork]?
    }

    /// Every failed join of every device, once per failure (repeated status polls of the same
    /// failure count once).
    /// `byDevice`: the events whose messages report Wi-Fi joins, of each device in order.
    static func failedJoins(_ byDevice: Diagnoses.DeviceEvents) -> [Join] {
        var joins: [Join] = []
        for (_, events) in byDevice {
            var ssid: [UInt8]?
            var scanned: [WiFiNetwork]?
            var failing = false
            func failed(_ report: WiFiJoinFailure, at e: TimelineEvent) {
                joins.append(classify(Join(event: e, report: report, failure: report.cause, ssid: ssid.map { ProtocolText.display($0) },
                                           scanned: scanned)))
            }
            for e in events {
                for step in (e.message as? any WiFiJoinReporting)?.wifiJoinSteps ?? [] {
                    switch step {
                    case .ssid(let s): ssid = s
                    case .scanStarted: scanned = []
                    case .scanned(let networks): scanned = (scanned ?? []) + networks
                    case .failed(let report): failed(report, at: e)
                    case .station(nil): failing = false
                    case .station(let report?):
                        guard !failing else { break }
                        failing = true
                        failed(report, at: e)
                    }
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
        var t = j.report.what + (j.report.reason.map { " (\($0))" } ?? "") + " at \(c.seconds(j.event.time))"
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

    static func hits(_ c: Diagnoses.Context, _ failure: WiFiJoinCause) -> [Diagnoses.Hit] {
        c.failedJoins.filter { $0.failure == failure }.map { j in
            Diagnoses.Hit(device: j.event.device, time: j.event.time, frames: j.event.frames, evidence: evidence(j, c))
        }
    }

    // MARK: Phases

    /// The provisioning phases of each device whose protocols read them, each from its first
    /// message to the answer that ends it, with the outcome; one never answered is `open` at
    /// the end of the capture, or `interrupted` when the link dropped first.
    static func phases(_ t: Timeline, protocols: [any ProtocolAnalysis.Type]) -> [Phase] {
        var phases: [Phase] = []
        let positions = t.eventPositionsByDevice()
        let end = t.lastTime ?? 0
        for d in positions.indices where !positions[d].isEmpty {
            let spoken = t.devices[d].protocols
            var readers = protocols.filter { spoken.contains($0.name) }.compactMap { $0.provisioningPhaseReader() }
            guard !readers.isEmpty else { continue }
            var builder = ProvisioningPhases(device: d)
            for p in positions[d] {
                let e = t.events[Int(p)]
                guard !builder.addLinkEvent(e) else { continue }
                for i in readers.indices { readers[i].read(e, into: &builder) }
            }
            builder.finish(at: end)
            phases += builder.phases
        }
        return phases
    }
}

/// Reads one device's provisioning phases in a protocol's events.
public protocol ProvisioningPhaseReading {
    /// An event of the device (a message of any protocol, or a link event the phases do not
    /// take themselves, such as an ATT error).
    mutating func read(_ e: TimelineEvent, into phases: inout ProvisioningPhases)
}

/// One device's provisioning phases as they open and close. The link's security phase
/// (pairing until the link is encrypted) and the end of the link are read here; the protocols'
/// readers open and close the rest by name (`session`, `scan`, `config`, `apply`, `connection`).
public struct ProvisioningPhases {
    let device: Int
    var phases: [Phase] = []
    var open: [String: Phase] = [:]
    var order: [String] = []

    init(device: Int) { self.device = device }

    /// The phase of that name, while it is open.
    public func openPhase(_ name: String) -> Phase? { open[name] }

    public mutating func start(_ name: String, _ e: TimelineEvent, detail: String? = nil) {
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

    public mutating func touch(_ name: String, _ e: TimelineEvent, detail: String? = nil) {
        guard var p = open[name] else { return start(name, e, detail: detail) }
        p.end = e.time
        p.lastFrame = e.frames.last ?? p.lastFrame
        if let detail { p.detail = detail }
        open[name] = p
    }

    public mutating func close(_ name: String, _ e: TimelineEvent, _ outcome: Phase.Outcome, detail: String? = nil) {
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

    /// Takes the link events the phases read themselves; false for others.
    mutating func addLinkEvent(_ e: TimelineEvent) -> Bool {
        if e.kind == "link.disconnected" {
            // What could not be read cannot be called interrupted: it stays open.
            for (name, p) in open where p.detail?.contains("encrypted") == true { close(name, e, .open) }
            closeAll(.interrupted, at: e.time, frame: e.frames.last, why: "the link ended")
            return true
        }
        guard e.message == nil else { return false }
        let field = { (name: String) -> FieldValue? in e.fields.first { $0.name == name }?.value }
        switch e.kind {
        case "att.error":
            guard case .bool(true)? = field("pairFirst") else { return false }
            let error = if case .string(let x)? = field("error") { x } else { "an ATT error" }
            start("security", e, detail: "the device asked for an encrypted link (\(error))")
        case "link.pairing":
            start("security", e, detail: "pairing")
        case "link.encryption":
            // A provisioning characteristic that needs an encrypted link: the security phase ends here.
            let ok = e.fields.contains { $0.name == "enabled" && { if case .bool(true) = $0.value { true } else { false } }($0) }
            let asked = open["security"]?.detail.map { $0 + "; " } ?? ""
            close("security", e, ok ? .ok : .failed, detail: asked + (ok ? "link encrypted" : "encryption failed"))
        default:
            return false
        }
        return true
    }

    mutating func finish(at end: Int64) {
        closeAll(.open, at: end, frame: nil, why: nil)
        phases.sort { ($0.start, $0.name) < ($1.start, $1.name) }
    }
}
