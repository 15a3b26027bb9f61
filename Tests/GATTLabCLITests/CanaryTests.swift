import Emulator
import Foundation
import Protocols
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The acceptance test of secret handling: a capture whose Wi-Fi password, ESP proof of
/// possession, LTK and ESP client key are unique markers goes through every command and every
/// output format with the decryption keys given. Without --reveal-secrets no marker appears in
/// any byte of any output (stdout, stderr, written files) in any form: raw, hex in either case
/// and byte order with or without separators, base64 at any alignment. With it the password and
/// the LTK appear where expected, and the PoP and client key (command-line keys) appear nowhere.
///
/// `gattlab convert` is exempt: it is a lossless format conversion, so its output holds the
/// secrets exactly as its input does (that is what `redact` is for).
final class CanaryTests: XCTestCase {
    static let password = "CANARY-pw-7f3a9c1e"
    static let pop = "CANARY-pop-91c2d4"
    static let ltk: [UInt8] = Array("CANARY-LTK-5e8d!".utf8)
    /// Any 32 bytes are a valid X25519 scalar (clamped); ASCII makes a raw-byte leak visible too.
    static let clientKey: [UInt8] = Array("CANARY-x25519-client-key-7d0e41b".utf8)
    static var clientKeyHex: String { clientKey.map { String(format: "%02x", $0) }.joined() }
    static var keys: [String] { ["--esp-pop", pop, "--esp-client-key", clientKeyHex] }

    static let markers: [(name: String, bytes: [UInt8])] = [
        ("password", Array(password.utf8)), ("PoP", Array(pop.utf8)), ("LTK", ltk), ("client key", clientKey),
        // Every marker starts so: a part of any of them leaking shows up as this.
        ("marker prefix", Array("CANARY-".utf8)),
    ]

    /// One captured output: a command's stdout or stderr, or a file it wrote.
    struct Output {
        var name: String
        var bytes: [UInt8]
    }

    // MARK: Forms of a marker

    static func hex(_ b: [UInt8], separator: String, upper: Bool) -> String {
        b.map { String(format: upper ? "%02X" : "%02x", $0) }.joined(separator: separator)
    }

    /// Every spelling of `bytes` a leak could take, each with a name for the failure message.
    static func forms(_ bytes: [UInt8]) -> [(form: String, needle: [UInt8])] {
        var out: [(String, [UInt8])] = []
        for (order, b) in [("", bytes), (" reversed", Array(bytes.reversed()))] {
            out.append(("raw\(order)", b))
            for sep in ["", " ", ":", "-", ",", ", ", "\\x", " 0x", ", 0x"] {
                for upper in [false, true] {
                    out.append(("hex\(upper ? " upper" : "")\(sep.isEmpty ? "" : " sep '\(sep)'")\(order)",
                                Array(hex(b, separator: sep, upper: upper).utf8)))
                }
            }
            // Base64 at each of the three alignments the bytes can have in a longer encoded
            // value: only the characters that depend on these bytes alone.
            for k in 0..<3 {
                let padded = [UInt8](repeating: 0, count: k) + b
                let whole = padded.count / 3 * 3
                var s = Data(padded[0..<whole]).base64EncodedString()
                if k > 0 { s = String(s.dropFirst(4)) }
                guard s.count >= 8 else { continue }
                out.append(("base64 at +\(k)\(order)", Array(s.utf8)))
                let url = s.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                if url != s { out.append(("base64url at +\(k)\(order)", Array(url.utf8))) }
            }
        }
        return out
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        // memchr to each candidate first byte, memcmp for the rest: fast in a debug build too.
        return haystack.withUnsafeBytes { h in
            needle.withUnsafeBytes { n in
                guard let hb = h.baseAddress, let nb = n.baseAddress else { return false }
                let first = Int32(needle[0])
                var offset = 0
                let last = h.count - n.count
                while offset <= last {
                    guard let hit = memchr(hb + offset, first, last - offset + 1) else { return false }
                    let at = hb.distance(to: UnsafeRawPointer(hit))
                    if memcmp(hb + at, nb, n.count) == 0 { return true }
                    offset = at + 1
                }
                return false
            }
        }
    }

