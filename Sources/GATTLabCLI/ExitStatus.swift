import ArgumentParser
import Capture

/// Exit codes, distinct per kind of failure so scripts and CI can tell them apart (the numbers
/// follow BSD sysexits, which many tools share). The same case has the same code in every
/// command; docs/exit-codes.md lists them and a test provokes each one.
public enum ExitStatus: Int32, CaseIterable, Sendable {
    case success = 0
    /// A finding: the analysis worked and found something to act on (audit, diff).
    case finding = 1
    /// The command line was wrong (ArgumentParser uses the same code).
    case usage = 64
    /// An input was damaged, truncated or in no format GATTLab reads.
    case badInput = 65
    /// An input could not be opened.
    case noInput = 66
    /// A filter (--device, --connection, --handle, --uuid, --protocol, --peer, --index) matched
    /// nothing in the input: the answer would be empty, which is rarely what was meant.
    case noMatch = 67
    /// The target of a replay failed (it could not be reached, it hung up, or it stopped
    /// answering), or live capture has no Bluetooth here (no kernel support, no btmon).
    case unavailable = 69
    /// GATTLab could not complete the job safely (a redacted file failed its own checks).
    case software = 70
    /// An output could not be created (exists without --force, no permission).
    case cannotCreate = 73
    /// Not allowed to use a system resource: the Bluetooth monitor needs root or CAP_NET_RAW.
    case noPermission = 77
    /// Stopped by SIGINT or SIGTERM before the job was done (128 + SIGINT, as shells report it).
    case interrupted = 130

    var exitCode: ExitCode { ExitCode(rawValue) }

    /// One line each for `--help`, the man pages and docs/exit-codes.md.
    var summary: String {
        switch self {
        case .success: "success"
        case .finding: "a finding: a rule fired, a replay diverged, a fuzzer found a bug"
        case .usage: "usage error: unknown option, bad value, missing argument"
        case .badInput: "malformed input: damaged, truncated or not a capture"
        case .noInput: "unreadable input: a file or folder is missing or unreadable"
        case .noMatch: "nothing matched: a filter named what the input does not have"
        case .unavailable: "target failure: a replay or fuzz target failed, or no Bluetooth"
        case .software: "internal check failed: a redacted copy, a firmware crash, a bug"
        case .cannotCreate: "output not created: exists (no --force), is an input, unwritable"
        case .noPermission: "permission denied: needs root or CAP_NET_RAW"
        case .interrupted: "interrupted by SIGINT or SIGTERM before the job was done"
        }
    }

    /// "Exit codes:" and one line per code, for a command's help.
    static func help(_ codes: [ExitStatus]) -> String {
        "Exit codes:\n" + codes.map { "  \($0.rawValue)" + String(repeating: " ", count: max(1, 5 - String($0.rawValue).count)) + $0.summary }
            .joined(separator: "\n")
    }

    static func of(_ error: CaptureError) -> ExitStatus {
        switch error.kind {
        case .cannotOpen: .noInput
        case .cannotWrite: .cannotCreate
        case .unknownFormat, .unsupported, .truncated, .corrupt: .badInput
        }
    }

    /// The worse of two outcomes: input and output failures outrank findings.
    func worst(_ other: ExitStatus) -> ExitStatus {
        func rank(_ s: ExitStatus) -> Int {
            switch s {
            case .success: 0
            case .finding: 1
            case .noMatch: 2
            case .badInput: 2
            case .noInput: 3
            case .software: 4
            case .unavailable: 5
            case .noPermission: 6
            case .cannotCreate: 7
            case .interrupted: 8
            case .usage: 9
            }
        }
        return rank(other) > rank(self) ? other : self
    }
}

/// Reports a capture error in the voice of every error (`Failure`), for a command that goes on
/// with its next input, and what it means for the exit code.
func report(_ error: CaptureError, decoded: Int) -> ExitStatus {
    let failure = Failure(error, decoded: decoded)
    failure.report()
    return failure.status
}
