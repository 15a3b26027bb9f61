import Foundation
import XCTest

/// Every capture in Captures/ (the project's regression set): tshark agrees on the ATT layer,
/// the device-protocol messages decode by name, and no password reaches the output.
final class CapturesTests: XCTestCase {
    func captures() throws -> [String] {
        let dir = Harness.root.appendingPathComponent("Captures")
        let files = FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String }
            .filter { $0.hasSuffix(".btsnoop") }.sorted() ?? []
        XCTAssertGreaterThanOrEqual(files.count, 31, "the demo and two recordings per scenario")
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
            }
            // The scenarios' password (Sources/Emulator/Scenarios.swift) and the demo's, as text and hex.
            let text = try Harness.gattlab(["decode", path]).stdout
            for secret in ["correct horse battery", "636f727265637420686f727365", "63 6f 72 72 65 63 74 20 68 6f 72 73 65"] {
                XCTAssertFalse(r.stdout.contains(secret) || text.contains(secret), "\(name) leaks the password")
            }
            for line in Harness.jsonLines(r.stdout, type: "protocol") where line["kind"] as? String == "ota.credentials" {
                XCTAssertTrue((line["password"] as? String)?.hasPrefix("<redacted:") == true, "\(name): password redacted")
            }
        }
    }
}
