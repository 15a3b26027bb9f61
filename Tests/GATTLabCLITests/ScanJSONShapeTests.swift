import Foundation
import XCTest

/// Scan results in decode and timeline JSON are arrays of network objects in one shape for the
/// sensor, nRF7 and ESP-IDF (never strings), and the sensor's marker style is named.
final class ScanJSONShapeTests: XCTestCase {
    static let keys: Set<String> = ["ssid", "bssid", "channel", "rssi", "authMode", "band"]

    func check(_ networks: Any?, full: Bool, _ what: String) {
        guard let list = networks as? [[String: Any]], !list.isEmpty else { return XCTFail("\(what): networks is not an array of objects: \(String(describing: networks))") }
        for n in list {
            XCTAssertTrue(Set(n.keys).isSubset(of: Self.keys), "\(what): \(n.keys)")
            XCTAssertNotNil(n["ssid"] as? String, what)
            XCTAssertNotNil(n["rssi"] as? Int, "\(what): rssi is a number")
            if full {
                XCTAssertNotNil(n["channel"] as? Int, what)
                XCTAssertNotNil(n["bssid"] as? String, what)
                XCTAssertTrue(["2.4 GHz", "5 GHz"].contains(n["band"] as? String ?? ""), "\(what): band \(String(describing: n["band"]))")
                XCTAssertNotNil(n["authMode"] as? String, "\(what): authMode is named")
            }
        }
    }

    func timelineEvents(_ capture: String) throws -> [[String: Any]] {
        let r = try Harness.gattlab(["timeline", "--format", "json", "Captures/emulated/\(capture).btsnoop"], directory: Harness.root)
        XCTAssertEqual(r.status, 0, r.stderr)
        let doc = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        return doc?["events"] as? [[String: Any]] ?? []
    }

    func decodeLines(_ capture: String) throws -> [[String: Any]] {
        let r = try Harness.gattlab(["decode", "--format", "json", "Captures/emulated/\(capture).btsnoop"], directory: Harness.root)
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    func testTimelineJSON() throws {
        for (capture, kind, full) in [("sensor-scan-mtu247", "scan.result", false), ("nrf7-provision-mtu247", "nrf7.result", true),
                                      ("esp-sec0-provision-mtu247", "esp.scan", true)] {
            let events = try timelineEvents(capture).filter { e in
                e["kind"] as? String == kind && (e["fields"] as? [String: Any])?["networks"] != nil
            }
            XCTAssertFalse(events.isEmpty, "\(capture): no \(kind) with networks")
            for e in events { check((e["fields"] as? [String: Any])?["networks"], full: full, capture) }
        }
        let scan = try timelineEvents("sensor-scan-separate-markers-mtu23").first { $0["kind"] as? String == "scan.result" }
        XCTAssertEqual((scan?["fields"] as? [String: Any])?["markerStyle"] as? String, "separate-notification")
    }

    func testDecodeJSON() throws {
        for (capture, kind, full) in [("sensor-scan-mtu23", "scan.result", false), ("nrf7-provision-mtu247", "nrf7.result", true),
                                      ("esp-sec0-provision-mtu247", "esp.scan", true)] {
            let lines = try decodeLines(capture).filter { $0["kind"] as? String == kind && $0["networks"] != nil }
            XCTAssertFalse(lines.isEmpty, "\(capture): no \(kind) with networks")
            for l in lines { check(l["networks"], full: full, capture) }
        }
        let scan = try decodeLines("sensor-scan-mtu23").first { $0["kind"] as? String == "scan.result" }
        XCTAssertEqual(scan?["markerStyle"] as? String, "suffix-newline")
    }
}
