import ArgumentParser
import Capture
#if canImport(Glibc)
import Glibc
#endif

/// Where in an input a problem lies: the file, the record (1-based, as Wireshark numbers frames)
/// and the byte offset where the failing structure starts.
struct InputLocation: Sendable {
    var file: String
    var record: Int?
    var offset: Int64?

    /// `FILE, record N, byte offset M`, with the parts that are known.
    var description: String {
        var parts = [file == "-" ? "<stdin>" : file]
        if let record { parts.append("record \(record)") }
        if let offset { parts.append("byte offset \(offset)") }
        return parts.joined(separator: ", ")
    }
}

/// A failure as a person reads it, in the one voice of every command:
///
///     gattlab: error: WHAT (FILE, record N, byte offset M)
///     gattlab: hint: WHAT TO TRY
///
/// both on stderr; the exit status says which kind of failure it was (docs/exit-codes.md).
/// Commands throw it; `GattlabCommand.start` prints it and exits with its status. A command
/// that goes on after a failure (the next of several files) calls `report()` itself.
struct Failure: Error, Sendable {
    var status: ExitStatus
    var what: String
    var location: InputLocation?
    var hint: String?

    init(_ status: ExitStatus, _ what: String, file: String? = nil, record: Int? = nil, offset: Int64? = nil, hint: String? = nil) {
        self.status = status
        self.what = what
        location = file.map { InputLocation(file: $0, record: record, offset: offset) }
        self.hint = hint
    }

    /// A capture that could not be read, with what to try for each kind of damage.
    /// `decoded` records before the failure were handled (and their output kept).
    init(_ error: CaptureError, decoded: Int = 0) {
        self.init(ExitStatus.of(error), error.message, file: error.path, record: error.record, offset: error.offset)
        let before = error.record != nil && decoded > 0 ? "the \(decoded) records before it were decoded; " : ""
        switch error.kind {
        case .cannotOpen:
            what = "cannot open: " + error.message.prefix(1).lowercased() + error.message.dropFirst()
            hint = "check the path and that the file is readable"
        case .unknownFormat:
            // The reader says what the bytes look like after "; " (gzip, zip, text): that is the hint.
            if let split = error.message.range(of: "; ") {
                what = String(error.message[..<split.lowerBound])
                hint = String(error.message[split.upperBound...])
            } else {
                hint = "gattlab reads btsnoop, PacketLogger, pcap and pcapng, detected from the first bytes (docs/formats.md)"
            }
        case .unsupported:
            hint = "docs/formats.md lists the datalinks gattlab decodes; Wireshark may still open this file"
        case .truncated:
            hint = "\(before)copy the capture again once whoever writes it has stopped"
        case .corrupt:
            hint = "\(before)`gattlab convert` keeps the intact records before the damage"
        case .cannotWrite:
            hint = "check that the folder exists and is writable"
        }
    }

    /// Prints the two lines (or one, without a hint) to stderr.
    func report() {
        Diagnostics.emit(.error, what, location: location, hint: hint)
    }
}

/// Errors and warnings on stderr, one voice for every command: `gattlab: error: ...`,
/// `gattlab: warning: ...`, each optionally followed by `gattlab: hint: ...`. The word is
/// coloured on a terminal unless NO_COLOR is set (https://no-color.org).
enum Diagnostics {
    enum Level: String {
        case error, warning, note
    }

    /// Something the user should know that is not wrong (files passed over in a folder).
    static func note(_ what: String, file: String? = nil) {
        emit(.note, what, location: file.map { InputLocation(file: $0) }, hint: nil)
    }

    static func warning(_ what: String, file: String? = nil, record: Int? = nil, offset: Int64? = nil, hint: String? = nil) {
        emit(.warning, what, location: file.map { InputLocation(file: $0, record: record, offset: offset) }, hint: hint)
    }

    static func emit(_ level: Level, _ what: String, location: InputLocation?, hint: String?) {
        let codes = [Level.error: "1;31", .warning: "1;33", .note: "1;36"]
        let word = colour ? "\u{1B}[\(codes[level]!)m\(level.rawValue)\u{1B}[0m" : level.rawValue
        var line = "gattlab: \(word): \(what)"
        if let location { line += " (\(location.description))" }
        printError(line)
        if let hint { printError("gattlab: hint: \(hint)") }
    }

    /// Colour on stderr only on a terminal and without NO_COLOR.
    static let colour: Bool = {
        let noColor = getenv("NO_COLOR").map { $0.pointee != 0 } ?? false
        return !noColor && isatty(2) == 1
    }()

    /// An error thrown out of a command, in the same voice, and the status to exit with.
    /// Help, --version and completion scripts (exit 0) are printed by the argument parser.
    static func exit(with error: any Error) -> Never {
        switch error {
        case let failure as Failure:
            failure.report()
            Glibc.exit(failure.status.rawValue)
        case let error as CaptureError:
            let failure = Failure(error)
            failure.report()
            Glibc.exit(failure.status.rawValue)
        case let code as ExitCode:
            // Thrown after the command has said what went wrong.
            Glibc.exit(code.rawValue)
        default:
            break
        }
        let code = GattlabCommand.exitCode(for: error)
        guard code == .validationFailure else {
            if code == .success { GattlabCommand.exit(withError: error) }
            emit(.error, "\(error)", location: nil, hint: "this is a bug in gattlab; please report it with the command line")
            Glibc.exit(ExitStatus.software.rawValue)
        }
        // A usage error: the parser's message, and where the command's help is.
        let message = GattlabCommand.message(for: error)
        let full = GattlabCommand.fullMessage(for: error)
        var lines = message.split(separator: "\n").map { $0.trimmingPrefix("Error: ") }
        let what = lines.isEmpty ? "invalid command line" : String(lines.removeFirst())
        var hint = "see 'gattlab --help'"
        if let see = full.split(separator: "\n").last(where: { $0.contains("See '") && $0.contains("--help'") }),
           let open = see.firstIndex(of: "'"), let close = see.lastIndex(of: "'"), open < close {
            hint = "see \(see[open...close])"
        }
        if let extra = lines.first(where: { $0.hasPrefix("Help: ") }) { hint = extra.dropFirst(6) + "; " + hint }
        emit(.error, what.prefix(1).lowercased() + what.dropFirst(), location: nil, hint: hint)
        Glibc.exit(ExitStatus.usage.rawValue)
    }
}

/// Writes one line to stderr (errors, warnings, progress).
func printError(_ s: String) {
    var line = s + "\n"
    line.withUTF8 { _ = Glibc.write(2, $0.baseAddress, $0.count) }
}
