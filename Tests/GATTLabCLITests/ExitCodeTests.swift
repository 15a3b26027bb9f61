import Foundation
import TestSupport
import Transport
import XCTest

/// Every exit code that a command's `--help` lists is provoked here, the way a user would meet
/// it, and every provoked code must be in that command's help: the help (so the man pages),
/// docs/exit-codes.md and the behaviour cannot drift apart. Each failure must also speak in the
/// one voice: `gattlab: error: ...` then `gattlab: hint: ...` on stderr.
final class ExitCodeTests: XCTestCase {
    var dir: URL!
    let demo = Harness.root.appendingPathComponent("Captures/speaker-ota-demo.btsnoop").path
    let session = Harness.root.appendingPathComponent("Captures/emulated/speaker-ota-mtu247.btsnoop").path

    override func setUpWithError() throws {
        dir = try Harness.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    /// A file that exists (an output that must not be replaced without --force).
    func existing(_ name: String) -> String {
        let p = path(name)
        XCTAssertTrue(FileManager.default.createFile(atPath: p, contents: Data("keep me".utf8)))
        return p
    }

    /// A file that is not a capture.
    var notACapture: String {
        let p = path("notes.btsnoop")
        if !FileManager.default.fileExists(atPath: p) {
            XCTAssertTrue(FileManager.default.createFile(atPath: p, contents: Data("this is not a capture\n".utf8)))
        }
        return p
    }

    var missing: String { path("missing.btsnoop") }

    /// A folder on PATH holding stand-ins for external tools (btmon, tshark), each a shell script.
    func stubs(_ scripts: [String: String]) -> [String: String] {
        let bin = path("stub-bin-\(scripts.keys.sorted().joined(separator: "-"))")
        try? FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        for (name, body) in scripts {
            let p = bin + "/" + name
            XCTAssertTrue(FileManager.default.createFile(atPath: p, contents: Data("#!/bin/sh\n\(body)\n".utf8),
                                                        attributes: [.posixPermissions: 0o755]))
        }
        return ["PATH": bin + ":/usr/bin:/bin"]
    }

    /// The codes `gattlab COMMAND --help` lists under "Exit codes:".
    func listedCodes(_ command: [String]) throws -> Set<Int32> {
        let r = try Harness.gattlab(command + ["--help"])
        XCTAssertEqual(r.status, 0, r.stderr)
        guard let start = r.stdout.range(of: "Exit codes:") else {
            XCTFail("gattlab \(command.joined(separator: " ")) --help lists no exit codes")
            return []
        }
        var codes: Set<Int32> = []
        for line in r.stdout[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false).dropFirst() {
            guard !line.isEmpty else { break }
            guard line.hasPrefix("  "), let first = line.split(separator: " ").first, let code = Int32(first) else {
                XCTFail("an exit code line that wraps or is not '  CODE  meaning': \(line)")
                continue
            }
            codes.insert(code)
        }
        return codes
    }

    /// Runs one provocation and checks its code and its voice.
    @discardableResult
    func expect(_ code: Int32, _ arguments: [String], environment: [String: String]? = nil, timeout: TimeInterval = 60,
                file: StaticString = #filePath, line: UInt = #line) throws -> Harness.Result {
        let r = try Harness.gattlab(arguments, environment: environment, timeout: timeout, directory: dir)
        let shown = "gattlab \(arguments.joined(separator: " "))"
        XCTAssertEqual(r.status, code, "\(shown)\n\(r.stderr)", file: file, line: line)
        XCTAssertFalse(r.signalled, shown, file: file, line: line)
        if code != 0 && code != 1 {
            let errors = r.stderr.split(separator: "\n").filter { $0.hasPrefix("gattlab: error: ") }
            XCTAssertEqual(errors.count, 1, "\(shown): one error line, got:\n\(r.stderr)", file: file, line: line)
            XCTAssertTrue(r.stderr.contains("\ngattlab: hint: "), "\(shown): a hint line, got:\n\(r.stderr)", file: file, line: line)
        }
        return r
    }

    /// Standard output that cannot be written (/dev/full: a full disk under `> file`): 73 and
    /// the one voice, never a short output that passes for a whole one.
    func expectFullDisk(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        let gattlab = try Harness.gattlab
        let process = Process()
        process.executableURL = gattlab
        process.arguments = arguments
        process.currentDirectoryURL = dir
        guard let full = FileHandle(forWritingAtPath: "/dev/full") else { throw XCTSkip("no /dev/full here") }
        process.standardOutput = full
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let shown = "gattlab \(arguments.joined(separator: " ")) > /dev/full"
        XCTAssertEqual(process.terminationStatus, 73, "\(shown)\n\(stderr)", file: file, line: line)
        XCTAssertEqual(stderr.split(separator: "\n").filter { $0.hasPrefix("gattlab: error: ") },
                       ["gattlab: error: cannot write the output (No space left on device) (standard output)"], shown, file: file, line: line)
        XCTAssertTrue(stderr.contains("\ngattlab: hint: "), shown, file: file, line: line)
    }

    /// Checks that `provoked` is exactly what the command's help lists. `unprovokable` names the
    /// codes that cannot be provoked on this machine, with why; they are printed, not hidden.
    func agree(_ command: [String], _ provoked: Set<Int32>, unprovokable: [Int32: String] = [:],
               file: StaticString = #filePath, line: UInt = #line) throws {
        let listed = try listedCodes(command)
        for (code, why) in unprovokable.sorted(by: { $0.key < $1.key }) {
            print("exit codes: gattlab \(command.joined(separator: " ")) \(code) is not provoked here: \(why)")
        }
        let provoked = provoked.union(unprovokable.keys)
        XCTAssertEqual(listed, provoked, "gattlab \(command.joined(separator: " ")): --help lists \(listed.sorted()), the test provoked \(provoked.sorted())",
                       file: file, line: line)
    }

    func testInfo() throws {
        try expect(0, ["info", demo])
        try expect(64, ["info", "--bogus", demo])
        try expect(65, ["info", notACapture])
        try expect(66, ["info", missing])
        try expectFullDisk(["info", demo])
        try agree(["info"], [0, 64, 65, 66, 73])
    }

    func testDecode() throws {
        try expect(0, ["decode", demo])
        try expect(64, ["decode", "--handle", "zz", demo])
        try expect(65, ["decode", notACapture])
        try expect(66, ["decode", missing])
        let none = try expect(67, ["decode", "--uuid", "2a19", demo])
        XCTAssertTrue(none.stderr.contains("nothing matched --uuid 2a19"), none.stderr)
        try expect(67, ["decode", "--format", "json", "--connection", "0x41", demo])
        try expectFullDisk(["decode", demo])
        try expectFullDisk(["decode", "--format", "json", demo])
        try agree(["decode"], [0, 64, 65, 66, 67, 73])
    }

    func testTimeline() throws {
        try expect(0, ["timeline", demo])
        try expect(1, ["timeline", "--fail-on", "warning", demo])
        try expect(64, ["timeline", "--jobs", "0", demo])
        try expect(65, ["timeline", notACapture])
        try expect(66, ["timeline", missing])
        let none = try expect(67, ["timeline", "--device", "11:22:33:44:55:66", demo])
        XCTAssertTrue(none.stderr.contains("no device matched --device 11:22:33:44:55:66"), none.stderr)
        try expect(67, ["timeline", "--protocol", "nrf7", demo])
        try expect(73, ["timeline", "--format", "json", "-o", existing("kept.json"), demo])
        XCTAssertEqual(try String(contentsOfFile: path("kept.json"), encoding: .utf8), "keep me")
        for format in ["text", "json", "html", "perfetto"] { try expectFullDisk(["timeline", "--format", format, demo]) }
        try agree(["timeline"], [0, 1, 64, 65, 66, 67, 73])
    }

    func testAudit() throws {
        let secrets = Harness.root.appendingPathComponent("Captures/emulated/speaker-url-secrets-mtu247.btsnoop").path
        try expect(0, ["audit", demo])
        try expect(1, ["audit", "--fail-on", "warning", secrets])
        try expect(64, ["audit", "--jobs", "0", demo])
        try expect(65, ["audit", notACapture])
        try expect(66, ["audit", missing])
        try expect(73, ["audit", "-o", existing("audit.txt"), demo])
        for format in ["text", "json", "sarif"] { try expectFullDisk(["audit", "--format", format, demo]) }
        try agree(["audit"], [0, 1, 64, 65, 66, 73])
    }

    func testRedact() throws {
        try expect(0, ["redact", demo, "-o", path("shared.btsnoop")])
        try expect(64, ["redact", demo])
        try expect(65, ["redact", notACapture, "-o", path("r65.btsnoop")])
        try expect(66, ["redact", missing, "-o", path("r66.btsnoop")])
        // tshark disagreeing about the copy (here a stand-in that names the file it read) is a
        // failed check: nothing is written.
        let checkFails = stubs(["tshark": #"echo "$@""#])
        try expect(70, ["redact", demo, "-o", path("r70.btsnoop")], environment: checkFails)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("r70.btsnoop")))
        try expect(73, ["redact", demo, "-o", existing("r73.btsnoop")])
        try expect(73, ["redact", demo, "-o", demo])
        try agree(["redact"], [0, 64, 65, 66, 70, 73])
    }

    func testConvert() throws {
        try expect(0, ["convert", demo, path("c.pcap")])
        try expect(64, ["convert", demo, "-"])
        try expect(65, ["convert", notACapture, path("c65.pcap")])
        try expect(66, ["convert", missing, path("c66.pcap")])
        try expect(67, ["convert", "--index", "3", demo, path("c67.pcap")])
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("c67.pcap")), "nothing written when nothing matched")
        try expect(73, ["convert", demo, existing("c73.pcap")])
        try agree(["convert"], [0, 64, 65, 66, 67, 73])
    }

    func testCapture() throws {
        try expect(0, ["capture", "--from-file", demo, "-o", path("cap.btsnoop")])
        try expect(64, ["capture", "-o", path("cap64.btsnoop"), "--max-files", "0"])
        try expect(65, ["capture", "--from-file", notACapture, "-o", path("cap65.btsnoop")])
        try expect(66, ["capture", "--from-file", missing, "-o", path("cap66.btsnoop")])
        // btmon missing from PATH: no Bluetooth tooling here.
        try expect(69, ["capture", "--via", "btmon", "-o", path("cap69.btsnoop")], environment: stubs([:]))
        // btmon that is refused the monitor channel, as it says it when not root.
        let refused = stubs(["btmon": "echo 'Failed to open channel: \(String(cString: strerror(EPERM)))' >&2; exit 1"])
        try expect(77, ["capture", "--via", "btmon", "-o", path("cap77.btsnoop")], environment: refused)
        try expect(73, ["capture", "--from-file", demo, "-o", existing("cap73.btsnoop")])
        try agree(["capture"], [0, 64, 65, 66, 69, 73, 77])
    }

    func testEmulate() async throws {
        let gattlab = try Harness.gattlab
        // Serves one client and ends (0); a planted crash with --exit-on-crash ends it with 70.
        for (quirk, code) in [(nil, Int32(0)), ("ssid-overflow", Int32(70))] {
            let socket = path("emu-\(code).sock")
            var arguments = ["emulate", "speaker", "--listen", "unix:\(socket)", "--connections", "1", "--quiet", "--speed", "1000"]
            if let quirk { arguments += ["--quirk", quirk, "--exit-on-crash"] }
            final class Box: @unchecked Sendable { var result: Harness.Result? }
            let box = Box()
            let done = DispatchSemaphore(value: 0)
            let args = arguments
            DispatchQueue.global().async {
                box.result = try? Harness.run(gattlab, args, timeout: 30)
                done.signal()
            }
            let bearer = try Harness.connectWhenListening(socket)
            if quirk != nil {
                try await bearer.send([0x02, 0xF7, 0x00])  // Exchange MTU: room for the 46-byte write
                _ = try await bearer.receive(within: 5_000_000)
                try await bearer.send([0x12, 0x0E, 0x00] + Array(repeating: UInt8(ascii: "A"), count: 40) + [0x00, 0x70, 0x77])
                _ = try? await bearer.receive(within: 5_000_000)
            }
            await bearer.close()
            done.wait()
            let r = try XCTUnwrap(box.result)
            XCTAssertEqual(r.status, code, r.stderr)
            if code == 70 {
                XCTAssertTrue(r.stderr.contains("gattlab: error: the emulated firmware crashed: stack buffer overflow"), r.stderr)
            }
        }
        try expect(64, ["emulate", "toaster", "--listen", "unix:\(path("e64.sock"))"])
        try expect(69, ["emulate", "speaker", "--hci", "hci0"])
        try expect(73, ["emulate", "speaker", "--listen", "unix:\(path("no-such-folder/e73.sock"))"])
        try agree(["emulate", "serve"], [0, 64, 69, 70, 73])

        try expect(0, ["emulate", "list"])
        try agree(["emulate", "list"], [0])

        try expect(0, ["emulate", "scenario", "speaker-ota", "--record", path("s.btsnoop")])
        try expect(64, ["emulate", "scenario", "toaster-ota"])
        try expect(73, ["emulate", "scenario", "speaker-ota", "--record", existing("s73.btsnoop")])
        try agree(["emulate", "scenario"], [0, 64, 73])
    }

    func testReplay() throws {
        try expect(0, ["replay", "extract", session, "-o", path("script.json")])
        try expect(64, ["replay", "extract", "--bogus", session])
        try expect(65, ["replay", "extract", notACapture])
        try expect(66, ["replay", "extract", missing])
        try expect(67, ["replay", "extract", "--peer", "11:22:33:44:55:66", session])
        try expect(73, ["replay", "extract", session, "-o", existing("x73.json")])
        try agree(["replay", "extract"], [0, 64, 65, 66, 67, 73])

        try expect(0, ["replay", "run", session, "--target", "emu:speaker", "--timing", "fast"])
        try expect(1, ["replay", "run", session, "--target", "emu:speaker-wrong-password", "--timing", "fast"])
        try expect(64, ["replay", "run", session, "--target", "toaster:1"])
        let badScript = path("bad-script.json")
        XCTAssertTrue(FileManager.default.createFile(atPath: badScript, contents: Data(#"{"schema": "nonsense"}"#.utf8)))
        try expect(65, ["replay", "run", badScript, "--target", "emu:speaker"])
        try expect(66, ["replay", "run", missing, "--target", "emu:speaker"])
        try expect(69, ["replay", "run", session, "--target", "unix:\(path("nobody-listens.sock"))", "--timing", "fast"])
        try expect(73, ["replay", "run", session, "--target", "emu:speaker", "--record", existing("r73.btsnoop")])
        try agree(["replay", "run"], [0, 1, 64, 65, 66, 69, 73])
    }

    func testFuzz() throws {
        try expect(0, ["fuzz", "list"])
        try expect(64, ["fuzz", "list", "--format", "yaml"])
        try agree(["fuzz", "list"], [0, 64])

        let findings = path("findings")
        try expect(0, ["fuzz", "run", "status", "--runs", "200", "--findings", findings])
        let found = try expect(1, ["fuzz", "run", "device-speaker", "--quirk", "ssid-overflow", "--runs", "3000", "--findings", findings],
                               timeout: 120)
        XCTAssertTrue(found.stdout.contains("reproducer"), found.stdout)
        try expect(64, ["fuzz", "run", "toaster", "--runs", "1"])
        try expect(69, ["fuzz", "run", "device-speaker", "--target", "unix:\(path("nobody.sock"))", "--runs", "1", "--findings", findings])
        // A corpus "folder" that is a file cannot take new inputs.
        try expect(73, ["fuzz", "run", "status", "--runs", "50", "--corpus", existing("corpus-is-a-file"), "--findings", findings])

        // Ctrl-C: the campaign stops, reports, and says it was interrupted.
        let gattlab = try Harness.gattlab
        let process = Process()
        process.executableURL = gattlab
        process.arguments = ["fuzz", "run", "status", "--time", "60", "--findings", findings]
        process.standardOutput = Pipe()
        process.standardError = FileHandle.nullDevice
        try process.run()
        Thread.sleep(forTimeInterval: 1.5)
        kill(process.processIdentifier, SIGINT)
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { process.terminate(); XCTFail("fuzz run did not stop on SIGINT") }
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 130)
        try agree(["fuzz", "run"], [0, 1, 64, 69, 73, 130],
                  unprovokable: [77: "CAP_NET_RAW is checked once a bluez: device answers: it needs a Bluetooth controller"])

        let reproducer = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: findings)
            .first { !$0.hasSuffix(".txt") && !$0.hasSuffix(".btsnoop") }).description
        try expect(1, ["fuzz", "reproduce", (findings as NSString).appendingPathComponent(reproducer)])
        let benign = path("benign.bin")
        XCTAssertTrue(FileManager.default.createFile(atPath: benign, contents: Data([0x00])))
        try expect(0, ["fuzz", "reproduce", benign, "--target", "status"])
        try expect(64, ["fuzz", "reproduce", benign, "--target", "toaster"])
        try expect(66, ["fuzz", "reproduce", missing, "--target", "status"])
        try agree(["fuzz", "reproduce"], [0, 1, 64, 66])
    }

    func testCorpus() throws {
        let corpus = path("corpus")
        try expect(0, ["corpus", "import", demo, "--corpus", corpus])
        try expect(64, ["corpus", "import", "--bogus", demo])
        try expect(65, ["corpus", "import", notACapture, "--corpus", corpus])
        try expect(73, ["corpus", "import", demo, "--corpus", existing("corpus-file")])
        try agree(["corpus", "import"], [0, 64, 65, 73])

        try expect(0, ["corpus", "minimize", "status", "--corpus", corpus])
        try expect(64, ["corpus", "minimize", "toaster", "--corpus", corpus])
        try expect(66, ["corpus", "minimize", "status", "--corpus", path("no-corpus")])
        try agree(["corpus", "minimize"], [0, 64, 66],
                  unprovokable: [73: "a corpus folder that cannot be written: root (as CI runs) writes anywhere"])
    }

    /// The top-level help lists every code, and docs/exit-codes.md has a row for each.
    func testTopLevelHelpAndDocsListEveryCode() throws {
        let all: Set<Int32> = [0, 1, 64, 65, 66, 67, 69, 70, 73, 77, 130]
        XCTAssertEqual(try listedCodes([]), all)
        let docs = try String(contentsOf: Harness.root.appendingPathComponent("docs/exit-codes.md"), encoding: .utf8)
        for code in all { XCTAssertTrue(docs.contains("\n| \(code) | "), "docs/exit-codes.md has no row for \(code)") }
    }
}
