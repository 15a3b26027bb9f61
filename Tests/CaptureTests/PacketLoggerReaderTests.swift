import XCTest
import TestSupport

@testable import Capture

final class PacketLoggerReaderTests: XCTestCase {
    struct Case {
        var type: UInt8
        var payload: [UInt8]
        var seconds: UInt32
        var micros: UInt32
        var kind: RecordKind
        var direction: Direction
    }

    let cases: [Case] = [
        Case(type: 0x00, payload: [0x03, 0x0C, 0x00], seconds: 1_600_000_000, micros: 1, kind: .command, direction: .sent),
        Case(type: 0x01, payload: [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00], seconds: 1_600_000_000, micros: 999_999, kind: .event, direction: .received),
        Case(type: 0x02, payload: [0x40, 0x00, 0x05, 0x00, 0x01, 0x00, 0x04, 0x00, 0x0A], seconds: 1_600_000_001, micros: 0, kind: .acl, direction: .sent),
        Case(type: 0x03, payload: [0x40, 0x20, 0x00, 0x00], seconds: 1_600_000_002, micros: 500_000, kind: .acl, direction: .received),
        Case(type: 0xFC, payload: Array("Note: pairing started\0".utf8), seconds: 1_600_000_003, micros: 7, kind: .text, direction: .unknown),
        Case(type: 0x08, payload: [0x01, 0x00, 0x00], seconds: 5, micros: 6, kind: .sco, direction: .sent),
        Case(type: 0x09, payload: [0x01, 0x00, 0x00], seconds: 5, micros: 6, kind: .sco, direction: .received),
        Case(type: 0x12, payload: [0x60, 0, 0, 0], seconds: 5, micros: 6, kind: .iso, direction: .sent),
        Case(type: 0x13, payload: [0x60, 0, 0, 0], seconds: 5, micros: 6, kind: .iso, direction: .received),
        Case(type: 0xF7, payload: Array("syslog".utf8), seconds: 5, micros: 6, kind: .text, direction: .unknown),
        Case(type: 0xFA, payload: Array("error".utf8), seconds: 5, micros: 6, kind: .text, direction: .unknown),
        Case(type: 0xFB, payload: Array("power".utf8), seconds: 5, micros: 6, kind: .text, direction: .unknown),
        Case(type: 0xFE, payload: [1, 2], seconds: 5, micros: 6, kind: .other, direction: .unknown),
        Case(type: 0x0A, payload: [], seconds: 0, micros: 0, kind: .other, direction: .unknown),
    ]

    private func check(bigEndian: Bool) throws {
        let dir = TempDir()
        var file: [UInt8] = []
        var offsets: [Int64] = []
        for c in cases {
            offsets.append(Int64(file.count))
            file += PklgBytes.record(c.payload, type: c.type, seconds: c.seconds, micros: c.micros, bigEndian: bigEndian)
        }
        let r = readAll(dir.write("p.pklg", file))
        XCTAssertNil(r.openError)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.format, .packetLogger(bigEndian: bigEndian))
        XCTAssertEqual(r.linkType, .packetLogger)
        XCTAssertEqual(r.records.count, cases.count)
        for (i, (c, rec)) in zip(cases, r.records).enumerated() {
            XCTAssertEqual(rec.number, i + 1)
            XCTAssertEqual(rec.fileOffset, offsets[i])
            XCTAssertEqual(rec.timestamp, Int64(c.seconds) * 1_000_000 + Int64(c.micros), "record \(i + 1)")
            XCTAssertEqual(rec.kind, c.kind, "type \(c.type)")
            XCTAssertEqual(rec.direction, c.direction, "type \(c.type)")
            XCTAssertEqual(rec.rawType, UInt16(c.type))
            XCTAssertEqual(rec.data, c.payload)
            XCTAssertEqual(rec.originalLength, c.payload.count)
            XCTAssertEqual(rec.controller, 0)
        }
    }

    func testBigEndian() throws { try check(bigEndian: true) }
    func testLittleEndian() throws { try check(bigEndian: false) }

    func testHandWrittenBigEndianBytes() throws {
        // length 0x10, seconds 0x4C80EF76, micros 0x00071975, type 00 (seconds and microseconds as in iSAP's first record), then HCI Reset; then an event.
        let bytes: [UInt8] = [0x00, 0x00, 0x00, 0x0C, 0x4C, 0x80, 0xEF, 0x76, 0x00, 0x07, 0x19, 0x75, 0x00, 0x03, 0x0C, 0x00,
                              0x00, 0x00, 0x00, 0x0F, 0x4C, 0x80, 0xEF, 0x77, 0x00, 0x00, 0x00, 0x01, 0x01, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]
        let dir = TempDir()
        let r = readAll(dir.write("hand.pklg", bytes))
        XCTAssertNil(r.error)
        XCTAssertEqual(r.format, .packetLogger(bigEndian: true))
        XCTAssertEqual(r.records.count, 2)
        XCTAssertEqual(r.records[0].timestamp, 0x4C80_EF76 * 1_000_000 + 0x0007_1975)
        XCTAssertEqual(r.records[0].data, [0x03, 0x0C, 0x00])
        XCTAssertEqual(r.records[1].fileOffset, 16)
        XCTAssertEqual(r.records[1].timestamp, 0x4C80_EF77 * 1_000_000 + 1)
        XCTAssertEqual(r.records[1].kind, .event)
        XCTAssertEqual(r.records[1].data, [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
    }

    func testHandWrittenLittleEndianBytes() throws {
        let bytes: [UInt8] = [0x0D, 0x00, 0x00, 0x00, 0x10, 0x20, 0x30, 0x40, 0x3F, 0x42, 0x0F, 0x00, 0x02, 0x40, 0x00, 0x00, 0x00]
        let dir = TempDir()
        let r = readAll(dir.write("hand.pklg", bytes))
        XCTAssertNil(r.error)
        XCTAssertEqual(r.format, .packetLogger(bigEndian: false))
        XCTAssertEqual(r.records.count, 1)
        XCTAssertEqual(r.records[0].timestamp, 0x4030_2010 * 1_000_000 + 999_999)
        XCTAssertEqual(r.records[0].kind, .acl)
        XCTAssertEqual(r.records[0].direction, .sent)
        XCTAssertEqual(r.records[0].data, [0x40, 0x00, 0x00, 0x00])
    }

    func testRealBigEndianFilesReadToTheEnd() throws {
        // Both shared PacketLogger captures are big-endian; the manifest gives their record counts.
        for (name, count) in [("iSAP__hci_dump.pklg", 161), ("esp32btclassic__hci_dump.pklg", 118)] {
            let r = readAll(try RealCaptures.path(name))
            XCTAssertNil(r.error, name)
            XCTAssertEqual(r.format, .packetLogger(bigEndian: true), name)
            XCTAssertEqual(r.records.count, count, name)
        }
    }
}
