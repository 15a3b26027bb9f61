import Foundation
import Transport
import XCTest

/// `gattlab emulate NAME --quirk ... [--exit-on-crash]`: planted bugs for fuzzers, by name; a
/// planted crash ends the process with status 70 and one line, the black-box "target died".
final class EmulateQuirkTests: XCTestCase {
    func testAnOverflowingSSIDEndsTheProcessWithStatus70() async throws {
        let gattlab = try Harness.gattlab
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("speaker.sock").path
        final class Box: @unchecked Sendable { var result: Harness.Result? }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            box.result = try? Harness.run(gattlab, ["emulate", "speaker", "--quirk", "ssid-overflow", "--exit-on-crash", "--quiet",
                                                    "--listen", "unix:\(path)", "--speed", "1000"], timeout: 30)
            done.signal()
        }
        let bearer = try Harness.connectWhenListening(path)
        try await bearer.send([0x02, 0xF7, 0x00])
        let mtu = try await bearer.receive(within: 5_000_000)
        XCTAssertEqual(mtu, [0x03, 0xF7, 0x00])
        // Write Request to OTA_CREDENTIALS (0x000E): a 40-byte SSID, then the NUL and a password.
        try await bearer.send([0x12, 0x0E, 0x00] + Array(repeating: UInt8(ascii: "A"), count: 40) + [0x00, 0x70, 0x77])
        let answer = try? await bearer.receive(within: 5_000_000)
        XCTAssertNil(answer, "a crashed firmware does not answer")
        await bearer.close()
        done.wait()
        let r = try XCTUnwrap(box.result)
        XCTAssertEqual(r.status, 70, r.stderr)
        XCTAssertFalse(r.signalled)
        let lines = r.stderr.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "listening on unix:\(path): speaker (seed 1, speed 1000x, quirks ssid-overflow)")
        XCTAssertEqual(lines.count, 3, r.stderr)
        XCTAssertEqual(lines.dropFirst().first, "gattlab: error: the emulated firmware crashed: stack buffer overflow copying the SSID (43-byte credentials, no NUL in the first 32 bytes); exiting (--exit-on-crash)")
        XCTAssertTrue(lines.last?.hasPrefix("gattlab: hint: ") ?? false, r.stderr)
        XCTAssertEqual(r.stdout, "")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "the socket file is removed")
    }

    func testUnknownQuirksAreUsageErrorsNamingTheKnownOnes() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try Harness.gattlab(["emulate", "speaker", "--quirk", "split-line-loss", "--listen", "unix:\(dir.path)/q.sock"], timeout: 30)
        XCTAssertEqual(r.status, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("no quirk 'split-line-loss' for the speaker; known: ssid-overflow, short-status-write, unbounded-prepare-queue"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(dir.path)/q.sock"))

        let nrf = try Harness.gattlab(["emulate", "nrf7", "--quirk", "ssid-overflow", "--listen", "unix:\(dir.path)/n.sock"], timeout: 30)
        XCTAssertEqual(nrf.status, 64, nrf.stderr)
        XCTAssertTrue(nrf.stderr.contains("has no quirks"), nrf.stderr)

        let sensor = try Harness.gattlab(["emulate", "sensor", "--quirk", "bogus", "--listen", "unix:\(dir.path)/s.sock"], timeout: 30)
        XCTAssertEqual(sensor.status, 64, sensor.stderr)
        XCTAssertTrue(sensor.stderr.contains("no quirk 'bogus' for the sensor; known: split-line-loss"), sensor.stderr)
    }

    func testListNamesTheQuirks() throws {
        let r = try Harness.gattlab(["emulate", "list"])
        XCTAssertEqual(r.status, 0, r.stderr)
        for name in ["speaker ssid-overflow", "speaker short-status-write", "speaker unbounded-prepare-queue", "sensor split-line-loss"] {
            XCTAssertTrue(r.stdout.contains("\n  \(name) "), "\(name) listed:\n\(r.stdout)")
        }
    }

    /// A black-box campaign against an emulator process with a planted bug: the finding's note
    /// and summary say to replay its exchange against that device (the fault is the device's), and
    /// `fuzz reproduce` says so too unless given the device's quirk.
    func testBlackBoxFindingsSayWhereTheyReproduce() throws {
        let gattlab = try Harness.gattlab
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("speaker.sock").path
        let emulator = Process()
        emulator.executableURL = gattlab
        emulator.arguments = ["emulate", "speaker", "--quirk", "ssid-overflow", "--quiet", "--listen", "unix:\(path)", "--speed", "100"]
        emulator.standardOutput = FileHandle.nullDevice
        emulator.standardError = FileHandle.nullDevice
        try emulator.run()
        defer { emulator.terminate(); emulator.waitUntilExit() }
        _ = try Harness.connectWhenListening(path)  // it listens

        let findings = dir.appendingPathComponent("findings").path
        let r = try Harness.gattlab(["fuzz", "run", "device-speaker", "--target", "unix:\(path)", "--speed", "100", "--max-pdus", "8",
                                     "--runs", "2000", "--findings", findings, "--quiet"], timeout: 120)
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        let file = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: findings).first { !$0.contains(".") })
        let finding = (findings as NSString).appendingPathComponent(file)
        let replay = "gattlab replay run \(finding).btsnoop --target unix:\(path) --allow-writes"
        XCTAssertTrue(r.stdout.contains(replay), r.stdout)
        XCTAssertTrue(FileManager.default.fileExists(atPath: finding + ".btsnoop"))

        let plain = try Harness.gattlab(["fuzz", "reproduce", finding])
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertTrue(plain.stdout.contains("no finding in-process; it was found black-box on unix:\(path)"), plain.stdout)
        XCTAssertTrue(plain.stdout.contains(replay), plain.stdout)
        let quirked = try Harness.gattlab(["fuzz", "reproduce", finding, "--quirk", "ssid-overflow"])
        XCTAssertEqual(quirked.status, 1, quirked.stdout + quirked.stderr)
        XCTAssertTrue(quirked.stdout.contains("firmware-crash"), quirked.stdout)

        let misplaced = try Harness.gattlab(["fuzz", "run", "device-speaker", "--max-pdus", "3", "--runs", "1"])
        XCTAssertEqual(misplaced.status, 64)
        XCTAssertTrue(misplaced.stderr.contains("--max-pdus is for black-box campaigns"), misplaced.stderr)

        // A device that cannot be reached at all is an error (69), not a "target gone" finding.
        let nowhere = dir.appendingPathComponent("nowhere").path
        let absent = try Harness.gattlab(["fuzz", "run", "device-speaker", "--target", "unix:\(path).absent", "--runs", "5", "--findings", nowhere])
        XCTAssertEqual(absent.status, 69, absent.stdout + absent.stderr)
        XCTAssertEqual(absent.stderr, "gattlab: error: cannot reach unix:\(path).absent: cannot connect to unix:\(path).absent: No such file or directory\n"
                       + "gattlab: hint: check that the device (or `gattlab emulate --listen`) is up and the address is right\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: nowhere), "no findings folder for a campaign that never ran")
    }
}
