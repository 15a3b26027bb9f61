import ATT
import Foundation
import GATT
import TestSupport
import XCTest

/// Issue 16: the services discovered in the real captures are named as tshark names them (its
/// own tables, also drawn from the SIG's assigned numbers), and a device whose services are
/// known is not summarised as "no device protocol recognised".
final class ServiceNamesRealCapturesTests: XCTestCase {
    /// Member UUIDs GATTLab names by the service they carry, where tshark names the member they
    /// were assigned to: UUID -> (tshark, GATTLab).
    static let renamed: [UInt16: (tshark: String, gattlab: String)] = [
        0xFE59: ("Nordic Semiconductor ASA", "Nordic Secure DFU"),
        0xFE2C: ("Google LLC", "Google Fast Pair"),
        0xFEAA: ("Google LLC", "Eddystone"),
    ]

    /// The captures whose MANIFEST says they hold a Read By Group Type Response (service discovery).
    static func capturesWithDiscovery() throws -> [String] {
        let text = try String(contentsOf: RealCaptures.require().appendingPathComponent("MANIFEST.tsv"), encoding: .utf8)
        return text.split(separator: "\n").dropFirst().compactMap { line -> String? in
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard let name = columns.first, line.contains("ReadByGrpTypeRsp(0x11)") else { return nil }
            return String(name)
        }
    }

    /// tshark's names for the 16-bit service UUIDs in the device's Read By Group Type Responses:
    /// not those the local host sent (HCI direction 0) nor the central's over the air (nRF
    /// Sniffer direction 1, master to slave), which name the phone's own services.
    static func tsharkServiceNames(_ path: String) throws -> [UInt16: String] {
        let filter = "btatt.opcode == 0x11 && !(hci_h4.direction == 0x00) && !(nordic_ble.direction == 1)"
        let r = try Harness.run(Harness.tshark, ["-r", path, "-o", Harness.tsharkUserDLT, "-Y", filter, "-V"], timeout: 120)
        guard r.status == 0 else { throw TestSetupError("tshark failed on \(path): \(r.stderr)") }
        var names: [UInt16: String] = [:]
        // "        UUID: Heart Rate (0x180d)", the attribute data's UUID field.
        for line in r.stdout.split(separator: "\n") where line.hasPrefix("        UUID: ") && line.hasSuffix(")") {
            let body = line.dropFirst("        UUID: ".count)
            guard let open = body.lastIndex(of: "("), body[open...].hasPrefix("(0x"),
                  let value = UInt16(body[body.index(open, offsetBy: 3)..<body.index(before: body.endIndex)], radix: 16) else { continue }
            names[value] = String(body[..<open]).trimmingCharacters(in: .whitespaces)
        }
        return names
    }

    func testServiceNamesAgreeWithTsharkAndSummariesSayWhatIsKnown() throws {
        _ = try Harness.tshark
        let files = try Self.capturesWithDiscovery()
        guard !files.isEmpty else { throw XCTSkip(RealCaptures.skipMessage) }
        final class Count: @unchecked Sendable {
            let lock = NSLock()
            var value = 0
            func add() { lock.lock(); value += 1; lock.unlock() }
        }
        let named = Count()
        try EveryRealCapture.check(files) { _, path in
            let tshark = try Self.tsharkServiceNames(path)
            var problems: [String] = []
            var compared: [String] = []
            for (uuid, theirs) in tshark.sorted(by: { $0.key < $1.key }) where theirs != "Unknown" {
                let ours = KnownUUIDs.name(BluetoothUUID(uuid16: uuid))
                compared.append("0x\(String(uuid, radix: 16)) \(ours ?? "nil")")
                let expected = Self.renamed[uuid].map { $0.tshark == theirs ? $0.gattlab : "tshark says \(theirs)" } ?? theirs
                if ours != expected {
                    problems.append("0x\(String(uuid, radix: 16)): tshark \"\(theirs)\", GATTLab \"\(ours ?? "nil")\"")
                }
            }
            // A device whose discovery named a service beyond GAP/GATT says so in its summary.
            let r = try Harness.gattlab(["timeline", "--format", "json", path], timeout: 120)
            guard r.status == 0, let doc = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] else {
                return .init(line: "gattlab timeline failed", problems: ["gattlab timeline: \(r.stderr)"])
            }
            let devices = doc["devices"] as? [[String: Any]] ?? []
            let summaries = devices.compactMap { $0["summary"] as? String }
            let knownServices = tshark.filter { $0.key != 0x1800 && $0.key != 0x1801 && $0.value != "Unknown" }
            if devices.count == 1, !knownServices.isEmpty, summaries.contains(where: { $0.contains("no device protocol recognised") }) {
                problems.append("summary says no device protocol recognised though tshark names \(knownServices.values.sorted())")
            }
            for s in summaries {
                guard let list = s.range(of: "services: ") else { continue }
                named.add()
                let listed = s[list.upperBound...].prefix { $0 != ";" }
                for uuid in knownServices.keys where !listed.contains(KnownUUIDs.name(BluetoothUUID(uuid16: uuid)) ?? "?") && devices.count == 1 {
                    problems.append("summary \"\(s)\" leaves out 0x\(String(uuid, radix: 16))")
                }
            }
            return .init(line: compared.joined(separator: ", ") + (summaries.first.map { " | \($0)" } ?? ""), problems: problems)
        }
        XCTAssertGreaterThan(named.value, 0, "no summary named a device's services")
    }
}
