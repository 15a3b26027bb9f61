import Foundation
import XCTest

/// `gattlab capture` on a machine without Bluetooth: the errors, the ring of files from a recorded
/// capture fed through the live path, and a clean stop on SIGINT while following btmon (a stand-in
/// script that writes through the same FIFO the real btmon is given).
final class CaptureCommandTests: XCTestCase {
    static let source = Harness.root.appendingPathComponent("Captures/emulated/esp-sec1-wrong-password-mtu23.btsnoop").path

    static var hostHasBluetooth: Bool {
        let fd = socket(31, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 1)
        if fd >= 0 { close(fd); return true }
        return errno != EAFNOSUPPORT
    }

    func testNoBluetoothIsOneLineAndExit69() throws {
        try XCTSkipIf(Self.hostHasBluetooth, "this kernel has Bluetooth")
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("live.btsnoop").path
        let r = try Harness.gattlab(["capture", "-o", out, "--duration", "1"])
        XCTAssertEqual(r.status, 69, r.stderr)
        XCTAssertTrue(Harness.oneError(r.stderr), r.stderr)
        XCTAssertTrue(r.stderr.hasPrefix("gattlab: error: cannot open the Bluetooth monitor: this kernel has no Bluetooth support"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: out), "no empty capture is left behind")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), [])
    }

    func testMissingBTMonIsOneLineAndExit69() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try Harness.gattlab(["capture", "--via", "btmon", "-o", dir.appendingPathComponent("x.pcap").path],
                                    environment: ["PATH": dir.path])
        XCTAssertEqual(r.status, 69, r.stderr)
        XCTAssertTrue(Harness.oneError(r.stderr), r.stderr)
        XCTAssertTrue(r.stderr.contains("btmon: not found on PATH"), r.stderr)
    }

    /// The real btmon, where installed, fails the same way as libpcap on a kernel without Bluetooth.
    func testRealBTMonWithoutBluetoothIsExit69() throws {
        try XCTSkipIf(Self.hostHasBluetooth, "this kernel has Bluetooth")
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/btmon"), "btmon is not installed")
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try Harness.gattlab(["capture", "--via", "btmon", "-o", dir.appendingPathComponent("x.btsnoop").path], timeout: 20)
        XCTAssertEqual(r.status, 69, r.stderr)
        XCTAssertTrue(Harness.oneError(r.stderr), r.stderr)
        XCTAssertTrue(r.stderr.contains("no Bluetooth support"), r.stderr)
    }

    func testUsageAndExistingOutput() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        XCTAssertEqual(try Harness.gattlab(["capture", "-o", "x.txt"]).status, 64)
        XCTAssertEqual(try Harness.gattlab(["capture", "-o", "x.pcap", "--max-files", "3"]).status, 64)
        XCTAssertEqual(try Harness.gattlab(["capture", "-o", "x.pcap", "--timeline"]).status, 64)
        let existing = dir.appendingPathComponent("old.btsnoop").path
        XCTAssertTrue(FileManager.default.createFile(atPath: existing, contents: Data([1, 2, 3])))
        // Told before any source opens: no Bluetooth is needed to hear it.
        let r = try Harness.gattlab(["capture", "-o", existing])
        XCTAssertEqual(r.status, 73, r.stderr)
        XCTAssertTrue(r.stderr.contains("--force"), r.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: existing)), Data([1, 2, 3]))
    }

    /// tshark's frame count of a file, or nil when it cannot read it.
    func tsharkFrames(_ path: String) throws -> Int? {
        let r = try Harness.run(try Harness.tshark, ["-r", path, "-T", "fields", "-e", "frame.number"])
        // tshark complains on stderr about running as root; a file it cannot read fails the status.
        guard r.status == 0, !r.stderr.contains("appears to") else { return nil }
        return r.stdout.split(separator: "\n").count
    }

    func testRingFromARecordedCaptureOpensInTsharkAndAddsUp() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let total = try XCTUnwrap(tsharkFrames(Self.source))
        for ext in ["pcap", "btsnoop"] {
            let out = dir.appendingPathComponent("ring.\(ext)").path
            let r = try Harness.gattlab(["capture", "--from-file", Self.source, "-o", out, "--max-size", "2k"])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertTrue(r.stderr.hasPrefix("gattlab: captured \(total) records in "), r.stderr)
            let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("ring.\(ext).") }.sorted()
            XCTAssertGreaterThan(files.count, 3, "\(files)")
            var sum = 0
            for f in files {
                let frames = try XCTUnwrap(tsharkFrames(dir.appendingPathComponent(f).path), "tshark cannot read \(f)")
                XCTAssertGreaterThan(frames, 0)
                sum += frames
            }
            XCTAssertEqual(sum, total)
        }
        // The ring's files decoded one after another give the original's PDUs. Only opcodes are
        // compared: a response whose request is in the previous file has no handle, and an
        // encrypted ESP session split across files cannot be decrypted in the later ones.
        let original = try Harness.gattlab(["decode", "--format", "json", "--att-only", Self.source])
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("ring.btsnoop.") }
            .sorted { Int($0.split(separator: ".").last ?? "") ?? 0 < Int($1.split(separator: ".").last ?? "") ?? 0 }
        var values: [String] = []
        for n in names {
            let d = try Harness.gattlab(["decode", "--format", "json", "--att-only", dir.appendingPathComponent(n).path])
            values += Harness.jsonLines(d.stdout, type: "att").map { "\($0["opcode"] ?? "")" }
        }
        XCTAssertEqual(values, Harness.jsonLines(original.stdout, type: "att").map { "\($0["opcode"] ?? "")" })
    }

    func testLiveShowsDecodedLinesAndTimelineWithSecretsRedacted() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let provision = Harness.root.appendingPathComponent("Captures/emulated/esp-sec0-provision-mtu23.btsnoop").path
        let decoded = try Harness.gattlab(["decode", provision])
        let live = try Harness.gattlab(["capture", "--from-file", provision, "-o", dir.appendingPathComponent("a.pcap").path, "--live"])
        XCTAssertEqual(live.status, 0, live.stderr)
        XCTAssertEqual(live.stdout, decoded.stdout)
        XCTAssertTrue(live.stdout.contains("<redacted"), live.stdout)
        let timeline = try Harness.gattlab(["capture", "--from-file", provision, "-o", dir.appendingPathComponent("b.pcap").path,
                                            "--live", "--timeline"])
        XCTAssertEqual(timeline.status, 0, timeline.stderr)
        XCTAssertTrue(timeline.stdout.contains("link.connected"), timeline.stdout)
        XCTAssertTrue(timeline.stdout.contains("esp."), timeline.stdout)
        let count = try Harness.gattlab(["capture", "--from-file", provision, "-o", dir.appendingPathComponent("c.btsnoop").path, "--count", "5"])
        XCTAssertTrue(count.stderr.hasPrefix("gattlab: captured 5 records"), count.stderr)
    }

    /// A stand-in for btmon: writes a btsnoop 2001 capture to the -w path in small pieces (cutting
    /// records), says when all is written, then waits for SIGINT as btmon does.
    static let fakeBTMon = """
        #!/bin/sh
        out=""
        while [ $# -gt 0 ]; do case "$1" in -w) out="$2"; shift 2;; *) shift;; esac; done
        trap 'exit 0' INT TERM
        echo "Bluetooth monitor ver 5.66 (stand-in)"
        [ -p "$out" ] || { echo "expected a FIFO at $out" >&2; exit 3; }
        exec 3>"$out"
        size=$(wc -c < "$FAKE_BTMON_SOURCE")
        i=0
        while [ $((i * 97)) -lt "$size" ]; do
            dd if="$FAKE_BTMON_SOURCE" bs=97 skip=$i count=1 2>/dev/null >&3
            i=$((i + 1))
            sleep 0.002
        done
        touch "$FAKE_BTMON_SOURCE.done"
        while :; do sleep 0.05; done
        """

    func testSIGINTWhileFollowingBTMonKeepsEveryRecord() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bin = dir.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let fake = bin.appendingPathComponent("btmon")
        try Self.fakeBTMon.write(to: fake, atomically: true, encoding: .utf8)
        chmod(fake.path, 0o755)
        // btmon writes the monitor datalink: the recorded capture rewritten as 2001 first.
        let monitor = dir.appendingPathComponent("monitor.btsnoop").path
        XCTAssertEqual(try Harness.gattlab(["capture", "--from-file", Self.source, "-o", monitor]).status, 0)
        let total = try XCTUnwrap(tsharkFrames(Self.source))

        for ext in ["btsnoop", "pcap"] {
            try? FileManager.default.removeItem(atPath: monitor + ".done")
            let out = dir.appendingPathComponent("live.\(ext)").path
            let process = Process()
            process.executableURL = try Harness.gattlab
            process.arguments = ["capture", "--via", "btmon", "-o", out, "--live"]
            var environment = ProcessInfo.processInfo.environment
            environment["PATH"] = bin.path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
            environment["FAKE_BTMON_SOURCE"] = monitor
            process.environment = environment
            let err = Pipe(), stdout = Pipe()
            process.standardError = err
            process.standardOutput = stdout
            try process.run()
            nonisolated(unsafe) var outData = Data()
            let reading = DispatchGroup()
            reading.enter()
            DispatchQueue.global().async { outData = stdout.fileHandleForReading.readDataToEndOfFile(); reading.leave() }
            let deadline = Date().addingTimeInterval(30)
            while !FileManager.default.fileExists(atPath: monitor + ".done"), process.isRunning, Date() < deadline { usleep(20_000) }
            usleep(300_000)  // the last pieces reach gattlab
            XCTAssertTrue(process.isRunning, "gattlab ended before SIGINT")
            XCTAssertFalse(FileManager.default.fileExists(atPath: out), "the capture is under a temporary name until it ends")
            kill(process.processIdentifier, SIGINT)
            let stopBy = Date().addingTimeInterval(10)
            while process.isRunning, Date() < stopBy { usleep(20_000) }
            if process.isRunning { process.terminate(); XCTFail("gattlab did not stop on SIGINT") }
            process.waitUntilExit()
            reading.wait()
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            XCTAssertEqual(process.terminationStatus, 0, stderr)
            XCTAssertEqual(stderr.split(separator: "\n").count, 1, stderr)
            XCTAssertTrue(stderr.hasPrefix("gattlab: captured \(total) records in "), stderr)
            XCTAssertTrue(stderr.contains(out), stderr)
            XCTAssertEqual(try tsharkFrames(out), total, "\(out) holds every record and reads in tshark")
            XCTAssertTrue(String(decoding: outData, as: UTF8.self).contains("Write Request"), "live lines were printed")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".tmp") }
            XCTAssertEqual(leftovers, [])
        }
    }
}
