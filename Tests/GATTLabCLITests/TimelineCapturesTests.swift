import Foundation
import XCTest

/// The timelines of Captures/: each matches the expected timeline committed beside it, and each
/// scenario gets exactly the findings its fault should cause (and the normal flows none but the
/// informative ones).
final class TimelineCapturesTests: XCTestCase {
    /// Scenario -> the finding ids its timeline must have, no more. `@23`/`@247`: only at that MTU.
    static let expectedFindings: [String: [String]] = [
        "speaker-ota": [], "speaker-reboot-validate": [], "speaker-mtu23-only": [],
        "speaker-wrong-password": ["ota.wifi-join-failed"], "speaker-5ghz-ssid": ["ota.wifi-join-failed"],
        "speaker-http-connect": ["ota.http-connect-failed"], "speaker-http-status": ["ota.http-status-failed"],
        "speaker-download-stall": ["ota.download-stalled", "ota.error"], "speaker-verify-failure": ["ota.image-rejected"],
        "speaker-encrypted-credentials": ["att.needs-encryption"], "speaker-short-status": ["protocol.status.short"],
        "speaker-disconnect-downloading": ["ota.link-dropped"], "speaker-rollback": ["ota.not-validated"],
        "sensor-scan": [], "sensor-scan-separate-markers": [], "sensor-mtu23-only": [],
        "sensor-scan-missing-end": ["scan.no-end"], "sensor-scan-delayed": ["scan.no-end"],
        // At MTU 23 the lost first chunk holds only the first lines: the answer still ends with END.
        "sensor-scan-dropped": ["scan.no-end@247"],
        "nrf7-provision": ["att.needs-authentication", "nrf7.response-missing@23"],
        "nrf7-wrong-password": ["att.needs-authentication", "wifi.wrong-password"],
        "nrf7-network-not-found": ["att.needs-authentication", "wifi.ap-not-found"],
        "nrf7-invalid-passphrase": ["att.needs-authentication", "nrf7.request-failed", "protocol.nrf7.passphrase-too-long"],
        "nrf7-dhcp-failure": ["att.needs-authentication", "nrf7.connection-failed"],
        "nrf7-disconnect-obtaining-ip": ["att.needs-authentication"],
        "esp-sec0-provision": ["protocol.esp.security0"],
        "esp-sec0-5ghz-ssid": ["wifi.5ghz-only-ssid", "protocol.esp.security0"],
        "esp-sec1-provision": [], "esp-sec1-wrong-password": [], "esp-sec1-wrong-pop": ["esp.session-refused"],
        "speaker-ota-demo": ["ota.link-dropped", "ota.url-plain-http"],
        // Audit scenarios: the timeline diagnoses delivery, not credential handling, so pairing
        // method, key size and a read-back password are the audit's to find; plain http and
        // no_pop are already timeline findings.
        "speaker-secure-ota": [], "speaker-legacy-pairing": [], "speaker-sc-justworks": [], "speaker-credentials-readback": [],
        "speaker-url-secrets": ["ota.url-plain-http"], "esp-sec1-no-pop": ["protocol.esp.no-pop"],
        "nrf7-open-control-point": ["nrf7.response-missing@23"],
        // Improv at MTU 23: results cut at 20 bytes, WIFI_SETTINGS in several writes.
        "improv-provision": ["improv.result-truncated@23", "improv.rpc-split@23"],
        "improv-authorize": ["improv.result-truncated@23", "improv.rpc-split@23"],
        "improv-wrong-password": ["improv.unable-to-connect", "improv.result-truncated@23", "improv.rpc-split@23"],
        "improv-not-authorized": ["improv.not-authorized", "improv.result-truncated@23", "improv.rpc-split@23"],
        "improv-split-rpc": ["improv.rpc-split", "improv.result-truncated@23"],
        "improv-reset-provisioning": ["improv.provisioning-unfinished", "improv.result-truncated@23", "improv.rpc-split@23"],
    ]

    func captures() -> [String] {
        let dir = Harness.root.appendingPathComponent("Captures")
        return (FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String } ?? [])
            .filter { $0.hasSuffix(".btsnoop") }.sorted().map { "Captures/" + $0 }
    }

    func testEveryCaptureMatchesItsExpectedTimeline() throws {
        let files = captures()
        XCTAssertGreaterThanOrEqual(files.count, 61)
        for file in files {
            let expectedPath = Harness.root.appendingPathComponent(String(file.dropLast(".btsnoop".count)) + ".timeline.json")
            guard let expected = try? String(contentsOf: expectedPath, encoding: .utf8) else {
                XCTFail("\(file): no expected timeline \(expectedPath.lastPathComponent) (Scripts/make-captures.sh writes it)")
                continue
            }
            let r = try Harness.gattlab(["timeline", "--format", "json", "--pretty", file], directory: Harness.root)
            XCTAssertEqual(r.status, 0, "\(file): \(r.stderr)")
            if r.stdout != expected {
                let a = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
                let b = expected.split(separator: "\n", omittingEmptySubsequences: false)
                let i = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
                XCTFail("\(file): timeline differs from the expected one at line \(i + 1): got \(i < a.count ? String(a[i]) : "<end>"), expected \(i < b.count ? String(b[i]) : "<end>")")
            }
        }
    }

    func testEachScenarioGetsExactlyItsFindings() throws {
        var checked = Set<String>()
        for file in captures() {
            let name = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
            var scenario = name
            var mtu = ""
            for suffix in ["-mtu23", "-mtu247"] where name.hasSuffix(suffix) {
                scenario = String(name.dropLast(suffix.count))
                mtu = String(suffix.dropFirst(4))
            }
            guard let expected = Self.expectedFindings[scenario] else {
                XCTFail("\(file): no expected findings for scenario \(scenario): add it to the table")
                continue
            }
            checked.insert(scenario)
            let want = Set(expected.compactMap { id -> String? in
                let parts = id.split(separator: "@")
                return parts.count == 1 || String(parts[1]) == mtu ? String(parts[0]) : nil
            })
            let url = Harness.root.appendingPathComponent(String(file.dropLast(".btsnoop".count)) + ".timeline.json")
            let data = try Data(contentsOf: url)
            let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let findings = try XCTUnwrap(doc["findings"] as? [[String: Any]])
            XCTAssertEqual(Set(findings.compactMap { $0["id"] as? String }), want, file)
            for f in findings {
                XCTAssertFalse((f["frames"] as? [Int] ?? []).isEmpty, "\(file): \(f["id"] ?? "") names its frames")
                XCTAssertFalse((f["evidence"] as? String ?? "").isEmpty)
                XCTAssertFalse((f["advice"] as? String ?? "").isEmpty)
            }
        }
        XCTAssertEqual(checked, Set(Self.expectedFindings.keys), "every scenario in the table has captures")
    }
}
