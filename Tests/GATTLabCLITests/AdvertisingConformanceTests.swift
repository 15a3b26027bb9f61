import Foundation
import XCTest

/// Issue 16, advertising: for every real capture, `gattlab decode --format json` writes one
/// `adv` object per advertising report tshark reads, frame by frame, with the same advertiser
/// addresses and RSSI; and no `malformed` line on a frame tshark reads as advertising without
/// marking it malformed.
///
/// An advertising PDU longer than the bytes captured is reported as far as it goes and also
/// marked malformed, as tshark does (two sweyntooth captures have one each).
///
/// What tshark counts as a report:
/// - HCI: one per `bthci_evt.le_advts_event_type` or `bthci_evt.le_ext_advts_event_type`
///   occurrence (LE Meta subevents 0x02, 0x0B, 0x0D: one per report, Num_Reports of them);
/// - sniffers: one per frame with `btle.advertising_header.pdu_type` in {0x00 ADV_IND,
///   0x01 ADV_DIRECT_IND, 0x02 ADV_NONCONN_IND, 0x04 SCAN_RSP, 0x06 ADV_SCAN_IND, 0x07
///   ADV_EXT_IND/AUX_*} whose CRC the sniffer did not find bad (`nordic_ble.crcok == 0`,
///   `btle_rf.flags.crc_checked && !btle_rf.flags.crc_valid` or `btle.crc.incorrect`). A
///   packet received with a bad CRC is noise: GATTLab reports nothing for it, and those are
///   all the advertising frames tshark calls malformed in the real captures (649 of
///   TesiBLE__capture.pcapng's).
final class AdvertisingConformanceTests: XCTestCase {
    struct Frame: Equatable, CustomStringConvertible {
        var addresses: [String] = []
        var rssi: [Int] = []
        var description: String { "\(addresses.count) reports \(addresses) rssi \(rssi)" }
    }

    static let reportPDUTypes: Set<Int> = [0x00, 0x01, 0x02, 0x04, 0x06, 0x07]

    struct TsharkView {
        var frames: [Int: Frame] = [:]
        /// Frames with advertising that tshark reads without a malformed mark.
        var clean: Set<Int> = []
        var badCRC = 0
        /// Advertising-channel PDUs seen: a sniffer capture.
        var linkLayer = false
        var reports: Int { frames.values.reduce(0) { $0 + $1.addresses.count } }
    }

    static func tsharkView(_ file: String) throws -> TsharkView {
        let fields = ["frame.number", "bthci_evt.le_advts_event_type", "bthci_evt.le_ext_advts_event_type",
                      "btle.advertising_header.pdu_type", "nordic_ble.crcok", "btle_rf.flags.crc_checked",
                      "btle_rf.flags.crc_valid", "btle.crc.incorrect", "_ws.malformed",
                      "bthci_evt.bd_addr", "btle.advertising_address", "bthci_evt.rssi"]
        let r = try Harness.run(Harness.tshark, ["-r", file, "-o", Harness.tsharkUserDLT, "-T", "fields",
                                                 "-E", "occurrence=a", "-E", "aggregator=,"]
                                + fields.flatMap { ["-e", $0] }, timeout: 300)
        XCTAssertEqual(r.status, 0, "tshark failed on \(file): \(r.stderr)")
        var view = TsharkView()
        func list(_ s: Substring) -> [Substring] { s.isEmpty ? [] : s.split(separator: ",") }
        for line in r.stdout.split(separator: "\n") {
            let f = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard f.count == fields.count, let frame = Int(f[0]) else { continue }
            let malformed = !f[8].isEmpty
            let hciReports = list(f[1]).count + list(f[2]).count
            if hciReports > 0 {
                var fr = Frame()
                fr.addresses = list(f[9]).prefix(hciReports).map { $0.uppercased() }
                // 127 is "not available": GATTLab leaves such an RSSI out.
                fr.rssi = list(f[11]).compactMap { Int($0) }.filter { $0 != 127 }
                view.frames[frame] = fr
                if !malformed { view.clean.insert(frame) }
                continue
            }
            guard let type = list(f[3]).first.flatMap({ Int($0.dropFirst(2), radix: 16) }) else { continue }
            view.linkLayer = true
            let badCRC = f[4] == "0" || (f[5] == "1" && f[6] == "0") || (f[5] == "True" && f[6] == "False") || !f[7].isEmpty
            if badCRC { view.badCRC += 1; continue }
            if !malformed { view.clean.insert(frame) }
            guard reportPDUTypes.contains(type) else { continue }
            var fr = Frame()
            fr.addresses = [list(f[10]).first.map { $0.uppercased() } ?? "-"]
            view.frames[frame] = fr
        }
        return view
    }

