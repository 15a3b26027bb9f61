import ArgumentParser
import Foundation
import Emulator
import Fuzz
import Protocols
import Replay
import Transport

/// `gattlab fuzz`: structure-aware fuzzing of the decoders and the emulated devices.
struct FuzzCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fuzz",
        abstract: "Fuzz the project's decoders and the emulated devices; reproduce findings.",
        discussion: """
            Targets (gattlab fuzz list): the speaker's status, credentials, URL and control \
            parsers, the sensor's MORE/END joiner, every ATT PDU, nRF7 and ESP-IDF protobuf \
            messages, the capture readers and pipeline, the timeline builder, and the emulated \
            speaker's and sensor's request handling (with --quirk to plant a firmware bug).

            Each run mutates inputs from the corpus (byte-level and by each protocol's \
            structure), keeps those that show new behaviour in --corpus, and writes a finding \
            with a minimized reproducer (temporary file, then rename) to --findings. A crash \
            writes its input before the process ends; a campaign resumes from its corpus. \
            Exit 1 when something was found.

            Examples:
              gattlab fuzz status --runs 1000000
              gattlab fuzz scan --time 10m --corpus Corpus/scan --jobs 2
              gattlab fuzz device-speaker --quirk ssid-overflow --seed 1 --runs 20000
              gattlab fuzz device --target unix:/tmp/dut.sock --runs 2500
              gattlab fuzz device --target bluez:hci0/C0:00:00:00:00:01 --seeds-from session.btsnoop --time 1h
              gattlab fuzz reproduce fuzz-findings/FINDING

            Black-box (`device --target`): any GATT device. The campaign discovers its table, \
            finds the device protocols by UUID wherever that device put them, drives each \
            protocol through its states (from its valid flows, or a recorded session with \
            --seeds-from) and fuzzes there: values by each characteristic's role, limits one \
            below and one above, CCCDs and other descriptors, MTUs at the edges, long writes, \
            reconnects, steps skipped, repeated and reordered. A finding (dropped link, no \
            answer, an answer that breaks ATT or the protocol, bytes of an earlier write read \
            back) is minimised, confirmed by running it again, and saved as FINDING.btsnoop \
            and FINDING.json for `gattlab replay run`. The summary shows coverage per \
            characteristic and protocol state.

            Coverage-guided, under libFuzzer and ASan: make fuzz TARGET=status TIME=60
            """,
        subcommands: [Run.self, List.self, Reproduce.self],
        defaultSubcommand: Run.self)

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the fuzz targets.", discussion: ExitStatus.help([.success, .usage]))

        @Option(name: .long, help: "Output format: text, or json (name, summary, maxLength: the libFuzzer -max_len make fuzz passes; instrumentedModules: the modules a libFuzzer build of the target instruments, null for every one).")
        var format: OutputFormatOption = .text

        func run() throws {
            if format == .json {
                let rows = try FuzzTargets.names(protocols: GATTLabProtocols.all).map { name in
                    let t = try FuzzTargets.named(name, protocols: GATTLabProtocols.all)
                    let modules = t.instrumentedModules.map { "[" + $0.map { "\"\($0)\"" }.joined(separator: ",") + "]" } ?? "null"
                    return "{\"name\":\"\(t.name)\",\"summary\":\(Self.quoted(t.summary)),\"maxLength\":\(t.maxLength),\"instrumentedModules\":\(modules)}"
                }
                let device = "{\"name\":\"\(Run.blackBoxName)\",\"summary\":\"any GATT device, black-box (--target)\",\"maxLength\":4096,\"blackBox\":true}"
                print("[" + (rows + [device]).joined(separator: ",\n ") + "]")
                return
            }
            let names = FuzzTargets.names(protocols: GATTLabProtocols.all)
            let width = names.map(\.count).max() ?? 0
            for name in names {
                let t = try FuzzTargets.named(name, protocols: GATTLabProtocols.all)
                print(name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + t.summary)
            }
            print(Run.blackBoxName.padding(toLength: width + 2, withPad: " ", startingAt: 0)
                  + "any GATT device, black-box (--target unix:PATH|bluez:...): discovered, aimed by UUID, driven through its protocols' states")
        }

        static func quoted(_ s: String) -> String {
            let data = (try? JSONEncoder().encode(s)) ?? Data("\"\"".utf8)
            return String(decoding: data, as: UTF8.self)
        }
    }

    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "run", abstract: "Run a campaign against one target.", discussion: ExitStatus.help([.success, .finding, .usage, .unavailable, .noPermission, .cannotCreate, .interrupted]))

        @Argument(help: ArgumentHelp("The target (gattlab fuzz list).", valueName: "target"))
        var target: String

        @Option(name: .long, help: "Seed of the campaign: the same seed, target and corpus give the same run.")
        var seed: UInt64 = 1

        @Option(name: .long, help: ArgumentHelp("Stop after this many executions.", valueName: "n"))
        var runs: Int?

        @Option(name: .long, help: ArgumentHelp("Stop after this long: 90, 90s, 10m, 2h.", valueName: "duration"))
        var time: String?

        @Option(name: .long, help: ArgumentHelp("Corpus folder (one file per input); read at start, grown as new inputs show new behaviour.", valueName: "dir"))
        var corpus: String?

        @Option(name: .long, help: ArgumentHelp("Where findings and their notes are written.", valueName: "dir"))
        var findings: String = "fuzz-findings"

        @Option(name: .long, help: ArgumentHelp("Run this many campaigns in parallel (seeds seed, seed+1, ...), sharing the corpus folder.", valueName: "n"))
        var jobs: Int = 1

        @Option(name: .long, help: ArgumentHelp("Plant a firmware bug in the emulated device (device-speaker: ssid-overflow, short-status-write, unbounded-prepare-queue; device-sensor: split-line-loss). Repeatable.", valueName: "name"))
        var quirk: [String] = []

        @Option(name: .customLong("seeds-from"), help: ArgumentHelp("Black-box (device): start from this recorded session's writes, reads, subscriptions and MTU, in order, aimed by UUID at the device under test (the capture's passwords are redacted, their lengths kept). Repeatable.", valueName: "capture"))
        var seedsFrom: [String] = []

        @Option(name: .customLong("target"), help: ArgumentHelp("Black-box: with the target device, fuzz any GATT device, discovered first and aimed by UUID; with device-speaker or device-sensor, send their inputs to a device in another process (unix:PATH, see gattlab emulate --listen) or a real one (bluez:hciN/ADDR[/public|random]), one connection per input. Over bluez: each input's LE link is ended with HCI Disconnect (CAP_NET_RAW); use a test machine: Linux 6.1 oopsed under such campaigns (README).", valueName: "target"))
        var remote: String?

        @Option(name: .long, help: ArgumentHelp("The emulator's --speed (unix:, or bluez: to gattlab emulate --hci), so answer timeouts are in the device's time.", valueName: "factor"))
        var speed: Double = 1

        @Option(name: .customLong("answer-timeout"), help: ArgumentHelp("Black-box: milliseconds of device time to wait for each answer.", valueName: "ms"))
        var answerTimeout: Double = 5000

        @Option(name: .customLong("max-pdus"), help: ArgumentHelp("Black-box: send at most this many PDUs per input, repeats included (default: 128 over bluez:, no cap over unix:). A radio link carries some hundred PDUs a second; the prepare-queue oracle needs more than 64 KiB of Prepare Writes, so it is out of reach under a small cap.", valueName: "n"))
        var maxPDUs: Int?

        @Flag(name: .customLong("keep-going"), help: "Go on after a finding (one reproducer per kind).")
        var keepGoing = false

        @Flag(name: .long, help: "No progress lines.")
        var quiet = false

        @Option(name: .long, help: "Summary format: text or json.")
        var format: OutputFormatOption = .text

        func validate() throws {
            let names = FuzzTargets.names(protocols: GATTLabProtocols.all)
            guard names.contains(target) || target == "selftest-crash" || target == Self.blackBoxName else {
                throw ValidationError("no fuzz target '\(target)'; known: \(names.joined(separator: ", ")), \(Self.blackBoxName)")
            }
            if target == Self.blackBoxName, remote == nil {
                throw ValidationError("the device target is black-box: give the device with --target unix:PATH or bluez:hciN/ADDR")
            }
            if !seedsFrom.isEmpty, target != Self.blackBoxName {
                throw ValidationError("--seeds-from is for black-box campaigns of the device target (gattlab fuzz device --target ...)")
            }
            if let time, Self.seconds(time) == nil { throw ValidationError("--time takes a duration like 90, 90s, 10m or 2h") }
            if let runs, runs < 0 { throw ValidationError("--runs must be 0 or more") }
            guard (1...64).contains(jobs) else { throw ValidationError("--jobs must be 1 to 64") }
            if let remote {
                guard ["device-speaker", "device-sensor", Self.blackBoxName].contains(target) else {
                    throw ValidationError("--target takes the device target (or device-speaker or device-sensor inputs) to a device; \(target) runs in-process")
                }
                guard quirk.isEmpty else { throw ValidationError("quirks are the device's: give them to gattlab emulate --quirk, not here") }
                let parsed = try ReplayTarget.parse(remote)
                if case .emulated = parsed { throw ValidationError("--target is unix:PATH or bluez:...; emu: devices are the in-process targets") }
                if case .bluez = parsed, jobs > 1 {
                    throw ValidationError("--jobs over bluez: would open several links to one device at once; a device serves one central here")
                }
            }
            if let maxPDUs, maxPDUs < 1 { throw ValidationError("--max-pdus must be 1 or more") }
            if maxPDUs != nil, remote == nil { throw ValidationError("--max-pdus is for black-box campaigns (--target unix:|bluez:)") }
            guard speed > 0, answerTimeout > 0 else { throw ValidationError("--speed and --answer-timeout must be positive") }
            if runs == nil && time == nil && ProcessInfo.processInfo.environment["CI"] != nil {
                throw ValidationError("give --runs or --time in CI (a campaign without them runs until stopped)")
            }
        }

        /// The black-box target of any device: discovered, aimed by UUID (GATTBlackBox).
        static let blackBoxName = "device"

        /// A device that cannot be reached at all is no finding: say why, once. Over bluez: each
        /// input starts on a new link, and only an HCI Disconnect ends one.
        static func checkReachable(_ parsed: ReplayTarget, _ remote: String, speed: Double) throws {
            let probe = try parsed.link(security: "low", speed: speed)
            if let why = firstConnectionFails(probe.link, failure: probe.failure) {
                throw Failure(.unavailable, "cannot reach \(remote): \(why)",
                              hint: "check that the device (or `gattlab emulate --listen`) is up and the address is right")
            }
            if case .bluez = parsed, !BlueZController.maySendCommands {
                throw Failure(.noPermission, "fuzzing over bluez: ends each input's LE link with an HCI Disconnect, which needs CAP_NET_RAW",
                              hint: "run as root or grant it: setcap cap_net_raw+ep $(command -v gattlab)")
            }
        }

        /// Connects once and hangs up; nil when that worked, else why not.
        static func firstConnectionFails(_ link: any TimedATTBearer & LinkControl,
                                         failure: @escaping @Sendable () async -> String?) -> String? {
            final class Box: @unchecked Sendable { var why: String? }  // written before the signal, read after
            let box = Box()
            let done = DispatchSemaphore(value: 0)
            Task {
                await link.connect()
                if await link.isConnected() {
                    await link.close()
                } else {
                    box.why = await failure() ?? "no connection"
                }
                done.signal()
            }
            done.wait()
            return box.why
        }

        static func seconds(_ text: String) -> Double? {
            let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600]
            if let last = text.last, let unit = units[last] { return Double(text.dropLast()).map { $0 * unit }.flatMap { $0 > 0 ? $0 : nil } }
            return Double(text).flatMap { $0 > 0 ? $0 : nil }
        }

        func run() throws {
            if jobs > 1 { return try runJobs() }
            let fuzzTarget: FuzzTarget
            var reporter: GATTCampaignReporter?
            do {
                if let remote, target == Self.blackBoxName {
                    (fuzzTarget, reporter) = try blackBoxTarget(remote)
                } else if let remote {
                    let parsed = try ReplayTarget.parse(remote)
                    let (speed, label) = (speed, remote)
                    try Self.checkReachable(parsed, remote, speed: speed)
                    // An answer needs no device timer: a process that is merely busy gets a
                    // second of wall time whatever the speed.
                    let timeout = Int64(max(answerTimeout * 1000, speed * 1_000_000))
                    var cap = maxPDUs
                    if case .bluez = parsed, cap == nil { cap = 128 }
                    fuzzTarget = try BlackBox.target(target, label: label, timeout: timeout, maxPDUs: cap, protocols: GATTLabProtocols.all) {
                        // The parse succeeded above; a link is made per input (one connection each).
                        ((try? parsed.link(security: "low", speed: speed).link) ?? UnixSocketLink(path: "/nonexistent"))
                    }
                } else {
                    fuzzTarget = try FuzzTargets.named(target, quirks: quirk, protocols: GATTLabProtocols.all)
                }
            } catch let error as FuzzError {
                if reporter == nil, target == Self.blackBoxName, case .io(let why) = error {
                    throw Failure(.unavailable, why, hint: "check that the device answers GATT discovery (gattlab replay run works against it)")
                }
                throw Failure(.usage, error.description, hint: "`gattlab fuzz list` names the targets and their quirks")
            }
            var options = CampaignOptions()
            options.seed = seed
            options.runs = runs
            options.seconds = time.flatMap(Self.seconds)
            options.corpus = corpus
            options.findings = findings
            options.keepGoing = keepGoing
            // A black-box input may wait seconds for a device's protocol (a Wi-Fi join, a
            // download); a device that hangs shows as no answer instead.
            if reporter != nil { options.slowSeconds = 120 }
            // Progress is for a person watching: only on a terminal.
            options.progressEvery = quiet || isatty(2) != 1 ? 0 : 2
            let campaign = Campaign(target: fuzzTarget, options: options, quirks: quirk)
            var summary: CampaignSummary
            CampaignStop.installHandlers()
            do {
                summary = try campaign.run { printError($0) }
            } catch {
                throw Failure(.cannotCreate, error.description, hint: "check that the --corpus and --findings folders are writable")
            }
            if let reporter { summary.blackBox = reporter.report(unconfirmed: summary.unconfirmed ?? []) }
            report([summary])
        }

        /// The device target: reach it once (an unreachable device is an error, not a finding),
        /// discover it, and map the recorded sessions onto its table.
        func blackBoxTarget(_ remote: String) throws -> (FuzzTarget, GATTCampaignReporter) {
            let parsed = try ReplayTarget.parse(remote)
            try Self.checkReachable(parsed, remote, speed: speed)
            var scripts: [SessionScript] = []
            for path in seedsFrom {
                do { scripts.append(try ScriptExtractor.extract(path: path, options: ExtractOptions(protocols: GATTLabProtocols.all))) } catch {
                    throw Failure(.badInput, "cannot read the session to seed from: \(error)", file: path,
                                  hint: "give a capture with an ATT session (gattlab timeline shows what it has)")
                }
            }
            let timeout = Int64(max(answerTimeout * 1000, speed * 1_000_000))
            var cap = maxPDUs
            if case .bluez = parsed, cap == nil { cap = 128 }
            let speed = speed
            return try GATTBlackBox.target(label: remote, timeout: timeout, maxPDUs: cap, seedScripts: scripts, protocols: GATTLabProtocols.all) {
                // The device is another process: its socket's calls may block the campaign's
                // own thread (no dispatch hops), which every answer waits on anyway.
                if case .unix(let path) = parsed { return DirectUnixLink(path: path, speed: speed) }
                return ((try? parsed.link(security: "low", speed: speed).link) ?? UnixSocketLink(path: "/nonexistent"))
            } progress: { line in if !quiet { printError(line) } }
        }

        /// Several campaigns as processes of their own (a crash ends one job, not the others),
        /// sharing the corpus folder.
        func runJobs() throws {
            let me = URL(fileURLWithPath: CommandLine.arguments[0])
            // Ctrl-C reaches the jobs too: each ends with its summary, which this process reports.
            CampaignStop.installHandlers()
            var processes: [(Process, Pipe)] = []
            for i in 0..<jobs {
                var args = ["fuzz", "run", target, "--seed", String(seed &+ UInt64(i)), "--findings", findings, "--format", "json"]
                if let runs { args += ["--runs", String(max(1, runs / jobs))] }
                if let time { args += ["--time", time] }
                if let remote { args += ["--target", remote, "--speed", String(speed), "--answer-timeout", String(answerTimeout)] }
                if let maxPDUs { args += ["--max-pdus", String(maxPDUs)] }
                for path in seedsFrom { args += ["--seeds-from", path] }
                if let corpus { args += ["--corpus", corpus] }
                for q in quirk { args += ["--quirk", q] }
                if keepGoing { args.append("--keep-going") }
                if quiet { args.append("--quiet") }
                let p = Process()
                p.executableURL = me
                p.arguments = args
                let out = Pipe()
                p.standardOutput = out
                try p.run()
                processes.append((p, out))
            }
            var summaries: [CampaignSummary] = []
            var crashed = 0
            for (p, out) in processes {
                let data = out.fileHandleForReading.readDataToEndOfFile()
                p.waitUntilExit()
                if let s = try? JSONDecoder().decode(CampaignSummary.self, from: data) { summaries.append(s) } else { crashed += 1 }
            }
            report(summaries, crashedJobs: crashed)
        }

        /// The device, what the campaign reached there and how fast: coverage per characteristic
        /// and protocol state, and the characteristics it never reached.
        func printBlackBox(_ bb: BlackBoxReport) {
            print("device: server MTU \(bb.serverMTU)\(bb.encrypted ? ", encrypted link" : ""), protocols: \(bb.protocols.isEmpty ? "none known" : bb.protocols.joined(separator: ", "))")
            for line in bb.table { print("  \(line)") }
            print("\(bb.operations) ATT operations, \(Int(bb.operationsPerSecond)) per second")
            for u in bb.unconfirmed { print("unconfirmed (not reported): \(u)") }
            print("coverage (characteristic / protocol state: sent, answered, ATT errors, drops, timeouts):")
            for row in bb.coverage {
                var parts = ["\(row.sent) sent", "\(row.ok) ok"]
                parts += row.errors.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }
                if row.drops > 0 { parts.append("\(row.drops) dropped") }
                if row.timeouts > 0 { parts.append("\(row.timeouts) timed out") }
                print("  \(row.characteristic) / \(row.state): \(parts.joined(separator: ", "))")
            }
            let reached = Set(bb.coverage.map(\.characteristic))
            let missed = bb.table.compactMap { line -> String? in
                // "0x0012 NAME [props]": the name between the handle and the properties.
                let name = line.split(separator: " ", maxSplits: 1).last.map { String($0.split(separator: "[").first ?? "").trimmingCharacters(in: .whitespaces) } ?? line
                return reached.contains(name) ? nil : name
            }
            if !missed.isEmpty { print("not reached: \(missed.joined(separator: ", "))") }
        }

        func report(_ summaries: [CampaignSummary], crashedJobs: Int = 0) {
            // Jobs that found the same minimised input (a seed every job starts from) wrote the
            // same file: it is one finding.
            var files = Set<String>()
            let findings = summaries.flatMap(\.findings).filter { files.insert($0.file).inserted }
            if format == .json, summaries.count == 1, let s = summaries.first {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                if let data = try? encoder.encode(s) { print(String(decoding: data, as: UTF8.self)) }
            } else {
                let runs = summaries.reduce(0) { $0 + $1.runs }
                let seconds = summaries.map(\.seconds).max() ?? 0
                let rate = summaries.reduce(0.0) { $0 + $1.execsPerSecond }
                let corpus = summaries.map(\.corpusEnd).max() ?? 0
                print("\(target): \(runs) runs in \(String(format: "%.1f", seconds)) s (\(Int(rate)) exec/s\(summaries.count > 1 ? ", \(summaries.count) jobs" : "")), corpus \(summaries.first?.corpusStart ?? 0) -> \(corpus), \(findings.count) finding\(findings.count == 1 ? "" : "s")")
                for f in findings {
                    print("  \(f.kind) \(f.afterRuns == 0 ? "in an input it started from (a seed or the corpus)" : "after \(f.afterRuns) runs"): \(f.detail)")
                    print("    reproducer (\(f.inputLength) bytes): \(f.file)")
                    print("    \(Storage.reproduceCommand(f.file, remote: remote))")
                }
                if crashedJobs > 0 { print("  \(crashedJobs) job\(crashedJobs == 1 ? "" : "s") crashed; its input is in \(self.findings) (*-crash-*)") }
                for s in summaries { if let bb = s.blackBox { printBlackBox(bb) } }
            }
            if !findings.isEmpty || crashedJobs > 0 { Foundation.exit(ExitStatus.finding.rawValue) }
            if summaries.contains(where: \.interrupted) { Foundation.exit(ExitStatus.interrupted.rawValue) }
        }
    }

    struct Reproduce: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reproduce",
            abstract: "Run one input (a finding, a corpus file) against its target once.",
            discussion: "The target and quirks come from the note beside a finding (FILE.txt), else from --target. Exit 1 when the input still gives a finding, 0 when it no longer does." + "\n\n" + ExitStatus.help([.success, .finding, .usage, .noInput]))

        @Argument(help: ArgumentHelp("The input file.", valueName: "file"))
        var file: String

        @Option(name: .long, help: ArgumentHelp("The target, when FILE has no note.", valueName: "target"))
        var target: String?

        @Option(name: .long, help: ArgumentHelp("Quirks, when FILE has no note.", valueName: "name"))
        var quirk: [String] = []

        func run() throws {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw Failure(.noInput, "cannot open the input", file: file, hint: "check the path of the finding to reproduce")
            }
            let note = FindingNote(path: file + ".txt")
            guard let name = target ?? note?.target else {
                throw Failure(.usage, "the input has no note (\(file).txt) naming its target", file: file,
                              hint: "give the target with --target (`gattlab fuzz list` names them)")
            }
            let quirks = quirk.isEmpty ? (note?.quirks ?? []) : quirk
            let fuzzTarget: FuzzTarget
            do { fuzzTarget = try FuzzTargets.named(name, quirks: quirks, protocols: GATTLabProtocols.all) } catch {
                throw Failure(.usage, error.description, hint: "`gattlab fuzz list` names the targets and their quirks")
            }
            let outcome = fuzzTarget.run(Array(data))
            switch outcome {
            case .ok:
                if let device = note?.device {
                    // Found black-box: the fault was the device's, which this process does not have.
                    print("\(file): \(name)\(quirks.isEmpty ? "" : " (quirks: \(quirks.joined(separator: ", ")))"): no finding in-process; "
                          + "it was found black-box on \(device): give the device's faults (--quirk), or replay its exchange: "
                          + Storage.reproduceCommand(file, remote: device))
                } else {
                    print("\(file): \(name)\(quirks.isEmpty ? "" : " (quirks: \(quirks.joined(separator: ", ")))"): no finding; the bug no longer reproduces")
                }
            case .finding(let kind, let detail):
                print("\(file): \(name)\(quirks.isEmpty ? "" : " (quirks: \(quirks.joined(separator: ", ")))"): \(kind): \(detail)")
                throw ExitStatus.finding.exitCode
            }
        }
    }
}

/// The note written beside a finding: `key: value` lines.
struct FindingNote {
    var target: String?
    var quirks: [String] = []
    /// The device of a black-box finding.
    var device: String?

    init?(path: String) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            if parts[0] == "target" { target = parts[1] }
            if parts[0] == "device" { device = parts[1].split(separator: " ").first.map(String.init) }
            if parts[0] == "quirks" { quirks = parts[1].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
        }
    }
}
