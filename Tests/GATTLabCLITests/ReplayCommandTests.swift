import Foundation
import XCTest

/// `gattlab replay` as a user runs it: extract writes a script (refusing to overwrite), run gives
/// 0 / 1 / 69 / 64 / 65 for equivalent / diverged / target failed / usage / a bad script, and a
/// replay through an emulator process records a capture that decodes.
final class ReplayCommandTests: XCTestCase {
    static let ota = Harness.root.appendingPathComponent("Captures/emulated/speaker-ota-mtu247.btsnoop").path
    static let wrong = Harness.root.appendingPathComponent("Captures/emulated/speaker-wrong-password-mtu247.btsnoop").path

    func testExtractThenRunWithExitCodes() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = dir.appendingPathComponent("session.json").path

        let extract = try Harness.gattlab(["replay", "extract", Self.ota, "-o", script])
        XCTAssertEqual(extract.status, 0, extract.stderr)
        XCTAssertTrue(extract.stderr.contains("28 steps from 1 connection"), extract.stderr)
        XCTAssertTrue(extract.stderr.contains("secrets redacted"), extract.stderr)
        let text = try String(contentsOfFile: script, encoding: .utf8)
        XCTAssertFalse(text.contains("correct horse"))
        let again = try Harness.gattlab(["replay", "extract", Self.ota, "-o", script])
        XCTAssertEqual(again.status, 73, "an existing script is not replaced without --force")

        let noSet = try Harness.gattlab(["replay", "run", script, "--target", "emu:speaker"])
        XCTAssertEqual(noSet.status, 64)
        XCTAssertTrue(noSet.stderr.hasPrefix("gattlab: error: step "), noSet.stderr)
        XCTAssertTrue(noSet.stderr.contains("--set password="), noSet.stderr)

        let ok = try Harness.gattlab(["replay", "run", script, "--target", "emu:speaker", "--set", "password=lab password"])
        XCTAssertEqual(ok.status, 0, ok.stdout + ok.stderr)
        XCTAssertTrue(ok.stdout.contains("equivalent: 28 steps as recorded"), ok.stdout)

        let diverged = try Harness.gattlab(["replay", "run", Self.wrong, "--target", "emu:speaker", "--format", "json"])
        XCTAssertEqual(diverged.status, 1, diverged.stderr)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(diverged.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(json["schema"] as? String, "gattlab.replay-report/1")
        XCTAssertEqual(json["verdict"] as? String, "diverged")
        XCTAssertNotNil(json["firstProblem"] as? Int)

        let failed = try Harness.gattlab(["replay", "run", script, "--target", "unix:\(dir.path)/nobody.sock", "--set", "password=x"])
        XCTAssertEqual(failed.status, 69, failed.stdout + failed.stderr)
        XCTAssertTrue(failed.stdout.contains("target failed at step 1 (connect): cannot connect"), failed.stdout)

        try Data("{\"schema\": \"gattlab.replay/1\"".utf8).write(to: dir.appendingPathComponent("bad.json"))
        let bad = try Harness.gattlab(["replay", "run", dir.appendingPathComponent("bad.json").path, "--target", "emu:speaker"])
        XCTAssertEqual(bad.status, 65)
        XCTAssertTrue(Harness.oneError(bad.stderr), bad.stderr)

        let usage = try Harness.gattlab(["replay", "run", script, "--target", "bluez:hci0/AA:BB"])
        XCTAssertEqual(usage.status, 64)
        XCTAssertTrue(usage.stderr.contains("six hex bytes"), usage.stderr)
        let unknown = try Harness.gattlab(["replay", "run", script, "--target", "emu:toaster"])
        XCTAssertEqual(unknown.status, 64)
    }

    func testReplayThroughAnEmulatorProcessRecordsACapture() throws {
        let gattlab = try Harness.gattlab
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let socket = dir.appendingPathComponent("speaker.sock").path
        let recorded = dir.appendingPathComponent("replay.btsnoop").path
        let emulator = Process()
        emulator.executableURL = gattlab
        emulator.arguments = ["emulate", "speaker-ota", "--listen", "unix:\(socket)", "--speed", "20", "--connections", "1", "--quiet"]
        try emulator.run()
        defer { if emulator.isRunning { emulator.terminate() } }
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: socket) && Date() < deadline { usleep(20_000) }
        let r = try Harness.gattlab(["replay", "run", Self.ota, "--target", "unix:\(socket)", "--speed", "20", "--record", recorded])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("equivalent"), r.stdout)
        emulator.waitUntilExit()
        XCTAssertEqual(emulator.terminationStatus, 0)
        let timeline = try Harness.gattlab(["timeline", recorded])
        XCTAssertEqual(timeline.status, 0, timeline.stderr)
        XCTAssertTrue(timeline.stdout.contains("SUCCEEDED"), timeline.stdout)
        // The replay's own recording replays again, against the in-process device.
        let replayed = try Harness.gattlab(["replay", "run", recorded, "--target", "emu:speaker"])
        XCTAssertEqual(replayed.status, 0, replayed.stdout)
    }

    func testRunOnACaptureTakesTheConnectionOrPeerNamed() throws {
        let demo = Harness.root.appendingPathComponent("Captures/speaker-ota-demo.btsnoop").path
        let chosen = try Harness.gattlab(["replay", "run", demo, "--target", "emu:recorded", "--timing", "fast", "--connection", "0x0040"], timeout: 120)
        XCTAssertEqual(chosen.status, 0, chosen.stdout + chosen.stderr)
        let byPeer = try Harness.gattlab(["replay", "run", demo, "--target", "emu:recorded", "--timing", "fast", "--peer", "C0:FF:EE:12:34:56"], timeout: 120)
        XCTAssertEqual(byPeer.status, 0, byPeer.stdout + byPeer.stderr)
        // A filter that matches nothing: exit 67, one line that says so.
        let none = try Harness.gattlab(["replay", "run", demo, "--target", "emu:recorded", "--peer", "11:22:33:44:55:66"])
        XCTAssertEqual(none.status, 67, none.stderr)
        XCTAssertTrue(Harness.oneError(none.stderr), none.stderr)
        // A script has no connections to choose from.
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = dir.appendingPathComponent("s.json")
        let extract = try Harness.gattlab(["replay", "extract", demo, "-o", script.path])
        XCTAssertEqual(extract.status, 0, extract.stderr)
        let usage = try Harness.gattlab(["replay", "run", script.path, "--target", "emu:speaker", "--peer", "C0:FF:EE:12:34:56"])
        XCTAssertEqual(usage.status, 64, usage.stderr)
        XCTAssertTrue(Harness.oneError(usage.stderr), usage.stderr)
    }

    func testDamagedCaptureGivesTheOneLineError() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cut = dir.appendingPathComponent("cut.btsnoop")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: Self.ota))
        try bytes.prefix(bytes.count - 7).write(to: cut)
        let r = try Harness.gattlab(["replay", "extract", cut.path])
        XCTAssertEqual(r.status, 65)
        XCTAssertTrue(r.stderr.contains("record"), r.stderr)
        XCTAssertTrue(Harness.oneError(r.stderr), r.stderr)
    }
}
