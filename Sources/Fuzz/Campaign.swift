import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A request to end a campaign early (SIGINT or SIGTERM): set by a signal handler, read by the
/// engine between executions, so the campaign ends with its summary and its findings written.
public enum CampaignStop {
    public static let requested = Atomic<Bool>(false)

    /// Installs SIGINT and SIGTERM handlers that set `requested` (an atomic store: safe in a
    /// signal handler); a second signal ends the process at once, as usual.
    public static func installHandlers() {
        _ = requested.load(ordering: .relaxed)  // initialised before any handler can run
        for sig in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { _ in
                CampaignStop.requested.store(true, ordering: .relaxed)
                signal(SIGINT, SIG_DFL)
                signal(SIGTERM, SIG_DFL)
            }
            sigemptyset(&action.sa_mask)
            sigaction(sig, &action, nil)
        }
    }
}

/// How long and where a campaign runs.
public struct CampaignOptions: Sendable {
    public var seed: UInt64 = 1
    /// Stop after this many executions (nil: no limit).
    public var runs: Int?
    /// Stop after this many seconds (nil: no limit).
    public var seconds: Double?
    /// Corpus folder (the libFuzzer layout: one file per input); read at start, new inputs added.
    public var corpus: String?
    /// Where findings go.
    public var findings: String = "fuzz-findings"
    /// Go on after a finding (default: stop at the first, as libFuzzer does).
    public var keepGoing = false
    /// A single execution slower than this is a finding (a hang in the making).
    public var slowSeconds: Double = 5
    /// Progress lines on stderr every this many seconds (0: none).
    public var progressEvery: Double = 2

    public init() {}
}

/// What a campaign did.
public struct CampaignSummary: Sendable, Codable {
    public var target: String
    public var runs: Int
    public var seconds: Double
    public var execsPerSecond: Double
    public var corpusStart: Int
    public var corpusEnd: Int
    public var features: Int
    public var findings: [FindingRecord]
    /// Ended by SIGINT or SIGTERM before its --runs or --time.
    public var interrupted = false
    /// Findings that did not come again when their minimised input was run once more: told,
    /// not reported (kind: detail).
    public var unconfirmed: [String]? = nil
    /// A black-box campaign's device, coverage and speed.
    public var blackBox: BlackBoxReport? = nil
}

public struct FindingRecord: Sendable, Codable, Hashable {
    public var kind: String
    public var detail: String
    /// The minimized reproducer.
    public var file: String
    public var inputLength: Int
    /// Executions until it was found; 0 when an input the campaign started from (a seed or the
    /// corpus folder's) gave it.
    public var afterRuns: Int
}

/// The in-process engine: mutate inputs from the corpus (structure-aware and generic), run the
/// target, keep what shows new behaviour, write findings atomically with a minimized reproducer.
/// A trap in the target (a crash) is caught by a signal handler that writes the input that caused
/// it before the process ends, so a killed or crashed campaign loses no finding and resumes from
/// its corpus.
public final class Campaign {
    public let target: FuzzTarget
    public let options: CampaignOptions
    private var corpus: [[UInt8]] = []
    private var known = Set<UInt64>()
    private let features = Features()
    private var random: FuzzRandom
    private var findings: [FindingRecord] = []
    private var foundKinds = Set<String>()
    private var unconfirmed: [String] = []
    /// The inputs run since the last finding, oldest first, for a target that can join them
    /// (`FuzzTarget.join`): what a stateful device was told before the input that showed a fault.
    private var history: [[UInt8]] = []
    static let historyLength = 8

    /// Quirks planted in an emulated device target, written in the notes so a reproducer finds
    /// the same device.
    public let quirks: [String]

    public init(target: FuzzTarget, options: CampaignOptions, quirks: [String] = []) {
        self.target = target
        self.options = options
        self.quirks = quirks
        random = FuzzRandom(seed: options.seed)
    }

    /// The target's seeds and the corpus folder's inputs; the seeds join the folder so a libFuzzer
    /// run on it starts from them too.
    func initialInputs() throws(FuzzError) -> [[UInt8]] {
        var inputs = target.seeds()
        if let dir = options.corpus {
            try Storage.makeFolder(dir)
            inputs += Storage.inputs(in: dir, maxLength: target.maxLength)
            for input in target.seeds() { try? Storage.writeInput(input, to: dir) }
        }
        return inputs
    }

