import Foundation
import HCI
import TestSupport
import XCTest

/// Issue 16: encrypted sniffed links. Without a key their PDUs are reported as encrypted (never
/// as malformed L2CAP or LL control garbage); with `--ltk` they decrypt and decode like any
/// other traffic; the key is never printed.
final class LinkDecryptionTests: XCTestCase {
    /// Core Vol 6 Part C 1 sample LTK (most significant octet first) and diversifiers as on air.
    static let ltkHex = "4c68384139f574d836bcf34e9dfb01bf"
    static let ltk = hex(ltkHex)
    static let skdm = hex("1302f1e0dfcebdac"), ivm = hex("24abdcba"), skds = hex("7968574635241302"), ivs = hex("bebaafde")

    static func hex(_ s: String) -> [UInt8] {
        stride(from: 0, to: s.count, by: 2).map { i in
            let a = s.index(s.startIndex, offsetBy: i)
            return UInt8(s[a..<s.index(a, offsetBy: 2)], radix: 16) ?? 0
        }
    }

    static func l2cap(_ att: [UInt8]) -> [UInt8] {
        [UInt8(att.count & 0xFF), UInt8(att.count >> 8), 0x04, 0x00] + att
    }

    /// The ATT exchange after encryption: (central to peripheral, ATT PDU).
    static let att: [(Bool, [UInt8])] = [
        (true, [0x02, 0xF7, 0x00]),                                  // Exchange MTU Request
        (false, [0x03, 0x17, 0x00]),                                 // Exchange MTU Response
        (true, [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28]),          // Read By Group Type Request
        (false, [0x11, 0x06, 0x01, 0x00, 0x05, 0x00, 0x00, 0x18]),   // Read By Group Type Response
        (true, [0x12, 0x10, 0x00] + Array("password123".utf8)),      // Write Request
        (false, [0x13]),                                             // Write Response
        (false, [0x1B, 0x12, 0x00] + Array(repeating: 0x55, count: 40)),  // Notification: two fragments
    ]

    /// A DLT 272 (nRF Sniffer v2) pcap of a session: CONNECT_IND, the encryption start, then
    /// the ATT exchange with empty PDUs between; encrypted with `key` when given (the sniffer
    /// marks those packets encrypted, MIC not checked), else the same session in plaintext.
    static func capture(encryptedWith key: [UInt8]?) -> [UInt8] {
        var out: [UInt8] = [0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0, 0x10, 0x01, 0, 0]
        var frame = 0
        func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }
        func record(_ ll: [UInt8], c2p: Bool, encrypted: Bool) {
            frame += 1
            let flags: UInt8 = 0x01 | (c2p ? 0x02 : 0) | (encrypted ? 0x04 : 0)
            let length = 10 + ll.count
            let header: [UInt8] = [0x01, UInt8(length & 0xFF), UInt8(length >> 8), 0x02, UInt8(frame & 0xFF), 0x00, 0x06,
                                   0x0A, flags, 0x0C, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
            let bytes = header + ll
            out += le32(1_700_000_000) + le32(frame * 1250) + le32(bytes.count) + le32(bytes.count) + bytes
        }
        let aa: [UInt8] = [0x2A, 0x4B, 0x65, 0x50], crc: [UInt8] = [0xC1, 0xC2, 0xC3]
        var connect: [UInt8] = [0xD6, 0xBE, 0x89, 0x8E, 0xC5, 0x22, 0x01, 0x02, 0x03, 0x04, 0x05, 0xC6, 0x11, 0x12, 0x13, 0x14, 0x15, 0xD6]
        connect += aa + [0x7C, 0x5E, 0x01, 0x02, 0x05, 0x00, 0x24, 0x00, 0x01, 0x00, 0xC8, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0x2A] + crc
        record(connect, c2p: false, encrypted: false)
        var sn = [true: UInt8(1), false: UInt8(1)]
        var counter = [true: UInt64(0), false: UInt64(0)]
        let cipher = key.flatMap { LinkLayerCipher(ltk: $0, skdm: skdm, ivm: ivm, skds: skds, ivs: ivs) }
        var started = false
        func pdu(_ c2p: Bool, llid: UInt8, _ payload: [UInt8]) {
            sn[c2p]! ^= 1
            let header = llid | sn[c2p]! << 3
            var body = payload
            let encrypt = started && !payload.isEmpty
            if encrypt, let cipher {
                body = cipher.encrypt(payload, header: header, counter: counter[c2p]!, centralToPeripheral: c2p)
                counter[c2p]! += 1
            }
            record(aa + [header, UInt8(body.count)] + body + crc, c2p: c2p, encrypted: encrypt && cipher != nil)
        }
        pdu(true, llid: 3, [0x03] + Array(repeating: 0, count: 10) + skdm + ivm)
        pdu(false, llid: 3, [0x04] + skds + ivs)
        pdu(true, llid: 1, [])
        pdu(false, llid: 3, [0x05])
        started = true
        pdu(true, llid: 3, [0x06])
        pdu(false, llid: 3, [0x06])
        for (c2p, att) in att {
            let sdu = l2cap(att)
            pdu(c2p, llid: 2, Array(sdu.prefix(27)))
            pdu(!c2p, llid: 1, [])
            if sdu.count > 27 {
                pdu(c2p, llid: 1, Array(sdu.dropFirst(27)))
                pdu(!c2p, llid: 1, [])
            }
        }
        return out
    }

