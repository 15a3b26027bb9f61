import TestSupport
import Foundation
import XCTest

/// Issue 2, "It must show" 2: hostile input gets a one-line error naming file, record and
/// offset, a distinct exit code, everything before the damage decoded, and never a crash,
/// a hang or an allocation driven by a length field.
final class BadInputTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try Harness.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let url = dir.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url.path
    }

    func real(_ name: String) throws -> [UInt8] {
        try RealCaptures.bytes(name)
    }

    /// The contract for a damaged file: exit 65, one stderr line naming the file, no crash.
    @discardableResult
    func expectBadInput(_ path: String, command: String = "decode", record: Int? = nil, offset: Int? = nil,
                        file: StaticString = #filePath, line: UInt = #line) throws -> Harness.Result {
        let r = try Harness.gattlab([command, "--format", "json", path], timeout: 20)
        XCTAssertFalse(r.signalled, "crashed on \(path)", file: file, line: line)
        XCTAssertEqual(r.status, 65, "exit code for \(path): \(r.stderr)", file: file, line: line)
        XCTAssertTrue(Harness.oneError(r.stderr), "one error line and its hint, got: \(r.stderr)", file: file, line: line)
        XCTAssertTrue(r.stderr.contains(path), "the error names the file: \(r.stderr)", file: file, line: line)
        if let record { XCTAssertTrue(r.stderr.contains("record \(record),"), "names record \(record): \(r.stderr)", file: file, line: line) }
        if let offset { XCTAssertTrue(r.stderr.contains("byte offset \(offset)"), "names offset \(offset): \(r.stderr)", file: file, line: line) }
        XCTAssertLessThan(r.seconds, 10, "took \(r.seconds) s", file: file, line: line)
        return r
    }

    func testEmptyFile() throws {
        let r = try expectBadInput(try write("empty.btsnoop", []), offset: 0)
        XCTAssertTrue(r.stderr.contains("empty"), r.stderr)
    }

    func testWrongMagic() throws {
        let r = try expectBadInput(try write("text.log", Array("this is not a capture file at all\n".utf8)), offset: 0)
        XCTAssertTrue(r.stderr.contains("not a capture"), r.stderr)
    }

    func testMissingFileIsNoInput() throws {
        let r = try Harness.gattlab(["info", dir.appendingPathComponent("nope.btsnoop").path])
        XCTAssertEqual(r.status, 66, r.stderr)
        XCTAssertTrue(Harness.oneError(r.stderr), r.stderr)
    }

    func testBtsnoopUnsupportedDatalinkAndVersion() throws {
        var header = Array("btsnoop\0".utf8) + [0, 0, 0, 1, 0, 0, 0x03, 0xEB]  // datalink 1003
        try expectBadInput(try write("dl.btsnoop", header), offset: 12)
        header = Array("btsnoop\0".utf8) + [0, 0, 0, 2, 0, 0, 0x03, 0xEA]
        try expectBadInput(try write("ver.btsnoop", header), offset: 8)
    }

    /// Record start offsets of a btsnoop file, to cut it in the middle of records.
    func btsnoopRecordOffsets(_ bytes: [UInt8]) -> [Int] {
        var offsets: [Int] = []
        var o = 16
        while o + 24 <= bytes.count {
            offsets.append(o)
            let incl = Int(bytes[o + 4]) << 24 | Int(bytes[o + 5]) << 16 | Int(bytes[o + 6]) << 8 | Int(bytes[o + 7])
            o += 24 + incl
        }
        return offsets
    }

    func testTruncatedBtsnoopDecodesEverythingBeforeTheCut() throws {
        let bytes = try real("yeelock__btsnoop_hci.log")
        let offsets = btsnoopRecordOffsets(bytes)
        for index in [0, 1, 100, 451, offsets.count / 2, offsets.count - 1] {
            let start = offsets[index]
            for cut in [start + 3, start + 24, start + 25] where cut < bytes.count {
                let path = try write("cut-\(index)-\(cut).btsnoop", Array(bytes[0..<cut]))
                let r = try expectBadInput(path, record: index + 1, offset: start)
                // Every complete record before the damage was decoded: the last ATT frame reported
                // is before the cut record, and the count matches a decode of the intact prefix.
                let frames = Harness.jsonLines(r.stdout).compactMap { $0["frame"] as? Int }
                XCTAssertTrue(frames.allSatisfy { $0 <= index }, "no frame past the damage")
                if index == offsets.count / 2 {
                    let intact = try write("intact-\(index).btsnoop", Array(bytes[0..<start]))
                    let ok = try Harness.gattlab(["decode", "--format", "json", intact])
                    XCTAssertEqual(ok.status, 0, ok.stderr)
                    XCTAssertEqual(ok.stdout, r.stdout, "the damaged file decodes exactly what its intact prefix decodes")
                }
            }
        }
    }

    func testTruncatedPacketLogger() throws {
        let bytes = try real("iSAP__hci_dump.pklg")
        // Walk records: length u32 (either order, detected by the reader) + 4.
        let bigEndian = bytes[0] == 0
        var offsets: [Int] = []
        var o = 0
        while o + 4 <= bytes.count {
            offsets.append(o)
            let b = bytes[o..<(o + 4)].map(Int.init)
            let length = bigEndian ? (b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3]) : (b[3] << 24 | b[2] << 16 | b[1] << 8 | b[0])
            o += 4 + length
        }
        for index in [1, offsets.count / 2, offsets.count - 1] {
            let cut = offsets[index] + 7
            try expectBadInput(try write("cut-\(index).pklg", Array(bytes[0..<cut])), record: index + 1, offset: offsets[index])
        }
    }

    func testTruncatedPcapAndPcapng() throws {
        for name in ["blepcapanalyzer__hci.pcap", "darkelf__test1.pcapng", "sweyntooth__capture_telink_key_overflow.pcap",
                     "TesiBLE__mouse.pcapng"] {
            let bytes = try real(name)
            for fraction in [3, 2] {
                let cut = bytes.count / fraction + 5
                let r = try expectBadInput(try write("cut-\(fraction)-\(name)", Array(bytes[0..<cut])))
                XCTAssertNotNil(r.stderr.range(of: #"record \d+, byte offset \d+"#, options: .regularExpression), r.stderr)
                XCTAssertTrue(r.stderr.contains("records before it were decoded"), r.stderr)
            }
        }
    }

    func testHugeLengthFieldsAreRejectedWithoutAllocating() throws {
        var bytes = try real("yeelock__btsnoop_hci.log")
        let offsets = btsnoopRecordOffsets(bytes)
        let o = offsets[10]
        // included length 0xFFFFFFF0: must be refused at once, not allocated or read.
        bytes.replaceSubrange((o + 4)..<(o + 8), with: [0xFF, 0xFF, 0xFF, 0xF0])
        let r = try expectBadInput(try write("huge.btsnoop", bytes), record: 11, offset: o)
        XCTAssertTrue(r.stderr.contains("length"), r.stderr)

        var pklg = try real("esp32btclassic__hci_dump.pklg")
        pklg.replaceSubrange(0..<4, with: pklg[0] == 0 ? [0x7F, 0xFF, 0xFF, 0xFF] : [0xFF, 0xFF, 0xFF, 0x7F])
        let p = try write("huge.pklg", pklg)
        let r2 = try Harness.gattlab(["info", p], timeout: 20)
        XCTAssertFalse(r2.signalled)
        XCTAssertEqual(r2.status, 65, r2.stderr)
    }

    /// Seeded random bytes in headers and length fields of every reader: never a crash or hang,
    /// always either success or the one-line error with exit 65.
    func testRandomDamageNeverCrashes() throws {
        var rng = SplitMix(seed: 0x6A77_1AB5)
        let sources = ["yeelock__btsnoop_hci.log", "iSAP__hci_dump.pklg", "blepcapanalyzer__fitup.pcap",
                       "darkelf__test1.pcapng", "sweyntooth__capture_telink_key_overflow.pcap",
                       "ctfusbkbd__rgbctf2020_PI_1_MagicInTheAir.btsnoop"]
        var outcomes: [Int32: Int] = [:]
        for name in sources {
            let original = try real(name)
            for trial in 0..<12 {
                var bytes = Array(original.prefix(6000))
                // Damage the file header or the first records' headers, where lengths live.
                for _ in 0..<(1 + Int(rng.next() % 4)) {
                    let position = Int(rng.next() % UInt64(min(bytes.count, trial < 4 ? 32 : 600)))
                    bytes[position] = UInt8(truncatingIfNeeded: rng.next())
                }
                let path = try write("rand-\(trial)-\(name)", bytes)
                let r = try Harness.gattlab(["decode", "--format", "json", path], timeout: 20)
                XCTAssertFalse(r.signalled, "crash on \(path)")
                XCTAssertTrue([0, 65].contains(r.status), "exit \(r.status) on \(path): \(r.stderr)")
                if r.status == 65 {
                    XCTAssertTrue(Harness.oneError(r.stderr), r.stderr)
                    XCTAssertTrue(r.stderr.contains(path), r.stderr)
                }
                outcomes[r.status, default: 0] += 1
            }
        }
        print("random damage outcomes by exit code: \(outcomes.sorted { $0.key < $1.key })")
    }
}