    /// Runs the input for its features; keeps it when it shows something new (or is a seed).
    @discardableResult
    private func add(_ input: [UInt8], write: Bool) -> FuzzOutcome {
        features.reset()
        CrashGuard.current(input)
        let outcome = target.execute(input, features)
        // Most inputs show nothing new: only those that do are hashed and kept.
        if features.novel > 0 || !write {
            let id = Storage.hash(input)
            if !known.contains(id) {
                known.insert(id)
                corpus.append(input)
                if write, let dir = options.corpus { try? Storage.writeInput(input, to: dir) }
            }
        }
        return outcome
    }

    public func run(progress: (String) -> Void = { _ in }) throws(FuzzError) -> CampaignSummary {
        try Storage.makeFolder(options.findings)
        CrashGuard.install(findings: options.findings, target: target.name, quirks: quirks)
        let start = Date()
        var lastProgress = start
        var runs = 0
        var interrupted = false
        var ended = false
        // The seeds and the corpus first, each run once for its features. One that shows a fault
        // is a finding as a mutated input's is: a boundary a protocol's flows carry (a 64-byte
        // passphrase) may be the very bug, and a device it crashed must not pass for healthy.
        let initial = try initialInputs()
        for (i, input) in initial.enumerated() {
            if CampaignStop.requested.load(ordering: .relaxed) { interrupted = true; break }
            guard case .finding(let kind, let detail) = add(input, write: false) else {
                remember(input)
                continue
            }
            if try report(kind, detail, input: input, runs: 0, found: "in input \(i + 1) of the \(initial.count) it started from", progress: progress) {
                ended = true
                break
            }
        }
        let corpusStart = corpus.count
        while !ended, !interrupted {
            if let limit = options.runs, runs >= limit { break }
            if CampaignStop.requested.load(ordering: .relaxed) { interrupted = true; break }
            // The clock is read every 256 executions: at a million a second it would cost more
            // than the target.
            if runs & 0xFF == 0 {
                let now = Date()
                if let limit = options.seconds, now.timeIntervalSince(start) >= limit { break }
                if options.progressEvery > 0, now.timeIntervalSince(lastProgress) >= options.progressEvery {
                    lastProgress = now
                    progress(line(runs: runs, since: start))
                }
            }
            var input = corpus.isEmpty ? [] : corpus[random.below(corpus.count)]
            mutate(&input)
            let outcome = add(input, write: true)
            let took = Double(DispatchTime.now().uptimeNanoseconds &- CrashGuard.startedAt) / 1e9
            runs += 1
            var result = outcome
            if !result.isFinding, took > options.slowSeconds {
                result = .finding(kind: "slow-input", detail: "one execution took \(String(format: "%.1f", took)) s")
            }
            guard case .finding(let kind, let detail) = result else {
                remember(input)
                continue
            }
            if try report(kind, detail, input: input, runs: runs, found: "after \(runs) runs", progress: progress) { break }
        }
        CrashGuard.clear()
        let seconds = max(Date().timeIntervalSince(start), 1e-9)
        return CampaignSummary(target: target.name, runs: runs, seconds: seconds, execsPerSecond: Double(runs) / seconds,
                               corpusStart: corpusStart, corpusEnd: corpus.count, features: features.total, findings: findings,
                               interrupted: interrupted, unconfirmed: target.confirmations > 0 ? unconfirmed : nil)
    }

    /// An input that gave no finding: what a stateful device was told before the next one.
    private func remember(_ input: [UInt8]) {
        guard target.join != nil else { return }
        history.append(input)
        if history.count > Self.historyLength { history.removeFirst() }
    }

