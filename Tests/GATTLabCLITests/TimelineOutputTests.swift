import Foundation
import TestSupport
import XCTest

/// The timeline's outputs as their consumers read them: the HTML page rendered by headless
/// Chromium (the page's script must run without errors and draw the lanes), Perfetto's trace
/// JSON, the JSON document's shape, and the command's behaviour with several files.
final class TimelineOutputTests: XCTestCase {
    static var chromium: URL {
        get throws {
            for p in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] where FileManager.default.isExecutableFile(atPath: p) {
                return URL(fileURLWithPath: p)
            }
            // `make test` installs it; a missing browser is a set-up error, not a pass.
            throw TestSetupError("chromium is not installed: run `make setup` (apt-get install chromium)")
        }
    }

    func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gattlab-timeline-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir
    }

    func testHTMLRendersInHeadlessChromium() throws {
        let chromium = try Self.chromium
        let dir = try temporaryDirectory()
        let report = dir.appendingPathComponent("report.html")
        let capture = Harness.root.appendingPathComponent("Captures/speaker-ota-demo.btsnoop").path
        let r = try Harness.gattlab(["timeline", "--format", "html", "-o", report.path, capture])
        XCTAssertEqual(r.status, 0, r.stderr)
        var html = try String(contentsOf: report, encoding: .utf8)
        XCTAssertFalse(html.contains("http://") && html.contains("<script src"), "no external scripts")
        XCTAssertFalse(html.contains("correct horse"), "the password stays redacted in the page")
        // Record script errors in the DOM, where --dump-dom can show them.
        html = html.replacingOccurrences(of: "<main", with: "<script>addEventListener('error', e => document.documentElement.setAttribute('data-js-error', e.message))</script><main")
        let probe = dir.appendingPathComponent("probe.html")
        try html.write(to: probe, atomically: true, encoding: .utf8)
        let flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=\(dir.path)/profile"]
        let dom = try Harness.run(chromium, flags + ["--dump-dom", probe.absoluteString], timeout: 90)
        XCTAssertEqual(dom.status, 0, dom.stderr)
        XCTAssertFalse(dom.stdout.contains("data-js-error=\""), "the page's script failed: \(dom.stdout.components(separatedBy: "data-js-error=\"").dropFirst().first?.prefix(200) ?? "")")
        for needle in ["id=\"timeline-svg\"", "class=\"conn\"", "progress-line", "fmark fmark-error", "class=\"phase-group\"",
                       "device-card outcome-interrupted", "ota.link-dropped"] {
            XCTAssertTrue(dom.stdout.contains(needle), "the drawn page has \(needle)")
        }
        XCTAssertGreaterThan(dom.stdout.components(separatedBy: "<tr data-index=").count - 1, 20, "event rows")
        let shot = dir.appendingPathComponent("shot.png")
        let s = try Harness.run(chromium, flags + ["--screenshot=\(shot.path)", "--window-size=1400,1600", report.absoluteString], timeout: 90)
        XCTAssertEqual(s.status, 0, s.stderr)
        let png = try Data(contentsOf: shot)
        XCTAssertEqual(Array(png.prefix(4)), [0x89, 0x50, 0x4E, 0x47])
        XCTAssertGreaterThan(png.count, 40_000, "a drawn page, not a blank one")
    }

    func testPerfettoTraceHasTracksSpansAndCounters() throws {
        let dir = try temporaryDirectory()
        let out = dir.appendingPathComponent("trace.json")
        let capture = Harness.root.appendingPathComponent("Captures/emulated/speaker-reboot-validate-mtu247.btsnoop").path
        let r = try Harness.gattlab(["timeline", "--format", "perfetto", "-o", out.path, capture])
        XCTAssertEqual(r.status, 0, r.stderr)
        let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: out)) as? [String: Any])
        let events = try XCTUnwrap(doc["traceEvents"] as? [[String: Any]])
        func count(_ ph: String, _ cat: String? = nil) -> Int {
            events.filter { $0["ph"] as? String == ph && (cat == nil || $0["cat"] as? String == cat) }.count
        }
        XCTAssertEqual(count("X", "link"), 2, "two connections: before and after the reboot")
        XCTAssertGreaterThan(count("X", "phase"), 5)
        XCTAssertGreaterThan(count("C"), 5, "download progress counter")
        XCTAssertGreaterThan(count("i"), 20)
        XCTAssertTrue(events.contains { $0["ph"] as? String == "M" && ($0["args"] as? [String: Any])?["name"] as? String == "OTA" })
        for e in events where e["ph"] as? String != "M" {
            XCTAssertNotNil(e["ts"] as? Int, "every event has an integer timestamp")
            XCTAssertNotNil(e["pid"] as? Int)
        }
    }

    func testJSONDocumentShape() throws {
        let capture = Harness.root.appendingPathComponent("Captures/emulated/speaker-wrong-password-mtu23.btsnoop").path
        let r = try Harness.gattlab(["timeline", "--format", "json", "--absolute-time", capture])
        XCTAssertEqual(r.status, 0, r.stderr)
        let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        for key in ["gattlab", "capture", "devices", "connections", "phases", "progress", "events", "findings"] {
            XCTAssertNotNil(doc[key], key)
        }
        let events = try XCTUnwrap(doc["events"] as? [[String: Any]])
        XCTAssertTrue(events.allSatisfy { $0["time"] is NSNumber && $0["kind"] is String && $0["frames"] is [Int] && $0["timeUTC"] is String })
        let creds = try XCTUnwrap(events.first { $0["kind"] as? String == "ota.credentials" })
        XCTAssertEqual((creds["fields"] as? [String: Any])?["password"] as? String, "<redacted:28 bytes>")
        let revealed = try Harness.gattlab(["timeline", "--format", "json", "--reveal-secrets", capture])
        XCTAssertTrue(revealed.stdout.contains("correct horse battery staple"))
    }

    func testSeveralCapturesInParallelWithASummaryTable() throws {
        let dir = Harness.root.appendingPathComponent("Captures/emulated").path
        let one = try Harness.gattlab(["timeline", "--jobs", "1", "--format", "json", dir], timeout: 120)
        let many = try Harness.gattlab(["timeline", "--jobs", "4", "--format", "json", dir], timeout: 120)
        XCTAssertEqual(one.status, 0, one.stderr)
        XCTAssertEqual(one.stdout, many.stdout, "the same document whatever the parallelism")
        let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(many.stdout.utf8)) as? [String: Any])
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".btsnoop") }
        XCTAssertGreaterThanOrEqual(files.count, 60)
        XCTAssertEqual((doc["captures"] as? [Any])?.count, files.count, "every capture of the folder")
        let text = try Harness.gattlab(["timeline", "--no-color", dir], timeout: 120)
        let table = text.stdout.components(separatedBy: "\ncapture ").last ?? ""
        XCTAssertTrue(table.contains("speaker-wrong-password-mtu23.btsnoop") && table.contains("ota.wifi-join-failed"), table)
        // --fail-on turns findings into exit code 1 for CI.
        let failing = try Harness.gattlab(["timeline", "--fail-on", "error", "--format", "json",
                                           dir + "/speaker-wrong-password-mtu23.btsnoop"])
        XCTAssertEqual(failing.status, 1)
        let clean = try Harness.gattlab(["timeline", "--fail-on", "error", "--format", "json", dir + "/speaker-ota-mtu23.btsnoop"])
        XCTAssertEqual(clean.status, 0)
    }

    /// Timestamps are whatever the file says: the earliest and latest an Int64 holds, alternating,
    /// must not trap in any output's time arithmetic.
    func testExtremeTimestampsDoNotCrash() throws {
        let dir = try temporaryDirectory()
        var data = try Data(contentsOf: Harness.root.appendingPathComponent("Captures/emulated/speaker-ota-mtu23.btsnoop"))
        let epoch: Int64 = 0x00DC_DDB3_0F2F_8000
        var offset = 16, i = 0
        while offset + 24 <= data.count {
            let included = data[offset + 4..<offset + 8].reduce(0) { $0 << 8 | Int($1) }
            let stored = (i % 2 == 0 ? Int64.min : Int64.max) &+ epoch
            withUnsafeBytes(of: stored.bigEndian) { data.replaceSubrange(offset + 16..<offset + 24, with: $0) }
            offset += 24 + included
            i += 1
        }
        let file = dir.appendingPathComponent("extreme.btsnoop")
        try data.write(to: file)
        for format in ["text", "json", "html", "perfetto"] {
            let r = try Harness.gattlab(["timeline", "--format", format, "-o", dir.appendingPathComponent("out.\(format)").path, file.path])
            XCTAssertFalse(r.signalled, "\(format): crashed")
            XCTAssertEqual(r.status, 0, "\(format): \(r.stderr)")
        }
    }

    func testOutputsAreNotOverwrittenAndDamagedInputIsReported() throws {
        let dir = try temporaryDirectory()
        let out = dir.appendingPathComponent("t.json")
        try Data("keep".utf8).write(to: out)
        let capture = Harness.root.appendingPathComponent("Captures/emulated/sensor-scan-mtu23.btsnoop").path
        let r = try Harness.gattlab(["timeline", "--format", "json", "-o", out.path, capture])
        XCTAssertEqual(r.status, 73)
        XCTAssertEqual(try String(contentsOf: out, encoding: .utf8), "keep")
        // A capture cut in the middle of a record: the story up to there, then the error and 65.
        let data = try Data(contentsOf: URL(fileURLWithPath: capture))
        let cut = dir.appendingPathComponent("cut.btsnoop")
        try data.prefix(data.count - 7).write(to: cut)
        let c = try Harness.gattlab(["timeline", "--format", "json", cut.path])
        XCTAssertEqual(c.status, 65, c.stderr)
        XCTAssertTrue(c.stderr.contains("cut.btsnoop") && c.stderr.contains("record"), c.stderr)
        XCTAssertTrue(Harness.oneError(c.stderr), "one line")
        XCTAssertTrue(c.stdout.contains("\"events\""), "what was read is still reported")
    }

    /// Every format is written as it is made, to stdout or into `-o FILE` (through a temporary
    /// file renamed at the end): both must be the same bytes, and nothing else is left behind.
    func testEveryFormatWritesToItsFileWhatItPrints() throws {
        let dir = try temporaryDirectory()
        let demo = Harness.root.appendingPathComponent("Captures/speaker-ota-demo.btsnoop").path
        let scan = Harness.root.appendingPathComponent("Captures/emulated/sensor-scan-mtu23.btsnoop").path
        let runs: [(String, [String], [String])] = [
            ("timeline", ["--format", "text"], [demo]), ("timeline", ["--format", "text"], [demo, scan]),
            ("timeline", ["--format", "json"], [demo]), ("timeline", ["--format", "json"], [demo, scan]),
            ("timeline", ["--format", "html"], [demo]), ("timeline", ["--format", "perfetto"], [demo]),
            ("audit", ["--format", "text"], [demo, scan]), ("audit", ["--format", "json"], [demo]),
            ("audit", ["--format", "sarif"], [demo, scan]),
        ]
        for (i, (command, options, inputs)) in runs.enumerated() {
            let what = "\(command) \(options.joined(separator: " ")) on \(inputs.count) captures"
            let printed = try Harness.gattlab([command] + options + ["--no-color", "--jobs", "1"] + inputs)
            let file = dir.appendingPathComponent("out-\(i)")
            let written = try Harness.gattlab([command] + options + ["--no-color", "--jobs", "1", "-o", file.path] + inputs)
            XCTAssertEqual(printed.status, written.status, what)
            XCTAssertFalse(printed.stdout.isEmpty, what)
            XCTAssertEqual(try Data(contentsOf: file), Data(printed.stdout.utf8), what)
            XCTAssertTrue(written.stderr.contains("wrote \(file.path)"), written.stderr)
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { !$0.hasPrefix("out-") }
        XCTAssertEqual(left, [], "no temporary file is left")
    }
}
