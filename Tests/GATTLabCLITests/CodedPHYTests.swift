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

    // MARK: Redaction

    static let ltk: [UInt8] = [0x3C, 0x91, 0x5A, 0xE2, 0x07, 0xB4, 0x68, 0xD9, 0x21, 0x7F, 0xC6, 0x4B, 0x95, 0x0E, 0xA3, 0x58]
    static let central: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0xC6], peripheral: [UInt8] = [0x11, 0x12, 0x13, 0x14, 0x15, 0xD6]

    /// The LE link layer CRC (Core Vol 6 Part B 3.1.1) as the spec's LFSR computes it, stored as
    /// some nRF Sniffer files store it: each byte bit-reversed, most significant byte first.
    static func crc(_ pdu: [UInt8], preset: UInt32) -> [UInt8] {
        var state = preset
        for byte in pdu {
            for bit in 0..<8 {
                let feedback = (state >> 23 ^ UInt32(byte >> UInt8(bit))) & 1
                state = (state << 1) & 0xFF_FFFF
                if feedback == 1 { state ^= 0x065B }
            }
        }
        func reversed(_ b: UInt8) -> UInt8 { (0..<8).reduce(0) { $0 | ((b >> UInt8($1)) & 1) << UInt8(7 - $1) } }
        return [UInt8(state >> 16 & 0xFF), UInt8(state >> 8 & 0xFF), UInt8(state & 0xFF)].map(reversed)
    }

    /// A Coded PHY session with something to redact: CONNECT_IND (the two addresses), an MTU
    /// exchange, the peripheral's LTK distributed in SMP Encryption Information (a secret sent in
    /// the clear), Central Identification and a Read Request; every packet with a valid CRC and
    /// both Coding Indicators.
    static func pairingCapture() -> [UInt8] {
        var out: [UInt8] = [0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0, 0x10, 0x01, 0, 0]
        var frame = 0
        func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }
        let aa: [UInt8] = [0x2A, 0x4B, 0x65, 0x50], crcInit: UInt32 = 0x01_5E7C
        func record(_ pdu: [UInt8], c2p: Bool, advertising: Bool = false, ci: UInt8 = 0) {
            frame += 1
            let body = (advertising ? [0xD6, 0xBE, 0x89, 0x8E] : aa) + [ci] + pdu + crc(pdu, preset: advertising ? 0x55_5555 : crcInit)
            let flags: UInt8 = 0x01 | (c2p ? 0x02 : 0) | 2 << 4
            let length = 10 + body.count
            let header: [UInt8] = [0x01, UInt8(length & 0xFF), UInt8(length >> 8), 0x03, UInt8(frame), 0x00, advertising ? 0x02 : 0x06,
                                   0x0A, flags, 0x0C, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
            let bytes = header + body
            out += le32(1_700_000_000) + le32(frame * 1250) + le32(bytes.count) + le32(bytes.count) + bytes
        }
        func l2cap(_ cid: UInt8, _ sdu: [UInt8]) -> [UInt8] { [UInt8(sdu.count), 0, cid, 0] + sdu }
        func data(_ sn: UInt8, _ sdu: [UInt8]) -> [UInt8] { [0x02 | sn << 3, UInt8(sdu.count)] + sdu }
        record([0xC5, 0x22] + central + peripheral + aa + [0x7C, 0x5E, 0x01, 0x02, 0x05, 0x00, 0x24, 0x00, 0x01, 0x00, 0xC8, 0x00,
                                                           0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0x2A], c2p: false, advertising: true)
        record(data(0, l2cap(4, [0x02, 0xF7, 0x00])), c2p: true)                         // Exchange MTU Request
        record(data(0, l2cap(4, [0x03, 0x17, 0x00])), c2p: false, ci: 1)                 // Exchange MTU Response
        record(data(1, l2cap(6, [0x06] + ltk)), c2p: false, ci: 1)                       // Encryption Information
        record(data(0, l2cap(6, [0x07, 0x34, 0x12] + [1, 2, 3, 4, 5, 6, 7, 8])), c2p: false)  // Central Identification
        record(data(1, l2cap(4, [0x0A, 0x03, 0x00])), c2p: true, ci: 1)                  // Read Request
        return out
    }

    /// `gattlab redact --anonymize-addresses` on the Coded PHY reads each header where decoding
    /// does (after the Coding Indicator): the LTK and both addresses are gone, every CRC is valid
    /// for its new bytes, and gattlab and tshark read the same ATT sequence from the output as
    /// from the input.
    func testRedactOnCodedPHYFindsWhatDecodeFinds() throws {
        _ = try Harness.tshark
        let dir = try Harness.temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("coded-pairing.pcap").path
        let output = dir.appendingPathComponent("coded-redacted.pcap").path
        let original = Self.pairingCapture()
        try Data(original).write(to: URL(fileURLWithPath: input))
        func attSequence(_ path: String) throws -> [WiresharkConformanceTests.PDU] {
            let r = try Harness.gattlab(["decode", "--format", "json", path])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertTrue(Harness.jsonLines(r.stdout, type: "malformed").isEmpty, r.stdout)
            return Harness.jsonLines(r.stdout, type: "att").compactMap { o in
                guard let f = o["frame"] as? Int, let op = o["opcode"] as? Int else { return nil }
                return WiresharkConformanceTests.PDU(frame: f, opcode: op)
            }
        }
        let before = try attSequence(input)
        XCTAssertEqual(before.map(\.opcode), [0x02, 0x03, 0x0A])
        XCTAssertEqual(try WiresharkConformanceTests.tsharkView(input).pdus, before)

        let r = try Harness.gattlab(["redact", input, "-o", output, "--anonymize-addresses", "--anonymize-seed", "coded", "--format", "json"],
                                    timeout: 120)
        XCTAssertEqual(r.status, 0, r.stderr + r.stdout)
        let report = try RedactCommandTests.json(r.stdout)
        XCTAssertEqual((report["secrets"] as? [[String: Any]])?.map { $0["kind"] as? String }, ["ltk"], r.stdout)
        XCTAssertTrue((report["checks"] as? [[String: Any]] ?? []).allSatisfy { $0["passed"] as? Bool == true }, r.stdout)
        let redacted = try [UInt8](Data(contentsOf: URL(fileURLWithPath: output)))
        XCTAssertEqual(redacted.count, original.count)
        XCTAssertFalse(CanaryTests.contains(redacted, Self.ltk), "the LTK is gone")
        XCTAssertFalse(CanaryTests.contains(redacted, Self.central), "the central's address is gone")
        XCTAssertFalse(CanaryTests.contains(redacted, Self.peripheral), "the peripheral's address is gone")

        // Every packet's CRC is valid for its bytes (the CONNECT_IND's changed).
        var offset = 24, crcInit: UInt32 = 0
        while offset + 16 <= redacted.count {
            let length = Int(redacted[offset + 8]) | Int(redacted[offset + 9]) << 8
            let packet = Array(redacted[(offset + 16)..<(offset + 16 + length)])
            offset += 16 + length
            let aa = packet[17..<21], pdu = Array(packet[22..<(packet.count - 3)])
            let advertising = aa.elementsEqual([0xD6, 0xBE, 0x89, 0x8E])
            if advertising { crcInit = UInt32(pdu[18]) | UInt32(pdu[19]) << 8 | UInt32(pdu[20]) << 16 }
            XCTAssertEqual(Array(packet.suffix(3)), Self.crc(pdu, preset: advertising ? 0x55_5555 : crcInit), "CRC of packet at \(offset)")
        }
        XCTAssertEqual(try attSequence(output), before)
        XCTAssertEqual(try WiresharkConformanceTests.tsharkView(output).pdus, before)
    }
}
