import ArgumentParser
import Capture

extension OutputFormat: ExpressibleByArgument {}

struct ConvertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Convert a capture to btsnoop or pcap (files Wireshark opens).",
        discussion: """
            Formats: btsnoop (datalink 1002, H4, as Android writes), btsnoop-monitor (2001, as \
            btmon writes; keeps several controllers), pcap (DLT 201, H4 with direction), \
            pcap-monitor (DLT 254). Without --to, an OUT ending in .pcap gives pcap, anything \
            else btsnoop; monitor flavours when the input is a monitor capture.

            Records the target cannot hold (text notes into an H4 format) are skipped and \
            counted. Over-the-air sniffer captures have no HCI and cannot be converted.

            The output is written to a temporary file and renamed into place when complete; an \
            existing OUT is replaced only with --force, and never when it is the input.

            Examples:
              gattlab convert ios.pklg ios.btsnoop
              gattlab convert --to pcap btmon.btsnoop btmon.pcap --index 1
            """ + "\n\n" + ExitStatus.help([.success, .usage, .badInput, .noInput, .noMatch, .cannotCreate]))

    @Option(name: .long, help: ArgumentHelp("Output format: \(OutputFormat.allCases.map(\.rawValue).joined(separator: ", ")).", valueName: "format"))
    var to: OutputFormat?

    @Option(name: .long, help: ArgumentHelp("Keep only this controller's records (monitor captures into H4 formats).", valueName: "n"))
    var index: UInt16?

    @Flag(name: .long, help: "Replace OUT if it exists.")
    var force = false

    @Argument(help: ArgumentHelp("The capture to read.", valueName: "in"))
    var input: String

    @Argument(help: ArgumentHelp("The capture to write.", valueName: "out"))
    var output: String

    func validate() throws {
        if output == "-" {
            throw ValidationError("OUT must be a file: binary captures are not written to standard output")
        }
    }

    func run() throws {
        var converted = 0
        do {
            let reader = try openCapture(input)
            if reader.linkType.isLinkLayer {
                throw Failure(.badInput, "\(reader.linkType) holds over-the-air link-layer packets, not HCI: it cannot become btsnoop or HCI pcap",
                              file: input, hint: "keep the original for Wireshark; gattlab decodes it as it is")
            }
            let monitor = reader.linkType.hasControllerIndex
            let format = to ?? OutputFormat.guess(path: output, monitor: monitor && index == nil)
            let writer = try CaptureWriter(path: output, format: format, overwrite: force, protecting: [input])
            var chosen = index
            var sawIndex = false
            while let record = try reader.next() {
                converted += 1
                if let index, record.controller != index { continue }
                sawIndex = true
                if !format.keepsControllers, monitor, record.kind.isHCI {
                    if chosen == nil { chosen = record.controller }
                    if chosen != record.controller {
                        throw Failure(.usage, "this record is from controller hci\(record.controller), another than hci\(chosen ?? 0); \(format) holds one controller",
                                      file: input, record: record.number, offset: record.fileOffset,
                                      hint: "choose one with --index, or write btsnoop-monitor or pcap-monitor (--to)")
                    }
                }
                try writer.write(record, sourceIsMonitor: monitor)
            }
            if let index, !sawIndex {
                throw Failure(.noMatch, "no record from controller hci\(index) (--index \(index)); nothing written", file: input,
                              hint: "`gattlab info \(input)` lists the controllers in the capture")
            }
            try writer.finish()
            var note = "gattlab: wrote \(output) (\(format)): \(writer.written) records"
            if writer.skipped > 0 { note += ", \(writer.skipped) skipped that \(format) cannot hold" }
            printError(note)
        } catch let error as CaptureError {
            throw report(error, decoded: converted).exitCode
        }
    }
}
