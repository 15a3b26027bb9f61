import Foundation
import XCTest

/// The commands as a user meets them: help, exit codes, filters, JSON schema, colour, secrets.
final class CommandLineTests: XCTestCase {
    let demo = Harness.root.appendingPathComponent("Captures/speaker-ota-demo.btsnoop").path

    func testHelpTeaches() throws {
        let r = try Harness.gattlab(["--help"])
        XCTAssertEqual(r.status, 0)
        for word in ["info", "decode", "convert", "Exit codes", "redacted"] { XCTAssertTrue(r.stdout.contains(word), word) }
        let d = try Harness.gattlab(["decode", "--help"])
        XCTAssertTrue(d.stdout.contains("Examples"), d.stdout)
        XCTAssertTrue(d.stdout.contains("--format"), d.stdout)
    }

    func testUsageErrorsExit64() throws {
        XCTAssertEqual(try Harness.gattlab(["decode", "--bogus", demo]).status, 64)
        XCTAssertEqual(try Harness.gattlab(["decode", "--profile", "toaster", demo]).status, 64)
        XCTAssertEqual(try Harness.gattlab(["decode", "--handle", "0x1ffff", demo]).status, 64)
        let table = try Harness.gattlab(["decode", "--gatt-table", "/nonexistent.json", demo])
        XCTAssertEqual(table.status, 64, table.stderr)
        XCTAssertTrue(table.stderr.contains("/nonexistent.json"), table.stderr)
    }

    func testJSONLinesSchema() throws {
        let r = try Harness.gattlab(["decode", "--format", "json", demo])
        XCTAssertEqual(r.status, 0, r.stderr)
        let att = Harness.jsonLines(r.stdout, type: "att")
        XCTAssertEqual(att.count, 55)
        for o in att {
            for key in ["frame", "time", "connection", "direction", "opcode", "opcodeName"] {
                XCTAssertNotNil(o[key], "\(key) in \(o)")
            }
        }
        // A notification on OTA_STATUS after discovery: handle, uuid, name and value.
        let status = att.first { ($0["opcode"] as? Int) == 0x1B }
        XCTAssertEqual(status?["handle"] as? Int, 0x14)
        XCTAssertEqual(status?["uuid"] as? String, "00000008-1234-5678-9abc-def012345678")
        XCTAssertEqual(status?["name"] as? String, "OTA_STATUS")
        XCTAssertEqual(status?["value"] as? String, "0100000000000000")
        XCTAssertEqual(status?["time"] as? Int, 1_763_800_001_831_000)
        XCTAssertEqual(status?["direction"] as? String, "received")
        // The long write of the URL joined into one GATT operation.
        let gatt = Harness.jsonLines(r.stdout, type: "gatt")
        let url = gatt.first { ($0["operation"] as? String) == "long-write" && ($0["handle"] as? Int) == 0x10 }
        XCTAssertEqual(url?["value"] as? String, Array("http://fw.chaoticvolt.eu/speaker/2.4.1.bin".utf8).map { String(format: "%02x", $0) }.joined())
        XCTAssertEqual(url?["parts"] as? Int, 3)
        XCTAssertEqual(url?["firstFrame"] as? Int, 50)
        let link = Harness.jsonLines(r.stdout, type: "link")
        XCTAssertEqual(link.last?["event"] as? String, "disconnection")
        XCTAssertEqual(link.last?["reason"] as? Int, 8)
    }

    func testFilters() throws {
        let byHandle = Harness.jsonLines(try Harness.gattlab(["decode", "--format", "json", "--handle", "0x0014", demo]).stdout, type: "att")
        // 15 status notifications, and the discovery request and error that start at 0x0014.
        XCTAssertEqual(byHandle.count, 17)
        XCTAssertTrue(byHandle.allSatisfy { ($0["handle"] as? Int) == 0x14 })
        let byName = Harness.jsonLines(try Harness.gattlab(["decode", "--format", "json", "--uuid", "OTA_STATUS", demo]).stdout, type: "att")
        // A UUID selects its characteristic's descriptors too: here the CCCD write.
        XCTAssertEqual(byName.count, 18)
        XCTAssertEqual(byName.filter { ($0["handle"] as? Int) == 0x15 }.count, 1)
        let byUUID = Harness.jsonLines(try Harness.gattlab(["decode", "--format", "json", "--uuid", "00000008-1234-5678-9ABC-DEF012345678", demo]).stdout, type: "att")
        XCTAssertEqual(byUUID.count, byName.count)
        XCTAssertEqual(Harness.jsonLines(try Harness.gattlab(["decode", "--format", "json", "--connection", "0x41", demo]).stdout).count, 0)
        XCTAssertEqual(Harness.jsonLines(try Harness.gattlab(["decode", "--format", "json", "--connection", "64", demo]).stdout, type: "att").count, 55)
    }

