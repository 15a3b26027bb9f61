import XCTest

@testable import Capture

final class CaptureFormatTests: XCTestCase {
    private func detect(_ bytes: [UInt8]) -> CaptureFormat? {
        bytes.withUnsafeBytes { CaptureFormat.detect($0) }
    }

    func testBTSnoop() {
        XCTAssertEqual(detect(BTSnoopBytes.header(datalink: 1002)), .btsnoop)
        // The magic alone is enough; the version and datalink are the reader's business.
        XCTAssertEqual(detect(Array("btsnoop\0".utf8)), .btsnoop)
        // Without the NUL, or with one letter changed, it is not btsnoop.
        XCTAssertNil(detect(Array("btsnoopX".utf8) + [0, 0, 0, 1, 0, 0, 3, 0xEA]))
        XCTAssertNil(detect(Array("btsnoo".utf8)))
        XCTAssertNil(detect(Array("BTSNOOP\0".utf8) + [0, 0, 0, 1, 0, 0, 3, 0xEA]))
    }

    func testPcapAllFourMagics() {
        // Microsecond and nanosecond magics, in both byte orders.
        XCTAssertEqual(detect([0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0]), .pcap)  // LE µs
        XCTAssertEqual(detect([0xA1, 0xB2, 0xC3, 0xD4, 0, 2, 0, 4]), .pcap)  // BE µs
        XCTAssertEqual(detect([0x4D, 0x3C, 0xB2, 0xA1, 2, 0, 4, 0]), .pcap)  // LE ns
        XCTAssertEqual(detect([0xA1, 0xB2, 0x3C, 0x4D, 0, 2, 0, 4]), .pcap)  // BE ns
        // Near misses.
        XCTAssertNil(detect([0xD4, 0xC3, 0xB2, 0xA2, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]))
        XCTAssertNil(detect([0xA1, 0xB2, 0xC3, 0xD5, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0]))
    }

    func testPcapng() {
        // Section Header Block type, then a block length and the byte-order magic.
        XCTAssertEqual(detect([0x0A, 0x0D, 0x0D, 0x0A, 0x1C, 0, 0, 0, 0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0]), .pcapng)
        XCTAssertNil(detect([0x0A, 0x0D, 0x0D, 0x0B, 0x1C, 0, 0, 0, 0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0]))
    }

    func testPacketLoggerBigEndian() {
        // length 0x10 (9 + 7), seconds, microseconds 0x00071975 (465 269 < 10^6), type 0x00.
        let head: [UInt8] = [0x00, 0x00, 0x00, 0x10, 0x4C, 0x80, 0xEF, 0x76, 0x00, 0x07, 0x19, 0x75, 0x00,
                             0x22, 0xF4, 0x04]
        XCTAssertEqual(detect(head), .packetLogger(bigEndian: true))
        let record = PklgBytes.record([0x03, 0x0C, 0x00], type: 0x00, seconds: 1_600_000_000, micros: 999_999, bigEndian: true)
        XCTAssertEqual(detect(record), .packetLogger(bigEndian: true))
    }

    func testPacketLoggerLittleEndian() {
        let record = PklgBytes.record([0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00], type: 0x01, seconds: 1_600_000_000, micros: 5, bigEndian: false)
        XCTAssertEqual(record[0..<4], [15, 0, 0, 0])
        XCTAssertEqual(detect(record), .packetLogger(bigEndian: false))
        // Every type GATTLab knows is accepted as a first record.
        for type: UInt8 in [0x00, 0x01, 0x02, 0x03, 0x08, 0x09, 0x0A, 0x0B, 0x12, 0x13, 0xF7, 0xF8, 0xF9, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE] {
            XCTAssertEqual(detect(PklgBytes.record([1, 2, 3, 4], type: type, seconds: 7, micros: 8, bigEndian: false)),
                           .packetLogger(bigEndian: false), "type \(type)")
            XCTAssertEqual(detect(PklgBytes.record([1, 2, 3, 4], type: type, seconds: 7, micros: 8, bigEndian: true)),
                           .packetLogger(bigEndian: true), "type \(type)")
        }
    }

    func testPacketLoggerImplausibleFirstRecords() {
        // Unknown type.
        XCTAssertNil(detect(PklgBytes.record([1, 2, 3, 4], type: 0x55, seconds: 1, micros: 2, bigEndian: false)))
        // Microseconds of a whole second or more.
        XCTAssertNil(detect(PklgBytes.record([1, 2, 3, 4], type: 0x01, seconds: 1, micros: 1_000_000, bigEndian: false)))
        XCTAssertNil(detect(PklgBytes.record([1, 2, 3, 4], type: 0x01, seconds: 1, micros: 1_000_000, bigEndian: true)))
        // Length below 9 (the fields after it) or above the largest record.
        var short: [UInt8] = []
        short.le32(8); short.le32(1); short.le32(2); short.append(0x01)
        XCTAssertNil(detect(short))
        var long: [UInt8] = []
        long.le32(65_600 + 10); long.le32(1); long.le32(2); long.append(0x01)
        XCTAssertNil(detect(long))
        // Fewer than 13 bytes can never be judged.
        XCTAssertNil(detect(Array(PklgBytes.record([], type: 0x01, seconds: 1, micros: 2, bigEndian: true).prefix(12))))
    }

    func testRejectsOtherBytes() {
        XCTAssertNil(detect([]))
        XCTAssertNil(detect([0x62]))
        XCTAssertNil(detect([0xD4, 0xC3, 0xB2]))
        XCTAssertNil(detect(Array(repeating: 0, count: 16)))
        XCTAssertNil(detect(Array(repeating: 0xFF, count: 16)))
        XCTAssertNil(detect(Array("GET / HTTP/1.1\r\n".utf8)))
        XCTAssertNil(detect([0x50, 0x4B, 0x03, 0x04] + Array(repeating: 0, count: 12)))  // zip
        XCTAssertNil(detect([0x1F, 0x8B, 0x08, 0x00] + Array(repeating: 0, count: 12)))  // gzip
    }

    func testOpenCaptureReportsTheDetectedFormat() throws {
        let dir = TempDir()
        // A file named .pcapng holding btsnoop, and one named .log holding pcap: the name never decides.
        let snoop = dir.write("really-btsnoop.pcapng", BTSnoopBytes.header(datalink: 1002))
        let pcap = dir.write("really-pcap.log", PcapBytes.header(dlt: 201))
        let pklg = dir.write("x.cap", PklgBytes.record([0x03, 0x0C, 0x00], type: 0, seconds: 1, micros: 2, bigEndian: false))
        let a = try openCapture(snoop)
        XCTAssertEqual(a.format, .btsnoop)
        XCTAssertEqual(a.linkType, .btsnoopH4)
        let b = try openCapture(pcap)
        XCTAssertEqual(b.format, .pcap)
        XCTAssertEqual(b.linkType, .bluetoothHCIH4WithPHDR)
        let c = try openCapture(pklg)
        XCTAssertEqual(c.format, .packetLogger(bigEndian: false))
        XCTAssertEqual(c.linkType, .packetLogger)
    }
}
