import Foundation
import XCTest

/// Issue 17: a device built from a capture (`emulate --from`, `emu:recorded`) keeps the recorded
/// device's prepare-queue size. The recording is of an independently written device (the Python
/// speaker of Tests/IndependentDevices, whose queue holds 30 parts where gattlab's emulator holds
/// 32), and the parts each side queued are counted by tshark, not by gattlab.
final class RecordedPrepareQueueTests: XCTestCase {
    /// Prepare Write Responses in a capture, as tshark reads it.
    static func queuedParts(_ capture: URL) throws -> Int {
        let r = try Harness.run(Harness.tshark, ["-r", capture.path, "-Y", "btatt.opcode == 0x17", "-T", "fields", "-e", "frame.number"])
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.stdout.split(separator: "\n").count
    }

    func testTheRecordedPrepareQueueSizeIsServed() throws {
        _ = try Harness.tshark
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let device = try BlackBoxFuzzTests.independentDevice("speaker", in: dir)
        defer { device.stop() }

        // A phone's long write of a 700-byte URL at MTU 23: more parts than either queue holds.
        let url = "http://fw.example/" + String(repeating: "a", count: 682)
        let script: [String: Any] = [
            "schema": "gattlab.replay/1", "redacted": false,
            "source": ["capture": "hand-written", "connections": [String](), "start": 0],
            "steps": [
                ["action": "connect", "at": 0],
                ["action": "discover", "at": 1000],
                ["action": "write", "at": 2000, "method": "long", "characteristic": "00000006-1234-5678-9abc-def012345678",
                 "value": Data(url.utf8).map { String(format: "%02x", $0) }.joined(), "expect": ["result": "ok"]],
            ],
        ]
        let scriptFile = dir.appendingPathComponent("long-url.json")
        try JSONSerialization.data(withJSONObject: script).write(to: scriptFile)
        let recording = dir.appendingPathComponent("independent.btsnoop")
        let run = try Harness.gattlab(["replay", "run", scriptFile.path, "--target", "unix:\(device.socket)", "--allow-writes",
                                       "--record", recording.path, "--format", "json"], timeout: 60)
        XCTAssertTrue(FileManager.default.fileExists(atPath: recording.path), "no recording (exit \(run.status)): \(run.stderr)")
        let independent = try Self.queuedParts(recording)
        XCTAssertEqual(independent, 30, "the independent speaker's queue (att_server.py: 30 parts)")

        // The script extracted from that recording says how many parts the device took.
        let extract = try Harness.gattlab(["replay", "extract", recording.path], timeout: 60)
        XCTAssertEqual(extract.status, 0, extract.stderr)
        let steps = ((try? JSONSerialization.jsonObject(with: Data(extract.stdout.utf8))) as? [String: Any])?["steps"] as? [[String: Any]] ?? []
        let long = steps.first { $0["method"] as? String == "long" }
        let expect = long?["expect"] as? [String: Any]
        XCTAssertEqual(expect?["error"] as? String, "0x09", "\(long ?? [:])")
        XCTAssertEqual(expect?["queued"] as? Int, independent)

        // The replay sends the parts the phone sent (the 30 queued and the refused one). The
        // device built from the recording refuses the same part; gattlab's own speaker (32
        // parts) takes all 31 and diverges, so this fails if the size is not the recording's.
        for (target, expected, status) in [("emu:recorded", independent, Int32(0)), ("emu:speaker", independent + 1, 1)] {
            let again = dir.appendingPathComponent("again-\(target.dropFirst(4)).btsnoop")
            let r = try Harness.gattlab(["replay", "run", recording.path, "--target", target, "--table", target == "emu:speaker" ? "emulator" : "recorded",
                                         "--timing", "fast", "--record", again.path, "--force"], timeout: 60)
            XCTAssertTrue(FileManager.default.fileExists(atPath: again.path), "\(target): no recording (exit \(r.status)): \(r.stderr)")
            XCTAssertEqual(try Self.queuedParts(again), expected, "\(target): \(r.stdout)")
            XCTAssertEqual(r.status, status, "\(target): \(r.stdout)\(r.stderr)")
        }
    }
}
