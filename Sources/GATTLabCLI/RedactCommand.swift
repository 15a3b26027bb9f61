import Analysis
import ArgumentParser
import Capture
import Foundation
import GATT
import Protocols
import Redact
import Report

struct RedactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redact",
        abstract: "Write a copy of a capture with every secret overwritten, safe to share.",
        discussion: """
            Finds every secret the capture holds (Wi-Fi passwords in the speaker, nRF7 and ESP-IDF \
            protocols, passwords and tokens in firmware URLs, LTKs, IRKs, CSRKs, BR/EDR link keys) \
            and overwrites each in place with '*' bytes of the same length, so framing, lengths and \
            the record count stay valid and Wireshark opens the result as it opened the original. \
            ESP-IDF security 1 passwords are found when --esp-pop/--esp-client-key decrypt the \
            session; they are rewritten so that they decrypt to '*'. Link-layer CRCs of sniffed \
            packets are corrected.

            Before the copy takes the name OUT it is checked: no byte sequence of any secret found \
            is left anywhere in it; GATTLab and tshark read the same records and ATT structure; an \
            audit of it finds only redacted values. A copy that fails is deleted (exit 70).

            IN is never modified; an existing OUT is replaced only with --force; the copy is \
            written beside OUT and renamed, so an interrupted run leaves no half-written capture \
            under OUT's name. A damaged input is refused (exit 65): what follows the damage could \
            not be checked.

            --anonymize-addresses replaces device addresses consistently (the same address gets \
            the same stand-in everywhere in the file; random per run unless --anonymize-seed); \
            --replace-names also replaces advertised and GATT device names.

            Examples:
              gattlab redact field.btsnoop -o field-shareable.btsnoop
              gattlab redact --anonymize-addresses --replace-names field.pcapng -o share.pcapng
            """ + "\n\n" + ExitStatus.help([.success, .usage, .badInput, .noInput, .software, .cannotCreate]))

    @Argument(help: ArgumentHelp("The capture to redact (never modified).", valueName: "in"))
    var input: String

    @Option(name: [.customShort("o"), .long], help: ArgumentHelp("Where to write the redacted capture (same format).", valueName: "out"))
    var output: String

    @Flag(name: .long, help: "Replace OUT if it exists.")
    var force = false

    @Flag(name: .customLong("anonymize-addresses"), help: "Replace device addresses by consistent stand-ins.")
    var anonymizeAddresses = false

    @Flag(name: .customLong("replace-names"), help: "With --anonymize-addresses: replace device names too (kept by default).")
    var replaceNames = false

    @Option(name: .customLong("anonymize-seed"), help: ArgumentHelp(
        "Make the address stand-ins reproducible (the same seed maps the same address the same way in every file).", valueName: "text"))
    var anonymizeSeed: String?

    @Flag(name: .customLong("no-tshark"), help: "Skip the check that tshark reads the output as it read the input.")
    var noTshark = false

    @Option(name: .long, help: "Report format: text or json.")
    var format: OutputFormatOption = .text

    @OptionGroup var options: DecodeOptions

    func validate() throws {
        if input == "-" || output == "-" { throw ValidationError("redact reads and writes files, not standard input or output") }
        if replaceNames && !anonymizeAddresses { throw ValidationError("--replace-names goes with --anonymize-addresses") }
        if anonymizeSeed != nil && !anonymizeAddresses { throw ValidationError("--anonymize-seed goes with --anonymize-addresses") }
    }

    func run() throws {
        guard FileManager.default.fileExists(atPath: input) else {
            throw Failure(.noInput, "no such file", file: input, hint: "check the path of the capture to redact")
        }
        if OutputFiles.sameFile(input, output) {
            throw Failure(.cannotCreate, "the output is the input; redact never overwrites its input", file: output,
                          hint: "choose another output file")
        }
        if FileManager.default.fileExists(atPath: output), !force {
            throw Failure(.cannotCreate, "the output exists; nothing written", file: output, hint: "add --force to replace it, or choose another output")
        }
        _ = try options.makeDecoder()
        var redaction = RedactionOptions(protocols: GATTLabProtocols.all)
        redaction.anonymizeAddresses = anonymizeAddresses
        redaction.replaceNames = replaceNames
        redaction.anonymizationKey = anonymizeSeed.map(RedactionOptions.anonymizationKey(seed:))
        redaction.keys = options.protocolKeys()
        if !noTshark {
            redaction.tshark = Self.findTshark()
            if redaction.tshark == nil {
                Diagnostics.warning("tshark not found: the Wireshark check of the redacted copy is skipped",
                                    hint: "install tshark (apt-get install tshark), or pass --no-tshark to silence this")
            }
        }
        let decodeOptions = options
        let outcome: RedactionOutcome
        do {
            outcome = try Redactor.redact(input: input, output: output, options: redaction) {
                (try? decodeOptions.makeDecoder()) ?? GATTDecoder()
            }
        } catch {
            switch error {
            case .input(let e):
                var failure = Failure(e)
                failure.what += "; nothing written"
                failure.hint = "redaction needs the whole file: salvage the intact part with `gattlab convert` first"
                throw failure
            case .output(let m):
                throw Failure(.cannotCreate, m, file: output, hint: "check that the folder exists and is writable")
            case .verification, .internalError:
                throw Failure(.software, error.description, file: input,
                              hint: "nothing was written; please report this with the capture, or share nothing from it")
            }
        }
        // Written as it is made: a line per secret, tens of thousands on a rack's day.
        let out = BufferedOutput()
        if format == .json { Self.json(outcome, reveal: options.revealSecrets, to: out) } else { Self.text(outcome, reveal: options.revealSecrets, to: out) }
        out.flush()
    }

    static func findTshark() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/tshark" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func text(_ o: RedactionOutcome, reveal: Bool, to out: BufferedOutput) {
        out.write("wrote \(o.output) (\(o.format), \(o.records) records) from \(o.input)\n")
        if o.secrets.isEmpty {
            out.write("no secret values found\n")
        } else {
            out.write("redacted \(o.secrets.count) secret value\(o.secrets.count == 1 ? "" : "s") (\(o.bytesChanged) bytes in \(o.recordsChanged) records):\n")
            for x in o.secrets {
                let value = reveal ? " was \(SecretDisplay.show(x.secret, reveal: true))" : ""
                out.write("  \(x.kind.title), \(x.secret.count) bytes, record\(x.records.count == 1 ? "" : "s") \(x.records.map(String.init).joined(separator: ", ")) (\(x.context))\(value)\n")
            }
        }
        if o.strayCopies > 0 { out.write("also overwrote \(o.strayCopies) stray cop\(o.strayCopies == 1 ? "y" : "ies") of secret values outside decoded fields\n") }
        if o.addressesMapped > 0 || o.namesReplaced > 0 {
            out.write("replaced \(o.addressesMapped) device address\(o.addressesMapped == 1 ? "" : "es") and \(o.namesReplaced) name\(o.namesReplaced == 1 ? "" : "s")\n")
        }
        out.write("checks:\n")
        for c in o.checks { out.write("  \(c.passed ? "ok  " : "FAIL") \(c.name): \(c.detail)\n") }
    }

    static func json(_ o: RedactionOutcome, reveal: Bool, to out: BufferedOutput) {
        func q(_ s: String) -> String { JSONString.quote(s) }
        out.write("{\"schema\":\"gattlab.redact/1\",\"input\":\(q(o.input)),\"output\":\(q(o.output)),\"format\":\(q(o.format)),"
            + "\"records\":\(o.records),\"secrets\":[")
        for (i, x) in o.secrets.enumerated() {
            out.write((i == 0 ? "" : ",") + "{\"kind\":\(q(x.kind.rawValue)),\"length\":\(x.secret.count),\"records\":[\(x.records.map(String.init).joined(separator: ","))],"
                + "\"context\":\(q(x.context)),\"value\":\(q(SecretDisplay.show(x.secret, reveal: reveal)))}")
        }
        let checks = o.checks.map { "{\"name\":\(q($0.name)),\"passed\":\($0.passed),\"detail\":\(q($0.detail))}" }
        out.write("],\"strayCopies\":\(o.strayCopies),"
            + "\"recordsChanged\":\(o.recordsChanged),\"bytesChanged\":\(o.bytesChanged),\"addressesReplaced\":\(o.addressesMapped),"
            + "\"namesReplaced\":\(o.namesReplaced),\"checks\":[\(checks.joined(separator: ","))]}\n")
    }
}
