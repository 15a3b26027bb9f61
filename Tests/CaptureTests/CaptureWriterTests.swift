import Foundation
import XCTest

@testable import Capture

/// A record to write, owning its bytes.
struct Src {
    var timestamp: Int64
    var controller: UInt16 = 0
    var direction: Direction
    var kind: RecordKind
    var rawType: UInt16 = 0
    var data: [UInt8]
    var originalLength: Int? = nil
    var linkLayer: LinkLayerInfo? = nil
}

@discardableResult
func write(_ writer: CaptureWriter, _ src: Src, number: Int, sourceIsMonitor: Bool = false) throws -> Bool {
    try src.data.withUnsafeBytes { bytes in
        let record = CaptureRecord(number: number, fileOffset: 0, timestamp: src.timestamp, controller: src.controller,
                                   direction: src.direction, kind: src.kind,
                                   rawType: src.rawType != 0 ? src.rawType : UInt16(src.kind.h4Type ?? 0),
                                   originalLength: src.originalLength ?? src.data.count, data: bytes, linkLayer: src.linkLayer)
        return try writer.write(record, sourceIsMonitor: sourceIsMonitor)
    }
}

final class CaptureWriterTests: XCTestCase {
    let t1: Int64 = 1_700_000_000_123_456

    /// HCI records of every kind, one cut short, then two that H4 formats cannot hold.
    var hciRecords: [Src] {
        [
            Src(timestamp: t1, controller: 2, direction: .sent, kind: .command, data: [0x03, 0x0C, 0x00]),
            Src(timestamp: t1 + 1, controller: 2, direction: .received, kind: .event, data: [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]),
            Src(timestamp: t1 + 999_999, controller: 2, direction: .sent, kind: .acl, data: [0x40, 0x00, 0x05, 0x00, 0x01, 0x00, 0x04, 0x00, 0x0A]),
            Src(timestamp: t1 + 1_000_000, controller: 3, direction: .received, kind: .acl, data: [0x41, 0x20, 0x01, 0x00, 0xAA]),
            Src(timestamp: t1 + 2_000_001, controller: 3, direction: .sent, kind: .sco, data: [0x01, 0x00, 0x01, 0x55]),
            Src(timestamp: t1 + 3_000_000, controller: 3, direction: .received, kind: .iso, data: [0x60, 0x00, 0x01, 0x00, 0x77]),
            Src(timestamp: t1 + 4_000_000, controller: 3, direction: .received, kind: .acl, data: [0x40, 0x20, 0x1B, 0x00, 1, 2, 3],
                originalLength: 31),
            Src(timestamp: t1 + 5_000_000, controller: 0, direction: .unknown, kind: .text, rawType: 12, data: Array("note\0".utf8)),
            Src(timestamp: t1 + 6_000_000, direction: .unknown, kind: .linkLayer, data: [0xD6, 0xBE, 0x89, 0x8E, 0x00, 0x00, 1, 2, 3],
                linkLayer: LinkLayerInfo()),
        ]
    }

    private func writeAll(_ path: String, _ format: OutputFormat, _ records: [Src], sourceIsMonitor: Bool = false) throws -> [Bool] {
        let writer = try CaptureWriter(path: path, format: format)
        var accepted: [Bool] = []
        for (i, r) in records.enumerated() {
            accepted.append(try write(writer, r, number: i + 1, sourceIsMonitor: sourceIsMonitor))
        }
        try writer.finish()
        XCTAssertEqual(writer.written, accepted.filter { $0 }.count)
        XCTAssertEqual(writer.skipped, accepted.filter { !$0 }.count)
        return accepted
    }