    func write(_ bytes: [UInt8], _ name: String) throws -> String {
        let dir = try Harness.temporaryDirectory()
        let path = dir.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// (direction, opcode) of each ATT line of `decode --format json`.
    func attSequence(_ arguments: [String]) throws -> [String] {
        let r = try Harness.gattlab(["decode", "--format", "json"] + arguments)
        XCTAssertEqual(r.status, 0, r.stderr)
        return Harness.jsonLines(r.stdout, type: "att").map { "\($0["direction"] ?? "?") \($0["opcode"] ?? "?")" }
    }

    func testEncryptedCaptureDecryptsToThePlaintextSession() throws {
        let plain = try write(Self.capture(encryptedWith: nil), "plain.pcap")
        let encrypted = try write(Self.capture(encryptedWith: Self.ltk), "encrypted.pcap")
        let reference = try attSequence([plain])
        XCTAssertEqual(reference.count, Self.att.count)
        XCTAssertEqual(try attSequence(["--ltk", Self.ltkHex, encrypted]), reference)
        // Least significant octet first, from a key file with an address: the same.
        let reversedHex = Self.ltk.reversed().map { String(format: "%02x", $0) }.joined()
        let keys = try write(Array("# sample\nD6:15:14:13:12:11 \(reversedHex)\n".utf8), "keys.txt")
        XCTAssertEqual(try attSequence(["--ltk-file", keys, encrypted]), reference)

        // Without the key: nothing above the link layer, every encrypted PDU said so, nothing malformed.
        let r = try Harness.gattlab(["decode", "--format", "json", encrypted])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(Harness.jsonLines(r.stdout, type: "att").isEmpty)
        XCTAssertTrue(Harness.jsonLines(r.stdout, type: "malformed").isEmpty, r.stdout)
        let encryptedLines = Harness.jsonLines(r.stdout, type: "link").filter { $0["event"] as? String == "encrypted" }
        XCTAssertEqual(encryptedLines.count, 2 + Self.att.count + 1)
        XCTAssertEqual(encryptedLines.first?["reason"] as? String, "no-key")

        // A wrong key: MIC failures, then one line saying the key is likely wrong.
        let wrong = try Harness.gattlab(["decode", "--ltk", String(repeating: "ab", count: 16), encrypted])
        XCTAssertEqual(wrong.status, 0, wrong.stderr)
        XCTAssertTrue(wrong.stdout.contains("MIC check failed"), wrong.stdout)
        XCTAssertTrue(wrong.stdout.contains("the LTK is likely wrong for this link"), wrong.stdout)
        XCTAssertTrue(Harness.jsonLines(try Harness.gattlab(["decode", "--format", "json", "--ltk", String(repeating: "ab", count: 16), encrypted]).stdout, type: "att").isEmpty)

        // The key is a secret: in no output, text or JSON, decode or timeline.
        for args in [["decode"], ["decode", "--format", "json"], ["timeline"], ["timeline", "--format", "json"]] {
            let out = try Harness.gattlab(args + ["--ltk", Self.ltkHex, encrypted])
            XCTAssertEqual(out.status, 0, "\(args): \(out.stderr)")
            for form in [Self.ltkHex, Self.ltkHex.uppercased(), String(Self.ltkHex.prefix(16))] {
                XCTAssertFalse((out.stdout + out.stderr).lowercased().contains(form.lowercased()), "\(args) printed the LTK")
            }
        }
        let timeline = try Harness.gattlab(["timeline", "--ltk", Self.ltkHex, encrypted])
        XCTAssertTrue(timeline.stdout.contains("LTK verified"), timeline.stdout)
    }

    func testBadLTKIsAUsageError() throws {
        let encrypted = try write(Self.capture(encryptedWith: Self.ltk), "encrypted.pcap")
        for args in [["--ltk", "12345"], ["--ltk", "zz68384139f574d836bcf34e9dfb01bf"]] {
            let r = try Harness.gattlab(["decode"] + args + [encrypted])
            XCTAssertEqual(r.status, 64, r.stderr)
            XCTAssertTrue(Harness.oneError(r.stderr), r.stderr)
            XCTAssertFalse(r.stderr.contains(args[1]), "the bad key was repeated: \(r.stderr)")
        }
        let file = try write(Array("C0:FF:EE:00:11:22 \(Self.ltkHex)\nnot-a-key\n".utf8), "keys.txt")
        for args in [["--ltk-file", file], ["--ltk-file", "/nonexistent/keys.txt"]] {
            let r = try Harness.gattlab(["timeline"] + args + [encrypted])
            XCTAssertEqual(r.status, 64, r.stderr)
            XCTAssertTrue(Harness.oneError(r.stderr), r.stderr)
            XCTAssertFalse(r.stderr.contains(Self.ltkHex), r.stderr)
        }
    }

    // MARK: Real captures

    /// crackle's known-LTK test: decrypted with the LTK of its args.txt, the ATT sequence is what
    /// tshark shows on crackle's own decrypted output of the same capture.
    func testCrackleKnownLTKDecryptsAsCrackleDoes() throws {
        let encrypted = try RealCaptures.path("crackle__known_ltk.pcap")
        let decrypted = try RealCaptures.path("crackle__known_ltk_decrypted_expected_output.pcap")
        let expected = try WiresharkConformanceTests.tsharkView(decrypted).pdus
        XCTAssertFalse(expected.isEmpty)
        let r = try Harness.gattlab(["decode", "--format", "json", "--att-only", "--ltk", "7f62c053f104a5bbe68b1d896a2ed49c", encrypted])
        XCTAssertEqual(r.status, 0, r.stderr)
        let got = Harness.jsonLines(r.stdout, type: "att").compactMap { o -> WiresharkConformanceTests.PDU? in
            guard let frame = o["frame"] as? Int, let opcode = o["opcode"] as? Int else { return nil }
            return WiresharkConformanceTests.PDU(frame: frame, opcode: opcode)
        }
        XCTAssertEqual(got, expected)
        // And without the key, no ATT at all (tshark decodes none either), and nothing malformed:
        // frame 235's LL length (132) is damaged, a continuation tshark shows as an unreassembled
        // fragment; it is a note.
        let plain = try Harness.gattlab(["decode", "--format", "json", encrypted])
        XCTAssertTrue(Harness.jsonLines(plain.stdout, type: "att").isEmpty)
        XCTAssertEqual(Harness.jsonLines(plain.stdout, type: "malformed").count, 0)
        let notes = Harness.jsonLines(plain.stdout, type: "note").filter { $0["layer"] as? String == "ll" }
        XCTAssertEqual(notes.compactMap { $0["frame"] as? Int }, [235])
    }

    /// nRF Sniffer captures of encrypted links the sniffer could not decrypt: every encrypted PDU
    /// is reported as such, none as malformed.
    func testTesiBLEEncryptedLinksAreReportedNotMalformed() throws {
        for name in ["TesiBLE__Lv4_JW.pcapng", "TesiBLE__Lv4_passkey.pcapng", "TesiBLE__garmin.pcapng"] {
            let path = try RealCaptures.path(name)
            let r = try Harness.gattlab(["decode", "--format", "json", path])
            XCTAssertEqual(r.status, 0, r.stderr)
            let encrypted = Harness.jsonLines(r.stdout, type: "link").filter { $0["event"] as? String == "encrypted" }
            XCTAssertFalse(encrypted.isEmpty, name)
            let firstEncrypted = encrypted.compactMap { $0["frame"] as? Int }.min() ?? 0
            let malformedAfter = Harness.jsonLines(r.stdout, type: "malformed").filter { ($0["frame"] as? Int ?? 0) >= firstEncrypted }
            XCTAssertTrue(malformedAfter.isEmpty, "\(name): \(malformedAfter.prefix(3))")
        }
    }

    // MARK: Keys of sniffed legacy pairings (crackle's own test inputs)

    /// (frame, code) of the SMP lines and (frame, opcode) of the ATT lines, and the notes, of
    /// `decode --format json`.
    func pairingView(_ path: String, _ extra: [String] = []) throws -> (smp: [String], att: [String], notes: [String], stdout: String) {
        let r = try Harness.gattlab(["decode", "--format", "json"] + extra + [path], timeout: 120)
        XCTAssertEqual(r.status, 0, r.stderr)
        func pairs(_ type: String, _ field: String) -> [String] {
            Harness.jsonLines(r.stdout, type: type).compactMap { o in
                guard let f = o["frame"] as? Int, let v = o[field] as? Int else { return nil }
                return "\(f):\(v)"
            }
        }
        let notes = Harness.jsonLines(r.stdout, type: "note").compactMap { $0["text"] as? String }
        return (pairs("smp", "code"), pairs("att", "opcode"), notes, r.stdout)
    }

    /// The LTK distributed at `frame` as `--reveal-secrets` shows it (on air, least significant
    /// octet first), and that without it no form of the key is printed.
    func assertDistributedLTK(_ path: String, frame: Int, crackleSays ltk: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let onAir = Self.hex(ltk).reversed().map { String(format: "%02x", $0) }.joined()
        let revealed = try Harness.gattlab(["decode", "--format", "json", "--reveal-secrets", path], timeout: 120)
        let smp = Harness.jsonLines(revealed.stdout, type: "smp").first { $0["frame"] as? Int == frame }
        XCTAssertEqual(smp?["summary"] as? String, "Encryption Information LTK=\(onAir)", file: file, line: line)
        let hidden = try Harness.gattlab(["decode", path], timeout: 120)
        XCTAssertFalse(hidden.stdout.contains(onAir) || hidden.stdout.contains(ltk), "the LTK is printed only when revealed", file: file, line: line)
    }

    /// crackle's test 01: Just Works (TK 000000) found from the confirm values; the STK decrypts
    /// the SMP key distribution, whose LTK is crackle's 7f62c053...; the SMP sequence is what tshark
    /// shows on crackle's decrypted output (tests/01_crack/out/expected_output.pcap).
    func testCrackleJustWorksPairingIsDecrypted() throws {
        let path = try RealCaptures.path("crackle__pairing_and_ltk_exchange.pcap")
        let v = try pairingView(path)
        XCTAssertEqual(v.smp, ["566:1", "568:2", "569:3", "572:3", "573:4", "576:4", "589:6"])
        XCTAssertTrue(v.notes.contains { $0.hasPrefix("legacy pairing: TK found: 000000 (Just Works)") }, "\(v.notes)")
        XCTAssertTrue(v.notes.contains("decrypting with the STK of the legacy pairing (TK 000000)"), "\(v.notes)")
        XCTAssertTrue(Harness.jsonLines(v.stdout, type: "malformed").isEmpty, v.stdout)
        try assertDistributedLTK(path, frame: 589, crackleSays: "7f62c053f104a5bbe68b1d896a2ed49c")
        // Turned off: the pairing's encrypted part stays encrypted, as tshark shows it.
        let off = try pairingView(path, ["--no-pairing-keys"])
        XCTAssertEqual(off.smp, ["566:1", "568:2", "569:3", "572:3", "573:4", "576:4"])
        XCTAssertTrue(off.notes.isEmpty, "\(off.notes)")
    }

    /// crackle's test 03: the confirm values were cut out, so no TK can be searched; Just Works'
    /// STK is tried and its MIC verifies (crackle's "slow STK brute force" finds the same TK).
    func testCrackleMissingConfirmsFallsBackToJustWorksCheckedByTheMIC() throws {
        let path = try RealCaptures.path("crackle__missing_confirms.pcap")
        let v = try pairingView(path)
        XCTAssertEqual(v.smp, ["566:1", "568:2", "571:4", "574:4", "587:6"])
        XCTAssertTrue(v.notes.contains { $0.contains("Pairing Confirm is not in the capture") && $0.contains("Just Works (TK 000000) is tried") }, "\(v.notes)")
        XCTAssertTrue(v.notes.contains("decrypting with the STK of Just Works (TK 000000), confirmed by the MIC"), "\(v.notes)")
        try assertDistributedLTK(path, frame: 587, crackleSays: "7f62c053f104a5bbe68b1d896a2ed49c")
    }

    /// crackle's test 05: a passkey pairing; the search finds crackle's 461140, the STK decrypts the
    /// link and both LTKs distributed (crackle prints the central's, 9c046926...). The ATT sequence
    /// is what tshark shows on crackle's decrypted output (tests/05_numeric_pin/out/expected_output.pcap),
    /// plus frame 197: a retransmission of frame 195 that crackle leaves encrypted (tshark shows
    /// its ciphertext as an L2CAP fragment) and that decrypts under the repeated packet counter.
    func testCracklePasskeyIsFoundAndTheLinkDecrypted() throws {
        let path = try RealCaptures.path("crackle__numeric_pin.pcap")
        let started = Date()
        let v = try pairingView(path)
        print("numeric_pin: decoded with the passkey search in \(Int(Date().timeIntervalSince(started) * 1000)) ms")
        XCTAssertEqual(v.smp, ["19:1", "28:2", "31:3", "153:3", "154:4", "157:4", "173:6", "175:7", "177:8", "179:6", "181:7"])
        // The passkey is a secret (a device with a static passkey keeps it): its digits only
        // with --reveal-secrets.
        XCTAssertTrue(v.notes.contains { $0.hasPrefix("legacy pairing: TK found: ****** (shown with --reveal-secrets) (passkey)") }, "\(v.notes)")
        XCTAssertFalse(v.stdout.contains("461140"))
        XCTAssertTrue(v.notes.contains("decrypting with the STK of the legacy pairing (its passkey)"), "\(v.notes)")
        let revealed = try pairingView(path, ["--reveal-secrets"])
        XCTAssertTrue(revealed.notes.contains("legacy pairing: TK found: 461140 (passkey); the STK decrypts what follows"), "\(revealed.notes)")
        XCTAssertEqual(v.notes.filter { $0.hasPrefix("LTK from SMP key distribution") }.count, 2, "\(v.notes)")
        let crackle = "26:72 29:1 54:8 55:9 183:16 186:17 187:16 190:17 191:16 194:17 195:16 200:17 201:16 204:17 205:16 208:16 211:17 "
            + "212:16 215:1 216:8 217:8 218:9 219:1 220:8 223:1 224:8 228:1 229:8 232:1 233:8 236:1 237:8 240:1 241:8 244:1 245:8 248:8 "
            + "251:1 252:8 254:1 255:8 258:9 259:2 262:3 263:8 266:8 269:9 270:8 273:1 274:4 277:18 280:19"
        XCTAssertEqual(v.att.filter { $0 != "197:16" }, crackle.split(separator: " ").map(String.init))
        XCTAssertTrue(v.att.contains("197:16"))
        try assertDistributedLTK(path, frame: 179, crackleSays: "9c0469262e521d1d40e095e7c542c5ec")
    }

    /// The keys distributed on a link gattlab decrypted are ciphertext in the file: the audit
    /// says redact cannot overwrite them (anyone with the file can decrypt them too).
    func testAuditSaysRedactCannotOverwriteWhatADecryptedLinkShowed() throws {
        let path = try RealCaptures.path("crackle__numeric_pin.pcap")
        let r = try Harness.gattlab(["audit", "--format", "json", path], timeout: 120)
        let doc = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any]
        let reports = doc?["reports"] as? [[String: Any]] ?? (doc.map { [$0] } ?? [])
        let findings = reports.flatMap { $0["findings"] as? [[String: Any]] ?? [] }
        let holds = findings.first { $0["id"] as? String == "capture.holds-secrets" }
        XCTAssertTrue((holds?["evidence"] as? String ?? "").contains("3 not located in the file's bytes, which redact cannot overwrite"), "\(holds ?? [:]) \(r.stderr)")
        XCTAssertTrue(findings.contains { $0["id"] as? String == "pairing.legacy" })
    }

