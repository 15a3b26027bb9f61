import Foundation
import TestSupport
import XCTest

/// What every command prints, byte for byte, on every capture of Captures/ and every real
/// capture, against digests taken before the speed work (issue 20): a faster decoder that
/// changes one byte of one output fails here, naming the file and the command. A deliberate
/// change of output regenerates the digests and shows up in review as changed lines:
///   GATTLAB_UPDATE_OUTPUT_DIGESTS=1 swift test --filter OutputIdentityTests
/// (with the real captures present, so their lines are kept). The digests cover stdout, stderr
/// and the exit status, as they are: no output may vary between runs (legacy pairing's note said
/// how long its TK search took until that made a loaded CI machine's decode differ). The HTML
/// and Perfetto digests came later, when those outputs became streamed: taken after `cmp` showed
/// the streamed outputs equal to the old strings on every capture here.
final class OutputIdentityTests: XCTestCase {
    static let fixture = Harness.root.appendingPathComponent("Tests/GATTLabCLITests/Fixtures/output-digests.tsv")
    static let commands: [[String]] = [
        ["info"], ["info", "--format", "json"],
        ["timeline"], ["timeline", "--format", "json"],
        ["timeline", "--format", "html"], ["timeline", "--format", "perfetto"],
        ["audit", "--format", "json"],
        ["decode"], ["decode", "--format", "json"],
    ]

    /// One line of the fixture: `set`, the file (relative to its folder), the command, the digest.
    struct Row: Hashable {
        var set: String
        var file: String
        var command: String
        var digest: String
        var line: String { [set, file, command, digest].joined(separator: "\t") }
    }

    func testProjectCapturesPrintWhatTheyPrintedBefore() throws {
        let files = try Files.projectCaptures().map { String($0.dropFirst(Harness.root.path.count + 1)) }
        try check(set: "project", files: files, directory: Harness.root)
    }

    func testRealCapturesPrintWhatTheyPrintedBefore() throws {
        let folder = try Harness.realCaptures
        try check(set: "real", files: try RealCaptures.manifest(), directory: folder)
    }

    /// The audit and the timeline once more with their lists read back from their temporary files
    /// after every element (GATTLAB_SPILL_MEMORY_LIMIT=0; a long capture's lists go there): they
    /// must print the same.
    static let spilled: [[String]] = [["audit", "--format", "json"], ["timeline"], ["timeline", "--format", "json"],
                                      ["timeline", "--format", "html"], ["timeline", "--format", "perfetto"]]

    /// `redact` too: its report and the bytes of the file it writes (into a temporary folder,
    /// whose path the digest reads as `OUT`).
    static let redact = ["redact", "--no-tshark", "--format", "json"]

    func check(set: String, files: [String], directory: URL) throws {
        let gattlab = try Harness.gattlab
        let scratch = try Files.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let jobs = files.flatMap { f in Self.commands.map { (f, $0, false) } + Self.spilled.map { (f, $0, true) } + [(f, Self.redact, false)] }
        nonisolated(unsafe) var rows = [Row?](repeating: nil, count: jobs.count)
        nonisolated(unsafe) var spilledRows: [Row] = []
        nonisolated(unsafe) var failures: [String] = []
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: jobs.count) { i in
            let (file, args, spill) = jobs[i]
            do {
                var environment = ["NO_COLOR": "1", "COLUMNS": "100"]
                if spill { environment["GATTLAB_SPILL_MEMORY_LIMIT"] = "0" }
                let output = scratch.appendingPathComponent("\(i).out").path
                let redacting = args == Self.redact
                let r = try Harness.run(gattlab, args + ["--no-color", file] + (redacting ? ["-o", output] : []), environment: environment,
                                        timeout: 300, directory: directory)
                var text = "\(r.status)\n\(r.stdout)\u{0}\(r.stderr)"
                if redacting {
                    let written = (try? Data(contentsOf: URL(fileURLWithPath: output))).map { Self.digest(bytes: $0) } ?? "none"
                    text = text.replacingOccurrences(of: output, with: "OUT") + "\u{0}" + written
                }
                let row = Row(set: set, file: file, command: args.joined(separator: " "), digest: Self.digest(text))
                lock.withLock { if spill { spilledRows.append(row) } else { rows[i] = row } }
            } catch {
                lock.withLock { failures.append("\(file) \(args.joined(separator: " ")): \(error)") }
            }
        }
        XCTAssertEqual(failures, [])
        let now = rows.compactMap { $0 }
        let unspilled = Dictionary(now.map { ("\($0.file)\t\($0.command)", $0.digest) }) { a, _ in a }
        let differ = spilledRows.filter { unspilled["\($0.file)\t\($0.command)"] != $0.digest }.map { "\($0.file): \($0.command)" }
        XCTAssertEqual(spilledRows.count, files.count * Self.spilled.count)
        XCTAssertTrue(differ.isEmpty, "outputs that differ when lists are read back from their file: \(differ.prefix(10))")
        if ProcessInfo.processInfo.environment["GATTLAB_UPDATE_OUTPUT_DIGESTS"] == "1" {
            let kept = try Self.load().filter { $0.set != set }
            let lines = (kept + now).sorted { ($0.set, $0.file, $0.command) < ($1.set, $1.file, $1.command) }.map(\.line)
            try (lines.joined(separator: "\n") + "\n").write(to: Self.fixture, atomically: true, encoding: .utf8)
            return
        }
        let before = Dictionary(try Self.load().filter { $0.set == set }.map { ("\($0.file)\t\($0.command)", $0.digest) }) { a, _ in a }
        var changed: [String] = []
        for row in now {
            guard let old = before["\(row.file)\t\(row.command)"] else {
                changed.append("\(row.file): gattlab \(row.command): no digest recorded (a new capture? regenerate the digests)")
                continue
            }
            if old != row.digest { changed.append("\(row.file): gattlab \(row.command) prints something else than before") }
        }
        let gone = Set(before.keys).subtracting(now.map { "\($0.file)\t\($0.command)" })
        XCTAssertTrue(changed.isEmpty, "\(changed.count) outputs changed:\n" + changed.prefix(40).joined(separator: "\n"))
        XCTAssertTrue(gone.isEmpty, "digests of captures no longer there: \(gone.sorted().prefix(10))")
        XCTAssertGreaterThan(now.count, files.count * Self.commands.count - 1)
    }

    static func load() throws -> [Row] {
        guard let text = try? String(contentsOf: fixture, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            return f.count == 4 ? Row(set: f[0], file: f[1], command: f[2], digest: f[3]) : nil
        }
    }

    /// FNV-1a, 64 bits, twice (forwards and with another basis): a change detector, not a MAC.
    static func digest(_ text: String) -> String { digest(bytes: text.utf8) }

    static func digest(bytes: some Sequence<UInt8>) -> String {
        var a: UInt64 = 0xcbf2_9ce4_8422_2325, b: UInt64 = 0x6c62_272e_07bb_0142
        var n = 0
        for byte in bytes {
            a = (a ^ UInt64(byte)) &* 0x100_0000_01b3
            b = (b ^ UInt64(byte)) &* 0x100_0000_01b3 ^ (b >> 29)
            n += 1
        }
        return String(a, radix: 16) + String(b, radix: 16) + "-\(n)"
    }
}
