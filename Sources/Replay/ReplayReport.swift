import Foundation

/// What happened at one step of a replay, compared with the recording.
public struct StepOutcome: Sendable, Hashable, Codable {
    public enum Status: String, Sendable, Codable {
        /// The answer means what the recorded one meant.
        case ok
        /// It differs from the recording (value, error, a missing or extra notification).
        case diverged
        /// Not sent (read-only replay), with why.
        case skipped
        /// The target failed here (disconnect, ATT timeout, no connection): the replay stopped.
        case failed
        /// After a failure.
        case notRun = "not-run"
    }

    public var step: Int
    public var action: String
    /// The characteristic's name or UUID.
    public var name: String?
    public var status: Status = .ok
    /// What was observed, for people.
    public var observed: [String] = []
    /// Why it diverged, skipped or failed: one line each.
    public var differences: [String] = []
    /// Microseconds since the replay started, on the target's clock.
    public var observedAt: Int64?
    /// Microseconds since the recording's start.
    public var recordedAt: Int64

    init(index: Int, step: ReplayStep) {
        self.step = index
        action = step.action.rawValue
        name = step.characteristic.map(Names.of) ?? step.handle.map { "handle \($0)" }
        recordedAt = step.at
    }

    public mutating func observe(_ what: String) { observed.append(what) }

    public mutating func diverge(_ why: String) {
        differences.append(why)
        if status == .ok { status = .diverged }
    }

    public mutating func skip(_ why: String) {
        differences.append(why)
        status = .skipped
    }

    mutating func fail(_ why: String) {
        differences.append(why)
        status = .failed
    }
}

/// A replay's result: each step's outcome and the verdict.
public struct ReplayReport: Sendable, Codable {
    public enum Verdict: String, Sendable, Codable {
        case equivalent
        case diverged
        case targetFailed = "target-failed"
    }

    public var schema = "gattlab.replay-report/1"
    public var script: String
    public var target: String
    public var timing: String
    public var verdict: Verdict
    /// The first step that diverged or failed.
    public var firstProblem: Int?
    public var counts: [String: Int]
    /// Microseconds on the target's clock (virtual for the in-process emulator).
    public var duration: Int64
    public var steps: [StepOutcome]
    /// `progress` (protocol meaning; cadence tolerated) or `strict` (step by step).
    public var comparison: String
    /// What differed from the recording but did not count as divergence, one line each.
    public var tolerances: [String]

    init(script: String, target: String, timing: String, steps: [StepOutcome], duration: Int64,
         comparison: ReplayComparison = .progress, tolerances: [String] = []) {
        self.script = script
        self.target = target
        self.timing = timing
        self.comparison = comparison.rawValue
        self.tolerances = tolerances
        self.steps = steps
        self.duration = duration
        if steps.contains(where: { $0.status == .failed }) {
            verdict = .targetFailed
        } else if steps.contains(where: { $0.status == .diverged }) {
            verdict = .diverged
        } else {
            verdict = .equivalent
        }
        firstProblem = steps.first { $0.status == .failed || $0.status == .diverged }?.step
        var counts: [String: Int] = [:]
        for s in steps { counts[s.status.rawValue, default: 0] += 1 }
        self.counts = counts
    }

    public var failure: StepOutcome? { steps.first { $0.status == .failed } }

    /// The report as JSON (schema `gattlab.replay-report/1`).
    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .withoutEscapingSlashes, .sortedKeys]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// The report for people: every step that is not plainly ok, or all with `verbose`, then the verdict.
    public func text(verbose: Bool, color: Bool) -> String {
        func paint(_ s: String, _ code: String) -> String { color ? "\u{1B}[\(code)m\(s)\u{1B}[0m" : s }
        var lines = ["replay \(script) -> \(target) (timing \(timing), comparing \(comparison == "strict" ? "step by step (--strict)" : "protocol progress"))"]
        for s in steps where verbose || s.status != .ok {
            let label = switch s.status {
            case .ok: paint("ok", "32")
            case .diverged: paint("DIVERGED", "33")
            case .skipped: paint("skipped", "2")
            case .failed: paint("FAILED", "31")
            case .notRun: paint("not run", "2")
            }
            let head = "\(String(s.step).leftPad(4)) \(s.action)\(s.name.map { " " + $0 } ?? "")"
            var line = head.padding(toLength: max(head.count, 44), withPad: " ", startingAt: 0) + " " + label
            if !s.observed.isEmpty, s.status != .notRun { line += "  " + s.observed.joined(separator: "; ") }
            lines.append(line)
            for d in s.differences { lines.append("       " + d) }
        }
        if !tolerances.isEmpty {
            lines.append("tolerated (not divergence\(comparison == "strict" ? "" : "; --strict counts them")):")
            for t in tolerances.prefix(verbose ? tolerances.count : 12) { lines.append("       " + t) }
            if !verbose, tolerances.count > 12 { lines.append("       and \(tolerances.count - 12) more (--verbose lists them)") }
        }
        let total = steps.count
        let diverged = counts["diverged"] ?? 0
        let skipped = counts["skipped"] ?? 0
        let seconds = String(format: "%.3f", Double(duration) / 1e6)
        switch verdict {
        case .equivalent:
            lines.append(paint("equivalent", "32") + ": \(total) steps as recorded\(skipped > 0 ? ", \(skipped) skipped" : "") (\(seconds) s)")
        case .diverged:
            lines.append(paint("diverged", "33") + ": \(diverged) of \(total) steps differ from the recording, first at step \(firstProblem ?? 0) (\(seconds) s)")
        case .targetFailed:
            let f = failure
            lines.append(paint("target failed", "31") + " at step \(f?.step ?? 0) (\(f?.action ?? "")): \(f?.differences.last ?? "")\(diverged > 0 ? "; \(diverged) steps diverged before" : "")")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension String {
    func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
