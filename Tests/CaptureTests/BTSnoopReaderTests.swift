import XCTest

@testable import Capture

final class BTSnoopReaderTests: XCTestCase {
    // 2023-11-14 22:13:20.123456 UTC, and a second time 1.5 s later.
    let t1: Int64 = 1_700_000_000_123_456
    let t2: Int64 = 1_700_000_001_623_456

    func testEpochConstant() {
        // 719 540 whole days of microseconds, as btsnoop (and Wireshark) define the offset to 1970.
        XCTAssertEqual(btsnoopEpoch, 719_540 * 86_400 * 1_000_000)
        XCTAssertEqual(BTSnoopReader.epochOffset, 0x00DC_DDB3_0F2F_8000)
    }

    func testDatalink1001Unencapsulated() throws {
        let dir = TempDir()
        let reset: [UInt8] = [0x03, 0x0C, 0x00]
        let complete: [UInt8] = [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]
        let aclOut: [UInt8] = [0x40, 0x20, 0x05, 0x00, 0x01, 0x00, 0x04, 0x00, 0x0A]
        let aclIn: [UInt8] = [0x40, 0x20, 0x04, 0x00, 0x00, 0x00, 0x04, 0x00]
        var file = BTSnoopBytes.header(datalink: 1001)
        file += BTSnoopBytes.record(reset, flags: 2, unixMicros: t1)
        file += BTSnoopBytes.record(complete, flags: 3, unixMicros: t2)
        file += BTSnoopBytes.record(aclOut, flags: 0, unixMicros: t2 + 1)
        file += BTSnoopBytes.record(aclIn, flags: 1, unixMicros: t2 + 2, drops: 7)
        let path = dir.write("a.log", file)

        let r = readAll(path)
        XCTAssertNil(r.openError)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.format, .btsnoop)
        XCTAssertEqual(r.linkType, .btsnoopUnencapsulatedHCI)
        XCTAssertEqual(r.records.map(\.number), [1, 2, 3, 4])
        XCTAssertEqual(r.records.map(\.fileOffset), [16, 43, 73, 106])
        XCTAssertEqual(r.records.map(\.timestamp), [t1, t2, t2 + 1, t2 + 2])
        XCTAssertEqual(r.records.map(\.direction), [.sent, .received, .sent, .received])
        XCTAssertEqual(r.records.map(\.kind), [.command, .event, .acl, .acl])
        XCTAssertEqual(r.records.map(\.rawType), [1, 4, 2, 2])
        XCTAssertEqual(r.records.map(\.data), [reset, complete, aclOut, aclIn])
        XCTAssertEqual(r.records.map(\.originalLength), [3, 6, 9, 8])
        XCTAssertEqual(r.records.map(\.controller), [0, 0, 0, 0])
        XCTAssertEqual(r.records.map(\.linkLayer), [nil, nil, nil, nil])
    }

    func testDatalink1002H4() throws {
        let dir = TempDir()
        var file = BTSnoopBytes.header(datalink: 1002)
        file += BTSnoopBytes.record([0x01, 0x03, 0x0C, 0x00], flags: 2, unixMicros: t1)                 // command
        file += BTSnoopBytes.record([0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00], flags: 3, unixMicros: t2)  // event
        file += BTSnoopBytes.record([0x02, 0x40, 0x20, 0x01, 0x00, 0xAA], flags: 1, unixMicros: t2 + 10)   // ACL in
        file += BTSnoopBytes.record([0x02, 0x41, 0x20, 0x01, 0x00, 0xBB], flags: 0, unixMicros: t2 + 11)   // ACL out
        file += BTSnoopBytes.record([0x03, 0x01, 0x00, 0x00], flags: 0, unixMicros: t2 + 12)               // SCO
        file += BTSnoopBytes.record([0x05, 0x60, 0x00, 0x00, 0x00], flags: 1, unixMicros: t2 + 13)         // ISO
        file += BTSnoopBytes.record([0x07, 0x99], flags: 1, unixMicros: t2 + 14)                           // unknown H4 type
        file += BTSnoopBytes.record([], flags: 0, unixMicros: t2 + 15)                                     // empty
        file += BTSnoopBytes.record([0x02, 0x40, 0x20, 0x1B, 0x00, 1, 2, 3], flags: 1, unixMicros: 0, original: 32) // cut
        let path = dir.write("b.cfa", file)

        let r = readAll(path)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.linkType, .btsnoopH4)
        XCTAssertEqual(r.records.count, 9)
        XCTAssertEqual(r.records.map(\.number), Array(1...9))
        XCTAssertEqual(r.records.map(\.fileOffset), [16, 44, 75, 105, 135, 163, 192, 218, 242])
        XCTAssertEqual(r.records.map(\.kind), [.command, .event, .acl, .acl, .sco, .iso, .other, .other, .acl])
        XCTAssertEqual(r.records.map(\.rawType), [1, 4, 2, 2, 3, 5, 7, 0, 2])
        XCTAssertEqual(r.records.map(\.direction), [.sent, .received, .received, .sent, .sent, .received, .received, .sent, .received])
        XCTAssertEqual(r.records[0].data, [0x03, 0x0C, 0x00], "the H4 byte is removed")
        XCTAssertEqual(r.records[1].data, [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
        XCTAssertEqual(r.records[2].data, [0x40, 0x20, 0x01, 0x00, 0xAA])
        XCTAssertEqual(r.records[6].data, [0x99])
        XCTAssertEqual(r.records[7].data, [])
        XCTAssertEqual(r.records.map(\.originalLength), [3, 6, 5, 5, 3, 4, 1, 0, 31])
        XCTAssertEqual(r.records[8].data, [0x40, 0x20, 0x1B, 0x00, 1, 2, 3])
        XCTAssertEqual(r.records[8].timestamp, 0)
        XCTAssertEqual(r.records.map(\.timestamp), [t1, t2, t2 + 10, t2 + 11, t2 + 12, t2 + 13, t2 + 14, t2 + 15, 0])
    }

    func testTimestampsBeforeTheUnixEpochAndRaw() throws {
        // A raw btsnoop timestamp of 0x00E29CDF601D9C93 (revcar's first record) is
        // 0x00E29CDF601D9C93 - 0x00DCDDB30F2F8000 = 0x0005BF2C50EE1C93 µs after 1970 (2021-04-04 21:32:20.801683 UTC).
        let dir = TempDir()
        var file = BTSnoopBytes.header(datalink: 1002)
        var rec: [UInt8] = []
        rec.be32(1); rec.be32(1); rec.be32(2); rec.be32(0)
        rec += [0x00, 0xE2, 0x9C, 0xDF, 0x60, 0x1D, 0x9C, 0x93, 0x01]
        file += rec
        file += BTSnoopBytes.record([0x04, 0x0E, 0x00], flags: 3, unixMicros: -1_000_000)
        let r = readAll(dir.write("t.log", file))
        XCTAssertNil(r.error)
        XCTAssertEqual(r.records.map(\.timestamp), [0x0005_BF2C_50EE_1C93, -1_000_000])
        XCTAssertEqual(r.records[0].timestamp, 1_617_571_940_801_683)
    }

    func testDatalink2001Monitor() throws {
        let dir = TempDir()
        var newIndex: [UInt8] = [0x00, 0x01, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]
        newIndex += Array("hci0".utf8) + [0, 0, 0, 0]
        let cases: [(controller: UInt16, opcode: UInt16, data: [UInt8], kind: RecordKind, direction: Direction)] = [
            (0, 0, newIndex, .newIndex, .unknown),
            (1, 2, [0x03, 0x0C, 0x00], .command, .sent),
            (1, 3, [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00], .event, .received),
            (2, 4, [0x40, 0x00, 0x00, 0x00], .acl, .sent),
            (2, 5, [0x41, 0x00, 0x00, 0x00], .acl, .received),
            (3, 6, [0x01, 0x00, 0x00], .sco, .sent),
            (3, 7, [0x01, 0x00, 0x00], .sco, .received),
            (0, 1, [], .deleteIndex, .unknown),
            (0, 8, [], .openIndex, .unknown),
            (0, 9, [], .closeIndex, .unknown),
            (0, 10, [0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x0F, 0x00], .indexInfo, .unknown),
            (0, 11, [0x01, 0x02], .other, .unknown),
            (0xFFFF, 12, Array("Bluetooth daemon 5.66\0".utf8), .text, .unknown),
            (0xFFFF, 13, [0x06, 0x04] + Array("test".utf8) + Array("hello\0".utf8), .text, .unknown),
            (0, 14, [0, 0, 0, 0], .other, .unknown),
            (4, 18, [0x60, 0x00, 0x00, 0x00], .iso, .sent),
            (4, 19, [0x60, 0x00, 0x00, 0x00], .iso, .received),
            (0x1234, 0x00FE, [0xAB], .other, .unknown),
        ]
        var file = BTSnoopBytes.header(datalink: 2001)
        var offsets: [Int64] = []
        for (i, c) in cases.enumerated() {
            offsets.append(Int64(file.count))
            file += BTSnoopBytes.record(c.data, flags: UInt32(c.controller) << 16 | UInt32(c.opcode), unixMicros: t1 + Int64(i))
        }
        let r = readAll(dir.write("btmon.btsnoop", file))
        XCTAssertNil(r.error)
        XCTAssertEqual(r.linkType, .btsnoopMonitor)
        XCTAssertTrue(r.linkType!.hasControllerIndex)
        XCTAssertEqual(r.records.count, cases.count)
        for (i, (c, rec)) in zip(cases, r.records).enumerated() {
            XCTAssertEqual(rec.number, i + 1)
            XCTAssertEqual(rec.fileOffset, offsets[i])
            XCTAssertEqual(rec.timestamp, t1 + Int64(i))
            XCTAssertEqual(rec.controller, c.controller, "record \(i + 1)")
            XCTAssertEqual(rec.rawType, c.opcode, "record \(i + 1)")
            XCTAssertEqual(rec.kind, c.kind, "record \(i + 1)")
            XCTAssertEqual(rec.direction, c.direction, "record \(i + 1)")
            XCTAssertEqual(rec.data, c.data, "monitor records keep their bytes: record \(i + 1)")
            XCTAssertEqual(rec.originalLength, c.data.count)
        }
    }

    func testEmptyFileAfterHeaderHasNoRecords() {
        let dir = TempDir()
        let r = readAll(dir.write("h.log", BTSnoopBytes.header(datalink: 1002)))
        XCTAssertNil(r.openError)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.records.count, 0)
    }

    func testNextAfterEndKeepsReturningNil() throws {
        let dir = TempDir()
        let path = dir.write("n.log", BTSnoopBytes.header(datalink: 1002) + BTSnoopBytes.record([0x01, 0x03, 0x0C, 0x00], flags: 2, unixMicros: t1))
        let reader = try openCapture(path)
        XCTAssertNotNil(try reader.next())
        XCTAssertNil(try reader.next())
        XCTAssertNil(try reader.next())
    }

    func testLargestRecordIsRead() throws {
        // An H4 ACL packet of the largest size: 1 + 4 + 65535 bytes.
        let dir = TempDir()
        var acl: [UInt8] = [0x02, 0x40, 0x20, 0xFF, 0xFF]
        acl += (0..<65535).map { UInt8(truncatingIfNeeded: $0) }
        let path = dir.write("big.log", BTSnoopBytes.header(datalink: 1002) + BTSnoopBytes.record(acl, flags: 1, unixMicros: t1)
                             + BTSnoopBytes.record([0x01, 0x03, 0x0C, 0x00], flags: 2, unixMicros: t2))
        let r = readAll(path)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.records.count, 2)
        XCTAssertEqual(r.records[0].data, Array(acl.dropFirst()))
        XCTAssertEqual(r.records[1].fileOffset, Int64(16 + 24 + acl.count))
    }
}
