import ATT
import Profiles

/// How a replay decides that the target behaved as recorded.
public enum ReplayComparison: String, Sendable, Hashable, CaseIterable {
    /// By protocol progress (the default): the states a device protocol reaches, its errors and
    /// outcome, scan results as sets of networks. How many notifications carried them, progress
    /// steps, RSSI, informational reads and timing are tolerated and reported.
    case progress
    /// Step by step, one recorded notification for one observed, values compared as before
    /// progress comparison existed (a device with another cadence diverges).
    case strict
}

/// The protocol progress a run of notifications on one characteristic carries, folded: repeated
/// updates of one phase are one phase whose progress only rises, scan chunks are one set of
/// networks however they were cut. The recording's run and the target's are folded alike and
/// compared as folds, so a device that reports the same protocol with another cadence matches.
struct ProgressFold {
    enum Kind { case speakerStatus, sensorScan, nrf7Results }

    let kind: Kind
    /// The distinct phases in the order reached ("WIFI_CONNECTING", "DOWNLOADING", ...).
    private(set) var phases: [String] = []
    /// For each phase, the index of the notification that began it (0-based).
    private(set) var phaseStarts: [Int] = []
    /// Networks found (SSIDs as text), for scans.
    private(set) var networks: Set<String> = []
    /// Notifications folded in.
    private(set) var count = 0
    /// Values that broke the protocol's own rules (progress that fell, a value that does not decode).
    private(set) var problems: [String] = []
    /// A sensor scan ended with END.
    var complete: Bool { joiner?.complete ?? false }
    /// The sensor's marker placement (tolerated when it differs).
    var markerStyle: String? { joiner?.markerStyle }
    private var joiner: SensorScan.Joiner?
    private var lastProgress: Int?
    /// The last phase is one the protocol does not leave by itself (an error, SUCCESS, a failed join).
    private(set) var terminal = false

    /// The fold for a characteristic whose notifications have protocol meaning; nil for others
    /// (they are compared one notification to one, as recorded).
    init?(characteristic: BluetoothUUID) {
        switch characteristic {
        case SpeakerOTA.status: kind = .speakerStatus
        case SensorScan.characteristic:
            kind = .sensorScan
            joiner = SensorScan.Joiner()
        case NRF7.dataOut: kind = .nrf7Results
        default: return nil
        }
    }

    /// The phrase for what the fold waits for and reached.
    var summary: String {
        switch kind {
        case .sensorScan:
            let n = networks.count
            return "\(complete ? "scan ended" : "scan without END"): \(n) network\(n == 1 ? "" : "s")"
        case .speakerStatus, .nrf7Results:
            var text = phases.isEmpty ? "nothing" : phases.joined(separator: " -> ")
            if !networks.isEmpty { text = "\(networks.count) networks; " + text }
            return text
        }
    }

    mutating func add(_ value: [UInt8]) {
        count += 1
        switch kind {
        case .speakerStatus:
            guard let s = SpeakerOTA.Status.decode(value).0 else {
                // What does not decode is compared as it is: one phase per distinct value.
                enter("undecodable status \(Hex.string(value))")
                return
            }
            var phase = "status \(s.state?.description ?? "state 0x" + Hex.string([s.rawState]))"
            if s.rawError != 0 { phase += " error \(s.error?.description ?? "0x" + Hex.string([s.rawError]))" }
            if phase != phases.last { lastProgress = nil }
            enter(phase)
            if s.state == .downloading {
                if let last = lastProgress, Int(s.progress) < last {
                    problems.append("progress fell from \(last) % to \(s.progress) % while downloading")
                }
                lastProgress = Int(s.progress)
            }
            terminal = s.rawError != 0 || s.state == .success
        case .sensorScan:
            joiner?.add(value)
            let response = joiner?.response()
            networks = Set((response?.networks ?? []).map(\.ssidText))
            terminal = complete
        case .nrf7Results:
            guard let r = NRF7.Result.decode(value).0 else {
                enter("undecodable Result \(Hex.string(value))")
                return
            }
            if let ssid = r.scanRecord?.wifi?.ssidText { networks.insert(ssid) }
            if let state = r.state {
                var phase = "state \(state)"
                if let reason = r.reason { phase += " \(reason)" }
                enter(phase)
                terminal = state.raw == 4 || state.raw == 5 || r.reason != nil
            }
        }
    }

