import Analysis
import ArgumentParser
import Capture
import Foundation
import GATT
import Profiles
import Protocols
import Report

enum AuditFormatOption: String, ExpressibleByArgument, CaseIterable {
    case text, json, sarif
}

enum AuditFailOnOption: String, ExpressibleByArgument, CaseIterable {
    case never, note, warning, error

    var threshold: AuditFinding.Severity? {
        switch self {
        case .never: nil
        case .note: .note
        case .warning: .warning
        case .error: .error
        }
    }
}

struct AuditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Where Wi-Fi credentials and keys went, and how well they were protected.",
        discussion: """
            Audits each capture's credential handling, offline: credentials written over an \
            unencrypted link or before encryption began; pairing without MITM protection (Just \
            Works, legacy pairing, MITM off, keys shorter than 16 bytes); secrets a read returns; \
            OTA commands and URL writes accepted on an unencrypted link; firmware URLs over plain \
            http, with user:password or a token; ESP-IDF provisioning with security 0 or security 1 \
            without PoP; the nRF7 control point used without encryption. Each finding has a stable \
            id, a severity (error, warning, note), evidence (records, times, connection) and the fix.

            It also lists every secret the file holds (Wi-Fi passwords, URL passwords and tokens, \
            LTKs, IRKs, CSRKs, link keys), so you know what sharing it would expose; values stay \
            <redacted:N bytes> unless --reveal-secrets. `gattlab redact` removes them.

            Formats: text, json (schema gattlab.audit/1, see README), sarif (SARIF 2.1.0 for code \
            scanning; locations name the capture file and record).

            Examples:
              gattlab audit field.btsnoop
              gattlab audit --format sarif -o audit.sarif captures/
              gattlab audit --fail-on warning captures/     (exit 1 when a warning or error is found)
              gattlab audit --esp-pop abcd1234 --esp-client-key HEX esp.btsnoop   (security 1 sessions)
            """ + "\n\n" + ExitStatus.help([.success, .finding, .usage, .badInput, .noInput, .cannotCreate]))

    @Option(name: .long, help: "Output format: text, json or sarif.")
    var format: AuditFormatOption = .text

    @Option(name: [.customShort("o"), .long], help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file"))
    var output: String?

    @Flag(name: .long, help: "Replace the -o file if it exists.")
    var force = false

    @Flag(name: .customLong("absolute-time"), help: "Times as UTC ISO 8601 beside the relative ones.")
    var absoluteTime = false

    @Flag(name: .long, help: "JSON and SARIF: indented.")
    var pretty = false

    @Option(name: .long, help: "Captures audited at once (default: all cores).")
    var jobs: Int?

    @Option(name: .customLong("fail-on"), help: "Exit 1 when a finding of this severity or worse is found: never, note, warning, error.")
    var failOn: AuditFailOnOption = .never

    @OptionGroup var options: DecodeOptions

    @Argument(help: ArgumentHelp("Capture files or folders of captures.", valueName: "file"))
    var files: [String]

    func validate() throws {
        if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1") }
        if files.contains("-") { throw ValidationError("audit reads files, not standard input") }
    }

    struct Result: Sendable {
        var report: AuditReport
        var error: CaptureError?
    }

    func run() throws {
        let paths = try CaptureFiles.expand(files)
        guard !paths.isEmpty else {
            throw Failure(.noInput, "no capture files found", file: files.joined(separator: ", "),
                          hint: "give capture files, or folders that hold btsnoop, PacketLogger, pcap or pcapng files")
        }
        _ = try options.makeDecoder()  // a bad --gatt-table is a usage error before any work
        let keys = options.protocolKeys()
        let decodeOptions = options
        let results = ParallelCaptures.run(paths: paths, jobs: jobs ?? ProcessInfo.processInfo.activeProcessorCount) { path in
            Self.audit(path, decoder: (try? decodeOptions.makeDecoder()) ?? GATTDecoder(), keys: keys)
        }
        var status = ExitStatus.success
        for r in results { if let e = r.error { status = status.worst(report(e, decoded: r.report.records)) } }
        let reports = results.filter { $0.error == nil || $0.report.records > 0 }.map(\.report)
        let renderOptions = RenderOptions(reveal: options.revealSecrets, absoluteTime: absoluteTime, pretty: pretty)
        if !reports.isEmpty {
            // Written as it is made, to stdout or the file: the audit of a day of captures makes
            // megabytes of text, JSON or SARIF.
            let colors = Style.forStdout(disabled: options.noColor).enabled && output == nil
            let body: (BufferedOutput) -> Void = { [format] out in
                switch format {
                case .text:
                    AuditText.write(reports, options: renderOptions, colors: colors, to: out)
                case .json:
                    AuditJSON.write(reports, options: renderOptions, to: out)
                    out.line("")
                case .sarif:
                    AuditSARIF.write(reports, protocols: GATTLabProtocols.all, options: renderOptions,
                                     toolVersion: GattlabCommand.configuration.version, to: out)
                    out.line("")
                }
            }
            try OutputFiles.emit(to: output, force: force, protecting: paths, body)
        }
        if let threshold = failOn.threshold, reports.contains(where: { ($0.worstSeverity ?? .note) >= threshold && !$0.findings.isEmpty }) {
            status = status.worst(.finding)
        }
        if status != .success { throw status.exitCode }
    }

    static func audit(_ path: String, decoder: GATTDecoder, keys: ProtocolKeys) -> Result {
        let reader: any CaptureReader
        do {
            reader = try openCapture(path)
        } catch {
            return Result(report: AuditReport(source: path, format: "unknown", records: 0), error: error)
        }
        decoder.tracksOrigins = true
        // No audit rule reads advertising reports (malformed ones are still counted).
        decoder.link.reportsAdvertising = false
        let profiles = ProfileDecoder(protocols: GATTLabProtocols.all, keys: keys)
        let auditor = Auditor(source: path, format: reader.format.description, protocols: GATTLabProtocols.all)
        do {
            while let record = try reader.next() {
                decoder.consume(record)
                if decoder.events.isEmpty {
                    auditor.consume(record, gatt: [], profile: [])
                    continue
                }
                profiles.consume(decoder, record: record)
                auditor.consume(record, gatt: decoder.events, profile: profiles.events)
            }
            return Result(report: auditor.finish(), error: nil)
        } catch {
            return Result(report: auditor.finish(), error: error)
        }
    }
}
