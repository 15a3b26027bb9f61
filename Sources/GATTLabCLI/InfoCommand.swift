import Analysis
import ArgumentParser
import Capture
import GATT
import Report

struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Summarise captures: format, controllers, time span, connections, GATT tables.",
        discussion: """
            For each file: its format and link type, record count and time span, the controllers \
            (monitor captures), every connection (peer, role, interval, MTU, encryption, ATT PDU \
            count, disconnect reason) and each device's attribute table with where it came from: \
            discovered in the capture, --gatt-table, or a built-in --profile.

            --format json writes one JSON document per file; its "tables" entries are in the \
            format --gatt-table reads, so a table discovered in one capture can serve another.

            Examples:
              gattlab info phone.btsnoop
              gattlab info --format json field/*.log > summary.json
            """ + "\n\n" + ExitStatus.help([.success, .usage, .badInput, .noInput, .cannotCreate]))

    @Option(name: .long, help: "Output format: text for people, json for machines.")
    var format: OutputFormatOption = .text

    @OptionGroup var options: DecodeOptions

    @Argument(help: ArgumentHelp("Capture files (format detected from content); - reads standard input.", valueName: "file"))
    var files: [String]

    func run() throws {
        let style = Style.forStdout(disabled: options.noColor)
        let out = BufferedOutput()
        var status = ExitStatus.success
        for (index, file) in try CaptureFiles.expand(files).enumerated() {
            let summary = CaptureSummary(file: file)
            let decoder = try options.makeDecoder()
            // The summary has no use for advertising reports (malformed ones are still counted).
            decoder.link.reportsAdvertising = false
            // Nor for the values of writes and notifications: it counts those PDUs.
            decoder.reportsValues = false
            var progress = Progress(path: file)
            do {
                let reader = try openCapture(file)
                summary.format = reader.format.description
                summary.linkType = reader.linkType.description
                while let record = try reader.next() {
                    decoder.consume(record)
                    summary.add(record, decoder.events)
                    progress.update(records: summary.records, offset: record.fileOffset)
                }
                progress.finish()
            } catch {
                progress.finish()
                summary.error = error.description
                status = status.worst(report(error, decoded: summary.records))
            }
            summary.finish(decoder)
            if summary.format == nil { continue }
            if format == .json {
                out.line(summary.json())
            } else {
                if index > 0 { out.line("") }
                summary.text(out, style: style)
            }
            out.flush()
        }
        if status != .success { throw status.exitCode }
    }
}