    /// The first form of any of `markers` found in `output`, or nil.
    static func leak(in output: Output, of markers: [(name: String, bytes: [UInt8])]) -> String? {
        for m in markers {
            for f in forms(m.bytes) where contains(output.bytes, f.needle) {
                return "\(m.name) as \(f.form) (\(String(decoding: f.needle, as: UTF8.self).prefix(60)))"
            }
        }
        return nil
    }

    func assertNoLeak(_ outputs: [Output], of markers: [(name: String, bytes: [UInt8])], file: StaticString = #filePath, line: UInt = #line) {
        for o in outputs {
            if let found = Self.leak(in: o, of: markers) {
                XCTFail("\(o.name) leaks the \(found)", file: file, line: line)
            }
        }
    }

    // MARK: Running the commands

    func temporaryDirectory() throws -> URL {
        let dir = try Harness.temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir
    }

    /// Writes the canary capture (no marker in its name or folder).
    func makeCapture(in dir: URL) async throws -> URL {
        let recording = await CanaryCapture.make(password: Self.password, proofOfPossession: Self.pop, ltk: Self.ltk,
                                                 clientPrivateKey: Self.clientKey)
        let url = dir.appendingPathComponent("field.btsnoop")
        try recording.write(to: url.path)
        let bytes = try [UInt8](Data(contentsOf: url))
        // The capture carries the secrets that must not come out again (the PoP and client key never
        // cross the link: they are only on the command line).
        XCTAssertTrue(Self.contains(Self.aclPayloads(bytes), Array(Self.password.utf8)), "the capture holds the password")
        XCTAssertTrue(Self.contains(bytes, Self.ltk), "the capture holds the LTK")
        return url
    }

    /// Runs gattlab, keeps stdout and stderr as outputs, checks the exit status.
    @discardableResult
    func run(_ name: String, _ arguments: [String], status: Int32 = 0, into outputs: inout [Output],
             file: StaticString = #filePath, line: UInt = #line) throws -> Harness.Result {
        let r = try Harness.gattlab(arguments, timeout: 120)
        XCTAssertFalse(r.signalled, "\(name) crashed: \(r.stderr)", file: file, line: line)
        XCTAssertEqual(r.status, status, "\(name): gattlab \(arguments.joined(separator: " "))\n\(r.stderr.prefix(2000))", file: file, line: line)
        outputs.append(Output(name: "\(name) stdout", bytes: Array(r.stdout.utf8)))
        outputs.append(Output(name: "\(name) stderr", bytes: Array(r.stderr.utf8)))
        return r
    }

    func readFile(_ name: String, _ url: URL, into outputs: inout [Output], file: StaticString = #filePath, line: UInt = #line) {
        guard let data = try? Data(contentsOf: url) else {
            return XCTFail("\(name): \(url.lastPathComponent) was not written", file: file, line: line)
        }
        XCTAssertGreaterThan(data.count, 0, "\(name) wrote an empty file", file: file, line: line)
        outputs.append(Output(name: name, bytes: [UInt8](data)))
        // A capture carries a value split over ACL fragments: search their joined payloads too.
        let payloads = Self.aclPayloads([UInt8](data))
        if !payloads.isEmpty { outputs.append(Output(name: "\(name), ACL payloads joined", bytes: payloads)) }
    }

