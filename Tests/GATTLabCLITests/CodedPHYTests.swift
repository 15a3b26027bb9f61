import Foundation
import TestSupport
import XCTest

/// nRF Sniffer captures on the LE Coded PHY: the Coding Indicator byte between the access address
/// and the header is skipped, and the packets decode as tshark decodes them (not malformed).
final class CodedPHYTests: XCTestCase {
    /// A DLT 272 (nRF Sniffer v3) pcap: CONNECT_IND, then an MTU exchange, every packet on the
    /// Coded PHY (flags bits 4-6 = 2) with Coding Indicator S=8 (0) or S=2 (1).
    static func capture() -> [UInt8] {
        var out: [UInt8] = [0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0, 0x10, 0x01, 0, 0]
        var frame = 0
        func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }
        func record(_ ll: [UInt8], c2p: Bool, advertising: Bool = false, ci: UInt8 = 0) {
            frame += 1
            let body = Array(ll.prefix(4)) + [ci] + Array(ll.dropFirst(4))
            let flags: UInt8 = 0x01 | (c2p ? 0x02 : 0) | 2 << 4
            let length = 10 + body.count
            let header: [UInt8] = [0x01, UInt8(length & 0xFF), UInt8(length >> 8), 0x03, UInt8(frame), 0x00, advertising ? 0x02 : 0x06,
                                   0x0A, flags, 0x0C, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
            let bytes = header + body
            out += le32(1_700_000_000) + le32(frame * 1250) + le32(bytes.count) + le32(bytes.count) + bytes
        }
        let aa: [UInt8] = [0x2A, 0x4B, 0x65, 0x50], crc: [UInt8] = [0xC1, 0xC2, 0xC3]
        var connect: [UInt8] = [0xD6, 0xBE, 0x89, 0x8E, 0xC5, 0x22, 0x01, 0x02, 0x03, 0x04, 0x05, 0xC6, 0x11, 0x12, 0x13, 0x14, 0x15, 0xD6]
        connect += aa + [0x7C, 0x5E, 0x01, 0x02, 0x05, 0x00, 0x24, 0x00, 0x01, 0x00, 0xC8, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0x2A] + crc
        record(connect, c2p: false, advertising: true)
        record(aa + [0x02, 7, 3, 0, 4, 0, 0x02, 0xF7, 0x00] + crc, c2p: true)               // Exchange MTU Request
        record(aa + [0x0A, 7, 3, 0, 4, 0, 0x03, 0x17, 0x00] + crc, c2p: false, ci: 1)       // Exchange MTU Response
        record(aa + [0x0E, 7, 3, 0, 4, 0, 0x0A, 0x03, 0x00] + crc, c2p: true, ci: 1)        // Read Request
        return out
    }

    func testCodedPHYPacketsDecodeAsTsharkDecodesThem() throws {
        let dir = try Harness.temporaryDirectory()
        let path = dir.appendingPathComponent("coded.pcap").path
        try Data(Self.capture()).write(to: URL(fileURLWithPath: path))
        let tshark = try WiresharkConformanceTests.tsharkView(path)
        XCTAssertEqual(tshark.pdus.map(\.opcode), [0x02, 0x03, 0x0A], "tshark reads the capture as meant")
        let r = try Harness.gattlab(["decode", "--format", "json", path])
        XCTAssertEqual(r.status, 0, r.stderr)
        let att = Harness.jsonLines(r.stdout, type: "att")
        XCTAssertEqual(att.compactMap { o -> WiresharkConformanceTests.PDU? in
            guard let f = o["frame"] as? Int, let op = o["opcode"] as? Int else { return nil }
            return WiresharkConformanceTests.PDU(frame: f, opcode: op)
        }, tshark.pdus)
        XCTAssertEqual(att.map { $0["direction"] as? String }, ["central->peripheral", "peripheral->central", "central->peripheral"])
        let connected = Harness.jsonLines(r.stdout, type: "link").first { $0["event"] as? String == "connection-complete" }
        XCTAssertEqual(connected?["peripheral"] as? String, "D6:15:14:13:12:11")
        XCTAssertTrue(tshark.malformed.isEmpty)
        XCTAssertTrue(Harness.jsonLines(r.stdout, type: "malformed").isEmpty, r.stdout)
        XCTAssertTrue(att.allSatisfy { $0["malformed"] == nil }, r.stdout)
    }
}
