import Foundation
import XCTest

/// Improv sessions replayed against emulated devices, at both MTUs: at 23 the phone writes
/// WIFI_SETTINGS in pieces and the device cuts its results at 20 bytes, which the replay must read
/// as the recording's device did (the Wi-Fi world from the pieces joined, a cut result by the
/// strings that arrived) instead of calling every such session diverged.
final class ImprovReplayTests: XCTestCase {
    static let emulated = Harness.root.appendingPathComponent("Captures/emulated")

    func testEveryImprovRecordingReplaysAgainstItsScenariosDevice() throws {
        let captures = try FileManager.default.contentsOfDirectory(atPath: Self.emulated.path)
            .filter { $0.hasPrefix("improv-") && $0.hasSuffix(".btsnoop") }.sorted()
        XCTAssertEqual(captures.count, 12, "\(captures)")
        for name in captures {
            let scenario = name.replacingOccurrences(of: #"-mtu\d+\.btsnoop$"#, with: "", options: .regularExpression)
            let r = try Harness.gattlab(["replay", "run", Self.emulated.appendingPathComponent(name).path, "--target", "emu:\(scenario)"])
            XCTAssertEqual(r.status, 0, "\(name) against emu:\(scenario):\n\(r.stdout)\(r.stderr)")
        }
    }

    func testADeviceThatNeverAuthorizesDiverges() throws {
        for mtu in [23, 247] {
            let path = Self.emulated.appendingPathComponent("improv-provision-mtu\(mtu).btsnoop").path
            let r = try Harness.gattlab(["replay", "run", path, "--target", "emu:improv-not-authorized"])
            XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
            XCTAssertTrue(r.stdout.contains("AUTHORIZATION_REQUIRED"), r.stdout)
        }
    }

    /// At MTU 23 the phone cut WIFI_SETTINGS into two writes. A redacted script needs the
    /// password; given one, the command is rebuilt whole (new length, valid checksum) and cut
    /// again at the phone's write size: a longer password takes a third write (sent by the last
    /// recorded step), a short one fits in one and the second step sends nothing. The device
    /// decodes what was sent, as the recording of the run shows.
    func testSetRebuildsAWiFiSettingsCutAcrossWrites() throws {
        let dir = try Harness.temporaryDirectory()
        let script = dir.appendingPathComponent("improv.json").path
        let capture = Self.emulated.appendingPathComponent("improv-provision-mtu23.btsnoop").path
        let e = try Harness.gattlab(["replay", "extract", capture, "-o", script])
        XCTAssertEqual(e.status, 0, e.stderr)

        let refused = try Harness.gattlab(["replay", "run", script, "--target", "emu:improv-provision", "--timing", "fast"])
        XCTAssertEqual(refused.status, 64, refused.stdout + refused.stderr)
        XCTAssertTrue(refused.stderr.contains("give it with --set password="), refused.stderr)
        XCTAssertTrue(Harness.oneError(refused.stderr), refused.stderr)

        for (password, writes, last) in [("a-much-longer-password-than-before-42", 3, "the rebuilt value's last 2 pieces sent in this step"),
                                         ("pw-12345", 1, "nothing sent: the value rebuilt for --set ended at an earlier write")] {
            let record = dir.appendingPathComponent("run-\(writes).btsnoop").path
            let r = try Harness.gattlab(["replay", "run", script, "--target", "emu:improv-provision", "--timing", "fast",
                                         "--set", "password=\(password)", "--record", record, "--format", "json"])
            XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
            let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            XCTAssertEqual(report["verdict"] as? String, "equivalent", r.stdout)
            let observed = (report["steps"] as? [[String: Any]] ?? []).flatMap { $0["observed"] as? [String] ?? [] }
            XCTAssertTrue(observed.contains(last), "\(observed)")
            let d = try Harness.gattlab(["decode", "--format", "json", "--reveal-secrets", record])
            let settings = Harness.jsonLines(d.stdout, type: "protocol").filter { $0["commandName"] as? String == "WIFI_SETTINGS" }
            XCTAssertEqual(settings.count, 1, d.stdout)
            XCTAssertEqual(settings.first?["password"] as? String, password)
            XCTAssertEqual(settings.first?["ssid"] as? String, "HomeNet")
            XCTAssertEqual(settings.first?["checksum"] as? String, "valid")
            XCTAssertEqual(settings.first?["writes"] as? Int ?? 1, writes, d.stdout)
        }
    }

    /// Replayed from the capture itself, the device's world keeps the recorded password: another
    /// one given with --set is refused as a changed password would be.
    func testAnotherPasswordAgainstTheRecordedWorldIsUnableToConnect() throws {
        let capture = Self.emulated.appendingPathComponent("improv-provision-mtu23.btsnoop").path
        let r = try Harness.gattlab(["replay", "run", capture, "--target", "emu:improv-provision", "--timing", "fast",
                                     "--set", "password=not-the-recorded-one"])
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("UNABLE_TO_CONNECT"), r.stdout)
    }
}