    /// The payloads of a btsnoop (H4) file's ACL packets joined per handle and direction, so that
    /// an L2CAP SDU split into 27-byte fragments reads as one run of bytes. Empty for other files.
    static func aclPayloads(_ file: [UInt8]) -> [UInt8] {
        guard file.count >= 16, file.starts(with: Array("btsnoop\0".utf8)) else { return [] }
        func be32(_ i: Int) -> Int { file[i..<(i + 4)].reduce(0) { $0 << 8 | Int($1) } }
        var streams: [Int: [UInt8]] = [:]
        var i = 16
        while i + 24 <= file.count {
            let length = be32(i + 4), flags = be32(i + 8), start = i + 24
            guard start + length <= file.count else { break }
            if length >= 5, file[start] == 0x02 {
                let handle = Int(file[start + 1]) | Int(file[start + 2] & 0x0F) << 8
                streams[handle | (flags & 1) << 16, default: []] += file[(start + 5)..<(start + length)]
            }
            i = start + length
        }
        return streams.keys.sorted().flatMap { (streams[$0] ?? []) + [0] }
    }

    /// Every command and format over `capture`, with the keys and optionally --reveal-secrets.
    /// Returns the outputs, each named, and the path of the redacted copy.
    func runEverything(_ capture: URL, in dir: URL, reveal: Bool) throws -> (outputs: [Output], byName: [String: String], redacted: URL) {
        var outputs: [Output] = []
        var byName: [String: String] = [:]
        let r = reveal ? ["--reveal-secrets"] : []
        let tag = reveal ? "reveal" : "plain"
        let path = capture.path
        for format in ["text", "json"] {
            for command in ["info", "decode"] {
                let res = try run("\(command) \(format)", [command, "--format", format] + r + Self.keys + [path], into: &outputs)
                byName["\(command) \(format)"] = res.stdout
            }
        }
        for format in ["text", "json"] {
            let res = try run("timeline \(format)", ["timeline", "--format", format] + r + Self.keys + [path], into: &outputs)
            byName["timeline \(format)"] = res.stdout
        }
        for format in ["html", "perfetto"] {
            let out = dir.appendingPathComponent("\(tag)-timeline.\(format)")
            try run("timeline \(format) -o", ["timeline", "--format", format, "-o", out.path] + r + Self.keys + [path], into: &outputs)
            readFile("timeline \(format) file", out, into: &outputs)
        }
        for format in ["text", "json", "sarif"] {
            let res = try run("audit \(format)", ["audit", "--format", format] + r + Self.keys + [path], into: &outputs)
            byName["audit \(format)"] = res.stdout
            let out = dir.appendingPathComponent("\(tag)-audit.\(format)")
            try run("audit \(format) -o", ["audit", "--format", format, "--pretty", "-o", out.path] + r + Self.keys + [path], into: &outputs)
            readFile("audit \(format) -o file", out, into: &outputs)
        }
        let redacted = dir.appendingPathComponent("\(tag)-shareable.btsnoop")
        for format in ["text", "json"] {
            let res = try run("redact \(format)", ["redact", path, "-o", redacted.path, "--force", "--format", format] + r + Self.keys,
                              into: &outputs)
            byName["redact \(format)"] = res.stdout
        }
        let anonymized = dir.appendingPathComponent("\(tag)-anonymized.btsnoop")
        try run("redact anonymized", ["redact", path, "-o", anonymized.path, "--anonymize-addresses", "--replace-names"] + r + Self.keys,
                into: &outputs)
        readFile("redacted capture", redacted, into: &outputs)
        readFile("anonymized redacted capture", anonymized, into: &outputs)
        // Replay: a script holds secrets only when revealed; a run's report never shows them,
        // against an emulated device (which gets the recorded values) or from a redacted script.
        try run("replay extract", ["replay", "extract"] + r + [path], into: &outputs)
        let script = dir.appendingPathComponent("\(tag)-session.json")
        try run("replay extract -o", ["replay", "extract", "-o", script.path, "--force"] + r + [path], into: &outputs)
        readFile("replay script", script, into: &outputs)
        for format in ["text", "json"] {
            let res = try Harness.gattlab(["replay", "run", path, "--target", "emu:speaker", "-v", "--format", format], timeout: 120)
            XCTAssertTrue([0, 1].contains(res.status), "replay run \(format): \(res.stderr)")
            outputs.append(Output(name: "replay run \(format) stdout", bytes: Array(res.stdout.utf8)))
            outputs.append(Output(name: "replay run \(format) stderr", bytes: Array(res.stderr.utf8)))
        }
        let recorded = dir.appendingPathComponent("\(tag)-replayed.btsnoop")
        let res = try Harness.gattlab(["replay", "run", script.path, "--target", "emu:speaker", "--set", "password=lab-password",
                                       "--record", recorded.path, "--force"], timeout: 120)
        XCTAssertTrue([0, 1].contains(res.status), "replay run of the script: \(res.stderr)")
        outputs.append(Output(name: "replay run of the script stdout", bytes: Array(res.stdout.utf8)))
        if !reveal { readFile("replay recording (password given by --set)", recorded, into: &outputs) }
        return (outputs, byName, redacted)
    }

