import ArgumentParser
import Capture
import Emulator
import Foundation
import Protocols
import Replay
import Report
import Transport

/// `gattlab replay`: a recorded session as a script, run again against an emulated or real device.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Turn a recorded session into a script and run it again against an emulated or a real device.",
        discussion: """
            A field capture becomes a test: `extract` writes the phone's side of a session as an \
            editable JSON script (steps by characteristic UUID, recorded answers as expectations), \
            `run` replays it against a target and compares every answer with the recording by \
            protocol meaning (OTA states and errors, scan results, ATT errors), tolerating what \
            differs from run to run (progress, RSSI, timing).

            Examples:
              gattlab replay extract field.btsnoop -o session.json
              gattlab replay run session.json --target emu:speaker --set password='lab password'
              gattlab replay run Captures/emulated/speaker-ota-mtu247.btsnoop --target emu:speaker-ota --timing fast
              gattlab emulate speaker --listen unix:/tmp/speaker.sock &
              gattlab replay run session.json --target unix:/tmp/speaker.sock --set password=... --record replay.btsnoop
              gattlab replay run session.json --target bluez:hci0/C0:11:22:33:44:55/random --allow-writes --set password=...
              gattlab replay extract esp.btsnoop --esp-pop abcd1234 --esp-client-key HEX -o esp.json
              gattlab replay run esp.json --target emu:esp --set pop=abcd1234 --set password=...
            """,
        subcommands: [Extract.self, Run.self])

    struct Extract: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "extract",
            abstract: "Write the phone's side of a recorded session as a replay script (JSON).",
            discussion: """
                Takes every connection to the device of the first connection with ATT traffic \
                (reconnections included), or the one --connection or --peer names. Discovery \
                becomes one step; long writes one write; notifications become steps that wait, \
                with a timeout, for the equivalent notification. Passwords, passphrases and URL \
                secrets are overwritten with '*' unless --reveal-secrets: such a script needs \
                --set at run time, so recorded credentials never reach a device by accident.

                ESP-IDF provisioning: security 0 steps get their plaintext as they are; a \
                security 1 session is decrypted with --esp-client-key (the phone's X25519 \
                private key) and --esp-pop (the PoP the phone used; none for a no_pop device). \
                A script with plaintext runs the session live: the replay makes its own keys, so \
                it works against any ESP device, not only one with the recorded keys. The PoP \
                is a secret like the password (--set pop= at run time).
                """ + "\n\n" + ExitStatus.help([.success, .usage, .badInput, .noInput, .noMatch, .cannotCreate]))

        @Argument(help: ArgumentHelp("The capture (btsnoop, PacketLogger, pcap, pcapng).", valueName: "capture"))
        var capture: String

        @Option(name: [.customShort("o"), .long], help: ArgumentHelp("Write the script here (default: standard output).", valueName: "file"))
        var output: String?

        @Flag(name: .long, help: "Replace the output if it exists.")
        var force = false

        @Option(name: .long, help: ArgumentHelp("Only this connection (as decode shows it: 0x0040).", valueName: "handle"))
        var connection: String?

        @Option(name: .long, help: ArgumentHelp("Every connection to this device address.", valueName: "address"))
        var peer: String?

        @Flag(name: .customLong("reveal-secrets"), help: "Keep recorded passwords, URL secrets and the ESP PoP in the script.")
        var revealSecrets = false

        @OptionGroup var esp: ESPKeyOptions

        func run() throws {
            let options = ExtractOptions(protocols: GATTLabProtocols.all, connection: connection, peer: peer, revealSecrets: revealSecrets, keys: esp.keys)
            let script = try ReplayCommand.extract(capture, options)
            if let output {
                try OutputFiles.write(script.json(), to: output, force: force, protecting: [capture])
                printError("gattlab: wrote \(output): \(script.steps.count) steps from \(script.source.connections.count) connection\(script.source.connections.count == 1 ? "" : "s") to \(script.source.peer ?? "the device")\(script.redacted ? "; secrets redacted (give them with --set at run time)" : "")")
                for type in GATTLabProtocols.all.replaySessions {
                    if let line = type.extractionSummary(script) { printError("gattlab: " + line) }
                }
            } else {
                let out = BufferedOutput()
                out.write(script.json())
                out.flush()
            }
        }
    }

    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Replay a script (or a capture) against a target and compare with the recording.",
            discussion: """
                Targets:
                  emu:NAME      an emulated device in this process (gattlab emulate
                                list): a scenario's device with its faults, or
                                \(EmulatedDevices.kinds)
                  unix:PATH     an emulator process (gattlab emulate NAME --listen
                                unix:PATH); give its --speed here too
                  bluez:hciN/ADDR[/public|random]
                                a real device through the kernel's L2CAP ATT socket
                                (an emulated one, gattlab emulate --hci, takes --speed
                                as unix: does)

                Timing: `recorded` keeps the phone's delays between steps, `fast` drops them, a \
                number divides them. Waits for answers and notifications keep their timeouts; \
                what the device did on its own is waited for as long as it took in the recording.

                A capture given instead of a script is extracted first (the device of its first \
                connection with ATT traffic, or the one --connection or --peer names); against \
                bluez: its secrets are redacted, so --set must give them. Against bluez:, writes and \
                commands are sent only with --allow-writes; otherwise the run is read-only and \
                says what it skipped.

                ESP-IDF provisioning: a script with plaintext (extract --esp-client-key, or any \
                security 0 session) runs the session live with its own keys (--seed) and the \
                recorded PoP (--set pop= gives another, or a redacted one), and compares the \
                decrypted answers by meaning. emu:esp is shaped like the recorded device: its \
                security scheme, proto-ver answer and PoP.
                """ + "\n\n" + ExitStatus.help([.success, .finding, .usage, .badInput, .noInput, .unavailable, .cannotCreate]))

        @Argument(help: ArgumentHelp("A script from `replay extract`, or a capture.", valueName: "script"))
        var input: String

        @Option(name: .long, help: ArgumentHelp("A capture: only this connection (as decode shows it: 0x0040).", valueName: "handle"))
        var connection: String?

        @Option(name: .long, help: ArgumentHelp("A capture: every connection to this device address.", valueName: "address"))
        var peer: String?

        @Option(name: .long, help: ArgumentHelp("emu:NAME, unix:PATH or bluez:hciN/ADDR[/public|random].", valueName: "target"))
        var target: String

        @Option(name: .long, help: ArgumentHelp("recorded, fast, or a speed factor (10 = ten times faster).", valueName: "timing"))
        var timing: String = "recorded"

        @Option(name: .customLong("set"), help: ArgumentHelp("Substitute a value: ssid=..., password=..., url=..., pop=... (repeatable).", valueName: "name=value"))
        var settings: [String] = []

        @OptionGroup var esp: ESPKeyOptions

        @Flag(name: .customLong("allow-writes"), help: "Send writes and commands to a bluez: target.")
        var allowWrites = false

        @Option(name: .long, help: ArgumentHelp("bluez: security level: low, medium (encrypted) or high (MITM).", valueName: "level"))
        var security: String = "low"

        @Option(name: .long, help: ArgumentHelp("Record the replay as btsnoop here.", valueName: "file"))
        var record: String?

        @Flag(name: .long, help: "Replace the --record file if it exists.")
        var force = false

        @Option(name: .long, help: "The emulated device's seed (emu:; the recording's seed reproduces its scan results and session keys), and the seed of the replay's own ESP session keys.")
        var seed: UInt64 = 1

        @Option(name: .long, help: ArgumentHelp("The emulator's --speed (unix:, or bluez: to gattlab emulate --hci): the replay's clock runs as fast, so recorded delays and timeouts stay in step with the device.", valueName: "factor"))
        var speed: Double = 1

        @Option(name: .customLong("att-timeout"), help: ArgumentHelp("Seconds to wait for an answer before the target counts as failed.", valueName: "seconds"))
        var attTimeout: Double = 30

        @Option(name: .long, help: "Report format: text or json.")
        var format: OutputFormatOption = .text

        @Option(name: .customLong("repeat"), help: ArgumentHelp("Run the session this many times (a soak test; sessions/s on stderr). The report shown is the first that differs, else the last.", valueName: "n"))
        var repeatCount = 1

        @Option(name: .long, help: ArgumentHelp("emu: targets: `recorded` puts the emulated device in the recording's Wi-Fi world (the networks its scans found, the recorded password accepted or refused as it was); `emulator` keeps the emulator's own neighbourhood.", valueName: "shape"))
        var table: DeviceShape = .recorded

        @Flag(name: .long, help: "Compare step by step as recorded: one observed notification for each recorded one, values byte for byte but for progress and RSSI. Without it, the replay compares protocol progress and reports cadence differences as tolerated.")
        var strict = false

        @Flag(name: .shortAndLong, help: "List every step, not only those that differ.")
        var verbose = false

        @Flag(name: .customLong("no-color"), help: "No colour in text output (also NO_COLOR).")
        var noColor = false

        func validate() throws {
            guard ReplayTiming(timing) != nil else { throw ValidationError("--timing must be recorded, fast or a positive number") }
            guard attTimeout > 0, attTimeout <= 3600 else { throw ValidationError("--att-timeout must be between 0 and 3600 seconds") }
            for s in settings where !s.contains("=") { throw ValidationError("--set takes name=value, not '\(s)'") }
            guard ["low", "medium", "high"].contains(security) else { throw ValidationError("--security must be low, medium or high") }
            guard (1...1_000_000).contains(repeatCount) else { throw ValidationError("--repeat must be 1 to 1000000") }
            if repeatCount > 1, record != nil { throw ValidationError("--record records one session; leave out --repeat") }
            guard speed > 0, speed <= 100_000 else { throw ValidationError("--speed must be a positive factor, at most 100000") }
            let parsed = try ReplayTarget.parse(target)
            if case .bluez(let text) = parsed {
                do { _ = try BlueZTarget(parsing: text) } catch { throw ValidationError(error.description) }
            }
        }

        func run() throws {
            var parsed = try ReplayTarget.parse(target)
            var options = ReplayOptions(protocols: GATTLabProtocols.all, timing: ReplayTiming(timing) ?? .recorded,
                                        settings: Dictionary(settings.map { s in
                                            let i = s.firstIndex(of: "=") ?? s.endIndex
                                            return (String(s[..<i]), String(s[s.index(after: i)...]))
                                        }, uniquingKeysWith: { $1 }),
                                        readOnly: parsed.isRealDevice && !allowWrites,
                                        attTimeout: Int64(attTimeout * 1_000_000),
                                        comparison: strict ? .strict : .progress)
            options.seed = seed
            let (script, recordedDevice) = try loadRecording(revealSecrets: !parsed.isRealDevice)
            if let record, FileManager.default.fileExists(atPath: record), !force {
                throw Failure(.cannotCreate, "the --record output exists; nothing replayed", file: record,
                              hint: "add --force to replace it, or choose another --record file")
            }
            let runner = ReplayRunner(script: script, options: options)
            let values: [Int: [UInt8]]
            do { values = try runner.values() } catch {
                throw Failure(error)
            }
            switch parsed {
            case .emulated(let spec) where table == .recorded:
                // Shaped like the recorded device: its table and cadence (from a capture), its Wi-Fi world.
                if let recordedDevice {
                    parsed = .emulated(recordedDevice.shape(spec, values: values, settings: options.settings))
                } else if let world = RecordedWorld.from(script, values: values, settings: options.settings, protocols: options.protocols) {
                    parsed = .emulated(spec.inEnvironment(world.environment))
                }
            case .recorded:
                guard let spec = recordedDevice?.emulated(values: values, settings: options.settings, protocols: GATTLabProtocols.all) else {
                    throw Failure(.usage, recordedDevice == nil ? "emu:recorded is built from a capture, and this is a script"
                                                               : "the capture has no discovery of the device to build emu:recorded from",
                                  file: input, hint: "give the capture itself, one where the phone discovered the device")
                }
                parsed = .emulated(spec)
            default:
                break
            }
            let target = parsed
            for type in GATTLabProtocols.all.replaySessions {
                if let warning = type.runWarning(script) { printError("gattlab: " + warning) }
            }
            // One link per repetition: a fresh emulated device, or a new connection to the
            // emulator process or device (which serves them one after another).
            let (seed, speed, security, label) = (seed, speed, security, target.description)
            let makeLink: @Sendable () throws -> (link: any TimedATTBearer & LinkControl, recording: @Sendable () async -> Recording,
                                                  failure: (@Sendable () async -> String?)?)
            switch target {
            case .emulated(let spec):
                // Shaped like the recorded device by the protocol whose session the script runs
                // (ESP-IDF: the plain `esp` device gets the recorded scheme, proto-ver and PoP).
                let device = spec.replayDevice(for: script, settings: options.settings, protocols: GATTLabProtocols.all)
                makeLink = {
                    let e = EmulatedLink(seed: seed, device: device)
                    return (e, { await e.recording() }, nil)
                }
            case .unix, .bluez, .recorded:
                makeLink = {
                    let inner = try target.link(security: security, speed: speed)
                    let wrapped = RecordingLink(inner.link)
                    return (wrapped, { await wrapped.recording() }, inner.failure)
                }
            }
            let links = try (0..<repeatCount).map { _ in try makeLink() }
            let box = ReportBox()
            let semaphore = DispatchSemaphore(value: 0)
            let wantsRecording = record != nil
            let started = Date()
            Task {
                var tally: [ReplayReport.Verdict: Int] = [:]
                var shown: ReplayReport?
                for (i, l) in links.enumerated() {
                    var o = options
                    o.connectFailure = l.failure
                    do throws(ReplayError) {
                        let r = try await ReplayRunner(script: script, options: o).run(on: l.link, target: label)
                        tally[r.verdict, default: 0] += 1
                        // The first report that is not equivalent is kept; else the latest.
                        if shown?.verdict ?? .equivalent == .equivalent { shown = r }
                    } catch {
                        box.set(.failure(error))
                        break
                    }
                    if wantsRecording, i == 0 { box.setRecording(await l.recording()) }
                }
                if let shown { box.set(.success(shown)) }
                box.tally = tally
                semaphore.signal()
            }
            semaphore.wait()
            if repeatCount > 1 {
                let seconds = Date().timeIntervalSince(started)
                let t = box.tally
                printError("\(repeatCount) sessions in \(String(format: "%.3f", seconds)) s (\(String(format: "%.1f", Double(repeatCount) / seconds)) sessions/s): "
                           + "\(t[.equivalent] ?? 0) equivalent, \(t[.diverged] ?? 0) diverged, \(t[.targetFailed] ?? 0) target failed")
            }
            let report: ReplayReport
            switch box.get() {
            case .success(let r): report = r
            case .failure(let e):
                throw Failure(e)
            case nil:
                throw Failure(.software, "the replay ended without a report", hint: "this is a bug in gattlab; please report it with the command line")
            }
            if let record, let recording = box.recording() {
                do {
                    try recording.write(to: record, overwrite: force)
                    printError("gattlab: wrote \(record): the replay recorded, \(recording.packets.count) HCI packets")
                } catch {
                    throw Failure(.cannotCreate, error.description, file: record, hint: "check that the folder exists and is writable")
                }
            }
            let out = BufferedOutput()
            switch format {
            case .json: out.write(report.json())
            case .text: out.write(report.text(verbose: verbose, color: Style.forStdout(disabled: noColor).enabled))
            }
            out.flush()
            switch report.verdict {
            case .equivalent: return
            case .diverged: throw ExitStatus.finding.exitCode
            case .targetFailed:
                // The report above says it step by step; stderr says it in the voice of every error.
                let step = report.failure
                let why = step?.differences.first ?? "it stopped answering"
                throw Failure(.unavailable, "the target failed at step \(step?.step ?? 0) (\(step?.action ?? "?")): \(why)",
                              hint: "check that the device (or `gattlab emulate --listen`) is up, in range and not serving another client")
            }
        }

        /// A script file, or a capture extracted on the fly (its secrets kept only for emulators).
        func loadScript(revealSecrets: Bool) throws -> SessionScript {
            try loadRecording(revealSecrets: revealSecrets).script
        }

        /// The script, and the recorded device when the input is a capture (a script file carries
        /// only the session).
        func loadRecording(revealSecrets: Bool) throws -> (script: SessionScript, device: RecordedDevice?) {
            guard let data = FileManager.default.contents(atPath: input) else {
                throw Failure(.noInput, "cannot open the script or capture", file: input, hint: "check the path and that the file is readable")
            }
            if data.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "{") {
                guard connection == nil, peer == nil else {
                    throw Failure(.usage, "--connection and --peer choose in a capture, and this is a script", file: input,
                                  hint: "extract the capture again with them (gattlab replay extract --peer ADDR)")
                }
                guard esp.isEmpty else {
                    throw Failure(.usage, "--esp-pop and --esp-client-key decrypt a capture, and this is a script", file: input,
                                  hint: "extract the capture again with them (gattlab replay extract), or give the PoP with --set pop=")
                }
                do {
                    return (try SessionScript.parse(data, path: input, protocols: GATTLabProtocols.all), nil)
                } catch {
                    throw Failure(error)
                }
            }
            let device = try ReplayCommand.recordedDevice(input, ExtractOptions(protocols: GATTLabProtocols.all, connection: connection, peer: peer,
                                                                               revealSecrets: revealSecrets,
                                                                               keys: esp.keys))
            return (device.script, device)
        }
    }

    /// The recorded device of a capture, with the CLI's errors.
    static func recordedDevice(_ path: String, _ options: ExtractOptions) throws -> RecordedDevice {
        try withCLIErrors(options) { try RecordedDevice.read(path: path, options: options) }
    }

    /// Extraction with the CLI's errors: capture errors as one line (file, record, offset).
    static func extract(_ path: String, _ options: ExtractOptions) throws -> SessionScript {
        try withCLIErrors(options) { try ScriptExtractor.extract(path: path, options: options) }
    }

    /// Capture and replay errors of reading a capture, in the voice of every error; "nothing to
    /// replay" is a filter that matched nothing when --connection or --peer chose.
    private static func withCLIErrors<T>(_ options: ExtractOptions, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as CaptureError {
            throw Failure(error)
        } catch let error as ReplayError {
            throw Failure(error, filtered: options.connection != nil || options.peer != nil)
        }
    }
}