    /// A finding `input` gave: minimised (with the inputs before it, when alone it does not give
    /// the fault on a device started afresh), confirmed and written, unless its kind was found
    /// already or it does not come again. True when the campaign ends here (the first finding,
    /// as libFuzzer does, unless --keep-going).
    private func report(_ kind: String, _ detail: String, input: [UInt8], runs: Int, found: String,
                        progress: (String) -> Void) throws(FuzzError) -> Bool {
        // What came before is the state this finding found the device in; a finding resets
        // what the next one is told of.
        let earlier = history
        history.removeAll()
        if !foundKinds.contains(kind) {
            var minimal = minimize(input, kind: kind)
            var why = unconfirmedReason(minimal, kind: kind)
            if why != nil, let join = target.join, !earlier.isEmpty {
                // Alone it does not give the fault on a device started afresh: maybe it
                // needs what the inputs before it told the device (a URL it keeps).
                let joined = join(earlier + [input])
                if gives(joined, kind: kind) {
                    progress("\(kind) \(found) needs what earlier inputs told the device: minimising \(earlier.count) of them with it")
                    minimal = minimize(joined, kind: kind)
                    why = unconfirmedReason(minimal, kind: kind)
                }
            }
            if let why {
                // A flake of the device or the link: told, and the campaign goes on.
                if unconfirmed.count < 100 { unconfirmed.append("\(kind): \(detail) (\(why))") }
                progress("unconfirmed \(kind) \(found), not reported: \(why)")
                return false
            }
            // What the reproducer shows: the confirming run's words (a minimised input that
            // carries its own state reaches the fault in another step than the input did).
            let detail = target.confirmations > 0 ? lastDetail : detail
            foundKinds.insert(kind)
            let file = try Storage.writeFinding(minimal, kind: kind, detail: detail, target: target.name, quirks: quirks,
                                                remote: target.remote, to: options.findings)
            var length = minimal.count
            if let save = target.artifact {
                // The minimized input once more, so the artifact shows it.
                _ = target.execute(minimal, Features())
                save(file, kind)
                // The artifact may have put first what the input needs of earlier ones.
                length = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? length
            }
            findings.append(FindingRecord(kind: kind, detail: detail, file: file, inputLength: length, afterRuns: runs))
            progress("finding \(kind) \(found): \(detail)\n  reproducer: \(file)  (\(Storage.reproduceCommand(file, remote: target.remote)))")
        }
        return !options.keepGoing
    }

    /// Whether one execution of `input` gives a finding of `kind`; its detail is kept in
    /// `lastDetail`.
    private func gives(_ input: [UInt8], kind: String) -> Bool {
        CrashGuard.current(input)
        guard case .finding(let k, let detail) = target.execute(input, Features()), k == kind else { return false }
        lastDetail = detail
        return true
    }
    private var lastDetail = ""

    /// Runs a minimised finding again `target.confirmations` times; nil when every run gave the
    /// same kind of finding, else why it is not reported.
    private func unconfirmedReason(_ minimal: [UInt8], kind: String) -> String? {
        for attempt in 0..<target.confirmations {
            guard gives(minimal, kind: kind) else {
                return "its minimised input did not give it again (run \(attempt + 1) of \(target.confirmations))"
            }
        }
        return nil
    }

    private func line(runs: Int, since start: Date) -> String {
        let s = Date().timeIntervalSince(start)
        return "#\(runs) \(Int(Double(runs) / max(s, 1e-9))) exec/s corpus \(corpus.count) features \(features.total) findings \(findings.count)"
    }

    private func mutate(_ input: inout [UInt8]) {
        if let m = target.mutator, random.chance(60) {
            m(&input, &random)
        } else {
            let other = corpus.isEmpty ? nil : corpus[random.below(corpus.count)]
            GenericMutator.mutate(&input, &random, maxLength: target.maxLength, other: other)
        }
        if input.count > target.maxLength { input.removeLast(input.count - target.maxLength) }
    }