    private mutating func enter(_ phase: String) {
        guard phase != phases.last else { return }
        phases.append(phase)
        phaseStarts.append(count - 1)
    }

    /// The target's fold has reached what the recording's did: the wait for this run can end.
    func reached(_ recorded: ProgressFold) -> Bool {
        switch kind {
        case .sensorScan:
            return complete
        case .speakerStatus, .nrf7Results:
            if terminal { return true }
            guard networks.isSuperset(of: recorded.networks), phases.last == recorded.phases.last else { return false }
            // A recording that ends within a download (the phone gave up, the link was lost at
            // 63 %) is reached at its progress, not as the download starts.
            if let want = recorded.lastProgress { return (lastProgress ?? 0) >= want }
            return true
        }
    }

    /// Why the target's fold differs from the recording's in protocol meaning, each with the
    /// recorded notification (0-based, in the run) where it shows: the one that began the first
    /// phase that differs, the one that carried END. Empty when it means the same.
    func differences(from recorded: ProgressFold) -> [(at: Int, why: String)] {
        var out = problems.filter { !recorded.problems.contains($0) }.map { (at: 0, why: $0) }
        switch kind {
        case .sensorScan:
            if recorded.complete != complete {
                out.append((max(0, recorded.count - 1),
                            recorded.complete ? "recorded a scan that ended with END; observed no END (\(summary)): a phone waiting for END times out"
                                              : "recorded a scan that never ended; observed END (\(summary)): the recorded device's failure does not happen here"))
            }
            out += Self.setDifferences(recorded: recorded.networks, observed: networks).map { (0, $0) }
        case .speakerStatus, .nrf7Results:
            if phases != recorded.phases {
                var line = "recorded \(recorded.phases.joined(separator: " -> ")), observed \(phases.isEmpty ? "nothing" : phases.joined(separator: " -> "))"
                if let r = recorded.phases.last, phases.last != r {
                    line += phases.last.map { ": the protocol ends in \($0) where the recording reached \(r)" } ?? ": the recorded \(r) never came"
                }
                let first = zip(phases, recorded.phases).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(phases.count, recorded.phases.count)
                let at = recorded.phaseStarts.indices.contains(first) ? recorded.phaseStarts[first] : max(0, recorded.count - 1)
                out.append((at, line))
            }
            out += Self.setDifferences(recorded: recorded.networks, observed: networks).map { (0, $0) }
        }
        return out
    }

    /// What differs but is tolerated: the cadence (how many notifications carried the progress)
    /// and, for scans, the marker placement.
    func tolerated(against recorded: ProgressFold, name: String) -> [String] {
        var out: [String] = []
        if count != recorded.count {
            out.append("\(name): \(recorded.count) notification\(recorded.count == 1 ? "" : "s") recorded, \(count) observed")
        }
        if let r = recorded.markerStyle, let o = markerStyle, r != o {
            out.append("\(name): marker style \(r) recorded, \(o) observed")
        }
        return out
    }

    static func setDifferences(recorded: Set<String>, observed: Set<String>) -> [String] {
        guard recorded != observed else { return [] }
        var out: [String] = []
        let missing = recorded.subtracting(observed).sorted()
        let extra = observed.subtracting(recorded).sorted()
        func list(_ s: [String]) -> String { s.prefix(6).map { "\"\($0)\"" }.joined(separator: ", ") + (s.count > 6 ? " and \(s.count - 6) more" : "") }
        if !missing.isEmpty { out.append("networks recorded but not observed: \(list(missing))") }
        if !extra.isEmpty { out.append("networks observed but not recorded: \(list(extra))") }
        return out
    }
}
