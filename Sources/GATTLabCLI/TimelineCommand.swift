import Analysis
import ArgumentParser
import Capture
import Dispatch
import Foundation
import GATT
import Profiles
import Protocols
import Report

enum TimelineFormatOption: String, ExpressibleByArgument, CaseIterable {
    case text, json, html, perfetto
}

enum FailOnOption: String, ExpressibleByArgument, CaseIterable {
    case never, error, warning
}

struct TimelineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timeline",
        abstract: "What happened, when, and why it failed: per-device timelines with diagnoses.",
        discussion: """
            Builds one story per device across its connections (a speaker that reboots and is \
            reconnected is one device): the link (connections, MTU, encryption, pairing, \
            disconnect reasons and what they mean, gaps), the device protocol (OTA phases with \
            durations and download throughput, scans with their networks, nRF7 and ESP \
            provisioning steps), and findings from the diagnosis rules, each with an id, \
            severity, evidence (times and frames) and what to do.

            Formats: text (a summary, then the events), json (one document; schema in the \
            README), html (one self-contained page with a time axis: -o FILE), perfetto (Chrome \
            trace JSON for ui.perfetto.dev and chrome://tracing: -o FILE).

            Several files or folders are analysed in parallel (--jobs), with a summary table at \
            the end; html and perfetto then write one file per capture into the -o folder.

            Examples:
              gattlab timeline field.btsnoop
              gattlab timeline --format html -o report.html field.btsnoop
              gattlab timeline --format json field.btsnoop | jq '.findings[] | .id'
              gattlab timeline --format perfetto -o trace.json field.btsnoop
              gattlab timeline captures/            (every capture in the folder)
              gattlab timeline --fail-on error captures/   (exit 1 when a rule finds an error)
            """ + "\n\n" + ExitStatus.help([.success, .finding, .usage, .badInput, .noInput, .noMatch, .cannotCreate]))

    @Option(name: .long, help: "Output format: text, json, html or perfetto.")
    var format: TimelineFormatOption = .text

    @Option(name: [.customShort("o"), .long], help: ArgumentHelp(
        "Write to this file (a folder when several captures make html or perfetto output).", valueName: "path"))
    var output: String?

    @Flag(name: .long, help: "Replace the -o file(s) if they exist.")
    var force = false

    @Flag(name: .customLong("absolute-time"), help: "Times as UTC ISO 8601 (text), or UTC added beside relative times (json).")
    var absoluteTime = false

    @Flag(name: .long, help: "JSON: indented, one field per line (the committed expected timelines use it).")
    var pretty = false

    @Flag(name: .long, help: "Text: list every event even when several captures are given.")
    var events = false

    @Option(name: .long, help: "Captures analysed at once (default: all cores).")
    var jobs: Int?

    @Option(name: .customLong("fail-on"), help: "Exit 1 when a finding of this severity or worse is found: never, error, warning.")
    var failOn: FailOnOption = .never

    @Option(name: .long, help: ArgumentHelp(
        "Only devices with this address, name or id (d0, d1...; repeatable); exit 67 when none matches.", valueName: "device"))
    var device: [String] = []

    @Option(name: .long, help: ArgumentHelp(
        "Only devices that spoke this protocol (repeatable): \(DeviceFilter.protocols.joined(separator: ", ")); exit 67 when none did.",
        valueName: "name"))
    var `protocol`: [String] = []

    @OptionGroup var options: DecodeOptions

    @OptionGroup var linkKeys: LinkKeyOptions

    @Argument(help: ArgumentHelp("Capture files or folders of captures.", valueName: "file"))
    var files: [String]

    func validate() throws {
        if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1") }
        if files.contains("-") { throw ValidationError("timeline reads files; for standard input use `gattlab decode -`") }
    }

    func run() throws {
        let paths = try CaptureFiles.expand(files)
        guard !paths.isEmpty else {
            throw Failure(.noInput, "no capture files found", file: files.joined(separator: ", "),
                          hint: "give capture files, or folders that hold btsnoop, PacketLogger, pcap or pcapng files")
        }
        if (format == .html || format == .perfetto), output == nil, isatty(1) == 1 {
            throw ValidationError("--format \(format.rawValue) writes a file: give -o FILE (or redirect standard output)")
        }
        let keys = try linkKeys.keys()
        let decoderFactory = {
            let decoder = try options.makeDecoder()
            decoder.link.linkLayerKeys = keys
            decoder.link.recoversPairingKeys = !linkKeys.noPairingKeys
            decoder.link.revealsPasskeys = options.revealSecrets
            return decoder
        }
        _ = try decoderFactory()  // a bad --gatt-table is a usage error before any work
        let results = TimelineAnalysis.run(paths: paths, jobs: jobs ?? ProcessInfo.processInfo.activeProcessorCount,
                                           makeDecoder: decoderFactory, keys: options.protocolKeys())
        var status = ExitStatus.success
        for r in results { if let e = r.error { status = status.worst(report(e, decoded: r.timeline.records)) } }
        let renderOptions = RenderOptions(reveal: options.revealSecrets, absoluteTime: absoluteTime, pretty: pretty)
        // A file that could not be read at all has no story: its one-line error says it all.
        var timelines = results.filter { $0.error == nil || $0.timeline.records > 0 }.map(\.timeline)
        let filter = DeviceFilter(devices: device, protocols: `protocol`)
        if filter.isActive, !timelines.isEmpty {
            timelines = timelines.map { $0.filtered(devices: filter.matches) }.filter { !$0.devices.isEmpty }
            if timelines.isEmpty {
                throw Failure(.noMatch, "no device matched \(filter)", file: paths.count == 1 ? paths[0] : "\(paths.count) captures",
                              hint: "`gattlab timeline` without filters lists the devices, their ids and protocols")
            }
        }
        if !timelines.isEmpty { try write(timelines, options: renderOptions) }
        if failOn != .never {
            let threshold: Finding.Severity = failOn == .error ? .error : .warning
            if timelines.contains(where: { $0.findings.contains { $0.severity >= threshold } }) { status = status.worst(.finding) }
        }
        if status != .success { throw status.exitCode }
    }

    private func write(_ timelines: [Timeline], options renderOptions: RenderOptions) throws {
        let single = timelines.count == 1
        switch format {
        case .text:
            let colors = TimelineText.Colors(enabled: Style.forStdout(disabled: options.noColor).enabled && output == nil)
            try OutputFiles.emit(to: output, force: force, protecting: files) { out in
                for (i, t) in timelines.enumerated() {
                    if i > 0 { out.write("\n") }
                    TimelineText.write(t, options: renderOptions, colors: colors, eventsToo: single || events, to: out)
                }
                if !single { out.write("\n" + TimelineSummaryTable.render(timelines)) }
            }
        case .json:
            try OutputFiles.emit(to: output, force: force, protecting: files) { out in
                TimelineJSON.write(timelines, options: renderOptions, to: out)
                out.line("")
            }
        case .html, .perfetto:
            let write: (Timeline, BufferedOutput) -> Void = format == .html
                ? { TimelineHTML.write($0, options: renderOptions, to: $1) } : { TimelinePerfetto.write($0, options: renderOptions, to: $1) }
            if single {
                try OutputFiles.emit(to: output, force: force, protecting: files) { write(timelines[0], $0) }
                return
            }
            guard let dir = output else {
                throw ValidationError("several captures make one \(format.rawValue) file each: give -o FOLDER")
            }
            try OutputFiles.makeFolder(dir)
            let ext = format == .html ? "html" : "trace.json"
            var written: [String] = []
            for (t, name) in zip(timelines, CaptureFiles.outputNames(timelines.map(\.source))) {
                let path = (dir as NSString).appendingPathComponent("\(name).\(ext)")
                try OutputFiles.write(to: path, force: force, protecting: timelines.map(\.source)) { write(t, $0) }
                written.append(path)
            }
            printError("gattlab: wrote \(written.count) \(format.rawValue) files into \(dir)")
            print(TimelineSummaryTable.render(timelines), terminator: "")
        }
    }
}

