import Foundation
import TestSupport
import XCTest

/// `gattlab redact`: its refusals (OUT is IN however spelled, an existing OUT, a missing or
/// damaged IN) leave every file as it was and no temporary file behind; a redacted copy passes its
/// own checks with tshark, keeps the size and framing, and with --anonymize-addresses replaces the
/// addresses reproducibly with a seed and differently without.
final class RedactCommandTests: XCTestCase {
    static let speaker = Harness.root.appendingPathComponent("Captures/emulated/speaker-ota-mtu23.btsnoop")
    static let password = "correct horse battery staple"

    func temporaryDirectory() throws -> URL {
        let dir = try Harness.temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir
    }

    static func files(in dir: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
    }

    static func json(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not JSON: \(text.prefix(300))",
                      file: file, line: line)
    }

    /// Frame count as tshark reads the file.
    static func tsharkFrames(_ path: String) throws -> Int {
        let r = try Harness.run(Harness.tshark, ["-r", path, "-o", Harness.tsharkUserDLT, "-T", "fields", "-e", "frame.number"], timeout: 120)
        XCTAssertEqual(r.status, 0, "tshark -r \(path): \(r.stderr)")
        return r.stdout.split(separator: "\n").count
    }

    /// The values of some fields as tshark reads them, one set for all (empty values dropped).
    static func tsharkValues(_ path: String, fields: [String], filter: String? = nil) throws -> Set<String> {
        var args = ["-r", path, "-o", Harness.tsharkUserDLT, "-T", "fields", "-E", "separator=,"]
        if let filter { args += ["-Y", filter] }
        for f in fields { args += ["-e", f] }
        let r = try Harness.run(Harness.tshark, args, timeout: 120)
        XCTAssertEqual(r.status, 0, "tshark -r \(path): \(r.stderr)")
        return Set(r.stdout.split(whereSeparator: { $0 == "\n" || $0 == "," }).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty })
    }

    // MARK: Refusals

    func testOutputThatIsTheInputIsRefusedHoweverSpelled() throws {
        let dir = try temporaryDirectory()
        let input = dir.appendingPathComponent("x.btsnoop")
        try FileManager.default.copyItem(at: Self.speaker, to: input)
        let original = try Data(contentsOf: input)
        let link = dir.appendingPathComponent("hardlink.btsnoop")
        try FileManager.default.linkItem(at: input, to: link)
        let symlink = dir.appendingPathComponent("symlink.btsnoop")
        try FileManager.default.createSymbolicLink(at: symlink, withDestinationURL: input)
        let sub = dir.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let before = try Self.files(in: dir)

        for (label, output, directory) in [
            ("the same name", "x.btsnoop", dir), ("./x", "./x.btsnoop", dir), ("absolute", input.path, nil as URL?),
            ("sub/..", "sub/../x.btsnoop", dir), ("a hard link", link.path, nil), ("a symbolic link", symlink.path, nil),
            ("relative from another folder", "../x.btsnoop", sub),
        ] {
            for force in [false, true] {
                let args = ["redact", input.path, "-o", output] + (force ? ["--force"] : [])
                let r = try Harness.gattlab(args, directory: directory)
                XCTAssertEqual(r.status, 73, "\(label)\(force ? " --force" : ""): \(r.stderr)")
                XCTAssertTrue(r.stderr.contains("is the input"), r.stderr)
                XCTAssertEqual(try Data(contentsOf: input), original, "\(label): IN unchanged")
                XCTAssertEqual(try Self.files(in: dir), before, "\(label): no file created or removed")
                XCTAssertEqual(try Self.files(in: sub), [], "\(label): no file created")
            }
        }
        // The input spelled relatively, the output absolutely.
        let r = try Harness.gattlab(["redact", "./x.btsnoop", "-o", input.path, "--force"], directory: dir)
        XCTAssertEqual(r.status, 73, r.stderr)
        XCTAssertEqual(try Data(contentsOf: input), original)
        XCTAssertEqual(try Data(contentsOf: link), original)
    }

    func testExistingOutputIsReplacedOnlyWithForce() throws {
        let dir = try temporaryDirectory()
        let out = dir.appendingPathComponent("out.btsnoop")
        let placeholder = Data("an earlier file\n".utf8)
        try placeholder.write(to: out)
        let refused = try Harness.gattlab(["redact", Self.speaker.path, "-o", out.path, "--no-tshark"])
        XCTAssertEqual(refused.status, 73, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("--force"), refused.stderr)
        XCTAssertEqual(refused.stdout, "")
        XCTAssertEqual(try Data(contentsOf: out), placeholder, "OUT unchanged without --force")
        XCTAssertEqual(try Self.files(in: dir), ["out.btsnoop"], "no temporary file left")

        let forced = try Harness.gattlab(["redact", Self.speaker.path, "-o", out.path, "--force", "--no-tshark"])
        XCTAssertEqual(forced.status, 0, forced.stderr)
        let replaced = try Data(contentsOf: out)
        XCTAssertNotEqual(replaced, placeholder)
        XCTAssertEqual(replaced.count, try Data(contentsOf: Self.speaker).count)
        // The same as a fresh copy (no anonymization: the result is deterministic).
        let fresh = dir.appendingPathComponent("fresh.btsnoop")
        let f = try Harness.gattlab(["redact", Self.speaker.path, "-o", fresh.path, "--no-tshark"])
        XCTAssertEqual(f.status, 0, f.stderr)
        XCTAssertEqual(try Data(contentsOf: fresh), replaced)
        XCTAssertEqual(try Self.files(in: dir), ["fresh.btsnoop", "out.btsnoop"], "no temporary file left")
    }

    func testMissingInputAndOptionsThatGoTogether() throws {
        let dir = try temporaryDirectory()
        let out = dir.appendingPathComponent("out.btsnoop")
        let missing = try Harness.gattlab(["redact", dir.appendingPathComponent("nothing.btsnoop").path, "-o", out.path])
        XCTAssertEqual(missing.status, 66, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("nothing.btsnoop"), missing.stderr)
        for args in [["--replace-names"], ["--anonymize-seed", "s"], ["--replace-names", "--anonymize-seed", "s"]] {
            let r = try Harness.gattlab(["redact", Self.speaker.path, "-o", out.path] + args)
            XCTAssertEqual(r.status, 64, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("--anonymize-addresses"), r.stderr)
        }
        let ok = try Harness.gattlab(["redact", Self.speaker.path, "-o", out.path, "--anonymize-addresses", "--replace-names", "--no-tshark"])
        XCTAssertEqual(ok.status, 0, "--replace-names with --anonymize-addresses: \(ok.stderr)")
        for args in [["-o", "-"], ["-"]] {
            let r = try Harness.gattlab(["redact"] + (args == ["-"] ? ["-", "-o", out.path] : [Self.speaker.path] + args))
            XCTAssertEqual(r.status, 64, "standard input or output: \(r.stderr)")
        }
        XCTAssertEqual(try Self.files(in: dir), ["out.btsnoop"])
    }

    /// A damaged input is refused: nothing under OUT's name, no temporary file in OUT's folder,
    /// and an OUT that existed (with --force) stays as it was.
    func testDamagedInputWritesNothing() throws {
        let dir = try temporaryDirectory()
        let inputs = dir.appendingPathComponent("in")
        let outputs = dir.appendingPathComponent("out")
        for d in [inputs, outputs] { try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true) }
        var damaged: [URL] = []
        // Cut mid-record: a small emulated capture, and real ones of each format, one of them large
        // (the damage comes after most of the copy was written).
        var sources = [Self.speaker]
        for name in ["AndroidPad__btsnoop_hci.cfa", "TesiBLE__mouse.pcapng", "crackle__known_ltk.pcap", "esp32btclassic__hci_dump.pklg"] {
            sources.append(try Harness.realCaptures.appendingPathComponent(name))
        }
        for source in sources {
            guard let data = try? Data(contentsOf: source) else { throw TestSetupError("\(source.path) not found: the tests need ../shared") }
            let cut = inputs.appendingPathComponent("cut-" + source.lastPathComponent)
            try data.prefix(data.count - 5).write(to: cut)
            damaged.append(cut)
        }
        // A record whose length runs past the end of the file, in the middle of the file.
        var bytes = try [UInt8](Data(contentsOf: Self.speaker))
        // btsnoop: a 16-byte file header, then records of original length, included length, flags,
        // drops (4 bytes each) and a timestamp (8), then the included bytes.
        let second = 16 + 24 + (Int(bytes[16 + 4]) << 24 | Int(bytes[16 + 5]) << 16 | Int(bytes[16 + 6]) << 8 | Int(bytes[16 + 7]))
        for i in 0..<4 { bytes[second + 4 + i] = 0x7F }  // included length of record 2
        let inflated = inputs.appendingPathComponent("inflated.btsnoop")
        try Data(bytes).write(to: inflated)
        damaged.append(inflated)

        for input in damaged {
            let original = try Data(contentsOf: input)
            let out = outputs.appendingPathComponent("shared-" + input.lastPathComponent)
            let r = try Harness.gattlab(["redact", input.path, "-o", out.path], timeout: 180)
            XCTAssertEqual(r.status, 65, "\(input.lastPathComponent): \(r.stderr)")
            XCTAssertFalse(r.signalled)
            XCTAssertTrue(Harness.oneError(r.stderr), "one line: \(r.stderr)")
            XCTAssertTrue(r.stderr.hasPrefix("gattlab: error: ") && r.stderr.contains("(\(input.path), record "), "names the file: \(r.stderr)")
            XCTAssertEqual(try Self.files(in: outputs), [], "\(input.lastPathComponent): nothing written, no temporary file left")
            XCTAssertEqual(try Data(contentsOf: input), original, "IN unchanged")

            // With --force over an existing OUT: refused the same, the old OUT kept.
            let keep = Data("earlier\n".utf8)
            try keep.write(to: out)
            let forced = try Harness.gattlab(["redact", input.path, "-o", out.path, "--force"], timeout: 180)
            XCTAssertEqual(forced.status, 65, forced.stderr)
            XCTAssertEqual(try Data(contentsOf: out), keep, "an existing OUT is not replaced by a refused redaction")
            XCTAssertEqual(try Self.files(in: outputs), [out.lastPathComponent], "no temporary file left")
            try FileManager.default.removeItem(at: out)
        }
    }

    // MARK: The redacted copy

    func testRedactedCopyPassesItsChecksWithTshark() throws {
        _ = try Harness.tshark
        let dir = try temporaryDirectory()
        let out = dir.appendingPathComponent("shareable.btsnoop")
        let input = try [UInt8](Data(contentsOf: Self.speaker))
        let r = try Harness.gattlab(["redact", Self.speaker.path, "-o", out.path, "--format", "json"], timeout: 120)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertFalse(r.stderr.contains("tshark not found"), r.stderr)
        let report = try Self.json(r.stdout)
        XCTAssertEqual(report["schema"] as? String, "gattlab.redact/1")
        XCTAssertEqual(report["records"] as? Int, 100)
        let checks = try XCTUnwrap(report["checks"] as? [[String: Any]])
        XCTAssertGreaterThanOrEqual(checks.count, 4)
        XCTAssertTrue(checks.contains { ($0["name"] as? String)?.contains("tshark") == true }, "tshark's check ran: \(checks)")
        for c in checks { XCTAssertEqual(c["passed"] as? Bool, true, "\(c)") }
        let secrets = try XCTUnwrap(report["secrets"] as? [[String: Any]])
        XCTAssertEqual(secrets.map { $0["kind"] as? String }, ["wifi-password"])
        XCTAssertEqual(secrets.first?["value"] as? String, "<redacted:28 bytes>")

        // Same size, different bytes; what changed became '*' and the password is gone.
        let output = try [UInt8](Data(contentsOf: out))
        XCTAssertEqual(output.count, input.count)
        XCTAssertNotEqual(output, input)
        let changed = zip(input, output).enumerated().filter { $0.element.0 != $0.element.1 }
        XCTAssertGreaterThanOrEqual(changed.count, 20)
        XCTAssertLessThanOrEqual(changed.count, report["bytesChanged"] as? Int ?? 0)
        XCTAssertTrue(changed.allSatisfy { $0.element.1 == UInt8(ascii: "*") }, "only secret bytes change, each to '*'")
        // The password goes in two Prepare Writes; decode joins them (and shows it, revealed).
        let before = try Harness.gattlab(["decode", "--reveal-secrets", Self.speaker.path])
        XCTAssertTrue(before.stdout.contains(Self.password), "the input holds the password")
        let after = try Harness.gattlab(["decode", "--reveal-secrets", out.path])
        XCTAssertEqual(after.status, 0, after.stderr)
        XCTAssertFalse(after.stdout.contains(Self.password) || after.stdout.contains("correct h"), "the output does not")
        XCTAssertTrue(after.stdout.contains("OTA credentials"), "the redacted credentials still decode")
        XCTAssertEqual(try Self.tsharkFrames(out.path), try Self.tsharkFrames(Self.speaker.path))
        XCTAssertEqual(try [UInt8](Data(contentsOf: Self.speaker)), input, "IN unchanged")

        // The text report says the same.
        let text = try Harness.gattlab(["redact", Self.speaker.path, "-o", out.path, "--force"], timeout: 120)
        XCTAssertEqual(text.status, 0, text.stderr)
        let lines = text.stdout.components(separatedBy: "checks:\n").last?.split(separator: "\n") ?? []
        XCTAssertEqual(lines.count, checks.count, text.stdout)
        XCTAssertTrue(lines.allSatisfy { $0.hasPrefix("  ok ") }, text.stdout)
        XCTAssertFalse(text.stdout.contains(Self.password))
    }

    func testAnonymizedAddressesAreReproducibleWithASeedAndGone() throws {
        _ = try Harness.tshark
        let dir = try temporaryDirectory()
        let info = try Harness.gattlab(["info", "--format", "json", Self.speaker.path])
        let connections = try XCTUnwrap(try Self.json(info.stdout)["connections"] as? [[String: Any]])
        let peer = try XCTUnwrap(connections.first?["peer"] as? String)
        let address = try XCTUnwrap(CanaryTests.bytes(hex: peer.replacingOccurrences(of: ":", with: "")))
        XCTAssertEqual(address.count, 6)
        let input = try [UInt8](Data(contentsOf: Self.speaker))
        let littleEndian = Array(address.reversed())
        XCTAssertTrue(CanaryTests.contains(input, littleEndian), "the input holds \(peer) as HCI does, little-endian")

        func redact(_ name: String, _ extra: [String]) throws -> (bytes: [UInt8], stdout: String) {
            let out = dir.appendingPathComponent(name)
            let r = try Harness.gattlab(["redact", Self.speaker.path, "-o", out.path, "--anonymize-addresses", "--format", "json"] + extra,
                                        timeout: 120)
            XCTAssertEqual(r.status, 0, r.stderr)
            let report = try Self.json(r.stdout)
            XCTAssertGreaterThanOrEqual(report["addressesReplaced"] as? Int ?? 0, 1)
            XCTAssertTrue((report["checks"] as? [[String: Any]] ?? []).allSatisfy { $0["passed"] as? Bool == true }, r.stdout)
            return (try [UInt8](Data(contentsOf: out)), r.stdout + r.stderr)
        }
        let a = try redact("a.btsnoop", ["--anonymize-seed", "s"])
        let b = try redact("b.btsnoop", ["--anonymize-seed", "s"])
        XCTAssertEqual(a.bytes, b.bytes, "the same seed: byte-identical outputs")
        XCTAssertEqual(a.bytes.count, input.count)
        let other = try redact("other-seed.btsnoop", ["--anonymize-seed", "t"])
        XCTAssertNotEqual(other.bytes, a.bytes, "another seed, other stand-ins")

        // The address is nowhere: as bytes in either order, as text in either case.
        let forms: [(String, [UInt8])] = [
            ("little-endian bytes", littleEndian), ("big-endian bytes", address), ("text", Array(peer.uppercased().utf8)),
            ("lower-case text", Array(peer.lowercased().utf8)),
            ("hex", Array(address.map { String(format: "%02x", $0) }.joined().utf8)),
            ("hex little-endian", Array(littleEndian.map { String(format: "%02x", $0) }.joined().utf8)),
        ]
        for (label, out) in [("seeded", a), ("other seed", other)] {
            for (form, needle) in forms {
                XCTAssertFalse(CanaryTests.contains(out.bytes, needle), "\(label) output holds the address as \(form)")
                XCTAssertFalse(CanaryTests.contains(Array(out.stdout.utf8), needle), "\(label) report holds the address as \(form)")
            }
        }
        // Read back: another peer, the same frames.
        let path = dir.appendingPathComponent("a.btsnoop").path
        let back = try Harness.gattlab(["info", "--format", "json", path])
        let newPeer = (try Self.json(back.stdout)["connections"] as? [[String: Any]])?.first?["peer"] as? String
        XCTAssertNotNil(newPeer)
        XCTAssertNotEqual(newPeer, peer)
        XCTAssertEqual(try Self.tsharkFrames(path), try Self.tsharkFrames(Self.speaker.path))
        let addressFields = ["bthci_evt.bd_addr", "bthci_cmd.bd_addr", "btsmp.bd_addr"]
        XCTAssertTrue(try Self.tsharkValues(Self.speaker.path, fields: addressFields).contains(peer.lowercased()), "tshark sees \(peer) in the input")
        XCTAssertFalse(try Self.tsharkValues(path, fields: addressFields).contains(peer.lowercased()), "nor in the output")

        // No seed: a fresh key each run, so two runs give different stand-ins.
        let r1 = try redact("r1.btsnoop", [])
        let r2 = try redact("r2.btsnoop", [])
        XCTAssertNotEqual(r1.bytes, r2.bytes, "without a seed, two runs differ")
        XCTAssertNotEqual(r1.bytes, a.bytes)
        for (form, needle) in forms.prefix(2) {
            XCTAssertFalse(CanaryTests.contains(r1.bytes, needle), "unseeded output holds the address as \(form)")
        }
    }

    /// A sniffed capture: every advertising, scanning and initiating address tshark reads is
    /// replaced, the frames stay the same and so do the frames whose CRC was already bad (CRCs are
    /// recomputed for the packets that changed).
    func testAnonymizedSnifferCaptureKeepsFramesAndCRCs() throws {
        _ = try Harness.tshark
        let dir = try temporaryDirectory()
        let input = try Harness.realCaptures.appendingPathComponent("TesiBLE__mouse.pcapng")
        guard FileManager.default.fileExists(atPath: input.path) else { throw TestSetupError("\(input.path) not found") }
        let out = dir.appendingPathComponent("mouse.pcapng")
        let r = try Harness.gattlab(["redact", input.path, "-o", out.path, "--anonymize-addresses", "--anonymize-seed", "s"], timeout: 180)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try Self.tsharkFrames(out.path), try Self.tsharkFrames(input.path))
        let fields = ["btle.advertising_address", "btle.scanning_address", "btle.initiator_address", "btle.target_address"]
        let before = try Self.tsharkValues(input.path, fields: fields)
        let after = try Self.tsharkValues(out.path, fields: fields)
        XCTAssertGreaterThan(before.count, 10)
        XCTAssertEqual(after.count, before.count, "one stand-in per address")
        XCTAssertEqual(before.intersection(after), [], "no address left")
        let badCRC = ["frame.number"]
        XCTAssertEqual(try Self.tsharkValues(out.path, fields: badCRC, filter: "btle.crc.incorrect"),
                       try Self.tsharkValues(input.path, fields: badCRC, filter: "btle.crc.incorrect"),
                       "the same frames have a bad CRC as before: the others were recomputed")
    }

    /// Keys an HCI log carries in host-to-controller commands are secrets too: the IRKs of
    /// HCI LE Add Device to Resolving List (the peer's and the phone's own) must not survive redaction.
    func testResolvingListIRKsAreRedacted() throws {
        _ = try Harness.tshark
        let dir = try temporaryDirectory()
        for name in ["DSD6__btsnoop_hci.log", "fossibot__btsnoop_hci.log", "fuut__btsnoop_hci20241230_1.log"] {
            let input = try Harness.realCaptures.appendingPathComponent(name)
            guard FileManager.default.fileExists(atPath: input.path) else { throw TestSetupError("\(input.path) not found") }
            let fields = ["bthci_cmd.le_peer_irk", "bthci_cmd.le_local_irk"]
            let irks = try Self.tsharkValues(input.path, fields: fields, filter: "bthci_cmd.opcode == 0x2027")
                .filter { $0.contains(where: { $0 != "0" }) }
            XCTAssertFalse(irks.isEmpty, "\(name) holds IRKs in LE Add Device to Resolving List")
            let out = dir.appendingPathComponent(name)
            let r = try Harness.gattlab(["redact", input.path, "-o", out.path], timeout: 180)
            XCTAssertEqual(r.status, 0, r.stderr)
            let output = try [UInt8](Data(contentsOf: out))
            for irk in irks {
                let bytes = CanaryTests.bytes(hex: irk) ?? []
                XCTAssertFalse(CanaryTests.contains(output, bytes) || CanaryTests.contains(output, bytes.reversed()),
                               "\(name): the IRK \(irk) of LE Add Device to Resolving List is still in the redacted copy")
            }
        }
    }

    /// --anonymize-addresses on a phone's HCI log: every address tshark reads, the phone's own
    /// (HCI Read BD_ADDR, LE Set Random Address) and the resolving list's included, is replaced;
    /// with --replace-names every device name tshark reads is replaced too.
    func testAnonymizedHCILogHoldsNoAddressOrNameTsharkReads() throws {
        _ = try Harness.tshark
        let dir = try temporaryDirectory()
        let addressFields = ["bthci_cmd.bd_addr", "bthci_evt.bd_addr", "btsmp.bd_addr", "bthci_acl.src.bd_addr", "bthci_acl.dst.bd_addr"]
        // Advertised names (advertising reports, the phone's EIR), the phone's own name (Change Local
        // Name) and GATT Device Name values; not Read Local Name, which holds the chip's default.
        let nameFields = ["btcommon.eir_ad.entry.device_name", "bthci_cmd.device_name", "btatt.device_name"]
        for name in ["DSD6__btsnoop_hci.log", "AndroidPad__btsnoop_hci.cfa"] {
            let input = try Harness.realCaptures.appendingPathComponent(name)
            guard FileManager.default.fileExists(atPath: input.path) else { throw TestSetupError("\(input.path) not found") }
            let out = dir.appendingPathComponent(name)
            let r = try Harness.gattlab(["redact", input.path, "-o", out.path, "--anonymize-addresses", "--replace-names",
                                         "--anonymize-seed", "s"], timeout: 180)
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertEqual(try Self.tsharkFrames(out.path), try Self.tsharkFrames(input.path))
            let placeholders: Set<String> = ["00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff"]
            let before = try Self.tsharkValues(input.path, fields: addressFields).subtracting(placeholders)
            let after = try Self.tsharkValues(out.path, fields: addressFields)
            XCTAssertFalse(before.isEmpty)
            XCTAssertEqual(before.intersection(after).sorted(), [], "\(name): addresses left after --anonymize-addresses")
            let names = try Self.tsharkValues(input.path, fields: nameFields).filter { $0.count >= 3 }
            let namesAfter = try Self.tsharkValues(out.path, fields: nameFields)
            XCTAssertFalse(names.isEmpty)
            XCTAssertEqual(names.intersection(namesAfter).sorted(), [], "\(name): names left after --replace-names")
        }
    }
}
