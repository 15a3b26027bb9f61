import Foundation
import XCTest

/// Qualcomm controllers write their own diagnostics into Android HCI logs as ACL data on handle
/// 0x0EDC. Where those bytes happen to read as L2CAP CID 4, tshark dissects them as ATT (frame
/// 297 of DSD6__btsnoop_hci.log, 757 of btpcaptest__bluetooth-infocar.pcap, 244, 1886 and 8646
/// of fuut__hci_snoop20250125165300.cfa), and `decode` still shows them as tshark does; but no
/// connection was ever made with that handle, so the timeline has no connection on it and no
/// device with an unknown address made of it. The captures' real devices stay as they were.
final class VendorDiagnosticsRealCapturesTests: XCTestCase {
    /// Per capture: how many devices the timeline lists, and the handles of each connected
    /// device ("-" for an unknown address).
    static let expected: [String: (devices: Int, connected: [String: [String]])] = [
        "DSD6__btsnoop_hci.log": (7, ["F9:E5:10:60:E8:60": ["0x0002"]]),
        "DSD6__btsnoop_hci.log.63758104325217312": (11, [:]),
        "DSD6__btsnoop_hci.log.63758160418464951": (4, ["F9:E5:10:60:E8:60": ["0x0002"]]),
        "btpcaptest__bluetooth-infocar.pcap": (2, ["-": ["0x000a"]]),
        "fuut__hci_snoop20250125165300.cfa": (18, ["B4:46:B3:7F:22:91": ["0x0002"],
                                                   "FF:B8:37:72:4F:F8": ["0x0003", "0x0004", "0x0005", "0x0006"]]),
    ]

    func testHandle0x0EDCMakesNoConnectionNorDevice() throws {
        let folder = try Harness.realCaptures
        for (name, want) in Self.expected.sorted(by: { $0.key < $1.key }) {
            let r = try Harness.gattlab(["timeline", "--format", "json", folder.appendingPathComponent(name).path], timeout: 300)
            XCTAssertEqual(r.status, 0, "\(name): \(r.stderr)")
            let doc = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], name)
            let devices = try XCTUnwrap(doc["devices"] as? [[String: Any]], name)
            let connections = try XCTUnwrap(doc["connections"] as? [[String: Any]], name)
            XCTAssertFalse(connections.contains { ($0["handle"] as? String) == "0x0edc" }, "\(name): a connection on handle 0x0EDC")
            XCTAssertEqual(devices.count, want.devices, name)
            var connected: [String: [String]] = [:]
            for d in devices {
                let handles = connections.filter { $0["device"] as? Int == d["id"] as? Int }.compactMap { $0["handle"] as? String }
                if !handles.isEmpty { connected[(d["address"] as? String) ?? "-", default: []] += handles }
            }
            XCTAssertEqual(connected, want.connected, name)
        }
    }
}