    struct GattlabView {
        var frames: [Int: Frame] = [:]
        var malformedFrames: Set<Int> = []
        var problems = 0
        var status: Int32 = 0
        var stderr = ""
        var reports: Int { frames.values.reduce(0) { $0 + $1.addresses.count } }
    }

    static func gattlabView(_ file: String, sniffer: Bool) throws -> GattlabView {
        let r = try Harness.gattlab(["decode", "--format", "json", file], timeout: 300)
        XCTAssertFalse(r.signalled, "gattlab crashed on \(file)")
        var view = GattlabView(status: r.status, stderr: r.stderr)
        for o in Harness.jsonLines(r.stdout) {
            guard let frame = o["frame"] as? Int else { continue }
            switch o["type"] as? String {
            case "adv":
                view.frames[frame, default: Frame()].addresses.append((o["address"] as? String) ?? "-")
                // Sniffers' RSSI comes from their own header, which the HCI field list above leaves out.
                if !sniffer, let rssi = o["rssi"] as? Int { view.frames[frame, default: Frame()].rssi.append(rssi) }
                if o["problem"] != nil { view.problems += 1 }
            case "malformed":
                view.malformedFrames.insert(frame)
            default:
                break
            }
        }
        return view
    }

    func testEveryRealCaptureHasTsharksAdvertisingReports() throws {
        _ = try Harness.gattlab
        _ = try Harness.tshark
        let files = try Harness.manifest()
        final class Total: @unchecked Sendable {
            let lock = NSLock()
            var reports = 0, files = 0
        }
        let total = Total()
        try EveryRealCapture.check(files) { name, path in
            let t = try Self.tsharkView(path)
            let g = try Self.gattlabView(path, sniffer: t.linkLayer)
            var problems: [String] = []
            if g.status != 0 { problems.append("exit \(g.status): \(g.stderr)") }
            if t.reports != g.reports { problems.append("tshark \(t.reports) reports, gattlab \(g.reports)") }
            let differing = Set(t.frames.keys).union(g.frames.keys).filter { t.frames[$0] != g.frames[$0] }.sorted()
            if !differing.isEmpty {
                let shown = differing.prefix(5).map { "frame \($0): tshark \(t.frames[$0].map(String.init(describing:)) ?? "none"), gattlab \(g.frames[$0].map(String.init(describing:)) ?? "none")" }
                problems.append("\(differing.count) frames differ: \(shown)")
            }
            let falseMalformed = g.malformedFrames.intersection(t.clean).sorted()
            if !falseMalformed.isEmpty {
                problems.append("malformed on \(falseMalformed.count) advertising frames tshark reads cleanly: \(falseMalformed.prefix(10))")
            }
            total.lock.lock()
            total.reports += t.reports
            if t.reports > 0 { total.files += 1 }
            total.lock.unlock()
            var line = "\(t.reports) advertising reports"
            if t.badCRC > 0 { line += "; \(t.badCRC) advertising-channel packets with a bad CRC left out" }
            if g.problems > 0 { line += "; \(g.problems) with an AD problem" }
            return .init(line: line, problems: problems)
        }
        print("advertising: \(total.reports) reports in \(total.files) captures agree with tshark")
    }

