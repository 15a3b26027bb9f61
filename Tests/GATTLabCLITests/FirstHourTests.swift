import Foundation
import TestSupport
import XCTest

/// What a new user trips over in the first hour, each found by trying it: folders of rotated
/// logs, times that differ between commands, reports that overwrite each other, filters that
/// silently print nothing, colour where it does not belong.
final class FirstHourTests: XCTestCase {
    var dir: URL!
    let demo = Harness.root.appendingPathComponent("Captures/speaker-ota-demo.btsnoop")
    let sensor = Harness.root.appendingPathComponent("Captures/emulated/sensor-scan-mtu247.btsnoop")

    override func setUpWithError() throws { dir = try Harness.temporaryDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    /// Android rotates `btsnoop_hci.log` into `.log.last` and `.cfa`; logs get `.1` suffixes.
    /// A folder is searched by content, and what is not a capture is named once, not decoded.
    func testFoldersArePickedByContentNotByName() throws {
        let logs = dir.appendingPathComponent("bugreport")
        try FileManager.default.createDirectory(at: logs.appendingPathComponent("older"), withIntermediateDirectories: true)
        for name in ["btsnoop_hci.log.last", "older/btsnoop_hci.log.1", "capture.cfa"] {
            try FileManager.default.copyItem(at: demo, to: logs.appendingPathComponent(name))
        }
        try FileManager.default.copyItem(at: sensor, to: logs.appendingPathComponent("no-extension"))
        try Data("adb logcat output\n".utf8).write(to: logs.appendingPathComponent("logcat.log"))
        try Data("{}".utf8).write(to: logs.appendingPathComponent("notes.json"))
        try FileManager.default.copyItem(at: demo, to: logs.appendingPathComponent(".hidden.btsnoop"))

        let r = try Harness.gattlab(["timeline", logs.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        for name in ["btsnoop_hci.log.last", "btsnoop_hci.log.1", "capture.cfa", "no-extension"] {
            XCTAssertTrue(r.stdout.contains(name), "\(name) is analysed:\n\(r.stdout)")
        }
        XCTAssertFalse(r.stdout.contains(".hidden"), r.stdout)
        XCTAssertEqual(r.stderr, "gattlab: note: skipped 2 files that are not captures: logcat.log, notes.json (\(logs.path))\n")

        let audit = try Harness.gattlab(["audit", "--format", "json", logs.path])
        XCTAssertEqual(audit.status, 0, audit.stderr)
        let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(audit.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((doc["captures"] as? [[String: Any]])?.count, 4, "four captures audited")

        let info = try Harness.gattlab(["info", "--format", "json", logs.path])
        XCTAssertEqual(info.status, 0, info.stderr)
        XCTAssertEqual(info.stdout.split(separator: "\n").count, 4, "one JSON document per capture in the folder:\n\(info.stdout)")
        let decode = try Harness.gattlab(["decode", "--att-only", logs.path])
        XCTAssertEqual(decode.status, 0, decode.stderr)
        XCTAssertTrue(decode.stdout.contains("capture.cfa: ") && decode.stdout.contains("no-extension: "), "each line names its file")

        // A missing file beside good ones: its error, the others still read, exit 66.
        let mixed = try Harness.gattlab(["timeline", dir.appendingPathComponent("gone.btsnoop").path, demo.path])
        XCTAssertEqual(mixed.status, 66, mixed.stderr)
        XCTAssertTrue(Harness.oneError(mixed.stderr), mixed.stderr)
        XCTAssertTrue(mixed.stdout.contains("C0:FF:EE:12:34:56"), "the good capture is still told")

        let empty = dir.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let none = try Harness.gattlab(["timeline", empty.path])
        XCTAssertEqual(none.status, 66, none.stderr)
        XCTAssertTrue(Harness.oneError(none.stderr), none.stderr)
    }

    /// Two phones' logs are both called btsnoop_hci.log: one report each, none over the other.
    func testReportsOfCapturesWithEqualNamesDoNotOverwriteEachOther() throws {
        var inputs: [String] = []
        for (folder, source) in [("phone-a", demo), ("phone-b", sensor)] {
            let sub = dir.appendingPathComponent("in/\(folder)")
            try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: source, to: sub.appendingPathComponent("btsnoop_hci.log"))
            inputs.append(sub.appendingPathComponent("btsnoop_hci.log").path)
        }
        for (format, ext) in [("html", "html"), ("perfetto", "trace.json")] {
            let out = dir.appendingPathComponent("out-\(format)")
            let r = try Harness.gattlab(["timeline", "--format", format, "-o", out.path] + inputs)
            XCTAssertEqual(r.status, 0, r.stderr)
            let written = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
            XCTAssertEqual(written, ["phone-a__btsnoop_hci.log.\(ext)", "phone-b__btsnoop_hci.log.\(ext)"])
            let a = try String(contentsOf: out.appendingPathComponent(written[0]), encoding: .utf8)
            let b = try String(contentsOf: out.appendingPathComponent(written[1]), encoding: .utf8)
            XCTAssertTrue(a.contains("C0:FF:EE:12:34:56"), "phone-a's report is the speaker's")
            XCTAssertFalse(b.contains("C0:FF:EE:12:34:56"), "phone-b's report is the sensor's")
        }
    }

    /// The same record has the same relative time in decode (text and JSON) and timeline.
    /// The demo capture with a record first that decode prints nothing for (an HCI Read Local
    /// Version command, 2 s before the rest), as phones' logs begin: times must count from it.
    func captureWithAQuietFirstRecord() throws -> String {
        let bytes = [UInt8](try Data(contentsOf: demo))
        let firstTime = bytes[32..<40].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        func be32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * $0)) } }
        let command: [UInt8] = [0x01, 0x01, 0x10, 0x00]
        let stamp = (0..<8).map { UInt8(truncatingIfNeeded: (firstTime - 2_000_000) >> (56 - 8 * Int64($0))) }
        let record = be32(4) + be32(4) + be32(2) + be32(0) + stamp + command
        let path = dir.appendingPathComponent("quiet-start.btsnoop").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes[0..<16] + record + bytes[16...])))
        return path
    }

    func testDecodeAndTimelineShowTheSameRelativeTime() throws {
        let quiet = try captureWithAQuietFirstRecord()
        let quietJSON = try Harness.gattlab(["decode", "--format", "json", quiet])
        let firstLine = Harness.jsonLines(quietJSON.stdout).first
        XCTAssertEqual(firstLine?["frame"] as? Int, 2, "the command record prints nothing")
        XCTAssertEqual(firstLine?["relativeTime"] as? Double, 2.0, "times count from the file's first record")
        for capture in [demo.path, sensor.path, quiet] {
            let decoded = try Harness.gattlab(["decode", "--format", "json", capture])
            XCTAssertEqual(decoded.status, 0, decoded.stderr)
            var byFrame: [Int: Int64] = [:]
            for o in Harness.jsonLines(decoded.stdout) {
                guard let frame = o["frame"] as? Int, let t = o["relativeTime"] as? Double, let abs = o["time"] as? Int else {
                    XCTFail("\(capture): a line without frame, time or relativeTime: \(o)")
                    continue
                }
                byFrame[frame] = Int64((t * 1_000_000).rounded())
                _ = abs
            }
            let text = try Harness.gattlab(["decode", capture])
            for line in text.stdout.split(separator: "\n").prefix(200) {
                let f = line.split(separator: " ", omittingEmptySubsequences: true)
                guard f.count > 2, let frame = Int(f[0]), let ours = WiresharkConformanceTests.micros(f[1]) else { continue }
                XCTAssertEqual(byFrame[frame], ours, "\(capture) frame \(frame): text and JSON times")
            }
            let timeline = try Harness.gattlab(["timeline", "--format", "json", capture])
            let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(timeline.stdout.utf8)) as? [String: Any])
            var compared = 0
            for event in doc["events"] as? [[String: Any]] ?? [] {
                // A gap is timed where the silence began; an event joined from several records
                // (a long write, a chunked scan) at its last record.
                guard event["kind"] as? String != "link.gap", let frames = event["frames"] as? [Int], let last = frames.last,
                      let t = event["time"] as? Double, let expected = byFrame[last] else { continue }
                XCTAssertEqual(Int64((t * 1_000_000).rounded()), expected, "\(capture) event \(event["kind"] ?? "?") at frame \(last)")
                compared += 1
            }
            XCTAssertGreaterThan(compared, 5, "\(capture): events compared")
        }
    }

    /// Filters that match nothing say so and exit 67 instead of printing nothing.
    func testFiltersThatMatchNothingSaySo() throws {
        let uuid = try Harness.gattlab(["decode", "--uuid", "Battery Level", demo.path])
        XCTAssertEqual(uuid.status, 67, uuid.stderr)
        XCTAssertEqual(uuid.stdout, "")
        XCTAssertTrue(uuid.stderr.hasPrefix("gattlab: error: nothing matched --uuid Battery Level (\(demo.path))\n"), uuid.stderr)

        let device = try Harness.gattlab(["timeline", "--device", "C0:FF:EE:12:34:56", demo.path])
        XCTAssertEqual(device.status, 0, device.stderr)
        XCTAssertTrue(device.stdout.contains("C0:FF:EE:12:34:56"))
        let byId = try Harness.gattlab(["timeline", "--format", "json", "--device", "d0", "--protocol", "speaker-ota", demo.path])
        XCTAssertEqual(byId.status, 0, byId.stderr)
        let other = try Harness.gattlab(["timeline", "--protocol", "sensor-scan", demo.path, sensor.path])
        XCTAssertEqual(other.status, 0, other.stderr)
        XCTAssertTrue(other.stdout.contains("sensor-scan") && !other.stdout.contains("speaker-ota-demo"), "only the sensor's capture:\n\(other.stdout)")
        let none = try Harness.gattlab(["timeline", "--protocol", "esp-prov", demo.path, sensor.path])
        XCTAssertEqual(none.status, 67, none.stderr)
        XCTAssertEqual(none.stdout, "")
    }

    /// Colour on a terminal only, never with NO_COLOR; a pipe gets plain text.
    func testColourOnlyOnATerminalAndNeverWithNoColor() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { throw XCTSkip("script(1) from util-linux is not installed") }
        let gattlab = try Harness.gattlab.path
        let missing = dir.appendingPathComponent("missing.btsnoop").path
        let command = "'\(gattlab)' info '\(missing)'; '\(gattlab)' timeline '\(demo.path)' | head -n 3"
        let onTTY = try Harness.run(URL(fileURLWithPath: "/usr/bin/script"), ["-qec", "'\(gattlab)' info '\(missing)'", "/dev/null"],
                                    environment: ["NO_COLOR": "", "TERM": "xterm"])
        XCTAssertTrue(onTTY.stdout.contains("\u{1B}[1;31merror\u{1B}[0m"), "coloured on a terminal: \(onTTY.stdout.debugDescription)")
        let noColor = try Harness.run(URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"],
                                      environment: ["NO_COLOR": "1", "TERM": "xterm"])
        XCTAssertFalse(noColor.stdout.contains("\u{1B}["), "NO_COLOR: \(noColor.stdout.debugDescription)")
        XCTAssertTrue(noColor.stdout.contains("gattlab: error: cannot open"), noColor.stdout)
        let piped = try Harness.gattlab(["info", missing])
        XCTAssertFalse(piped.stderr.contains("\u{1B}["), piped.stderr)
    }
}