    /// The error paths of every command, with the keys given: a capture cut short after the
    /// secrets (partial output, then the error), a malformed client key, a missing file.
    func runErrors(_ capture: URL, in dir: URL, reveal: Bool) throws -> [Output] {
        var outputs: [Output] = []
        let r = reveal ? ["--reveal-secrets"] : []
        var bytes = try Data(contentsOf: capture)
        bytes.removeLast(5)  // mid-way through the last record
        let cut = dir.appendingPathComponent("cut.btsnoop")
        try bytes.write(to: cut)
        for format in ["text", "json"] {
            try run("info \(format) of a cut capture", ["info", "--format", format] + r + Self.keys + [cut.path], status: 65, into: &outputs)
            try run("decode \(format) of a cut capture", ["decode", "--format", format] + r + Self.keys + [cut.path], status: 65, into: &outputs)
            try run("timeline \(format) of a cut capture", ["timeline", "--format", format] + r + Self.keys + [cut.path], status: 65, into: &outputs)
        }
        for format in ["text", "json", "sarif"] {
            try run("audit \(format) of a cut capture", ["audit", "--format", format] + r + Self.keys + [cut.path], status: 65, into: &outputs)
        }
        for format in ["html", "perfetto"] {
            let out = dir.appendingPathComponent("cut-\(reveal ? "reveal" : "plain").\(format)")
            try run("timeline \(format) of a cut capture", ["timeline", "--format", format, "-o", out.path] + r + Self.keys + [cut.path],
                    status: 65, into: &outputs)
            if let data = try? Data(contentsOf: out) { outputs.append(Output(name: "timeline \(format) file of a cut capture", bytes: [UInt8](data))) }
        }
        let refused = dir.appendingPathComponent("cut-shareable.btsnoop")
        try run("redact of a cut capture", ["redact", cut.path, "-o", refused.path] + r + Self.keys, status: 65, into: &outputs)
        XCTAssertFalse(FileManager.default.fileExists(atPath: refused.path), "redact writes nothing for a damaged input")

        // A client key one byte short, and one byte long: the usage error must not repeat it.
        for (label, key) in [("short", String(Self.clientKeyHex.dropLast(2))), ("long", Self.clientKeyHex + "00")] {
            let args = ["--esp-pop", Self.pop, "--esp-client-key", key] + r
            try run("info with a \(label) key", ["info"] + args + [capture.path], status: 64, into: &outputs)
            try run("decode with a \(label) key", ["decode"] + args + [capture.path], status: 64, into: &outputs)
            try run("timeline with a \(label) key", ["timeline"] + args + [capture.path], status: 64, into: &outputs)
            try run("audit with a \(label) key", ["audit"] + args + [capture.path], status: 64, into: &outputs)
            try run("redact with a \(label) key", ["redact", capture.path, "-o", dir.appendingPathComponent("k.btsnoop").path] + args,
                    status: 64, into: &outputs)
        }
        let missing = dir.appendingPathComponent("missing.btsnoop").path
        for command in ["info", "decode", "timeline", "audit"] {
            try run("\(command) of a missing file", [command] + r + Self.keys + [missing], status: 66, into: &outputs)
        }
        try run("redact of a missing file", ["redact", missing, "-o", dir.appendingPathComponent("m.btsnoop").path] + r + Self.keys,
                status: 66, into: &outputs)
        // Refusals after the capture was read: the output exists.
        let existing = dir.appendingPathComponent("exists.sarif")
        try Data("x".utf8).write(to: existing)
        try run("audit -o over an existing file", ["audit", "--format", "sarif", "-o", existing.path] + r + Self.keys + [capture.path],
                status: 73, into: &outputs)
        try run("redact over an existing file", ["redact", capture.path, "-o", existing.path] + r + Self.keys, status: 73, into: &outputs)
        try run("redact onto its input", ["redact", capture.path, "-o", capture.path] + r + Self.keys, status: 73, into: &outputs)
        return outputs
    }

