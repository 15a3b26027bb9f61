import ArgumentParser
import Capture

/// Exit codes, distinct per kind of failure so scripts and CI can tell them apart
/// (the numbers follow BSD sysexits, which many tools share).
public enum ExitStatus: Int32, CaseIterable {
    case success = 0
    /// A finding: the analysis worked and found something to act on (audit, diff).
    case finding = 1
    /// The command line was wrong (ArgumentParser uses the same code).
    case usage = 64
    /// An input was damaged, truncated or in no format GATTLab reads.
    case badInput = 65
    /// An input could not be opened.
    case noInput = 66
    /// The target of a replay failed (it could not be reached, it hung up, or it stopped
    /// answering), or live capture has no Bluetooth here (no kernel support, no btmon).
    case unavailable = 69
    /// GATTLab could not complete the job safely (a redacted file failed its own checks).
    case software = 70
    /// An output could not be created (exists without --force, no permission).
    case cannotCreate = 73
    /// Not allowed to use a system resource: the Bluetooth monitor needs root or CAP_NET_RAW.
    case noPermission = 77

    var exitCode: ExitCode { ExitCode(rawValue) }

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
            case .badInput: 2
            case .noInput: 3
            case .software: 4
            case .unavailable: 5
            case .noPermission: 6
            case .cannotCreate: 7
            case .usage: 8
            }
        }
        return rank(other) > rank(self) ? other : self
    }
}

/// Reports a capture error as the one line users get, and what it means for the exit code.
func report(_ error: CaptureError, decoded: Int) -> ExitStatus {
    var line = "gattlab: error: \(error.description)"
    if error.record != nil && decoded > 0 {
        line += " (the \(decoded) records before it were decoded)"
    }
    printError(line)
    return ExitStatus.of(error)
}