    /// A secret must not reach any output unless asked for: the demo's Wi-Fi password is a canary.
    func testPasswordRedactedUnlessRevealed() throws {
        let password = "correct horse battery"
        let hex = Array(password.utf8).map { String(format: "%02x", $0) }.joined()
        let spaced = Array(password.utf8).map { String(format: "%02x", $0) }.joined(separator: " ")
        let pieces = [password, hex, spaced, "correct ho", "rse batter", String(hex.prefix(16)), String(hex.suffix(16))]
        for args in [["decode"], ["decode", "--format", "json"], ["info"], ["info", "--format", "json"]] {
            let r = try Harness.gattlab(args + [demo])
            XCTAssertEqual(r.status, 0, r.stderr)
            for p in pieces { XCTAssertFalse(r.stdout.contains(p) || r.stderr.contains(p), "\(args) leaks '\(p)'") }
        }
        let shown = try Harness.gattlab(["decode", "--format", "json", "--reveal-secrets", demo])
        XCTAssertTrue(shown.stdout.contains(hex), "--reveal-secrets shows the value")
        let text = try Harness.gattlab(["decode", demo])
        XCTAssertTrue(text.stdout.contains("<redacted:32 bytes>"), text.stdout)
    }

    func testNoColorWhenNotATerminalOrNO_COLOR() throws {
        let r = try Harness.gattlab(["decode", demo], environment: ["NO_COLOR": "1"])
        XCTAssertFalse(r.stdout.contains("\u{1B}["))
        let piped = try Harness.gattlab(["info", demo])
        XCTAssertFalse(piped.stdout.contains("\u{1B}["), "no escape codes into a pipe")
    }

    func testInfoReportsConnectionAndTable() throws {
        let r = try Harness.gattlab(["info", "--format", "json", demo])
        XCTAssertEqual(r.status, 0, r.stderr)
        let o = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(o["records"] as? Int, 79)
        XCTAssertEqual(o["format"] as? String, "btsnoop")
        let connections = try XCTUnwrap(o["connections"] as? [[String: Any]])
        XCTAssertEqual(connections.count, 1)
        XCTAssertEqual(connections[0]["peer"] as? String, "C0:FF:EE:12:34:56")
        XCTAssertEqual(connections[0]["mtu"] as? Int, 23)
        XCTAssertEqual(connections[0]["encrypted"] as? Bool, false)
        XCTAssertEqual(connections[0]["disconnectReason"] as? Int, 8)
        XCTAssertEqual(connections[0]["attPDUs"] as? Int, 55)
        let tables = try XCTUnwrap(o["tables"] as? [[String: Any]])
        XCTAssertEqual(tables.first?["source"] as? String, "discovered in the capture")

        // The exported table serves a capture cut after discovery (--gatt-table), and says so.
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let tableFile = dir.appendingPathComponent("speaker.json")
        let table = try JSONSerialization.data(withJSONObject: try XCTUnwrap(tables.first?["table"]))
        try table.write(to: tableFile)
        let late = dir.appendingPathComponent("late.btsnoop").path
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: demo)))
        // Keep the header and the records from the credentials write on (record 40 onward).
        var o2 = 16, n = 1, keep = 0
        while o2 + 24 <= bytes.count {
            if n == 40 { keep = o2 }
            let incl = Int(bytes[o2 + 4]) << 24 | Int(bytes[o2 + 5]) << 16 | Int(bytes[o2 + 6]) << 8 | Int(bytes[o2 + 7])
            o2 += 24 + incl
            n += 1
        }
        try Data(bytes[0..<16] + bytes[keep...]).write(to: URL(fileURLWithPath: late))
        let without = try Harness.gattlab(["decode", late])
        XCTAssertTrue(without.stdout.contains("GATT table: none"), without.stdout)
        XCTAssertFalse(without.stdout.contains("OTA_STATUS"))
        let with = try Harness.gattlab(["decode", "--gatt-table", tableFile.path, late])
        XCTAssertTrue(with.stdout.contains("GATT table: from \(tableFile.path)"), with.stdout)
        XCTAssertTrue(with.stdout.contains("OTA_STATUS"))
        XCTAssertTrue(with.stdout.contains("<redacted:"), "the table also tells which values are secret")
        let profile = try Harness.gattlab(["decode", "--profile", "speaker", late])
        XCTAssertTrue(profile.stdout.contains("built-in profile 'speaker'"), profile.stdout)
    }

    /// `-` reads standard input, every format (pcap through libpcap too), with the same output.
    func testStandardInput() throws {
        for name in ["yeelock__btsnoop_hci.log", "iSAP__hci_dump.pklg", "blepcapanalyzer__hci.pcap", "TesiBLE__mouse.pcapng"] {
            let path = try Harness.realCaptures.appendingPathComponent(name).path
            let direct = try Harness.gattlab(["decode", "--format", "json", path])
            let piped = try Harness.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "cat '\(path)' | '\(try Harness.gattlab.path)' decode --format json -"])
            XCTAssertEqual(piped.status, 0, piped.stderr)
            XCTAssertEqual(piped.stdout, direct.stdout, name)
            XCTAssertFalse(direct.stdout.isEmpty)
        }
        let cut = try Harness.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "head -c 3000 '\(try Harness.realCaptures.appendingPathComponent("blepcapanalyzer__hci.pcap").path)' | '\(try Harness.gattlab.path)' info -"])
        XCTAssertEqual(cut.status, 65)
        XCTAssertTrue(cut.stderr.contains("(<stdin>, record 70, byte offset 2978)"), cut.stderr)
    }

    func testClosedPipeEndsQuietly() throws {
        let r = try Harness.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "'\(try Harness.gattlab.path)' decode '\(try Harness.realCaptures.appendingPathComponent("blefun__btsnoop_hci.log").path)' | head -1"])
        XCTAssertEqual(r.status, 0)
        XCTAssertEqual(r.stderr, "")
        XCTAssertEqual(r.stdout.split(separator: "\n").count, 1)
    }
}
