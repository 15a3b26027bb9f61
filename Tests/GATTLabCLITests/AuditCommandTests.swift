import Foundation
import TestSupport
import XCTest

/// `gattlab audit` as its consumers use it: SARIF that the OASIS schema accepts and that locates
/// each finding in its capture file and record, the gattlab.audit/1 JSON document, --fail-on exit
/// codes for CI, -o that neither replaces a file without --force nor writes over an input, and the
/// one-line error for a damaged capture.
final class AuditCommandTests: XCTestCase {
    static let schema = Harness.root.appendingPathComponent("Tests/GATTLabCLITests/Fixtures/sarif-schema-2.1.0.json")
    static let validator = Harness.root.appendingPathComponent("Scripts/validate-sarif.py")
    static let emulated = Harness.root.appendingPathComponent("Captures/emulated")
    /// Findings of every severity: two errors and a note (see testFailOnExitCodes).
    static let failing = emulated.appendingPathComponent("speaker-ota-mtu23.btsnoop")
    /// Paired with Secure Connections and MITM, encrypted before the credentials: one note only
    /// (capture.holds-secrets), no warning or error.
    static let clean = emulated.appendingPathComponent("speaker-secure-ota-mtu247.btsnoop")

    func temporaryDirectory() throws -> URL {
        let dir = try Harness.temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir
    }