    // MARK: Tests

    func testNoMarkerInAnyOutputWithoutRevealSecrets() async throws {
        let dir = try temporaryDirectory()
        let capture = try await makeCapture(in: dir)
        let (outputs, byName, _) = try runEverything(capture, in: dir, reveal: false)
        XCTAssertGreaterThanOrEqual(outputs.count, 40)
        assertNoLeak(outputs, of: Self.markers)

        // The test can fail: the secrets were found and decoded, only shown redacted.
        let audit = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data((byName["audit json"] ?? "").utf8)) as? [String: Any])
        let secrets = try XCTUnwrap(audit["secrets"] as? [[String: Any]])
        let passwords = secrets.filter { $0["kind"] as? String == "wifi-password" }
        XCTAssertGreaterThanOrEqual(passwords.count, 2, "the speaker's password and the decrypted ESP one: \(secrets)")
        XCTAssertTrue(passwords.allSatisfy { $0["length"] as? Int == Self.password.utf8.count && $0["value"] as? String == "<redacted:18 bytes>" })
        XCTAssertTrue(secrets.contains { $0["kind"] as? String == "ltk" && $0["length"] as? Int == 16 }, "\(secrets)")
        XCTAssertTrue(byName["decode text"]?.contains("<redacted:18 bytes>") == true, "decode shows the password redacted")
        XCTAssertEqual(try Self.timelinePasswords(byName["timeline json"]), ["<redacted:18 bytes>", "<redacted:18 bytes>"],
                       "timeline shows both passwords (speaker, decrypted ESP) redacted")
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data((byName["redact json"] ?? "").utf8)) as? [String: Any])
        let checks = try XCTUnwrap(report["checks"] as? [[String: Any]])
        XCTAssertFalse(checks.isEmpty)
        XCTAssertTrue(checks.allSatisfy { $0["passed"] as? Bool == true }, "\(checks)")
        let kinds = Set((report["secrets"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String })
        XCTAssertTrue(kinds.isSuperset(of: ["wifi-password", "ltk"]), "\(kinds)")
    }

    func testErrorMessagesHoldNoMarker() async throws {
        let dir = try temporaryDirectory()
        let capture = try await makeCapture(in: dir)
        let plain = try runErrors(capture, in: dir, reveal: false)
        assertNoLeak(plain, of: Self.markers)
        for o in plain where o.name.hasSuffix("stderr") {
            XCTAssertFalse(o.bytes.isEmpty, "\(o.name): an error says what went wrong")
        }
        // Revealing values is for values decoded from the capture; an error never shows a key.
        let revealed = try runErrors(capture, in: dir, reveal: true)
        assertNoLeak(revealed.filter { $0.name.hasSuffix("stderr") }, of: Self.markers)
        assertNoLeak(revealed, of: Self.markers.filter { $0.name == "PoP" || $0.name == "client key" })
    }

    func testRevealSecretsShowsPasswordAndLTKButNeverTheKeys() async throws {
        let dir = try temporaryDirectory()
        let capture = try await makeCapture(in: dir)
        let (outputs, byName, redacted) = try runEverything(capture, in: dir, reveal: true)
        // The search sees what is there: the revealed values in the outputs that show them.
        XCTAssertNotNil(outputs.first { $0.name == "decode text stdout" }.flatMap { Self.leak(in: $0, of: [("password", Array(Self.password.utf8))]) })
        XCTAssertNotNil(outputs.first { $0.name == "decode json stdout" }.flatMap { Self.leak(in: $0, of: [("LTK", Self.ltk)]) })
        XCTAssertNotNil(outputs.first { $0.name == "audit json stdout" }.flatMap { Self.leak(in: $0, of: [("LTK", Self.ltk)]) })
        // The PoP and the client key are command-line keys: never output, revealed or not.
        assertNoLeak(outputs, of: Self.markers.filter { $0.name == "PoP" || $0.name == "client key" })
        // SARIF never carries secret values, and the redacted files hold none whatever the flag.
        assertNoLeak(outputs.filter { $0.name.hasPrefix("audit sarif") || $0.name.contains("redacted capture") }, of: Self.markers)

        func has(_ key: String, _ needles: [String], file: StaticString = #filePath, line: UInt = #line) {
            let text = byName[key] ?? ""
            XCTAssertTrue(needles.contains { text.contains($0) }, "\(key) shows one of \(needles.map { String($0.prefix(40)) })", file: file, line: line)
        }
        let ltkHex = Self.forms(Self.ltk).filter { $0.form.hasPrefix("hex") }.map { String(decoding: $0.needle, as: UTF8.self) }
        for key in ["decode text", "decode json"] {
            has(key, [Self.password])
            has(key, ltkHex)
        }
        // The ESP session was decrypted with the keys: its password is shown too.
        XCTAssertEqual(try Self.timelinePasswords(byName["timeline json"]), [Self.password, Self.password], "speaker and ESP sessions")

        let audit = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data((byName["audit json"] ?? "").utf8)) as? [String: Any])
        let secrets = try XCTUnwrap(audit["secrets"] as? [[String: Any]])
        func value(_ s: [String: Any]) -> [UInt8]? {
            guard let v = s["value"] as? String else { return nil }
            switch s["valueEncoding"] as? String {
            case "text": return Array(v.utf8)
            case "hex": return Self.bytes(hex: v)
            default: return nil
            }
        }
        let passwords = secrets.filter { $0["kind"] as? String == "wifi-password" }
        XCTAssertGreaterThanOrEqual(passwords.count, 2)
        XCTAssertTrue(passwords.allSatisfy { value($0) == Array(Self.password.utf8) }, "\(passwords)")
        XCTAssertTrue(secrets.contains { $0["kind"] as? String == "ltk" && value($0) == Self.ltk }, "the LTK revealed: \(secrets)")
        has("audit text", [Self.password])

        // The redacted capture, decoded with every key and --reveal-secrets, shows no marker.
        var again: [Output] = []
        try run("decode --reveal-secrets of the redacted capture", ["decode", "--reveal-secrets"] + Self.keys + [redacted.path], into: &again)
        try run("decode json --reveal-secrets of the redacted capture",
                ["decode", "--format", "json", "--reveal-secrets"] + Self.keys + [redacted.path], into: &again)
        let reaudit = try run("audit json --reveal-secrets of the redacted capture",
                              ["audit", "--format", "json", "--reveal-secrets"] + Self.keys + [redacted.path], into: &again)
        let retimeline = try run("timeline json --reveal-secrets of the redacted capture",
                                 ["timeline", "--format", "json", "--reveal-secrets"] + Self.keys + [redacted.path], into: &again)
        assertNoLeak(again, of: Self.markers)
        // Both passwords are still there, as '*': the ESP one rewritten so that it decrypts to '*'.
        let stars = String(repeating: "*", count: Self.password.utf8.count)
        XCTAssertEqual(try Self.timelinePasswords(retimeline.stdout), [stars, stars])
        let redone = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(reaudit.stdout.utf8)) as? [String: Any])
        let left = (redone["secrets"] as? [[String: Any]] ?? []).filter { $0["alreadyRedacted"] as? Bool != true }
        XCTAssertEqual(left.count, 0, "every secret field of the redacted capture is already redacted: \(left)")
    }

    /// The emulator's own output: its scenarios' Wi-Fi password is no marker, but it is a password.
    func testEmulatorOutputHoldsNoPassword() throws {
        let list = try Harness.gattlab(["emulate", "list"])
        XCTAssertEqual(list.status, 0, list.stderr)
        // The scenarios are the indented lines after the "Scenarios" heading (devices come first).
        let names = list.stdout.split(separator: "\n").drop { !$0.hasPrefix("Scenarios") }.dropFirst()
            .compactMap { $0.split(separator: " ").first.map(String.init) }
        XCTAssertTrue(names.contains("speaker-ota"))
        XCTAssertGreaterThanOrEqual(names.count, 30)
        let password: [(name: String, bytes: [UInt8])] = [("scenario password", Array("correct horse battery staple".utf8)),
                                                          ("scenario password prefix", Array("correct horse".utf8))]
        var outputs: [Output] = []
        let dir = try temporaryDirectory()
        for name in names {
            let record = dir.appendingPathComponent("\(name).btsnoop")
            let r = try run("emulate \(name) --verbose", ["emulate", "scenario", name, "--verbose", "--record", record.path], into: &outputs)
            if name == "speaker-ota" {
                XCTAssertTrue(r.stdout.contains("update ended: SUCCESS"), r.stdout)
            }
        }
        // Its error path: the record file exists.
        let existing = dir.appendingPathComponent("speaker-ota.btsnoop")
        let r = try Harness.gattlab(["emulate", "scenario", "speaker-ota", "--verbose", "--record", existing.path])
        XCTAssertNotEqual(r.status, 0, "an existing --record file is not replaced without --force")
        outputs.append(Output(name: "emulate over an existing file stdout", bytes: Array(r.stdout.utf8)))
        outputs.append(Output(name: "emulate over an existing file stderr", bytes: Array(r.stderr.utf8)))
        assertNoLeak(outputs, of: password)
        // The recording itself holds it (the speaker's credentials go in the clear): the search works.
        let recorded = Self.aclPayloads(try [UInt8](Data(contentsOf: dir.appendingPathComponent("speaker-ota.btsnoop"))))
        XCTAssertNotNil(Self.leak(in: Output(name: "recording", bytes: recorded), of: password))
    }

    /// The search itself finds each form it claims to find.
    func testLeakSearchFindsEveryForm() {
        let embedded = Array("xx".utf8) + Self.ltk + Array("yy".utf8)
        for f in Self.forms(Self.ltk) {
            let output = Output(name: f.form, bytes: Array("prefix ".utf8) + f.needle + Array(" suffix".utf8))
            XCTAssertNotNil(Self.leak(in: output, of: [("LTK", Self.ltk)]), f.form)
        }
        for k in 0..<3 {
            let b64 = Data([UInt8](repeating: 0x41, count: k) + embedded).base64EncodedString()
            XCTAssertNotNil(Self.leak(in: Output(name: "b64", bytes: Array(b64.utf8)), of: [("LTK", Self.ltk)]), "alignment \(k)")
        }
        XCTAssertNil(Self.leak(in: Output(name: "clean", bytes: Array("<redacted:16 bytes>".utf8)), of: Self.markers))
    }

    /// The speaker's credentials password and the ESP passphrase of `timeline --format json`.
    static func timelinePasswords(_ json: String?) throws -> [String] {
        let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data((json ?? "").utf8)) as? [String: Any])
        let events = try XCTUnwrap(doc["events"] as? [[String: Any]])
        return events.compactMap { e -> String? in
            let fields = e["fields"] as? [String: Any]
            switch e["kind"] as? String {
            case "ota.credentials": return fields?["password"] as? String
            case "esp.config": return fields?["passphrase"] as? String
            default: return nil
            }
        }
    }

    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.filter { !$0.isWhitespace && $0 != ":" })
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let b = UInt8(String(digits[i...i + 1]), radix: 16) else { return nil }
            out.append(b)
        }
        return out
    }
}
