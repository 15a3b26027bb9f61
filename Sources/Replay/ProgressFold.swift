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
    /// What the protocol says each notification shows (`ReplayingProtocol.progressReader`).
    private var reader: any ProgressReading
    var style: ProgressStyle { reader.style }
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
    /// A scan ended (its END came).
    var complete: Bool { style == .scan && terminal }
    private var lastProgress: Int?
    /// The last phase is one the protocol does not leave by itself (an error, SUCCESS, a failed join, END).
    private(set) var terminal = false

    /// The fold for a characteristic whose notifications have protocol meaning to one of
    /// `protocols`; nil for others (they are compared one notification to one, as recorded).
    init?(characteristic: BluetoothUUID, protocols: ProtocolSet) {
        guard let reader = protocols.replaying.lazy.compactMap({ $0.progressReader(for: characteristic) }).first else { return nil }
        self.reader = reader
    }

    /// The phrase for what the fold waits for and reached.
    var summary: String {
        switch style {
        case .scan:
            let n = networks.count
            return "\(complete ? "scan ended" : "scan without END"): \(n) network\(n == 1 ? "" : "s")"
        case .phases:
            var text = phases.isEmpty ? "nothing" : phases.joined(separator: " -> ")
            if !networks.isEmpty { text = "\(networks.count) networks; " + text }
            return text
        }
    }

    mutating func add(_ value: [UInt8]) {
        count += 1
        let step = reader.read(value)
        if let phase = step.phase {
            if phase != phases.last { lastProgress = nil }
            enter(phase)
        }
        if let progress = step.progress {
            if let last = lastProgress, progress < last {
                problems.append("progress fell from \(last) % to \(progress) % while \(step.progressPhase)")
            }
            lastProgress = progress
        }
        if let networks = step.networks { self.networks = networks }
        if let terminal = step.terminal { self.terminal = terminal }
    }

    private mutating func enter(_ phase: String) {
        guard phase != phases.last else { return }
        phases.append(phase)
        phaseStarts.append(count - 1)
    }

    /// The target's fold has reached what the recording's did: the wait for this run can end.
    func reached(_ recorded: ProgressFold) -> Bool {
        switch style {
        case .scan:
            return complete
        case .phases:
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
        switch style {
        case .scan:
            if recorded.complete != complete {
                out.append((max(0, recorded.count - 1),
                            recorded.complete ? "recorded a scan that ended with END; observed no END (\(summary)): a phone waiting for END times out"
                                              : "recorded a scan that never ended; observed END (\(summary)): the recorded device's failure does not happen here"))
            }
            out += Self.setDifferences(recorded: recorded.networks, observed: networks).map { (0, $0) }
        case .phases:
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
    /// and the protocol's variant (a scan's marker placement).
    func tolerated(against recorded: ProgressFold, name: String) -> [String] {
        var out: [String] = []
        if count != recorded.count {
            out.append("\(name): \(recorded.count) notification\(recorded.count == 1 ? "" : "s") recorded, \(count) observed")
        }
        if let r = recorded.reader.variant, let o = reader.variant, r.value != o.value {
            out.append("\(name): \(r.label) \(r.value) recorded, \(o.value) observed")
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