    /// A redacted copy of a sniffed legacy pairing keeps its keys: the confirm and random values
    /// are blanked, so no TK is found, nothing is decrypted, and the Just Works fallback's MIC
    /// fails. The same capture before redaction gives its TK and decrypted ATT.
    func testRedactedLegacyPairingsGiveNoKeyAway() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gattlab-redact-pairing-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for (name, pairingFrames) in [("crackle__pairing_and_ltk_exchange.pcap", 4), ("crackle__numeric_pin.pcap", 4), ("crackle__missing_confirms.pcap", 2)] {
            let path = try RealCaptures.path(name)
            let before = try pairingView(path)
            XCTAssertTrue(before.notes.contains { $0.hasPrefix("decrypting with the STK") }, "\(name): \(before.notes)")
            let audit = try Harness.gattlab(["audit", "--format", "json", path], timeout: 120)
            let doc = (try? JSONSerialization.jsonObject(with: Data(audit.stdout.utf8))) as? [String: Any]
            let secrets = (doc?["secrets"] as? [[String: Any]]) ?? []
            XCTAssertEqual(secrets.filter { $0["kind"] as? String == "pairing-value" }.count, pairingFrames, "\(name): \(audit.stdout.prefix(2000))")

            let out = dir.appendingPathComponent(name).path
            let r = try Harness.gattlab(["redact", path, "-o", out], timeout: 180)
            XCTAssertEqual(r.status, 0, "\(name): \(r.stderr)")
            let after = try pairingView(out)
            XCTAssertFalse(after.notes.contains { $0.hasPrefix("legacy pairing: TK found") || $0.hasPrefix("decrypting with") }, "\(name): \(after.notes)")
            XCTAssertFalse(after.notes.contains { $0.hasPrefix("LTK from SMP key distribution") }, "\(name): \(after.notes)")
            XCTAssertTrue(after.notes.contains("legacy pairing: its confirm and random values were redacted (all '*'); its keys cannot be recovered"), "\(name): \(after.notes)")
            XCTAssertLessThan(after.smp.count + after.att.count, before.smp.count + before.att.count, "\(name): the encrypted part stays encrypted")
            // What was sent before encryption is all still there, as without recovered keys.
            let plain = try pairingView(path, ["--no-pairing-keys"])
            XCTAssertEqual(after.smp, plain.smp, name)
            XCTAssertEqual(after.att, plain.att, name)
        }
    }

    /// crackle's test 04: LE Secure Connections keys come from ECDH: said, and nothing tried.
    func testSecureConnectionsPairingIsSaidUnrecoverable() throws {
        let v = try pairingView(try RealCaptures.path("crackle__le_secure_connections.pcapng"))
        XCTAssertEqual(v.notes.filter { $0.hasPrefix("LE Secure Connections pairing: its keys cannot be recovered") }.count, 1, "\(v.notes)")
        XCTAssertFalse(v.notes.contains { $0.hasPrefix("decrypting with") }, "\(v.notes)")
    }
}
