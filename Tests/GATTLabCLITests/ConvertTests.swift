import Foundation
import XCTest

/// Every file `gattlab convert` writes opens in tshark with the same ATT content as its source,
/// and conversion never loses or overwrites what the user gave.
final class ConvertTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try Harness.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    /// ATT content as tshark sees it, independent of frame numbers: opcode, handle, value.
    func tsharkATT(_ path: String) throws -> [String] {
        let r = try Harness.run(Harness.tshark, ["-r", path, "-Y", "btatt", "-T", "fields", "-e", "btatt.opcode",
                                                 "-e", "btatt.handle", "-e", "btatt.value", "-e", "_ws.malformed"], timeout: 120)
        XCTAssertEqual(r.status, 0, "tshark could not read \(path): \(r.stderr)")
        return r.stdout.split(separator: "\n").map(String.init)
    }

    func testConvertedFilesHaveTheSameATTContentInTshark() throws {
        _ = try Harness.tshark
        let sources = try ["yeelock__btsnoop_hci.log", "ctfusbkbd__rgbctf2020_PI_1_MagicInTheAir.btsnoop",
                       "blepcapanalyzer__hci.pcap", "darkelf__test1.pcapng", "DSD6__btsnoop_hci.log",
                       "horizon74__btsnoop_hci.log", "iSAP__hci_dump.pklg"]
            .map { try Harness.realCaptures.appendingPathComponent($0).path }
            + [Harness.root.appendingPathComponent("Captures/speaker-ota-demo.btsnoop").path]
        for source in sources {
            let expected = try tsharkATT(source)
            if !source.hasSuffix(".pklg") { XCTAssertGreaterThan(expected.count, 10, "\(source) has ATT to compare") }
            for format in ["btsnoop", "btsnoop-monitor", "pcap", "pcap-monitor"] {
                let out = dir.appendingPathComponent("\(URL(fileURLWithPath: source).lastPathComponent).\(format)").path
                let r = try Harness.gattlab(["convert", "--to", format, source, out])
                XCTAssertEqual(r.status, 0, "convert \(source) to \(format): \(r.stderr)")
                XCTAssertTrue(r.stderr.contains("wrote"), r.stderr)
                XCTAssertEqual(try tsharkATT(out), expected, "\(format) from \(source)")
                // GATTLab reads its own output back to the same ATT PDUs.
                let a = try Harness.gattlab(["decode", "--format", "json", "--att-only", source])
                let b = try Harness.gattlab(["decode", "--format", "json", "--att-only", out])
                let strip: ([String: Any]) -> String = { o in
                    "\(o["opcode"] ?? "") \(o["handle"] ?? "") \(o["value"] ?? "") \(o["direction"] ?? "") \(o["time"] ?? "")"
                }
                XCTAssertEqual(Harness.jsonLines(a.stdout).map(strip), Harness.jsonLines(b.stdout).map(strip), "\(format) from \(source)")
            }
        }
    }

    func testConvertRefusesToOverwrite() throws {
        let source = Harness.root.appendingPathComponent("Captures/speaker-ota-demo.btsnoop").path
        let out = dir.appendingPathComponent("out.btsnoop").path
        try Data("precious".utf8).write(to: URL(fileURLWithPath: out))
        let r = try Harness.gattlab(["convert", source, out])
        XCTAssertEqual(r.status, 73, r.stderr)
        XCTAssertTrue(r.stderr.contains("--force"), r.stderr)
        XCTAssertEqual(try String(contentsOfFile: out, encoding: .utf8), "precious", "the existing file is untouched")
        let forced = try Harness.gattlab(["convert", "--force", source, out])
        XCTAssertEqual(forced.status, 0, forced.stderr)

        // Never onto the input, even with --force.
        let copy = dir.appendingPathComponent("in.btsnoop").path
        try FileManager.default.copyItem(atPath: source, toPath: copy)
        let before = try Data(contentsOf: URL(fileURLWithPath: copy))
        let same = try Harness.gattlab(["convert", "--force", copy, copy])
        XCTAssertEqual(same.status, 73, same.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: copy)), before)
        // No temporary files are left behind.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".tmp") }
        XCTAssertEqual(leftovers, [])
    }

    func testSnifferCapturesCannotBecomeHCI() throws {
        let source = try Harness.realCaptures.appendingPathComponent("TesiBLE__mouse.pcapng").path
        let out = dir.appendingPathComponent("mouse.btsnoop").path
        let r = try Harness.gattlab(["convert", source, out])
        XCTAssertEqual(r.status, 65, r.stderr)
        XCTAssertTrue(r.stderr.contains("link-layer"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: out))
    }

    func testMonitorWithSeveralControllersNeedsAnIndexForH4() throws {
        // Build a two-controller monitor capture from the demo by converting to monitor and
        // renumbering half the records' controller index.
        let demo = Harness.root.appendingPathComponent("Captures/speaker-ota-demo.btsnoop").path
        let monitor = dir.appendingPathComponent("m.btsnoop").path
        XCTAssertEqual(try Harness.gattlab(["convert", "--to", "btsnoop-monitor", demo, monitor]).status, 0)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: monitor)))
        var o = 16, n = 0
        while o + 24 <= bytes.count {
            let incl = Int(bytes[o + 4]) << 24 | Int(bytes[o + 5]) << 16 | Int(bytes[o + 6]) << 8 | Int(bytes[o + 7])
            if n >= 40 { bytes[o + 9] = 1 }  // flags = index << 16 | opcode: index 1
            o += 24 + incl
            n += 1
        }
        try Data(bytes).write(to: URL(fileURLWithPath: monitor))
        let r = try Harness.gattlab(["convert", "--to", "btsnoop", monitor, dir.appendingPathComponent("h4.btsnoop").path])
        XCTAssertEqual(r.status, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("--index"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("h4.btsnoop").path))
        let ok = try Harness.gattlab(["convert", "--to", "btsnoop", "--index", "1", monitor, dir.appendingPathComponent("h4.btsnoop").path])
        XCTAssertEqual(ok.status, 0, ok.stderr)
    }
}
