import Foundation
import XCTest

/// Improv Wi-Fi sessions made by Bumble (Tests/Bumble/make_capture.py --capture improv-*): a
/// peripheral written from the Improv BLE spec, not from GATTLab's emulator, and a phone-like
/// central that sends WIFI_SETTINGS in 20-byte writes. decode, timeline, audit and redact read
/// them: the phases, the split command joined, the password redacted and reported as plaintext.
/// Without the venv they skip as BumbleCaptureTests do.
final class ImprovBumbleTests: XCTestCase {
    static let password = "bumble-secret-pass"

    func make(_ capture: String) throws -> String { try Self.make(capture) }

    /// make_capture.py's capture `capture`, in a temporary directory.
    static func make(_ capture: String) throws -> String {
        let python = try BumbleCaptures.python()
        let path = try Harness.temporaryDirectory().appendingPathComponent("\(capture).btsnoop").path
        let made = try Harness.run(python, [Harness.root.appendingPathComponent("Tests/Bumble/make_capture.py").path,
                                            "--capture", capture, "--out", path], timeout: 120)
        XCTAssertEqual(made.status, 0, made.stderr)
        return path
    }

    func timeline(_ path: String) throws -> [String: Any] {
        let r = try Harness.gattlab(["timeline", "--format", "json", path])
        XCTAssertEqual(r.status, 0, r.stderr)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
    }

    func phases(_ t: [String: Any]) -> [String: String] {
        Dictionary((t["phases"] as? [[String: Any]] ?? []).compactMap { p in
            (p["name"] as? String).map { ($0, p["outcome"] as? String ?? "") }
        }, uniquingKeysWith: { a, _ in a })
    }

    func testProvisioningDecodesWithItsPhasesAndThePasswordRedacted() throws {
        let path = try make("improv-provisioning")
        let d = try Harness.gattlab(["decode", "--format", "json", path])
        XCTAssertEqual(d.status, 0, d.stderr)
        let commands = Harness.jsonLines(d.stdout, type: "protocol").filter { $0["kind"] as? String == "improv.command" }
        let settings = try XCTUnwrap(commands.first { $0["commandName"] as? String == "WIFI_SETTINGS" }, d.stdout)
        XCTAssertEqual(settings["ssid"] as? String, "bumble-test-ssid")
        XCTAssertEqual(settings["password"] as? String, "<redacted:18 bytes>")
        XCTAssertEqual(settings["writes"] as? Int, 2)
        XCTAssertEqual(settings["checksum"] as? String, "valid")
        let text = try Harness.gattlab(["decode", path]).stdout
        XCTAssertFalse(d.stdout.contains(Self.password) || text.contains(Self.password), "decode shows the password")

        let t = try timeline(path)
        let device = try XCTUnwrap((t["devices"] as? [[String: Any]])?.first)
        XCTAssertEqual(device["outcome"] as? String, "succeeded", "\(device)")
        XCTAssertTrue((device["summary"] as? String ?? "").contains("http://bumble-improv.local/setup"), "\(device)")
        XCTAssertEqual(phases(t)["authorization"], "ok")
        // Bumble advertised the 0x4677 service data (state 1, capabilities 3): read by the
        // Improv protocol before any connection, once however many reports repeat it.
        let advertising = try XCTUnwrap(device["advertising"] as? [String: Any], "\(device)")
        let announced = try XCTUnwrap(advertising["announcements"] as? [[String: Any]], "\(advertising)")
        XCTAssertEqual(announced.count, 1, "\(announced)")
        let fields = announced.first?["fields"] as? [String: Any]
        XCTAssertEqual(fields?["state"] as? String, "AUTHORIZATION_REQUIRED")
        XCTAssertEqual(fields?["capabilities"] as? [String], ["IDENTIFY", "DEVICE_INFO"])
        XCTAssertEqual(phases(t)["provisioning"], "ok")
        XCTAssertEqual(Set((t["findings"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }), ["improv.rpc-split"])

        let a = try Harness.gattlab(["audit", "--format", "json", path])
        XCTAssertTrue(a.stdout.contains("\"improv.password-plaintext\""), a.stdout)
        XCTAssertFalse(a.stdout.contains(Self.password))

        let out = try Harness.temporaryDirectory().appendingPathComponent("redacted.btsnoop").path
        let r = try Harness.gattlab(["redact", path, "-o", out, "--force"])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(try Data(contentsOf: URL(fileURLWithPath: path)).range(of: Data(Self.password.utf8)) != nil, "the capture holds it")
        XCTAssertNil(try Data(contentsOf: URL(fileURLWithPath: out)).range(of: Data(Self.password.utf8)), "redact leaves the password")
        let revealed = try Harness.gattlab(["decode", "--reveal-secrets", out]).stdout
        XCTAssertTrue(revealed.contains("password \"******************\""), revealed)
        // The frame's checksum was rewritten with the password (it lies in the last of the
        // writes): the redacted command is as valid as the phone's.
        XCTAssertFalse(revealed.contains("checksum"), revealed)
        let after = try timeline(out)
        XCTAssertEqual(Set((after["findings"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }), ["improv.rpc-split"])
    }

    func testAWrongPasswordIsUnableToConnect() throws {
        let t = try timeline(try make("improv-unable-to-connect"))
        let device = try XCTUnwrap((t["devices"] as? [[String: Any]])?.first)
        XCTAssertEqual(device["outcome"] as? String, "failed", "\(device)")
        XCTAssertEqual(phases(t)["provisioning"], "failed")
        let ids = Set((t["findings"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
        XCTAssertTrue(ids.contains("improv.unable-to-connect"), "\(ids)")
    }

    /// An app that sends a frame with a wrong checksum and a command the spec lacks: the timeline
    /// names each fault twice, as GATTLab reads the frame and as the device answered it.
    func testGarbledCommandsAreToldFromTheFrameAndFromTheDevice() throws {
        let t = try timeline(try make("improv-garbled-commands"))
        let findings = (t["findings"] as? [[String: Any]] ?? []).map { ($0["id"] as? String ?? "", $0["evidence"] as? String ?? "") }
        let checksum = findings.filter { $0.0 == "improv.bad-checksum" }.map(\.1)
        let unknown = findings.filter { $0.0 == "improv.unknown-command" }.map(\.1)
        XCTAssertTrue(checksum.contains { $0.hasPrefix("improv.command at ") && $0.contains("checksum 0x04, the bytes sum to 0x03") }, "\(findings)")
        XCTAssertTrue(checksum.contains { $0.hasPrefix("the device answered INVALID_RPC_PACKET at ") }, "\(findings)")
        XCTAssertTrue(unknown.contains { $0.hasPrefix("command 0x42 is not in the spec at ") }, "\(findings)")
        XCTAssertTrue(unknown.contains { $0.hasPrefix("the device answered UNKNOWN_RPC_COMMAND at ") }, "\(findings)")
        XCTAssertEqual(phases(t)["provisioning"], "ok", "the app recovers and provisions")
    }
}