/// `--device` and `--protocol`: which devices of a timeline to keep.
struct DeviceFilter: CustomStringConvertible {
    static let protocols = GATTLabProtocols.all.types.map { $0.name }
    var devices: [String]
    var protocols: [String]

    var isActive: Bool { !devices.isEmpty || !protocols.isEmpty }

    func matches(_ d: TimelineDevice) -> Bool {
        let byDevice = devices.isEmpty || devices.contains { wanted in
            let w = wanted.lowercased()
            return d.address?.lowercased() == w || d.name?.lowercased() == w || "d\(d.id)" == w || "\(d.id)" == w
        }
        // A protocol spoken, or recognised from the services the device advertised.
        let byProtocol = protocols.isEmpty || protocols.contains { p in
            (d.protocols + (d.advertising?.protocols ?? [])).contains { $0.lowercased() == p.lowercased() }
        }
        return byDevice && byProtocol
    }

    var description: String {
        (devices.map { "--device \($0)" } + protocols.map { "--protocol \($0)" }).joined(separator: " ")
    }
}

/// The timelines of many captures, built in parallel: each capture is independent, so the
/// work spreads over `jobs` threads pulling the next file from a shared index.
enum TimelineAnalysis {
    struct Result: Sendable {
        var timeline: Timeline
        var error: CaptureError?
    }