    /// The smallest input found that still gives a finding of `kind`: whole chunks removed, then
    /// single bytes, at most a few thousand tries.
    func minimize(_ input: [UInt8], kind: String) -> [UInt8] {
        var best = input
        var tries = 0
        // Whether the last execution gave the finding: the device of a remote target then is where
        // the finding leaves it (a crash resets it to power-on). After one that gave nothing it
        // may keep what that candidate told it (a URL, a mode), and a candidate without the
        // steps that set it up would seem to give the finding when only the leftovers do.
        var lastGave = true
        func candidateGives(_ candidate: [UInt8]) -> Bool {
            func once() -> Bool {
                tries += 1
                return gives(candidate, kind: kind)
            }
            let gave = once()
            // A stateful target (one whose findings are confirmed) runs such a candidate again,
            // now from the state its own finding left: it counts only when it gives it again.
            lastGave = gave && (lastGave || target.confirmations == 0 || once())
            return lastGave
        }
        // Whole units first (a black-box input's operations), the last first: the steps before
        // the one that did it are the state it needs, and fewer of them is a shorter story.
        if let units = target.units {
            var i = units(best).count - 1
            while i >= 0, tries < target.minimizeTries {
                let ranges = units(best)
                if i < ranges.count {
                    var candidate = best
                    candidate.removeSubrange(ranges[i])
                    if candidateGives(candidate) { best = candidate }
                }
                i -= 1
            }
            // Bytes removed inside an operation would turn it into another one: the reproducer
            // stays a sequence of the operations that were sent.
            return best
        }
        var chunk = max(1, best.count / 2)
        while chunk >= 1, tries < target.minimizeTries {
            var i = 0
            var shrunk = false
            while i < best.count, tries < target.minimizeTries {
                var candidate = best
                candidate.removeSubrange(i..<min(best.count, i + chunk))
                if candidateGives(candidate) {
                    best = candidate
                    shrunk = true
                } else {
                    i += chunk
                }
            }
            if !shrunk { chunk /= 2 }
        }
        return best
    }
}

/// Files of corpora and findings: written to a temporary name and renamed, so a campaign killed
/// at any moment leaves whole files only.
public enum Storage {
    public static func hash(_ bytes: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01B3 }
        return h
    }

    public static func name(_ bytes: [UInt8]) -> String {
        let hex = String(hash(bytes), radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    static func makeFolder(_ path: String) throws(FuzzError) {
        do { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) } catch {
            throw .io("\(path): cannot create the folder: \(error.localizedDescription)")
        }
    }

    /// Every input file in a corpus folder (dot files and subfolders skipped), cut to `maxLength`.
    public static func inputs(in dir: String, maxLength: Int) -> [[UInt8]] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        return names.compactMap { name in
            let path = (dir as NSString).appendingPathComponent(name)
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir), !isDir.boolValue,
                  let data = FileManager.default.contents(atPath: path) else { return nil }
            return Array(data.prefix(maxLength))
        }
    }

    /// Writes `bytes` under `dir/name` atomically; false when it exists already.
    @discardableResult
    public static func writeAtomically(_ bytes: [UInt8], dir: String, name: String) throws(FuzzError) -> String {
        let path = (dir as NSString).appendingPathComponent(name)
        let temp = (dir as NSString).appendingPathComponent(".tmp-\(getpid())-\(name)")
        guard FileManager.default.createFile(atPath: temp, contents: Data(bytes)) else { throw .io("\(temp): cannot write") }
        guard rename(temp, path) == 0 else {
            unlink(temp)
            throw .io("\(path): cannot write: \(String(cString: strerror(errno)))")
        }
        return path
    }

    public static func writeInput(_ bytes: [UInt8], to dir: String) throws(FuzzError) {
        let name = name(bytes)
        if FileManager.default.fileExists(atPath: (dir as NSString).appendingPathComponent(name)) { return }
        try writeAtomically(bytes, dir: dir, name: name)
    }

    /// A finding: the reproducer and a note beside it (target, kind, what was seen, how to replay it).
    /// How to run a finding again: in-process with `fuzz reproduce`, or for a black-box finding,
    /// its recorded exchange replayed against the device (the fault is the device's own).
    public static func reproduceCommand(_ path: String, remote: String?) -> String {
        guard let remote else { return "gattlab fuzz reproduce \(path)" }
        return "gattlab replay run \(path).btsnoop --target \(remote) --allow-writes"
    }

    public static func writeFinding(_ bytes: [UInt8], kind: String, detail: String, target: String, quirks: [String] = [],
                                    remote: String? = nil, to dir: String) throws(FuzzError) -> String {
        let base = "\(target)-\(kind)-\(name(bytes))"
        let path = (dir as NSString).appendingPathComponent(base)
        var note = "target: \(target)\nquirks: \(quirks.joined(separator: ", "))\nkind: \(kind)\ndetail: \(detail)\nlength: \(bytes.count)\n"
        if let remote { note += "device: \(remote) (black-box)\n" }
        note += "reproduce: \(reproduceCommand(path, remote: remote))\n"
        try writeAtomically(Array(note.utf8), dir: dir, name: base + ".txt")
        return try writeAtomically(bytes, dir: dir, name: base)
    }
}
