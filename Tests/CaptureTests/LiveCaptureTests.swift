import Foundation
import TestSupport
import XCTest

@testable import Capture

/// Live capture without Bluetooth: the record conversion of a growing btsnoop stream, the ring of
/// files, and the errors the monitor device gives on a machine without Bluetooth.
final class LiveCaptureTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static func emulated(_ name: String) -> String { root.appendingPathComponent("Captures/emulated/\(name)").path }

    /// Whether this kernel has AF_BLUETOOTH (the VM does, this kind of host does not).
    static var hostHasBluetooth: Bool {
        let fd = socket(31, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 1)
        if fd >= 0 { close(fd); return true }
        return errno != EAFNOSUPPORT
    }

    /// A capture rewritten as btsnoop 2001, what btmon writes.
    func monitorCopy(of source: String, in dir: TempDir) throws -> (path: String, records: [Rec]) {
        let path = dir.file("monitor.btsnoop")
        let writer = try CaptureWriter(path: path, format: .btsnoopMonitor)
        let reader = try openCapture(source)
        while let r = try reader.next() { try writer.write(r, sourceIsMonitor: false) }
        try writer.finish()
        let read = readAll(path)
        XCTAssertNil(read.error)
        return (path, read.records)
    }

    func testStreamGivesTheReadersRecordsWhateverTheChunks() throws {
        let dir = TempDir()
        let (path, expected) = try monitorCopy(of: Self.emulated("esp-sec1-provision-mtu23.btsnoop"), in: dir)
        XCTAssertGreaterThan(expected.count, 20)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var rng = SplitMix(seed: 8)
        for _ in 0..<20 {
            let stream = BTSnoopStream(path: "fifo", capacity: 64)  // small: growth and compaction both happen
            var got: [Rec] = []
            var at = 0
            while at < bytes.count {
                let n = min(bytes.count - at, Int(rng.next() % 300) + 1)
                stream.append(Array(bytes[at..<at + n]))
                at += n
                while let r = try stream.next() { got.append(Rec(r)) }
            }
            XCTAssertEqual(got, expected)
            XCTAssertEqual(stream.pending, 0)
        }
    }

    func testStreamKeepsACutRecordPendingAndRefusesOtherDatalinks() throws {
        let stream = BTSnoopStream(path: "fifo")
        stream.append(BTSnoopBytes.header(datalink: 2001) + Array(BTSnoopBytes.record([0x0E, 0x04, 1, 3, 0x0C, 0], flags: 1 << 16 | 3, unixMicros: 5).dropLast(2)))
        XCTAssertNil(try stream.next())
        XCTAssertEqual(stream.pending, 28)
        stream.append([0x0C, 0])
        let r = try XCTUnwrap(stream.next())
        XCTAssertEqual(r.kind, .event)
        XCTAssertEqual(r.controller, 1)
        XCTAssertEqual(r.timestamp, 5)
        XCTAssertEqual(Array(r.data), [0x0E, 0x04, 1, 3, 0x0C, 0])

        let h4 = BTSnoopStream(path: "fifo")
        h4.append(BTSnoopBytes.header(datalink: 1002))
        XCTAssertThrowsError(try h4.next()) { XCTAssertEqual(($0 as? CaptureError)?.kind, .unsupported) }
        let huge = BTSnoopStream(path: "fifo")
        huge.append(BTSnoopBytes.header(datalink: 2001) + [0, 2, 0, 0, 0, 2, 0, 0] + Array(repeating: 0, count: 16))
        XCTAssertThrowsError(try huge.next()) { XCTAssertEqual(($0 as? CaptureError)?.kind, .corrupt) }
    }

    /// Records through the ring, as a live capture writes them: every file is a complete capture,
    /// none passes the limit (unless one record alone does), and the records add up in order.
    func testRingSplitsIntoCompleteFilesWhoseRecordsAddUp() throws {
        for format in [OutputFormat.btsnoopMonitor, .pcapMonitor] {
            let dir = TempDir()
            let source = Self.emulated("esp-sec1-wrong-password-mtu23.btsnoop")
            let expected = readAll(source).records
            let out = dir.file("ring." + (format == .pcapMonitor ? "pcap" : "btsnoop"))
            let ring = try CaptureRing(path: out, format: format, maxBytes: 2000)
            let live = CaptureFileSource(reader: try openCapture(source))
            while case .record(let r) = try live.next(timeoutMilliseconds: 0) { try ring.write(r, sourceIsMonitor: live.isMonitor) }
            try ring.finish()
            XCTAssertEqual(ring.written, expected.count)
            XCTAssertGreaterThan(ring.files.count, 3)
            XCTAssertEqual(ring.files, (1...ring.files.count).map { CaptureRing.numberedPath(out, $0) })
            XCTAssertEqual(dir.entries.count, ring.files.count, "\(dir.entries)")  // no temporary files left
            var got: [Rec] = []
            for f in ring.files {
                let size = (try FileManager.default.attributesOfItem(atPath: f)[.size] as? Int) ?? 0
                let read = readAll(f)
                XCTAssertNil(read.error ?? read.openError, f)
                XCTAssertTrue(size <= 2000 || read.records.count == 1, "\(f): \(size) bytes")
                XCTAssertEqual(read.linkType, format == .pcapMonitor ? .bluetoothLinuxMonitor : .btsnoopMonitor)
                got += read.records
            }
            XCTAssertEqual(got.map(\.data), expected.map(\.data))
            XCTAssertEqual(got.map(\.timestamp), expected.map(\.timestamp))
            XCTAssertEqual(got.map(\.kind), expected.map(\.kind))
            XCTAssertEqual(got.map(\.direction), expected.map(\.direction))
        }
    }

    func testRingWithMaxFilesKeepsTheNewestRecords() throws {
        let dir = TempDir()
        let source = Self.emulated("esp-sec1-wrong-password-mtu23.btsnoop")
        let expected = readAll(source).records
        let out = dir.file("ring.btsnoop")
        let ring = try CaptureRing(path: out, format: .btsnoopMonitor, maxBytes: 1500, maxFiles: 3)
        let reader = try openCapture(source)
        while let r = try reader.next() { try ring.write(r, sourceIsMonitor: false) }
        try ring.finish()
        XCTAssertEqual(dir.entries, ["ring.btsnoop.1", "ring.btsnoop.2", "ring.btsnoop.3"])
        XCTAssertEqual(ring.files.count, 3)
        // `files` ends with the newest: together they are the last records, in order.
        let kept = ring.files.flatMap { readAll($0).records.map(\.data) }
        XCTAssertLessThan(kept.count, expected.count)
        XCTAssertEqual(kept, Array(expected.suffix(kept.count)).map(\.data))
    }

    func testRingRefusesExistingFilesUnlessForced() throws {
        let dir = TempDir()
        dir.write("a.btsnoop", [1])
        XCTAssertThrowsError(try CaptureRing(path: dir.file("a.btsnoop"), format: .btsnoopMonitor)) {
            XCTAssertEqual(($0 as? CaptureError)?.kind, .cannotWrite)
        }
        dir.write("b.pcap.7", [1])
        XCTAssertThrowsError(try CaptureRing(path: dir.file("b.pcap"), format: .pcapMonitor, maxBytes: 5000)) {
            XCTAssertTrue("\($0)".contains("b.pcap.7"), "\($0)")
        }
        XCTAssertNoThrow(try CaptureRing(path: dir.file("b.pcap"), format: .pcapMonitor, maxBytes: 5000, overwrite: true))
        // No record, then finish: an empty but valid capture, not nothing.
        let empty = try CaptureRing(path: dir.file("empty.pcap"), format: .pcapMonitor)
        try empty.finish()
        let read = readAll(dir.file("empty.pcap"))
        XCTAssertNil(read.openError)
        XCTAssertEqual(read.records.count, 0)
    }

    func testMonitorDeviceWithoutBluetoothSaysSo() throws {
        try XCTSkipIf(Self.hostHasBluetooth, "this kernel has Bluetooth: the error path is for machines without it")
        XCTAssertThrowsError(try LiveMonitorSource()) { error in
            let e = error as? LiveSourceError
            XCTAssertEqual(e?.kind, .unavailable, "\(error)")
            XCTAssertTrue(e?.message.contains("no Bluetooth support") ?? false, "\(error)")
        }
    }

    func testErrnoTextsMapToTheRemedy() {
        let perm = LiveSourceError.classify(message: "Can't attach to interface: \(String(cString: strerror(EPERM)))", source: "")
        XCTAssertEqual(perm.kind, .permissionDenied)
        XCTAssertTrue(perm.message.contains("CAP_NET_RAW"))
        let none = LiveSourceError.classify(message: "Can't create raw socket: \(String(cString: strerror(EAFNOSUPPORT)))", source: "")
        XCTAssertEqual(none.kind, .unavailable)
        XCTAssertEqual(LiveSourceError.classify(message: "something else", source: "").kind, .failed)
    }

    func testMissingBTMonIsUnavailable() {
        XCTAssertThrowsError(try BTMonSource(executable: "gattlab-no-such-btmon")) { error in
            XCTAssertEqual((error as? LiveSourceError)?.kind, .unavailable, "\(error)")
        }
    }
}
