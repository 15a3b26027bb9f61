import Foundation
import XCTest

/// Issue 4, "It must show" 2: on every real capture `gattlab timeline` runs without error, and its
/// link story agrees with tshark: the connections made in the capture, the disconnect reasons,
/// the successful encryption changes, and the MTU exchanges (the server MTU of each response).
final class TimelineRealCapturesTests: XCTestCase {
    struct LinkStory: Equatable, CustomStringConvertible {
        var connections = 0
        var disconnectReasons: [Int] = []
        var encryptions = 0
        var serverMTUs: [Int] = []
        var description: String {
            "connections \(connections), disconnects \(disconnectReasons), encryptions \(encryptions), MTU responses \(serverMTUs)"
        }
    }

    static func tsharkStory(_ file: String) throws -> LinkStory {
        let fields = ["frame.number", "bthci_evt.code", "bthci_evt.le_meta_subevent", "bthci_evt.status", "bthci_evt.reason",
                      "bthci_evt.encryption_enable", "btatt.opcode", "btatt.server_rx_mtu", "btle.advertising_header.pdu_type",
                      "btle.control_opcode", "btle.control.error_code", "nordic_ble.crcok", "btle.crc.incorrect", "_ws.malformed",
                      "btle.advertising_header.length"]
        let r = try Harness.run(Harness.tshark, ["-r", file, "-o", Harness.tsharkUserDLT, "-T", "fields", "-E", "occurrence=f"]
                                + fields.flatMap { ["-e", $0] }, timeout: 120)
        XCTAssertEqual(r.status, 0, r.stderr)
        var s = LinkStory()
        for line in r.stdout.split(separator: "\n") {
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= fields.count else { continue }
            func int(_ i: Int) -> Int? {
                let v = f[i]
                return v.hasPrefix("0x") ? Int(v.dropFirst(2), radix: 16) : Int(v)
            }
            let status = int(3) ?? 0
            switch int(1) {
            case 0x03?: if status == 0 { s.connections += 1 }
            case 0x3E? where [0x01, 0x0A, 0x29].contains(int(2) ?? -1): if status == 0 { s.connections += 1 }
            case 0x05?: if status == 0, let reason = int(4) { s.disconnectReasons.append(reason) }
            case 0x08?, 0x59?: if status == 0, (int(5) ?? 0) != 0 { s.encryptions += 1 }
            default: break
            }
            if int(6) == 0x03, let mtu = int(7) { s.serverMTUs.append(mtu) }
            // Over the air: packets that arrived whole (CRC good, not malformed) count, as a
            // receiver would act on them; a CONNECT_IND needs its full 34 bytes.
            let received = f[11] != "0" && f[12].isEmpty && f[13].isEmpty
            if int(8) == 0x05, int(1) == nil, received, int(14) == 34 { s.connections += 1 }  // CONNECT_IND
            if int(9) == 0x02, received, let reason = int(10) { s.disconnectReasons.append(reason) }  // LL_TERMINATE_IND
            if int(9) == 0x05, received { s.encryptions += 1 }  // LL_START_ENC_REQ
        }
        s.disconnectReasons.sort()
        return s
    }

    static func gattlabStory(_ doc: [String: Any]) -> LinkStory {
        var s = LinkStory()
        for c in doc["connections"] as? [[String: Any]] ?? [] {
            if c["alreadyConnected"] as? Bool != true { s.connections += 1 }
            if let d = c["disconnect"] as? [String: Any], let code = d["code"] as? Int { s.disconnectReasons.append(code) }
        }
        for e in doc["events"] as? [[String: Any]] ?? [] {
            let fields = e["fields"] as? [String: Any] ?? [:]
            switch e["kind"] as? String {
            case "link.encryption"?:
                if fields["enabled"] as? Bool == true, fields["status"] as? String == "Success" { s.encryptions += 1 }
            case "link.mtu"?:
                if let server = fields["server"] as? Int { s.serverMTUs.append(server) }
            default: break
            }
        }
        s.disconnectReasons.sort()
        return s
    }

    func testEveryRealCaptureRunsAndItsLinkStoryAgreesWithTshark() throws {
        _ = try Harness.tshark
        let files = try Harness.manifest()
        XCTAssertGreaterThan(files.count, 60)
        let agreed = try EveryRealCapture.check(files) { _, path in
            // tshark does not decrypt: neither does gattlab here (the link story of a sniffed
            // legacy pairing's keys is LinkDecryptionTests').
            let r = try Harness.gattlab(["timeline", "--format", "json", "--no-pairing-keys", path], timeout: 120)
            var problems: [String] = []
            if r.status != 0 || r.signalled { problems.append("exit \(r.status): \(r.stderr)") }
            let doc = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any] ?? [:]
            if doc.isEmpty { problems.append("no JSON document") }
            let ours = Self.gattlabStory(doc)
            let theirs = try Self.tsharkStory(path)
            if ours != theirs { problems.append("gattlab: \(ours); tshark: \(theirs)") }
            // Accept-list attempts and cancels report a peer of all zeros: never a device.
            let addresses = (doc["devices"] as? [[String: Any]] ?? []).compactMap { $0["address"] as? String }
            if addresses.contains("00:00:00:00:00:00") { problems.append("a device called 00:00:00:00:00:00") }
            return .init(line: "\(theirs)", problems: problems)
        }
        print("timeline link story: \(agreed) of \(files.count) real captures agree with tshark")
    }
}