    /// Timelines of two real captures, checked by hand against tshark:
    /// - TesiBLE__capture.pcapng: 38 distinct advertisers among the good-CRC reports;
    ///   D1:5C:F0:EE:02:8F ("Edge 540") sent 2122 of them, nordic_ble.rssi -68 / -50 / -43
    ///   (min / median / max);
    /// - AndroidPad__btsnoop_hci.cfa: D0:BA:E4:B9:AC:19 ("ROKI_1082_V02") was heard 15 times at
    ///   bthci_evt.rssi -104...-81, median -93, before two connections ended 0x3E (never established).
    func testAdvertisingInTimelinesOfRealCaptures() throws {
        let folder = try Harness.realCaptures
        func timeline(_ name: String) throws -> [String: Any] {
            let r = try Harness.gattlab(["timeline", "--format", "json", folder.appendingPathComponent(name).path], timeout: 300)
            XCTAssertEqual(r.status, 0, r.stderr)
            return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        }
        func device(_ t: [String: Any], _ address: String) throws -> [String: Any] {
            let devices = try XCTUnwrap(t["devices"] as? [[String: Any]])
            return try XCTUnwrap(devices.first { $0["address"] as? String == address }, "\(address) listed")
        }
        let tesi = try timeline("TesiBLE__capture.pcapng")
        let overview = try XCTUnwrap(tesi["advertising"] as? [String: Any])
        XCTAssertEqual(overview["reports"] as? Int, 12293)
        XCTAssertEqual(overview["advertisers"] as? Int, 38)
        XCTAssertEqual((tesi["devices"] as? [Any])?.count, 21, "20 advertise-only devices and the one connected")
        let edge = try XCTUnwrap(try device(tesi, "D1:5C:F0:EE:02:8F")["advertising"] as? [String: Any])
        XCTAssertEqual(edge["reports"] as? Int, 2122)
        XCTAssertEqual(edge["names"] as? [String], ["Edge 540"])
        let rssi = try XCTUnwrap(edge["rssi"] as? [String: Any])
        XCTAssertEqual([rssi["min"], rssi["median"], rssi["max"]] as? [Int], [-68, -50, -43])
        XCTAssertLessThanOrEqual((rssi["series"] as? [Any])?.count ?? 0, 64)

        let pad = try timeline("AndroidPad__btsnoop_hci.cfa")
        let roki = try device(pad, "D0:BA:E4:B9:AC:19")
        XCTAssertEqual(((roki["advertising"] as? [String: Any])?["rssi"] as? [String: Any])?["median"] as? Int, -93)
        let findings = try XCTUnwrap(pad["findings"] as? [[String: Any]])
        let weak = try XCTUnwrap(findings.first { $0["id"] as? String == "adv.weak-signal" && $0["device"] as? Int == roki["id"] as? Int })
        // Judged on the window before the first link that ended 0x3E (frame 7678, 175.64 s): the
        // 7 reports from 172.30 s to 174.98 s, RSSI -104...-85, median -97.
        let evidence = try XCTUnwrap(weak["evidence"] as? String)
        XCTAssertTrue(evidence.hasPrefix("in the 10 s before the failed connection at frame 7678"), evidence)
        XCTAssertTrue(evidence.contains("heard 7 times at a median of -97 dBm (-104 to -85)"), evidence)
        // Each frame once: the two links that ended 0x3E.
        XCTAssertEqual(weak["frames"] as? [Int], [7678, 7829])
    }

    /// The HTML page of a capture with advertising draws each device's RSSI as an inline SVG,
    /// without script errors.
    func testHTMLDrawsTheRSSISeries() throws {
        let folder = try Harness.realCaptures
        let chromium = try TimelineOutputTests.chromium
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gattlab-adv-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let report = dir.appendingPathComponent("report.html")
        let r = try Harness.gattlab(["timeline", "--format", "html", "-o", report.path,
                                     folder.appendingPathComponent("AndroidPad__btsnoop_hci.cfa").path], timeout: 120)
        XCTAssertEqual(r.status, 0, r.stderr)
        var html = try String(contentsOf: report, encoding: .utf8)
        html = html.replacingOccurrences(of: "<main", with: "<script>addEventListener('error', e => document.documentElement.setAttribute('data-js-error', e.message))</script><main")
        try html.write(to: report, atomically: true, encoding: .utf8)
        let flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(dir.path)/profile"]
        let dom = try Harness.run(chromium, flags + ["--dump-dom", report.absoluteString], timeout: 90)
        XCTAssertEqual(dom.status, 0, dom.stderr)
        XCTAssertFalse(dom.stdout.contains("data-js-error=\""), "the page's script failed")
        XCTAssertGreaterThan(dom.stdout.components(separatedBy: "class=\"rssi-spark\"").count - 1, 5, "RSSI sparklines drawn")
        XCTAssertTrue(dom.stdout.contains("Advertising: "))
    }
}
