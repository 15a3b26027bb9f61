import Foundation
import Protocols
import XCTest

/// Every capture in Captures/ (the project's regression set): tshark agrees on the ATT layer,
/// the device-protocol messages decode by name, and no password reaches the output.
final class CapturesTests: XCTestCase {
    /// The emulated phone's X25519 key in the ESP security 1 scenarios (`Scenario.espClientPrivateKey`;
    /// Captures/README.md).
    static let espClientKey = "e85ef1d7abd8e3b078cbfa1e2f08681421ce54995e227725d010d973846dc60f"

    func captures() throws -> [String] {
        let dir = Harness.root.appendingPathComponent("Captures")
        let files = FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String }
            .filter { $0.hasSuffix(".btsnoop") }.sorted() ?? []
        XCTAssertGreaterThanOrEqual(files.count, 61, "the demo and two recordings per scenario")
        return files.map { dir.appendingPathComponent($0).path }
    }

    func testTsharkAgreesAndProtocolsDecode() throws {
        _ = try Harness.tshark
        for path in try captures() {
            let t = try WiresharkConformanceTests.tsharkView(path)
            let g = try WiresharkConformanceTests.gattlabView(path)
            XCTAssertEqual(g.status, 0, "\(path): \(g.stderr)")
            XCTAssertEqual(t.pdus, g.pdus, path)
            XCTAssertTrue(t.malformed.isEmpty, "\(path): tshark finds malformed frames \(t.malformed)")
            XCTAssertGreaterThan(t.pdus.count, 10, path)

            let r = try Harness.gattlab(["decode", "--format", "json", path])
            let kinds = Harness.jsonLines(r.stdout, type: "protocol").compactMap { $0["kind"] as? String }
            let name = URL(fileURLWithPath: path).lastPathComponent
            if name.hasPrefix("speaker") {
                XCTAssertTrue(kinds.contains("ota.status"), "\(name): \(Set(kinds))")
            } else if name.hasPrefix("sensor") {
                XCTAssertTrue(kinds.contains("scan.request") && kinds.contains("scan.result"), "\(name): \(Set(kinds))")
            } else if name.hasPrefix("nrf7") {
                XCTAssertTrue(kinds.contains("nrf7.info") && kinds.contains("nrf7.request") && kinds.contains("nrf7.response"),
                              "\(name): \(Set(kinds))")
            } else if name.hasPrefix("esp") {
                XCTAssertTrue(kinds.contains("esp.version") && kinds.contains("esp.session"), "\(name): \(Set(kinds))")
                if name.hasPrefix("esp-sec0") { XCTAssertTrue(kinds.contains("esp.config"), name) }
            } else if name.hasPrefix("improv") {
                XCTAssertTrue(kinds.contains("improv.state") && kinds.contains("improv.command") && kinds.contains("improv.capabilities"),
                              "\(name): \(Set(kinds))")
                let settings = Harness.jsonLines(r.stdout, type: "protocol").filter { $0["kind"] as? String == "improv.command" && $0["commandName"] as? String == "WIFI_SETTINGS" }
                XCTAssertEqual(settings.count, 1, name)
                XCTAssertTrue(settings.allSatisfy { ($0["password"] as? String)?.hasPrefix("<redacted:") == true }, "\(name): password redacted")
            } else {
                XCTAssertEqual(name, "speaker-ota-demo.btsnoop", "a capture no test knows")
            }
            // The scenarios' password (Sources/Emulator/Scenarios.swift) and the demo's, as text and hex.
            let text = try Harness.gattlab(["decode", path]).stdout
            for secret in ["correct horse battery", "636f727265637420686f727365", "63 6f 72 72 65 63 74 20 68 6f 72 73 65"] {
                XCTAssertFalse(r.stdout.contains(secret) || text.contains(secret), "\(name) leaks the password")
            }
            if name.hasPrefix("esp-sec1") && !name.contains("wrong-pop") {
                // Encrypted without the keys; decrypted with them, and the password still redacted.
                let config = Harness.jsonLines(r.stdout, type: "protocol").filter { $0["kind"] as? String == "esp.config" }
                XCTAssertTrue(!config.isEmpty && config.allSatisfy { $0["encrypted"] as? Bool == true }, name)
                // A device without a PoP (no_pop) takes the client key alone.
                let keys = (name.contains("no-pop") ? [] : ["--esp-pop", "abcd1234"]) + ["--esp-client-key", Self.espClientKey]
                let d = try Harness.gattlab(["decode", "--format", "json"] + keys + [path])
                let lines = Harness.jsonLines(d.stdout, type: "protocol")
                XCTAssertTrue(lines.contains { $0["msgName"] as? String == "CmdSetConfig" && ($0["passphrase"] as? String)?.hasPrefix("<redacted:") == true }, name)
                XCTAssertFalse(lines.contains { $0["encrypted"] as? Bool == true }, name)
                XCTAssertFalse(d.stdout.contains("correct horse battery"), "\(name) leaks the password once decrypted")
                let revealed = try Harness.gattlab(["decode", "--reveal-secrets"] + keys + [path]).stdout
                XCTAssertTrue(revealed.contains("correct horse battery"), "\(name): --reveal-secrets shows it")
            }
            for line in Harness.jsonLines(r.stdout, type: "protocol") where line["kind"] as? String == "ota.credentials" {
                XCTAssertTrue((line["password"] as? String)?.hasPrefix("<redacted:") == true, "\(name): password redacted")
            }
        }
    }
}
