import Foundation
import Protocols
import XCTest

/// `gattlab replay` with ESP-IDF security 1 as a user runs it: `--esp-pop` and
/// `--esp-client-key` make a script that runs the session live, the PoP is a secret like the
/// password, `emu:esp` is shaped like the recorded device, and without the key the replay says
/// that it sends the recorded ciphertext.
final class ReplayESPCommandTests: XCTestCase {
    static let sec1 = Harness.root.appendingPathComponent("Captures/emulated/esp-sec1-provision-mtu247.btsnoop").path
    /// The ESP scenarios' phone key (`Scenario.espClientPrivateKey`), as their logs print it.
    static let clientKey = "e85ef1d7abd8e3b078cbfa1e2f08681421ce54995e227725d010d973846dc60f"
    static let password = "correct horse battery staple"

    func testExtractWithTheKeysThenRunLiveAgainstAnotherSeed() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = dir.appendingPathComponent("esp.json").path
        let extract = try Harness.gattlab(["replay", "extract", Self.sec1, "--esp-pop", "abcd1234", "--esp-client-key", Self.clientKey, "-o", script])
        XCTAssertEqual(extract.status, 0, extract.stderr)
        XCTAssertTrue(extract.stderr.contains("ESP-IDF security 1: the session runs live"), extract.stderr)
        let text = try String(contentsOfFile: script, encoding: .utf8)
        XCTAssertTrue(text.contains("\"plain\""), "plaintext in the script")
        XCTAssertTrue(text.contains("\"pop\" : \"********\""), text)
        XCTAssertFalse(text.contains("abcd1234"), "the PoP is redacted")
        XCTAssertFalse(text.contains(Self.clientKey), "the client key is never written")

        let noSet = try Harness.gattlab(["replay", "run", script, "--target", "emu:esp", "--set", "password=\(Self.password)"])
        XCTAssertEqual(noSet.status, 64)
        XCTAssertTrue(Harness.oneError(noSet.stderr), noSet.stderr)
        XCTAssertTrue(noSet.stderr.contains("--set pop="), noSet.stderr)

        // Seed 5: an emulated ESP with other keys than the recording's; the live session does not mind.
        let ok = try Harness.gattlab(["replay", "run", script, "--target", "emu:esp", "--seed", "5", "-v", "--no-color",
                                      "--set", "password=\(Self.password)", "--set", "pop=abcd1234"])
        XCTAssertEqual(ok.status, 0, ok.stdout + ok.stderr)
        XCTAssertTrue(ok.stdout.contains("session sec1 established live (PoP from --set pop=)"), ok.stdout)
        XCTAssertFalse(ok.stdout.contains(Self.password) || ok.stdout.contains("abcd1234"), "no secret in the report")

        let scriptWithKeys = try Harness.gattlab(["replay", "run", script, "--target", "emu:esp", "--esp-pop", "abcd1234"])
        XCTAssertEqual(scriptWithKeys.status, 64)
        XCTAssertTrue(scriptWithKeys.stderr.contains("decrypt a capture, and this is a script"), scriptWithKeys.stderr)
        let badKey = try Harness.gattlab(["replay", "extract", Self.sec1, "--esp-client-key", "not-a-key-0123"])
        XCTAssertEqual(badKey.status, 64)
        XCTAssertTrue(badKey.stderr.contains("--esp-client-key takes 64 hex digits"), badKey.stderr)
        XCTAssertFalse(badKey.stderr.contains("not-a-key-0123"), "the key is not repeated")
    }

    func testACaptureRunsLiveWithTheKeysAndSaysWhatItSendsWithout() throws {
        let live = try Harness.gattlab(["replay", "run", Self.sec1, "--target", "emu:esp", "--seed", "5", "--format", "json",
                                        "--esp-pop", "abcd1234", "--esp-client-key", Self.clientKey])
        XCTAssertEqual(live.status, 0, live.stdout + live.stderr)
        XCTAssertTrue(live.stdout.contains("session sec1 established live (PoP given)"), live.stdout)

        let recorded = try Harness.gattlab(["replay", "run", Self.sec1, "--target", "emu:esp", "--seed", "5"])
        XCTAssertEqual(recorded.status, 1, "the recorded ciphertext against other keys diverges")
        XCTAssertTrue(recorded.stderr.contains("the recorded ciphertext is sent"), recorded.stderr)
        XCTAssertTrue(recorded.stderr.contains("--esp-client-key"), recorded.stderr)
        let same = try Harness.gattlab(["replay", "run", Self.sec1, "--target", "emu:esp"])
        XCTAssertEqual(same.status, 0, "and works against the recorded keys (seed 1):\n\(same.stdout)")
    }
}