    static func json(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text.prefix(300))",
                      file: file, line: line)
    }

    /// `python3 Scripts/validate-sarif.py SCHEMA FILE`: exit 0 or the test fails with its errors.
    /// A missing python3 or jsonschema module is a set-up error, not a pass.
    func validate(_ sarif: URL, file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try Self.runValidator(sarif)
        XCTAssertEqual(r.status, 0, "SARIF schema validation of \(sarif.lastPathComponent):\n\(r.stdout.prefix(4000))\(r.stderr.prefix(2000))",
                       file: file, line: line)
    }

    static func runValidator(_ sarif: URL) throws -> Harness.Result {
        let env = URL(fileURLWithPath: "/usr/bin/env")
        let probe = try Harness.run(env, ["python3", "--version"])
        guard probe.status == 0 else { throw TestSetupError("python3 is not installed: apt-get install -y python3 python3-jsonschema") }
        let r = try Harness.run(env, ["python3", validator.path, schema.path, sarif.path], timeout: 120)
        if r.status == 2 && r.stderr.contains("jsonschema module is missing") {
            throw TestSetupError("python3 jsonschema is not installed: apt-get install -y python3-jsonschema")
        }
        return r
    }

    /// The validator rejects what the schema rejects, so a passing validation means something.
    func testValidatorRejectsAnInvalidSARIF() throws {
        let dir = try temporaryDirectory()
        let bad = dir.appendingPathComponent("bad.sarif")
        try Data(#"{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"message": {"text": "m"}, "level": "fatal"}]}]}"#.utf8)
            .write(to: bad)
        let r = try Self.runValidator(bad)
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("$.runs[0].results[0].level"), r.stdout)
    }

    /// The SARIF of the project's captures (absolute paths: file:// URIs) and of every real capture
    /// of the manifest (relative paths: SRCROOT-relative URIs) validates against the OASIS
    /// schema, and each result names its capture and carries the records of the same finding in
    /// the JSON output.
    func testSARIFValidatesAndLocatesEveryFinding() throws {
        let dir = try temporaryDirectory()
        // The project's captures, named by absolute path through their folder.
        let captures = Harness.root.appendingPathComponent("Captures")
        let sarif = dir.appendingPathComponent("captures.sarif")
        let r = try Harness.gattlab(["audit", "--format", "sarif", "-o", sarif.path, captures.path], timeout: 180)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "", "-o: nothing on standard output")
        try validate(sarif)
        let json = try Harness.gattlab(["audit", "--format", "json", captures.path], timeout: 180)
        XCTAssertEqual(json.status, 0, json.stderr)
        let own = try checkLocations(sarif: Data(contentsOf: sarif), json: Self.json(json.stdout), relative: false)
        XCTAssertGreaterThanOrEqual(own.files, 70, "every capture of Captures/ and Captures/emulated/")
        XCTAssertGreaterThan(own.results, 100)

        // Real captures, named relative to their folder.
        let names = try Harness.manifest()
        XCTAssertGreaterThanOrEqual(names.count, 10)
        let realSARIF = dir.appendingPathComponent("real.sarif")
        let rr = try Harness.gattlab(["audit", "--format", "sarif", "--pretty", "-o", realSARIF.path] + names, timeout: 300,
                                     directory: try Harness.realCaptures)
        XCTAssertEqual(rr.status, 0, rr.stderr)
        try validate(realSARIF)
        let realJSON = try Harness.gattlab(["audit", "--format", "json"] + names, timeout: 300, directory: try Harness.realCaptures)
        XCTAssertEqual(realJSON.status, 0, realJSON.stderr)
        let real = try checkLocations(sarif: Data(contentsOf: realSARIF), json: Self.json(realJSON.stdout), relative: true)
        XCTAssertEqual(real.files, names.count)
        XCTAssertGreaterThan(real.results, 0)

        // The record a result carries is the record of the event: the credentials finding of
        // speaker-ota-mtu23 points at the first OTA_CREDENTIALS write that `decode` shows.
        let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: sarif)) as? [String: Any])
        let results = ((doc["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]]) ?? []
        let credentials = try XCTUnwrap(results.first {
            $0["ruleId"] as? String == "credentials.unencrypted-link" && Self.path(ofResult: $0) == Self.failing.path
        }, "the credentials finding of speaker-ota-mtu23")
        let decode = try Harness.gattlab(["decode", "--format", "json", Self.failing.path])
        let write = try XCTUnwrap(Harness.jsonLines(decode.stdout, type: "att").first {
            $0["name"] as? String == "OTA_CREDENTIALS" && $0["direction"] as? String == "sent" && ($0["opcodeName"] as? String)?.contains("Write") == true
        })
        let logical = ((credentials["locations"] as? [[String: Any]])?.first?["logicalLocations"] as? [[String: Any]])?.first
        XCTAssertEqual(logical?["name"] as? String, "record \(write["frame"] as? Int ?? -1)")
    }

    /// Checks every SARIF result against the JSON findings; returns how many files and results.
    func checkLocations(sarif data: Data, json: [String: Any], relative: Bool,
                        file: StaticString = #filePath, line: UInt = #line) throws -> (files: Int, results: Int) {
        let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        XCTAssertEqual(doc["version"] as? String, "2.1.0", file: file, line: line)
        let runs = try XCTUnwrap(doc["runs"] as? [[String: Any]])
        XCTAssertEqual(runs.count, 1, file: file, line: line)
        let run = runs[0]
        let rules = try XCTUnwrap((run["tool"] as? [String: Any])?["driver"] as? [String: Any])["rules"] as? [[String: Any]] ?? []
        let artifacts = try XCTUnwrap(run["artifacts"] as? [[String: Any]])
        let results = try XCTUnwrap(run["results"] as? [[String: Any]])

        // The JSON findings, keyed "file|id|severity|records".
        let captures = try XCTUnwrap(json["captures"] as? [[String: Any]])
        var records: [String: Int] = [:]
        var expected: [String] = []
        for c in captures {
            let path = try XCTUnwrap(c["file"] as? String)
            records[path] = c["records"] as? Int
            for f in c["findings"] as? [[String: Any]] ?? [] {
                let recs = (f["records"] as? [Int] ?? []).map(String.init).joined(separator: ",")
                expected.append("\(path)|\(f["id"] as? String ?? "")|\(f["severity"] as? String ?? "")|\(recs)")
            }
        }
        XCTAssertEqual(Set(artifacts.compactMap { Self.path(of: $0["location"] as? [String: Any]) }), Set(records.keys),
                       "one artifact per capture, named by its path", file: file, line: line)

        var found: [String] = []
        for (i, result) in results.enumerated() {
            let id = result["ruleId"] as? String ?? ""
            if let index = result["ruleIndex"] as? Int {
                XCTAssertEqual(index < rules.count ? rules[index]["id"] as? String : nil, id, "result \(i): ruleIndex", file: file, line: line)
            } else {
                XCTFail("result \(i) has no ruleIndex", file: file, line: line)
            }
            let locations = result["locations"] as? [[String: Any]] ?? []
            XCTAssertEqual(locations.count, 1, "result \(i)", file: file, line: line)
            let artifact = (locations.first?["physicalLocation"] as? [String: Any])?["artifactLocation"] as? [String: Any]
            let uri = artifact?["uri"] as? String ?? ""
            if relative {
                XCTAssertEqual(artifact?["uriBaseId"] as? String, "SRCROOT", "result \(i): \(uri)", file: file, line: line)
                XCTAssertFalse(uri.hasPrefix("/") || uri.hasPrefix("file:"), "result \(i): \(uri)", file: file, line: line)
            } else {
                XCTAssertTrue(uri.hasPrefix("file:///"), "result \(i): \(uri)", file: file, line: line)
            }
            let path = try XCTUnwrap(Self.path(of: artifact), "result \(i): \(uri)", file: file, line: line)
            XCTAssertNotNil(records[path], "result \(i) names a capture that was audited: \(uri)", file: file, line: line)
            if let index = artifact?["index"] as? Int, index < artifacts.count {
                XCTAssertEqual(Self.path(of: artifacts[index]["location"] as? [String: Any]), path, "result \(i): artifact index",
                               file: file, line: line)
            } else {
                XCTFail("result \(i): no valid artifact index", file: file, line: line)
            }
            let recs = (result["properties"] as? [String: Any])?["records"] as? [Int] ?? []
            XCTAssertFalse(recs.isEmpty, "result \(i) carries its records", file: file, line: line)
            let logical = locations.first?["logicalLocations"] as? [[String: Any]]
            XCTAssertEqual(logical?.first?["name"] as? String, recs.first.map { "record \($0)" }, "result \(i)", file: file, line: line)
            XCTAssertEqual(logical?.first?["kind"] as? String, "record", file: file, line: line)
            if let last = recs.max(), let total = records[path] {
                XCTAssertTrue(recs.allSatisfy { $0 >= 1 } && last <= total, "result \(i): records \(recs) of \(total)", file: file, line: line)
            }
            found.append("\(path)|\(id)|\(result["level"] as? String ?? "")|\(recs.map(String.init).joined(separator: ","))")
        }
        XCTAssertEqual(found.sorted(), expected.sorted(), "the SARIF results are the JSON findings, with the same files and records",
                       file: file, line: line)
        return (records.count, results.count)
    }

    /// A capture path from a SARIF artifactLocation: a file:// URI, or a SRCROOT-relative one.
    static func path(of location: [String: Any]?) -> String? {
        guard let uri = location?["uri"] as? String else { return nil }
        if uri.hasPrefix("file://") { return URL(string: uri)?.path }
        return uri.removingPercentEncoding
    }

    static func path(ofResult result: [String: Any]) -> String? {
        let location = ((result["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])?["artifactLocation"]
        return path(of: location as? [String: Any])
    }

    func testJSONDocumentHasTheSchemaAndConsistentSummary() throws {
        let r = try Harness.gattlab(["audit", "--format", "json", Self.failing.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        let doc = try Self.json(r.stdout)
        XCTAssertEqual(doc["schema"] as? String, "gattlab.audit/1")
        XCTAssertEqual(doc["file"] as? String, Self.failing.path)
        XCTAssertEqual(doc["format"] as? String, "btsnoop")
        XCTAssertEqual(doc["records"] as? Int, 100)
        for key in ["findings", "links", "secrets"] { XCTAssertNotNil(doc[key] as? [Any], key) }
        let findings = doc["findings"] as? [[String: Any]] ?? []
        let summary = try XCTUnwrap(doc["summary"] as? [String: Any])
        for (key, severity) in [("errors", "error"), ("warnings", "warning"), ("notes", "note")] {
            XCTAssertEqual(summary[key] as? Int, findings.filter { $0["severity"] as? String == severity }.count, key)
        }
        XCTAssertEqual(summary["worstSeverity"] as? String, "error")
        XCTAssertTrue(findings.contains { $0["id"] as? String == "credentials.unencrypted-link" }, "\(findings)")
        XCTAssertTrue(findings.allSatisfy { ($0["records"] as? [Int])?.isEmpty == false && $0["fix"] is String })
        let secrets = doc["secrets"] as? [[String: Any]] ?? []
        XCTAssertEqual(secrets.map { $0["value"] as? String }, ["<redacted:28 bytes>"])
        XCTAssertFalse(r.stdout.contains("correct horse"))

        // Several captures: one document with a capture per file and a total.
        let two = try Harness.gattlab(["audit", "--format", "json", Self.failing.path, Self.clean.path])
        XCTAssertEqual(two.status, 0, two.stderr)
        let both = try Self.json(two.stdout)
        XCTAssertEqual(both["schema"] as? String, "gattlab.audit/1")
        let list = try XCTUnwrap(both["captures"] as? [[String: Any]])
        XCTAssertEqual(Set(list.compactMap { $0["file"] as? String }), [Self.failing.path, Self.clean.path])
        XCTAssertEqual((both["summary"] as? [String: Any])?["errors"] as? Int,
                       list.map { ($0["summary"] as? [String: Any])?["errors"] as? Int ?? 0 }.reduce(0, +))
    }

    func testFailOnExitCodes() throws {
        // What the two captures hold, so the exit codes below test the thresholds.
        let failing = try Self.json(try Harness.gattlab(["audit", "--format", "json", Self.failing.path]).stdout)
        XCTAssertEqual((failing["summary"] as? [String: Any])?["worstSeverity"] as? String, "error")
        let clean = try Self.json(try Harness.gattlab(["audit", "--format", "json", Self.clean.path]).stdout)
        let cleanSummary = try XCTUnwrap(clean["summary"] as? [String: Any])
        XCTAssertEqual(cleanSummary["errors"] as? Int, 0)
        XCTAssertEqual(cleanSummary["warnings"] as? Int, 0)
        XCTAssertEqual(cleanSummary["worstSeverity"] as? String, "note")

        let cases: [(URL, String?, Int32)] = [
            (Self.failing, nil, 0), (Self.failing, "never", 0), (Self.failing, "error", 1), (Self.failing, "warning", 1), (Self.failing, "note", 1),
            (Self.clean, nil, 0), (Self.clean, "never", 0), (Self.clean, "error", 0), (Self.clean, "warning", 0), (Self.clean, "note", 1),
        ]
        for (capture, failOn, status) in cases {
            for format in ["text", "json", "sarif"] {
                let args = ["audit", "--format", format] + (failOn.map { ["--fail-on", $0] } ?? []) + [capture.path]
                let r = try Harness.gattlab(args)
                XCTAssertEqual(r.status, status, "\(args.joined(separator: " "))\n\(r.stderr)")
                XCTAssertFalse(r.stdout.isEmpty, "the report is written whatever the exit code")
            }
        }
        // A folder: the worst capture decides.
        let r = try Harness.gattlab(["audit", "--fail-on", "error", "--format", "sarif", Self.emulated.path], timeout: 180)
        XCTAssertEqual(r.status, 1, r.stderr)
        let bad = try Harness.gattlab(["audit", "--fail-on", "sometimes", Self.clean.path])
        XCTAssertEqual(bad.status, 64, bad.stderr)
    }

    func testOutputFileIsNeverReplacedWithoutForceNorWrittenOverAnInput() throws {
        let dir = try temporaryDirectory()
        let input = dir.appendingPathComponent("in.btsnoop")
        try FileManager.default.copyItem(at: Self.failing, to: input)
        let original = try Data(contentsOf: input)
        let out = dir.appendingPathComponent("audit.sarif")
        let placeholder = Data("keep me\n".utf8)
        try placeholder.write(to: out)

        let refused = try Harness.gattlab(["audit", "--format", "sarif", "-o", out.path, input.path])
        XCTAssertEqual(refused.status, 73, refused.stderr)
        XCTAssertTrue(refused.stderr.contains(out.path) && refused.stderr.contains("--force"), refused.stderr)
        XCTAssertEqual(try Data(contentsOf: out), placeholder, "an existing -o file is kept without --force")

        let forced = try Harness.gattlab(["audit", "--format", "sarif", "-o", out.path, "--force", input.path])
        XCTAssertEqual(forced.status, 0, forced.stderr)
        let written = try Data(contentsOf: out)
        XCTAssertNotEqual(written, placeholder)
        XCTAssertEqual((try JSONSerialization.jsonObject(with: written) as? [String: Any])?["version"] as? String, "2.1.0")

        // -o naming an input, however spelled, with --force: refused, the input untouched.
        let link = dir.appendingPathComponent("link.btsnoop")
        try FileManager.default.linkItem(at: input, to: link)
        let folder = dir.appendingPathComponent("folder")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let inFolder = folder.appendingPathComponent("in.btsnoop")
        try FileManager.default.copyItem(at: Self.failing, to: inFolder)
        for (label, output, inputs, directory) in [
            ("the same path", input.path, [input.path], nil as URL?),
            ("./ spelling", "./in.btsnoop", ["in.btsnoop"], dir),
            ("absolute against relative", input.path, ["in.btsnoop"], dir),
            ("a file of an input folder", inFolder.path, [folder.path], nil),
            ("sub/.. spelling", "\(dir.path)/../\(dir.lastPathComponent)/in.btsnoop", [input.path], nil),
        ] {
            for format in ["text", "json", "sarif"] {
                let r = try Harness.gattlab(["audit", "--format", format, "-o", output, "--force"] + inputs, directory: directory)
                XCTAssertEqual(r.status, 73, "\(label) (\(format)): \(r.stderr)")
                XCTAssertEqual(try Data(contentsOf: input), original, "\(label) (\(format)): the input is unchanged")
                XCTAssertEqual(try Data(contentsOf: inFolder), original, "\(label) (\(format)): the input is unchanged")
            }
        }
        // A hard link to the input: whatever the command decides, the input's bytes stay.
        let viaLink = try Harness.gattlab(["audit", "--format", "sarif", "-o", link.path, "--force", input.path])
        XCTAssertTrue([0, 73].contains(viaLink.status), viaLink.stderr)
        XCTAssertEqual(try Data(contentsOf: input), original, "a hard link to the input: the input is unchanged")

        // No temporary file is left beside the outputs.
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        XCTAssertEqual(left, ["audit.sarif", "folder", "in.btsnoop", "link.btsnoop"])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["in.btsnoop"])
    }

    func testDamagedCaptureGivesOneLineErrorNamingTheFile() throws {
        let dir = try temporaryDirectory()
        var cut: [URL] = []
        for name in ["DSD6__btsnoop_hci.log", "TesiBLE__mouse.pcapng", "crackle__known_ltk.pcap", "esp32btclassic__hci_dump.pklg"] {
            let source = try Harness.realCaptures.appendingPathComponent(name)
            guard let data = try? Data(contentsOf: source) else { throw TestSetupError("\(source.path) not found: the tests need ../shared") }
            let url = dir.appendingPathComponent("cut-\(name)")
            try data.prefix(data.count / 2 + 3).write(to: url)  // mid-record
            cut.append(url)
        }
        for url in cut {
            for format in ["text", "json", "sarif"] {
                let r = try Harness.gattlab(["audit", "--format", format, url.path])
                XCTAssertEqual(r.status, 65, "\(url.lastPathComponent) \(format): \(r.stderr)")
                XCTAssertFalse(r.signalled)
                XCTAssertTrue(Harness.oneError(r.stderr), "one error and its hint: \(r.stderr)")
                let line = String(r.stderr.split(separator: "\n").first ?? "")
                XCTAssertTrue(line.hasPrefix("gattlab: error: ") && line.contains("(\(url.path), "), line)
                XCTAssertTrue(line.contains("record ") && line.contains("byte offset"), "where: \(line)")
            }
        }
        // Beside a good capture: both reported, the damaged one's error, exit 65.
        let r = try Harness.gattlab(["audit", "--format", "json", cut[0].path, Self.failing.path])
        XCTAssertEqual(r.status, 65, r.stderr)
        XCTAssertTrue(Harness.oneError(r.stderr), r.stderr)
        let doc = try Self.json(r.stdout)
        let files = (doc["captures"] as? [[String: Any]] ?? []).compactMap { $0["file"] as? String }
        XCTAssertTrue(files.contains(Self.failing.path), "\(files)")
        // Not a capture at all, and a missing file.
        let junk = dir.appendingPathComponent("junk.log")
        try Data("not a capture at all".utf8).write(to: junk)
        let j = try Harness.gattlab(["audit", junk.path])
        XCTAssertEqual(j.status, 65, j.stderr)
        XCTAssertTrue(j.stderr.hasPrefix("gattlab: error: ") && j.stderr.contains("(\(junk.path), byte offset 0)"), j.stderr)
        let m = try Harness.gattlab(["audit", dir.appendingPathComponent("missing.btsnoop").path])
        XCTAssertEqual(m.status, 66, m.stderr)
    }
}