    static func run(paths: [String], jobs: Int, makeDecoder: @escaping () throws -> GATTDecoder,
                    keys: ProtocolKeys) -> [Result] {
        // `makeDecoder` only reads the (already validated) options; calling it from several
        // threads at once is safe.
        nonisolated(unsafe) let make = makeDecoder
        return ParallelCaptures.run(paths: paths, jobs: jobs) { path in
            analyse(path, decoder: (try? make()) ?? GATTDecoder(), keys: keys)
        }
    }

    static func analyse(_ path: String, decoder: GATTDecoder, keys: ProtocolKeys) -> Result {
        let profiles = ProfileDecoder(protocols: GATTLabProtocols.all, keys: keys)
        let reader: any CaptureReader
        do {
            reader = try openCapture(path)
        } catch {
            return Result(timeline: TimelineBuilder(source: path, format: "unknown", protocols: GATTLabProtocols.all).finish(), error: error)
        }
        let builder = TimelineBuilder(source: path, format: reader.format.description, protocols: GATTLabProtocols.all)
        do {
            while let record = try reader.next() {
                decoder.consume(record)
                if decoder.events.isEmpty {
                    builder.consume(record, gatt: [], profile: [])
                    continue
                }
                profiles.consume(decoder, record: record)
                builder.consume(record, gatt: decoder.events, profile: profiles.events)
            }
            return Result(timeline: builder.finish(), error: nil)
        } catch {
            return Result(timeline: builder.finish(), error: error)
        }
    }
}

/// Independent captures analysed on `jobs` threads, each pulling the next file from a shared
/// index; results come back in the order of `paths`.
enum ParallelCaptures {
    static func run<R: Sendable>(paths: [String], jobs: Int, _ work: @escaping @Sendable (String) -> R) -> [R] {
        let box = ResultsBox<R>(count: paths.count)
        let workers = max(1, min(jobs, paths.count))
        let progress = FilesProgress(total: paths.count)
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while let i = box.nextIndex() {
                box.set(i, work(paths[i]))
                progress.step()
            }
        }
        progress.finish()
        return box.results
    }
}

final class ResultsBox<R: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var next = 0
    private var slots: [R?]

    init(count: Int) { slots = Array(repeating: nil, count: count) }

    func nextIndex() -> Int? {
        lock.lock(); defer { lock.unlock() }
        guard next < slots.count else { return nil }
        next += 1
        return next - 1
    }

    func set(_ i: Int, _ r: R) {
        lock.lock(); defer { lock.unlock() }
        slots[i] = r
    }

    var results: [R] {
        lock.lock(); defer { lock.unlock() }
        return slots.compactMap { $0 }
    }
}

/// "gattlab: 12/40 captures" on a terminal's stderr while a folder is analysed.
final class FilesProgress: @unchecked Sendable {
    private let lock = NSLock()
    private let total: Int
    private var done = 0
    private let enabled: Bool
    private let start = Progress.now()

    init(total: Int) {
        self.total = total
        enabled = total > 1 && isatty(2) == 1
    }

    func step() {
        lock.lock(); defer { lock.unlock() }
        done += 1
        if enabled, Progress.now() - start > 500_000 { printErrorRaw("\r\u{1B}[Kgattlab: \(done)/\(total) captures") }
    }

    func finish() { if enabled { printErrorRaw("\r\u{1B}[K") } }
}