extension Failure {
    /// A replay error in the voice of every error; `filtered`: --connection or --peer chose
    /// what to replay, so "nothing to replay" means the filter matched nothing.
    init(_ error: ReplayError, filtered: Bool = false) {
        switch error {
        case .badScript(let path, let why):
            self.init(.badInput, why, file: path, hint: "a script is what `gattlab replay extract` writes (schema gattlab.replay/1, docs/replay.md)")
        case .nothingToReplay(let path, let why):
            self.init(filtered ? .noMatch : .badInput, why, file: path,
                      hint: filtered ? "`gattlab info \(path)` lists the connections and peers" : "a replay needs a connection with ATT traffic")
        case .usage(let why):
            self.init(.usage, why, hint: "see 'gattlab replay run --help'")
        }
    }
}

/// Where `replay run` sends the script.
enum ReplayTarget: CustomStringConvertible {
    case emulated(EmulatedDeviceSpec)
    /// The device the capture recorded, emulated (`emu:recorded`); made once the capture is read.
    case recorded
    case unix(String)
    case bluez(String)

    static func parse(_ text: String) throws -> ReplayTarget {
        if text == "emu:recorded" { return .recorded }
        if text.hasPrefix("emu:") {
            let name = String(text.dropFirst(4))
            guard let spec = EmulatedDeviceSpec.named(name, protocols: GATTLabProtocols.all) else {
                throw ValidationError("no emulated device '\(name)'; try \(EmulatedDevices.kinds) or a scenario name (gattlab emulate list)")
            }
            return .emulated(spec)
        }
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst(5))
            guard !path.isEmpty else { throw ValidationError("unix: needs the emulator's socket path: unix:/tmp/speaker.sock") }
            return .unix(path)
        }
        if text.hasPrefix("bluez:") { return .bluez(String(text.dropFirst(6))) }
        throw ValidationError("--target must be emu:NAME, unix:PATH or bluez:hciN/ADDR, not '\(text)'")
    }

    var isRealDevice: Bool {
        if case .bluez = self { return true }
        return false
    }

    var description: String {
        switch self {
        case .emulated(let s): "emu:\(s.name)"
        case .recorded: "emu:recorded"
        case .unix(let p): "unix:\(p)"
        case .bluez(let t): "bluez:\(t)"
        }
    }

    /// The link to a target outside this process, and how to ask it why a connection failed.
    func link(security: String, speed: Double) throws -> (link: any TimedATTBearer & LinkControl, failure: @Sendable () async -> String?) {
        switch self {
        case .emulated, .recorded:
            throw Failure(.software, "an emulated target has no outside link", hint: "this is a bug in gattlab; please report it with the command line")
        case .unix(let path):
            let link = UnixSocketLink(path: path, speed: speed)
            return (link, { await link.lastError?.description })
        case .bluez(let text):
            let target: BlueZTarget
            do { target = try BlueZTarget(parsing: text) } catch {
                throw Failure(.usage, error.description, hint: "a BlueZ target is bluez:hciN/AA:BB:CC:DD:EE:FF (the controller, then the device's address)")
            }
            let link = BlueZLink(target: target, security: BlueZSecurity(rawValue: security) ?? .low, speed: speed)
            return (link, { await link.lastError?.description })
        }
    }
}

/// Carries a replay's result from its task to the command's thread.
private final class ReportBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Result<ReplayReport, ReplayError>?
    private var recorded: Recording?
    private var counts: [ReplayReport.Verdict: Int] = [:]
    var tally: [ReplayReport.Verdict: Int] {
        get { lock.withLock { counts } }
        set { lock.withLock { counts = newValue } }
    }
    func set(_ v: Result<ReplayReport, ReplayError>) { lock.withLock { value = v } }
    func get() -> Result<ReplayReport, ReplayError>? { lock.withLock { value } }
    func setRecording(_ r: Recording) { lock.withLock { recorded = r } }
    func recording() -> Recording? { lock.withLock { recorded } }
}
