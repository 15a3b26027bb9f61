import Analysis
import ArgumentParser
import Capture
import GATT
import Profiles
import Protocols
import Report
#if canImport(Glibc)
import Glibc
#endif

enum CaptureVia: String, ExpressibleByArgument, CaseIterable {
    case libpcap, btmon
}

/// `--max-size`: millions of bytes as tcpdump -C counts them, or with a unit: 500k, 20m, 1g.
struct CaptureSize: ExpressibleByArgument {
    var bytes: Int64

    init?(argument: String) {
        var text = Substring(argument.lowercased())
        var unit = 1_000_000.0
        if let last = text.last, let u = ["k": 1e3, "m": 1e6, "g": 1e9][String(last)] {
            unit = u
            text = text.dropLast()
        }
        guard let value = Double(text), value.isFinite, value > 0, value * unit <= 1e15 else { return nil }
        bytes = Int64(value * unit)
    }
}

struct CaptureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture",
        abstract: "Record live HCI traffic of the Bluetooth controllers to btsnoop or pcap, optionally decoding as it goes.",
        discussion: """
            The records come from the kernel's Bluetooth monitor channel: through libpcap's \
            bluetooth-monitor device (the default), or through BlueZ's btmon (--via btmon). \
            Both need a kernel with Bluetooth and root or CAP_NET_RAW. All controllers are \
            recorded unless --index picks one (system notes, which belong to none, are kept).

            The output format follows the name: OUT.btsnoop writes btsnoop with the Linux \
            monitor datalink (2001, what btmon -w writes), OUT.pcap writes pcap with DLT 254 \
            (what tcpdump -i bluetooth-monitor writes). Both keep every controller's index.

            Ring buffer: with --max-size the capture is split into OUT.1, OUT.2, ... of at most \
            that size each; with --max-files K as well, OUT.K is followed by OUT.1 again, \
            replacing the oldest file, so at most K files stay on disk (tcpdump -C and -W). \
            Every file is complete when it is closed; the one being written has a temporary \
            name beside it (.OUT.N.gattlab-PID.tmp) until then.

            Ctrl-C (SIGINT) or SIGTERM stop the capture: everything captured is written, the \
            file is moved into place and one summary line goes to standard error.

            Examples:
              sudo gattlab capture -o phone.btsnoop
              sudo gattlab capture -o field.pcap --index 0 --live
              sudo gattlab capture -o ring.btsnoop --max-size 20 --max-files 5
              sudo gattlab capture -o ota.btsnoop --live --timeline --profile speaker
              sudo gattlab capture -o ota.btsnoop --via btmon --duration 60
            """ + "\n\n" + ExitStatus.help([.success, .usage, .badInput, .noInput, .unavailable, .noPermission, .cannotCreate]))

    @Option(name: [.customShort("o"), .long], help: ArgumentHelp("The capture to write: a .btsnoop or .pcap file.", valueName: "file"))
    var output: String

    @Option(name: .long, help: ArgumentHelp("Only this controller (N of hciN).", valueName: "N"))
    var index: UInt16?

    @Option(name: .customLong("max-size"), help: ArgumentHelp(
        "Split into files of at most this size: millions of bytes, or with a unit (500k, 20m, 1g).", valueName: "MB"))
    var maxSize: CaptureSize?

    @Option(name: .customLong("max-files"), help: ArgumentHelp("With --max-size: keep at most K files, reusing OUT.1 after OUT.K.", valueName: "K"))
    var maxFiles: Int?

    @Flag(name: .long, help: "Print the decoded traffic as it happens (the lines of `gattlab decode`).")
    var live = false

    @Flag(name: .long, help: "With --live: one short line per timeline event instead of every PDU.")
    var timeline = false

    @Option(name: .long, help: "Where the records come from: libpcap (its bluetooth-monitor device) or btmon.")
    var via: CaptureVia = .libpcap

    @Flag(name: .long, help: "Replace the output file(s) if they exist.")
    var force = false

    @Option(name: .long, help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds"))
    var duration: Double?

    @Option(name: .long, help: ArgumentHelp("Stop after this many records.", valueName: "N"))
    var count: Int?

    /// A recorded capture fed through the same path as live records (tests; splitting a file into a ring).
    @Option(name: .customLong("from-file"), help: .hidden)
    var fromFile: String?

    @OptionGroup var options: DecodeOptions

    func validate() throws {
        guard outputFormat != nil else {
            throw ValidationError("-o must name a .btsnoop or .pcap file (the format follows the extension)")
        }
        if maxFiles != nil && maxSize == nil { throw ValidationError("--max-files needs --max-size") }
        if let maxFiles, maxFiles < 1 { throw ValidationError("--max-files must be at least 1") }
        if let maxSize, maxSize.bytes < 1000 { throw ValidationError("--max-size must be at least 1k") }
        if timeline && !live { throw ValidationError("--timeline goes with --live") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be more than 0 seconds") }
        if fromFile != nil && via == .btmon { throw ValidationError("--from-file and --via btmon are two sources; choose one") }
    }

    var outputFormat: OutputFormat? {
        if output.hasSuffix(".btsnoop") { return .btsnoopMonitor }
        if output.hasSuffix(".pcap") { return .pcapMonitor }
        return nil
    }

    func run() throws {
        guard let format = outputFormat else { throw ExitStatus.usage.exitCode }
        let view = try live ? LiveView(options: options, timeline: timeline) : nil
        // Names are checked before the source opens, so "exists" needs no Bluetooth to be told.
        let ring: CaptureRing
        do {
            ring = try CaptureRing(path: output, format: format, maxBytes: maxSize?.bytes, maxFiles: maxFiles, overwrite: force)
        } catch {
            throw report(error, decoded: 0).exitCode
        }
        let source = try openSource()
        let stop = StopSignals.install()
        defer { StopSignals.restore() }

        let start = monotonicMicros()
        var lastFlush = start
        var stopping = false
        var failure: ExitStatus?
        loop: while true {
            if !stopping, stop.requested() || duration.map({ Double(monotonicMicros() - start) >= $0 * 1e6 }) == true {
                stopping = true
                source.stop()
            }
            let read: LiveRead
            do {
                read = try source.next(timeoutMilliseconds: 200)
            } catch {
                failure = fail(error)
                break
            }
            switch read {
            case .end:
                break loop
            case .idle:
                break
            case .record(let record):
                if let index, record.controller != index, record.controller != 0xFFFF { continue }
                do {
                    try ring.write(record, sourceIsMonitor: source.isMonitor)
                } catch {
                    view?.finish()
                    throw report(error, decoded: 0).exitCode
                }
                view?.consume(record)
                if let count, ring.written + ring.skipped >= count { break loop }
            }
            // Once a second the buffered records go to disk: a capture killed outright keeps them.
            if monotonicMicros() - lastFlush > 1_000_000 {
                lastFlush = monotonicMicros()
                try? ring.flush()
                view?.flush()
            }
        }
        view?.finish()
        let records = ring.written + ring.skipped
        // A source that failed before its first record leaves no file: there is nothing to keep.
        if failure != nil && records == 0 { throw (failure ?? .unavailable).exitCode }
        do {
            try ring.finish()
        } catch {
            throw report(error, decoded: records).exitCode
        }
        printError(summary(ring: ring, source: source, seconds: Double(monotonicMicros() - start) / 1e6))
        if let failure { throw failure.exitCode }
    }

    private func openSource() throws -> any LiveSource {
        do {
            if let fromFile { return CaptureFileSource(reader: try openCapture(fromFile)) }
            switch via {
            case .libpcap: return try LiveMonitorSource()
            case .btmon: return try BTMonSource()
            }
        } catch {
            throw fail(error).exitCode
        }
    }

    /// The one line for a source's failure, and its exit status.
    private func fail(_ error: any Error) -> ExitStatus {
        if let e = error as? CaptureError { return report(e, decoded: 0) }
        guard let e = error as? LiveSourceError else {
            let failure = Failure(.software, "\(error)", hint: "this is a bug in gattlab; please report it with the command line")
            failure.report()
            return failure.status
        }
        // The source's message says what to try after "; ": that is the hint line.
        var what = e.message
        var hint = e.kind == .failed ? "what was captured before the failure is kept; `gattlab capture --help` lists the other sources" : nil
        if let split = what.range(of: "; ") {
            hint = String(what[split.upperBound...])
            what = String(what[..<split.lowerBound])
        }
        let failure = Failure(e.kind == .permissionDenied ? .noPermission : .unavailable, what, hint: hint)
        failure.report()
        return failure.status
    }

    static func tenths(_ seconds: Double) -> String {
        let t = Int((max(0, seconds) * 10).rounded())
        return "\(t / 10).\(t % 10)"
    }

    private func summary(ring: CaptureRing, source: any LiveSource, seconds: Double) -> String {
        let records = ring.written + ring.skipped
        var where_ = ring.files.first ?? output
        if ring.files.count > 1 {
            let numbers = ring.files.compactMap { $0.split(separator: ".").last.flatMap { Int($0) } }
            where_ = "\(output).{\(numbers.map(String.init).joined(separator: ","))} (\(ring.files.count) files)"
        }
        var line = "gattlab: captured \(records) record\(records == 1 ? "" : "s") in \(Self.tenths(seconds)) s to \(where_)"
        if ring.skipped > 0 { line += ", \(ring.skipped) of them not writable in this format" }
        if let btmon = source as? BTMonSource, btmon.cutBytesAtEnd > 0 {
            line += "; the last \(btmon.cutBytesAtEnd) bytes were a record cut short when \(btmon.name) stopped"
        }
        return line
    }
}

/// `--live`: the decode pipeline on each record as it arrives, printing what `gattlab decode`
/// prints, or with `--timeline` one short line per timeline event. Secrets stay redacted unless
/// --reveal-secrets, as everywhere.
final class LiveView {
    private let out = BufferedOutput()
    private let decoder: GATTDecoder
    private let profiles: ProfileDecoder
    private let renderer: EventRenderer?
    private let builder: TimelineBuilder?
    private var firstTime: Int64?

    init(options: DecodeOptions, timeline: Bool) throws {
        decoder = try options.makeDecoder()
        profiles = ProfileDecoder(protocols: GATTLabProtocols.all, keys: options.protocolKeys())
        let style = Style.forStdout(disabled: options.noColor)
        if timeline {
            renderer = nil
            let builder = TimelineBuilder(source: "live", format: "live", protocols: GATTLabProtocols.all)
            self.builder = builder
            builder.onEvent = { [unowned self] e in self.line(e, style: style) }
        } else {
            builder = nil
            renderer = EventRenderer(out: out, json: false, style: style, reveal: options.revealSecrets,
                                     absoluteTime: false, file: nil, protocols: GATTLabProtocols.all)
        }
    }

    func consume(_ record: CaptureRecord) {
        if firstTime == nil { firstTime = record.timestamp }
        renderer?.see(record)
        decoder.consume(record)
        if !decoder.events.isEmpty {
            profiles.consume(decoder, record: record)
            renderer?.render(decoder.events, record: record, decoder: decoder)
            if !profiles.events.isEmpty { renderer?.render(profiles.events, record: record) }
        }
        builder?.consume(record, gatt: decoder.events, profile: decoder.events.isEmpty ? [] : profiles.events)
        out.flush()
    }

    private func line(_ e: TimelineEvent, style: Style) {
        out.line(TimelineText.liveLine(e, since: firstTime ?? e.time, style: style))
    }

    func flush() { out.flush() }

    func finish() { out.flush() }
}

/// SIGINT and SIGTERM end a capture cleanly: the handler only writes a byte to a pipe (safe in a
/// signal handler), and the loop looks at the pipe between waits. No SA_RESTART, so a wait in
/// poll() ends at once.
enum StopSignals {
    nonisolated(unsafe) static var writeFD: Int32 = -1
    nonisolated(unsafe) static var readFD: Int32 = -1

    struct Flag {
        let fd: Int32
        func requested() -> Bool {
            var byte: UInt8 = 0
            return fd >= 0 && read(fd, &byte, 1) > 0
        }
    }

    static func install() -> Flag {
        if readFD < 0 {
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else { return Flag(fd: -1) }
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC); _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
            readFD = fds[0]
            writeFD = fds[1]
        }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            var byte: UInt8 = 1
            _ = write(StopSignals.writeFD, &byte, 1)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(SIGINT, &action, nil)
        sigaction(SIGTERM, &action, nil)
        return Flag(fd: readFD)
    }

    static func restore() {
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
