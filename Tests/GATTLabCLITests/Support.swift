import Foundation
import TestSupport
import Transport
import XCTest

/// Runs the built `gattlab` and external tools, and finds the shared captures.
enum Harness {
    /// The package root (this file is Tests/GATTLabCLITests/Support.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The real captures' folder (`../shared/captures/real` or GATTLAB_REAL_CAPTURES); skips
    /// the test in a user's plain clone, fails it under CI (TestSupport's `RealCaptures`).
    static var realCaptures: URL { get throws { try RealCaptures.require() } }

    static var gattlab: URL {
        get throws {
            var candidates: [URL] = []
            if let exe = Bundle.main.executableURL { candidates.append(exe.deletingLastPathComponent().appendingPathComponent("gattlab")) }
            candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("gattlab"))
            candidates.append(root.appendingPathComponent(".build/debug/gattlab"))
            for c in candidates where FileManager.default.isExecutableFile(atPath: c.path) { return c }
            throw XCTSkip("gattlab binary not built: run `swift build` first") as Error
        }
    }

    struct Result {
        var status: Int32
        var signalled: Bool
        var stdout: String
        var stderr: String
        var seconds: Double
    }

    /// Runs a program with a time limit; a hang fails the test instead of hanging CI.
    static func run(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
                    timeout: TimeInterval = 60, directory: URL? = nil) throws -> Result {
        let process = Process()
        process.executableURL = executable
        if let directory { process.currentDirectoryURL = directory }
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let start = Date()
        try process.run()
        // Read both pipes while the process runs so a full pipe cannot block it.
        nonisolated(unsafe) var outData = Data()
        nonisolated(unsafe) var errData = Data()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async { outData = out.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        group.enter()
        DispatchQueue.global().async { errData = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(2000) }
        if process.isRunning {
            process.terminate()
            // A process that ignores SIGTERM (a bug spinning in a loop) must not hang CI either.
            let grace = Date().addingTimeInterval(5)
            while process.isRunning && Date() < grace { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            XCTFail("\(executable.lastPathComponent) \(arguments.joined(separator: " ")) did not finish within \(timeout) s")
        }
        process.waitUntilExit()
        group.wait()
        return Result(status: process.terminationStatus, signalled: process.terminationReason == .uncaughtSignal,
                      stdout: String(decoding: outData, as: UTF8.self), stderr: String(decoding: errData, as: UTF8.self),
                      seconds: Date().timeIntervalSince(start))
    }

    static func gattlab(_ arguments: [String], environment: [String: String]? = nil, timeout: TimeInterval = 60,
                        directory: URL? = nil) throws -> Result {
        try run(gattlab, arguments, environment: environment, timeout: timeout, directory: directory)
    }

    /// tshark is the reference decoder; its absence is a set-up error, not a reason to pass.
    static var tshark: URL {
        get throws {
            for p in ["/usr/bin/tshark", "/usr/local/bin/tshark"] where FileManager.default.isExecutableFile(atPath: p) {
                return URL(fileURLWithPath: p)
            }
            throw TestSetupError("tshark is not installed: run `make setup` (apt-get install tshark)")
        }
    }

    /// PPI captures carry LE link-layer packets as DLT 147; this maps it to btle as MANIFEST.tsv says.
    static let tsharkUserDLT = #"uat:user_dlts:"User 0 (DLT=147)","btle","0","","0","""#

    static func manifest() throws -> [String] { try RealCaptures.manifest() }

    /// Connects to the emulator process at `path` once it listens (the socket file appears at
    /// bind, just before listen), trying for `seconds`.
    static func connectWhenListening(_ path: String, within seconds: Double = 20) throws -> UnixSocketBearer {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            do {
                return try UnixSocketBearer.connect(path: path)
            } catch {
                if Date() > deadline { throw error }
                usleep(20_000)
            }
        }
    }

    /// A new folder, removed when the test process exits (`Files.temporaryDirectory()`).
    static func temporaryDirectory() throws -> URL {
        try Files.temporaryDirectory()
    }

    /// Whether stderr is one failure in the voice of every command: one `gattlab: error:` line,
    /// then at most one `gattlab: hint:` line.
    static func oneError(_ stderr: String) -> Bool {
        let lines = stderr.split(separator: "\n")
        guard let first = lines.first, first.hasPrefix("gattlab: error: ") else { return false }
        return lines.count == 1 || (lines.count == 2 && lines[1].hasPrefix("gattlab: hint: "))
    }

    /// JSON Lines objects of one type.
    static func jsonLines(_ text: String, type: String? = nil) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { line in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            if let type, o["type"] as? String != type { return nil }
            return o
        }
    }
}

/// A check run on every real capture at once: each gives a line for the log and its problems;
/// the lines print sorted by capture, then each problem fails the test. Returns how many agreed.
enum EveryRealCapture {
    struct Outcome {
        var line: String
        var problems: [String]
    }

    @discardableResult
    static func check(_ files: [String], _ body: @Sendable (_ name: String, _ path: String) throws -> Outcome) throws -> Int {
        final class Results: @unchecked Sendable {
            let lock = NSLock()
            var lines: [String] = []
            var failures: [String] = []
        }
        let results = Results()
        let folder = try Harness.realCaptures
        DispatchQueue.concurrentPerform(iterations: files.count) { i in
            let name = files[i]
            let path = folder.appendingPathComponent(name).path
            let outcome: Outcome
            do { outcome = try body(name, path) } catch { outcome = Outcome(line: "\(error)", problems: ["\(error)"]) }
            results.lock.lock()
            results.lines.append("\(outcome.problems.isEmpty ? "ok  " : "FAIL") \(name): \(outcome.line)")
            if !outcome.problems.isEmpty { results.failures.append("\(name): " + outcome.problems.joined(separator: "; ")) }
            results.lock.unlock()
        }
        for line in results.lines.sorted(by: { $0.dropFirst(5) < $1.dropFirst(5) }) { print(line) }
        for f in results.failures { XCTFail(f) }
        return files.count - results.failures.count
    }
}

