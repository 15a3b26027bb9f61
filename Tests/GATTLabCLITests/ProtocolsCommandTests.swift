import Foundation
import XCTest

/// `gattlab protocols`: every registered protocol, in registration order, with its UUIDs.
final class ProtocolsCommandTests: XCTestCase {
    /// The five protocols' names, short names and a characteristic UUID each.
    let expected = [
        ("speaker-ota", "speaker", "00000005-1234-5678-9abc-def012345678"),
        ("sensor-scan", "sensor", "12345678-9abc-def0-1234-000000000008"),
        ("nrf7", "nrf7", "14387802-130c-49e7-b877-2881c89cb258"),
        ("esp-prov", "esp", "021aff52-0382-4aea-bff4-6b3f1c5adfb4"),
        ("improv", "improv", "00467768-6228-2272-4663-277478268003"),
    ]

    func testTextListsEveryProtocolInRegistrationOrder() throws {
        let r = try Harness.gattlab(["protocols"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let headings = r.stdout.split(separator: "\n").filter { !$0.hasPrefix(" ") }.map(String.init)
        XCTAssertEqual(headings, expected.map { "\($0.0) (\($0.1))" })
        for (_, _, uuid) in expected {
            XCTAssertTrue(r.stdout.contains("  characteristic \(uuid)"), uuid)
        }
        XCTAssertTrue(r.stdout.contains("  characteristic 00000005-1234-5678-9abc-def012345678 OTA_CREDENTIALS (secret)"), r.stdout)
        XCTAssertTrue(r.stdout.contains("  advertises 021a9004-0382-4aea-bff4-6b3f1c5adfb4 ESP provisioning service"), r.stdout)
        XCTAssertTrue(r.stdout.contains("  key --esp-pop text: "), r.stdout)
        XCTAssertTrue(r.stdout.contains("  endpoint names proto-ver, prov-config, prov-ctrl, prov-scan, prov-session"), r.stdout)
        XCTAssertTrue(r.stdout.contains("  supports built-in table: --profile speaker\n"), r.stdout)
        XCTAssertTrue(r.stdout.contains("  supports timeline: lane ota\n"), r.stdout)
        XCTAssertTrue(r.stdout.contains("  supports audit: ota.open-control, ota.url-plain-http, ota.url-credentials, ota.url-token\n"), r.stdout)
        XCTAssertTrue(r.stdout.contains("  supports emulate: emu:speaker, "), r.stdout)
        XCTAssertTrue(r.stdout.contains("  supports fuzz: status, credentials, url, control, device-speaker\n"), r.stdout)
        let sensor = r.stdout.components(separatedBy: "sensor-scan (sensor)\n")[1].components(separatedBy: "\n\n")[0]
        XCTAssertFalse(sensor.contains("supports audit"), "the sensor has no audit rules: \(sensor)")
        XCTAssertTrue(sensor.contains("  supports emulate: emu:sensor"), sensor)
        XCTAssertTrue(sensor.contains("  supports fuzz: scan, device-sensor"), sensor)
    }

    func testJSONListsEveryProtocolWithItsUUIDs() throws {
        let r = try Harness.gattlab(["protocols", "--format", "json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let list = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(list.map { $0["name"] as? String }, expected.map(\.0))
        XCTAssertEqual(list.map { $0["shortName"] as? String }, expected.map(\.1))
        for (p, (_, _, uuid)) in zip(list, expected) {
            let characteristics = try XCTUnwrap(p["characteristics"] as? [[String: Any]])
            XCTAssertTrue(characteristics.contains { $0["uuid"] as? String == uuid }, uuid)
            let supports = try XCTUnwrap(p["supports"] as? [[String: Any]]).compactMap { $0["name"] as? String }
            XCTAssertEqual(supports.prefix(3), ["decode", "built-in table", "timeline"])
            XCTAssertTrue(supports.contains("emulate"), "\(supports)")
        }
        let nrf7 = try XCTUnwrap(list[2]["characteristics"] as? [[String: Any]])
        XCTAssertEqual(nrf7.first { $0["uuid"] as? String == expected[2].2 }?["secret"] as? Bool, true)
        XCTAssertEqual(nrf7.first { $0["uuid"] as? String == expected[2].2 }?["name"] as? String, "nRF7 Control Point")
        let services = try XCTUnwrap(list[0]["advertisedServices"] as? [[String: Any]])
        XCTAssertEqual(services.first?["uuid"] as? String, "00000001-1234-5678-9abc-def012345678")
    }

    /// Improv, the protocol added as a folder and one registration line.
    func testImprovIsListedWithItsSecretCharacteristicAndAudit() throws {
        let r = try Harness.gattlab(["protocols"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let after = r.stdout.components(separatedBy: "improv (improv)\n")
        XCTAssertEqual(after.count, 2, r.stdout)
        let improv = after.last?.components(separatedBy: "\n\n").first ?? ""
        // Its names are its own (uuidNames), registered with the list.
        XCTAssertTrue(improv.contains("  advertises 00467768-6228-2272-4663-277478268000 Improv Wi-Fi service, 0x4677\n"), improv)
        XCTAssertTrue(improv.contains("  characteristic 00467768-6228-2272-4663-277478268003 Improv RPC Command (secret)\n"), improv)
        XCTAssertTrue(improv.contains("  supports audit: improv.password-plaintext\n"), improv)
        XCTAssertTrue(improv.contains("  supports emulate: emu:improv, 6 scenarios"), improv)
        XCTAssertTrue(improv.contains("  supports fuzz: improv\n"), improv)
    }
}
