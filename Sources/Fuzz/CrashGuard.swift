import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Keeps the input being executed where a signal handler can write it: a trap in a target (a
/// Swift runtime error is SIGILL or SIGTRAP, a wild pointer SIGSEGV) would otherwise take the
/// input with the process. The handler writes it and a note under prepared names (temporary
/// file, then rename: both async-signal-safe), says where on stderr, and lets the signal end the
/// process. A watchdog does the same for an execution that never returns.
enum CrashGuard {
    static let capacity = 1 << 17
    nonisolated(unsafe) static let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
    nonisolated(unsafe) static var length = -1
    /// When the current execution began (uptime ns), 0 between executions.
    nonisolated(unsafe) static var startedAt: UInt64 = 0
    nonisolated(unsafe) static var paths: [UnsafeMutablePointer<CChar>] = []
    nonisolated(unsafe) static var note: [UInt8] = []
    nonisolated(unsafe) static var message: [UInt8] = []
    nonisolated(unsafe) static var installed = false
    nonisolated(unsafe) static var hangSeconds: UInt64 = 30

    static func install(findings: String, target: String, quirks: [String] = [], hangSeconds: Double = 30) {
        let base = (findings as NSString).appendingPathComponent("\(target)-crash-\(getpid())")
        let hang: String = base.replacingOccurrences(of: "-crash-", with: "-hang-")
        let names: [String] = [base + ".tmp", base, base + ".txt.tmp", base + ".txt", hang]
        paths = names.compactMap { strdup($0) }
        note = Array("target: \(target)\nquirks: \(quirks.joined(separator: ", "))\nkind: crash\ndetail: the process died on a signal (a trap, or memory) while executing this input\nreproduce: gattlab fuzz reproduce \(base)\n".utf8)
        message = Array("\ngattlab fuzz: \(target) crashed; the input is in \(base) (gattlab fuzz reproduce \(base))\n".utf8)
        self.hangSeconds = UInt64(max(1, hangSeconds))
        guard !installed else { return }
        installed = true
        for sig in [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = crashHandler
            action.sa_flags = Int32(truncatingIfNeeded: SA_RESETHAND)
            sigaction(sig, &action, nil)
        }
        Thread.detachNewThread { watchdog() }
    }

    @inline(__always)
    static func current(_ input: [UInt8]) {
        let n = min(input.count, capacity)
        input.withUnsafeBufferPointer { if let base = $0.baseAddress { buffer.update(from: base, count: n) } }
        length = n
        startedAt = DispatchTime.now().uptimeNanoseconds
    }

    static func clear() {
        length = -1
        startedAt = 0
    }

    /// Writes the current input under paths[1] (through paths[0]) and the note; signal-safe.
    static func dump(reproducerIndex: Int) {
        guard length >= 0, paths.count == 5 else { return }
        let fd = open(paths[0], O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        if fd >= 0 {
            _ = write(fd, buffer, length)
            close(fd)
            rename(paths[0], paths[reproducerIndex])
        }
        let nfd = open(paths[2], O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        if nfd >= 0 {
            note.withUnsafeBytes { _ = write(nfd, $0.baseAddress, $0.count) }
            close(nfd)
            rename(paths[2], paths[3])
        }
        message.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
    }

    static func watchdog() {
        while true {
            sleep(1)
            let began = startedAt
            guard began != 0, length >= 0 else { continue }
            let now = DispatchTime.now().uptimeNanoseconds
            if now > began, (now - began) / 1_000_000_000 >= hangSeconds {
                dump(reproducerIndex: 4)
                _exit(1)
            }
        }
    }
}

private func crashHandler(_ sig: Int32) {
    CrashGuard.dump(reproducerIndex: 1)
    raise(sig)
}