    private func checkH4RoundTrip(_ format: OutputFormat, expectFormat: CaptureFormat, expectLink: LinkType, checkOriginal: Bool) throws {
        let dir = TempDir()
        let path = dir.file("out")
        let src = hciRecords
        let accepted = try writeAll(path, format, src)
        XCTAssertEqual(accepted, [true, true, true, true, true, true, true, false, false], "text and link-layer records do not fit H4")
        XCTAssertEqual(dir.entries, ["out"], "only the finished file remains")
        let r = readAll(path)
        XCTAssertNil(r.openError)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.format, expectFormat)
        XCTAssertEqual(r.linkType, expectLink)
        let kept = Array(src.prefix(7))
        XCTAssertEqual(r.records.count, kept.count)
        for (i, (s, rec)) in zip(kept, r.records).enumerated() {
            XCTAssertEqual(rec.number, i + 1)
            XCTAssertEqual(rec.timestamp, s.timestamp, "record \(i + 1)")
            XCTAssertEqual(rec.controller, 0, "H4 formats have one controller")
            XCTAssertEqual(rec.direction, s.direction, "record \(i + 1)")
            XCTAssertEqual(rec.kind, s.kind, "record \(i + 1)")
            XCTAssertEqual(rec.rawType, UInt16(s.kind.h4Type!), "record \(i + 1)")
            XCTAssertEqual(rec.data, s.data, "record \(i + 1)")
            if checkOriginal || s.originalLength == nil {
                XCTAssertEqual(rec.originalLength, s.originalLength ?? s.data.count, "record \(i + 1)")
            }
        }
        XCTAssertTrue(r.records.count == 7 && r.records[6].originalLength > r.records[6].data.count || !checkOriginal)
    }

    private func checkMonitorRoundTrip(_ format: OutputFormat, expectFormat: CaptureFormat, expectLink: LinkType, checkOriginal: Bool) throws {
        let dir = TempDir()
        let path = dir.file("out")
        let src = hciRecords
        let accepted = try writeAll(path, format, src)
        XCTAssertEqual(accepted, [true, true, true, true, true, true, true, true, false], "monitor formats carry text, not link-layer packets")
        let r = readAll(path)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.format, expectFormat)
        XCTAssertEqual(r.linkType, expectLink)
        let kept = Array(src.prefix(8))
        let opcodes: [UInt16] = [2, 3, 4, 5, 6, 19, 5, 12]
        XCTAssertEqual(r.records.count, kept.count)
        XCTAssertEqual(r.records.map(\.rawType), opcodes)
        for (i, (s, rec)) in zip(kept, r.records).enumerated() {
            XCTAssertEqual(rec.number, i + 1)
            XCTAssertEqual(rec.timestamp, s.timestamp, "record \(i + 1)")
            XCTAssertEqual(rec.controller, s.controller, "record \(i + 1)")
            XCTAssertEqual(rec.direction, s.direction, "record \(i + 1)")
            XCTAssertEqual(rec.kind, s.kind, "record \(i + 1)")
            XCTAssertEqual(rec.data, s.data, "record \(i + 1)")
            if checkOriginal || s.originalLength == nil {
                XCTAssertEqual(rec.originalLength, s.originalLength ?? s.data.count, "record \(i + 1)")
            }
        }
    }

    func testPcapH4RoundTrip() throws {
        try checkH4RoundTrip(.pcapH4, expectFormat: .pcap, expectLink: .bluetoothHCIH4WithPHDR, checkOriginal: true)
    }

    func testPcapMonitorRoundTrip() throws {
        try checkMonitorRoundTrip(.pcapMonitor, expectFormat: .pcap, expectLink: .bluetoothLinuxMonitor, checkOriginal: true)
    }

    func testBTSnoopH4RoundTrip() throws {
        try checkH4RoundTrip(.btsnoopH4, expectFormat: .btsnoop, expectLink: .btsnoopH4, checkOriginal: false)
    }

    func testBTSnoopMonitorRoundTrip() throws {
        try checkMonitorRoundTrip(.btsnoopMonitor, expectFormat: .btsnoop, expectLink: .btsnoopMonitor, checkOriginal: false)
    }

    func testBTSnoopKeepsOriginalLengthOfCutRecords() throws {
        try checkH4RoundTrip(.btsnoopH4, expectFormat: .btsnoop, expectLink: .btsnoopH4, checkOriginal: true)
        try checkMonitorRoundTrip(.btsnoopMonitor, expectFormat: .btsnoop, expectLink: .btsnoopMonitor, checkOriginal: true)
    }

    func testMonitorSourceKeepsItsOpcodes() throws {
        let dir = TempDir()
        var newIndex: [UInt8] = [0x00, 0x01, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]
        newIndex += Array("hci1".utf8) + [0, 0, 0, 0]
        let src = [
            Src(timestamp: t1, controller: 1, direction: .unknown, kind: .newIndex, rawType: 0, data: newIndex),
            Src(timestamp: t1 + 5, controller: 1, direction: .unknown, kind: .other, rawType: 11, data: [0xDE, 0xAD]),
            Src(timestamp: t1 + 6, controller: 0xFFFF, direction: .unknown, kind: .text, rawType: 13, data: [6, 1, 0x41, 0x42, 0]),
            Src(timestamp: t1 + 7, controller: 1, direction: .received, kind: .event, rawType: 3, data: [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]),
        ]
        for (format, link) in [(OutputFormat.btsnoopMonitor, LinkType.btsnoopMonitor), (.pcapMonitor, .bluetoothLinuxMonitor)] {
            let path = dir.file("mon-\(format)")
            let writer = try CaptureWriter(path: path, format: format)
            for (i, s) in src.enumerated() {
                XCTAssertTrue(try write(writer, s, number: i + 1, sourceIsMonitor: true))
            }
            try writer.finish()
            let r = readAll(path)
            XCTAssertNil(r.error)
            XCTAssertEqual(r.linkType, link)
            XCTAssertEqual(r.records.map(\.rawType), [0, 11, 13, 3], "\(format)")
            XCTAssertEqual(r.records.map(\.controller), [1, 1, 0xFFFF, 1], "\(format)")
            XCTAssertEqual(r.records.map(\.kind), [.newIndex, .other, .text, .event], "\(format)")
            XCTAssertEqual(r.records.map(\.data), src.map(\.data), "\(format)")
            XCTAssertEqual(r.records.map(\.timestamp), src.map(\.timestamp), "\(format)")
        }
    }

    func testPcapH4BytesOnDisk() throws {
        let dir = TempDir()
        let path = dir.file("k.pcap")
        let writer = try CaptureWriter(path: path, format: .pcapH4)
        try write(writer, Src(timestamp: 1_000_002_000_003, direction: .received, kind: .event, data: [0x0E, 0x01, 0x01]), number: 1)
        try writer.finish()
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        XCTAssertEqual(bytes.count, 24 + 16 + 8)
        // Global header: native (little-endian here) µs magic, 2.4, snaplen 262144, DLT 201.
        XCTAssertEqual(Array(bytes[0..<4]), [0xD4, 0xC3, 0xB2, 0xA1])
        XCTAssertEqual(Array(bytes[4..<8]), [2, 0, 4, 0])
        XCTAssertEqual(Array(bytes[16..<24]), [0x00, 0x00, 0x04, 0x00, 201, 0, 0, 0])
        // Record: 1 000 002 s, 3 µs, 8 bytes: direction u32 BE 1 (received), H4 04, then the event.
        XCTAssertEqual(Array(bytes[24..<40]), [0x42, 0x42, 0x0F, 0x00, 0x03, 0, 0, 0, 8, 0, 0, 0, 8, 0, 0, 0])
        XCTAssertEqual(Array(bytes[40...]), [0, 0, 0, 1, 0x04, 0x0E, 0x01, 0x01])
    }

    func testBTSnoopBytesOnDisk() throws {
        let dir = TempDir()
        for (format, datalink) in [(OutputFormat.btsnoopH4, [UInt8]([0, 0, 0x03, 0xEA])), (.btsnoopMonitor, [0, 0, 0x07, 0xD1])] {
            let path = dir.file("k-\(format)")
            let writer = try CaptureWriter(path: path, format: format)
            try write(writer, Src(timestamp: 0, controller: 5, direction: .sent, kind: .command, data: [0x03, 0x0C, 0x00]), number: 1)
            try writer.finish()
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            XCTAssertEqual(Array(bytes[0..<16]), Array("btsnoop\0".utf8) + [0, 0, 0, 1] + datalink)
            let epoch: [UInt8] = [0x00, 0xDC, 0xDD, 0xB3, 0x0F, 0x2F, 0x80, 0x00]
            if format == .btsnoopH4 {
                // lengths 4 (H4 byte + 3), flags 2 (command, sent), drops 0, timestamp = epoch, 01 03 0C 00.
                XCTAssertEqual(Array(bytes[16...]), [0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 0] + epoch + [0x01, 0x03, 0x0C, 0x00])
            } else {
                // lengths 3, flags = controller 5 << 16 | opcode 2.
                XCTAssertEqual(Array(bytes[16...]), [0, 0, 0, 3, 0, 0, 0, 3, 0, 5, 0, 2, 0, 0, 0, 0] + epoch + [0x03, 0x0C, 0x00])
            }
        }
    }

    // MARK: Safety of the output file

    func testRefusesAnExistingFileWithoutOverwrite() throws {
        let dir = TempDir()
        let path = dir.write("existing.btsnoop", [1, 2, 3])
        for format in OutputFormat.allCases {
            XCTAssertThrowsError(try CaptureWriter(path: path, format: format)) { error in
                XCTAssertEqual((error as? CaptureError)?.kind, .cannotWrite)
                XCTAssertEqual((error as? CaptureError)?.path, path)
            }
        }
        XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), [1, 2, 3], "the existing file is untouched")
        XCTAssertEqual(dir.entries, ["existing.btsnoop"], "no temporary file left")
    }

    func testNeverOverwritesAnInputEvenWithOverwrite() throws {
        let dir = TempDir()
        let input = dir.write("input.log", BTSnoopBytes.header(datalink: 1002))
        let other = dir.write("other.log", [9])
        XCTAssertThrowsError(try CaptureWriter(path: input, format: .btsnoopH4, overwrite: true, protecting: [other, input])) { error in
            XCTAssertEqual((error as? CaptureError)?.kind, .cannotWrite)
        }
        // The same file under another name: a symbolic link and a hard link.
        let symlink = dir.file("alias.log")
        try FileManager.default.createSymbolicLink(atPath: symlink, withDestinationPath: input)
        let hardlink = dir.file("hard.log")
        try FileManager.default.linkItem(atPath: input, toPath: hardlink)
        for alias in [symlink, hardlink] {
            for format in OutputFormat.allCases {
                XCTAssertThrowsError(try CaptureWriter(path: alias, format: format, overwrite: true, protecting: [input]), alias) { error in
                    XCTAssertEqual((error as? CaptureError)?.kind, .cannotWrite)
                }
            }
        }
        XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: input))), BTSnoopBytes.header(datalink: 1002))
        XCTAssertEqual(dir.entries, ["alias.log", "hard.log", "input.log", "other.log"])
    }

    func testOverwriteReplacesOnlyAtFinish() throws {
        let dir = TempDir()
        for format in OutputFormat.allCases {
            let path = dir.write("replace-\(format)", [0xEE, 0xEE])
            let writer = try CaptureWriter(path: path, format: format, overwrite: true, protecting: [dir.file("unrelated")])
            try write(writer, Src(timestamp: t1, direction: .sent, kind: .command, data: [0x03, 0x0C, 0x00]), number: 1)
            // Until finish, the old file is intact and the output lives in a hidden temporary file beside it.
            XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), [0xEE, 0xEE])
            let temporary = ".replace-\(format).gattlab-\(getpid()).tmp"
            XCTAssertTrue(dir.entries.contains(temporary), "\(dir.entries)")
            try writer.finish()
            XCTAssertFalse(dir.entries.contains(temporary))
            try writer.finish()  // a second finish does nothing
            let r = readAll(path)
            XCTAssertNil(r.error, "\(format)")
            XCTAssertEqual(r.records.count, 1, "\(format)")
            XCTAssertEqual(r.records.first?.data, [0x03, 0x0C, 0x00])
        }
        XCTAssertEqual(dir.entries.count, OutputFormat.allCases.count)
    }

    func testAbandonedWriterLeavesNothing() throws {
        let dir = TempDir()
        for format in OutputFormat.allCases {
            do {
                let writer = try CaptureWriter(path: dir.file("never-\(format)"), format: format)
                for i in 0..<100 {
                    try write(writer, Src(timestamp: t1 + Int64(i), direction: .received, kind: .event, data: [0x0E, 0x01, 0x01]), number: i + 1)
                }
                XCTAssertEqual(dir.entries, [".never-\(format).gattlab-\(getpid()).tmp"])
            }
            XCTAssertEqual(dir.entries, [], "deinit without finish removes the temporary file and creates no output (\(format))")
        }
        // An abandoned overwrite keeps the old file.
        let kept = dir.write("kept.pcap", [1, 2, 3, 4])
        do {
            let writer = try CaptureWriter(path: kept, format: .pcapH4, overwrite: true)
            try write(writer, Src(timestamp: t1, direction: .sent, kind: .command, data: [0x03, 0x0C, 0x00]), number: 1)
        }
        XCTAssertEqual(dir.entries, ["kept.pcap"])
        XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: kept))), [1, 2, 3, 4])
    }

    func testUnwritableDirectory() {
        XCTAssertThrowsError(try CaptureWriter(path: "/nonexistent-gattlab-dir/x.btsnoop", format: .btsnoopH4)) { error in
            XCTAssertEqual((error as? CaptureError)?.kind, .cannotWrite)
        }
        XCTAssertThrowsError(try CaptureWriter(path: "/nonexistent-gattlab-dir/x.pcap", format: .pcapH4)) { error in
            XCTAssertEqual((error as? CaptureError)?.kind, .cannotWrite)
        }
    }

    func testManyRecordsFlushAcrossTheBuffer() throws {
        // More than the 1 MiB write buffer, so the btsnoop writer flushes mid-way.
        let dir = TempDir()
        let path = dir.file("many.btsnoop")
        let writer = try CaptureWriter(path: path, format: .btsnoopH4)
        let payload = [UInt8](repeating: 0x5A, count: 1000)
        for i in 0..<1500 {
            try write(writer, Src(timestamp: t1 + Int64(i), direction: .received, kind: .acl, data: [0x40, 0x20, 0xE4, 0x03] + payload), number: i + 1)
        }
        try writer.finish()
        let r = readAll(path)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.records.count, 1500)
        XCTAssertEqual(r.records.last?.timestamp, t1 + 1499)
        XCTAssertEqual(r.records.last?.fileOffset, Int64(16 + 1499 * (24 + 1005)))
    }

    func testGuessFromName() {
        XCTAssertEqual(OutputFormat.guess(path: "a.pcap", monitor: false), .pcapH4)
        XCTAssertEqual(OutputFormat.guess(path: "a.pcapng", monitor: true), .pcapMonitor)
        XCTAssertEqual(OutputFormat.guess(path: "a.log", monitor: false), .btsnoopH4)
        XCTAssertEqual(OutputFormat.guess(path: "a.btsnoop", monitor: true), .btsnoopMonitor)
    }
}
