import XCTest
import TestSupport

@testable import Capture

final class SnifferHeaderTests: XCTestCase {
    /// An LE data PDU as sniffers give it: access address 0x50654B2A, header (LLID 2, NESN 1, SN 1),
    /// length 7, an ATT Exchange MTU Request in L2CAP, and three CRC bytes.
    let llPacket: [UInt8] = [0x2A, 0x4B, 0x65, 0x50, 0x0E, 0x07, 0x03, 0x00, 0x04, 0x00, 0x02, 0xF7, 0x00, 0x11, 0x22, 0x33]

    /// nRF Sniffer v2/v3 frame: board, payload length u16, version, counter u16, packet id, then the
    /// 10-byte packet header (length 10, flags, channel, RSSI, event counter u16, time u32) and the LL packet.
    func nordic(version: UInt8, flags: UInt8, channel: UInt8, rssi: UInt8, packetID: UInt8 = 0x06, ll: [UInt8]) -> [UInt8] {
        var b: [UInt8] = [0x06]
        b.le16(UInt16(10 + ll.count))
        b += [version, 0x34, 0x12, packetID]
        b += [10, flags, channel, rssi, 0x05, 0x00, 0x78, 0x56, 0x34, 0x12]
        XCTAssertEqual(b.count, 17)
        return b + ll
    }

    /// nRF Sniffer v1: board, header length 6, payload length u8, version 1, counter u16, id, then the packet header.
    func nordicV1(flags: UInt8, channel: UInt8, rssi: UInt8, ll: [UInt8]) -> [UInt8] {
        var b: [UInt8] = [0x06, 6, UInt8(10 + ll.count), 1, 0x34, 0x12, 0x06]
        b += [10, flags, channel, rssi, 0x05, 0x00, 0x78, 0x56, 0x34, 0x12]
        return b + ll
    }

    private func pcap(dlt: UInt32, _ frames: [[UInt8]]) -> [UInt8] {
        var file = PcapBytes.header(dlt: dlt)
        for (i, f) in frames.enumerated() {
            file += PcapBytes.record(f, seconds: 1_600_000_000 + UInt32(i), micros: 250_000 + UInt32(i))
        }
        return file
    }

    private func info(channel: UInt8?, rssi: Int8?, direction: LinkLayerDirection, crcOK: Bool?, encrypted: Bool, micOK: Bool?,
                      pduType: UInt8? = nil, phy: UInt8? = nil) -> LinkLayerInfo {
        var i = LinkLayerInfo()
        i.phy = phy
        i.channel = channel; i.rssi = rssi; i.direction = direction; i.crcOK = crcOK
        i.encrypted = encrypted; i.micOK = micOK; i.pduType = pduType
        // nRF Sniffer (no PDU type) always says whether a packet is encrypted; DLT 256 only with its flags.
        i.encryptionReported = pduType == nil || encrypted
        return i
    }

    /// Flags bits 4-6 give the PHY; on Coded (2) a Coding Indicator byte follows the access address.
    func testNordicCodedPHY() throws {
        let dir = TempDir()
        let frames = [nordic(version: 3, flags: 0x23, channel: 12, rssi: 60, ll: llPacket),   // Coded, CRC ok, C->P
                      nordic(version: 3, flags: 0x13, channel: 12, rssi: 60, ll: llPacket),   // 2M
                      nordic(version: 2, flags: 0x03, channel: 12, rssi: 60, ll: llPacket)]   // 1M
        let r = readAll(dir.write("nrf-coded.pcap", pcap(dlt: 272, frames)))
        XCTAssertNil(r.error)
        XCTAssertEqual(r.records.map { $0.linkLayer?.coded }, [true, false, false])
        XCTAssertEqual(r.records.map(\.data), [llPacket, llPacket, llPacket])
    }

    func testNordicV2AndV3() throws {
        let dir = TempDir()
        for version: UInt8 in [2, 3] {
            let frames = [
                nordic(version: version, flags: 0x03, channel: 12, rssi: 60, ll: llPacket),   // CRC ok, C->P
                nordic(version: version, flags: 0x0F, channel: 0, rssi: 0x80, ll: llPacket),  // encrypted, MIC ok
                nordic(version: version, flags: 0x04, channel: 36, rssi: 1, ll: llPacket),    // bad CRC, P->C, encrypted, MIC bad
                nordic(version: version, flags: 0x09, channel: 39, rssi: 90, ll: llPacket),   // MIC bit without encryption
                [0x06, 0x00],                                                                 // too short for any header
            ]
            let path = dir.write("nrf-v\(version).pcap", pcap(dlt: 272, frames))
            let r = readAll(path)
            XCTAssertNil(r.error)
            XCTAssertEqual(r.linkType, .nordicBLE)
            XCTAssertTrue(r.linkType!.isLinkLayer)
            XCTAssertEqual(r.records.count, 5)
            XCTAssertEqual(r.records.map(\.kind), [.linkLayer, .linkLayer, .linkLayer, .linkLayer, .linkLayer], "v\(version)")
            for rec in r.records.prefix(4) {
                XCTAssertEqual(rec.data, llPacket, "the LL packet starts at byte 17 (v\(version))")
                XCTAssertEqual(rec.originalLength, llPacket.count)
                XCTAssertEqual(rec.linkLayer?.hasCRC, true)
            }
            // Flags bits 4-6 are the PHY: 0, LE 1M (1 as HCI numbers it).
            XCTAssertEqual(r.records[0].linkLayer, info(channel: 12, rssi: -60, direction: .centralToPeripheral, crcOK: true, encrypted: false, micOK: nil, phy: 1))
            XCTAssertEqual(r.records[1].linkLayer, info(channel: 0, rssi: -128, direction: .centralToPeripheral, crcOK: true, encrypted: true, micOK: true, phy: 1))
            XCTAssertEqual(r.records[2].linkLayer, info(channel: 36, rssi: -1, direction: .peripheralToCentral, crcOK: false, encrypted: true, micOK: false, phy: 1))
            XCTAssertEqual(r.records[3].linkLayer, info(channel: 39, rssi: -90, direction: .peripheralToCentral, crcOK: true, encrypted: false, micOK: nil, phy: 1))
            // A frame too short for its header is reported as such, its bytes kept, and not decoded.
            XCTAssertEqual(r.records[4].linkLayer?.problem, "nRF Sniffer record of 2 bytes is shorter than its 17-byte header")
            XCTAssertEqual(r.records[4].data, [0x06, 0x00])
            let times: [Int64] = (0..<5).map { (i: Int64) -> Int64 in (1_600_000_000 + i) * 1_000_000 + 250_000 + i }
            XCTAssertEqual(r.records.map(\.timestamp), times)
            // Each record: 16-byte pcap header + 17-byte nRF header + 16-byte LL packet = 49.
            let offsets: [Int64] = [24, 73, 122, 171, 220]
            XCTAssertEqual(r.records.map(\.fileOffset), offsets)
        }
    }

    func testNordicV1() throws {
        let dir = TempDir()
        let r = readAll(dir.write("nrf-v1.pcap", pcap(dlt: 272, [nordicV1(flags: 0x01, channel: 37, rssi: 70, ll: llPacket)])))
        XCTAssertNil(r.error)
        XCTAssertEqual(r.records.first?.kind, .linkLayer)
        XCTAssertEqual(r.records.first?.data, llPacket)
        XCTAssertEqual(r.records.first?.linkLayer, info(channel: 37, rssi: -70, direction: .peripheralToCentral, crcOK: true, encrypted: false, micOK: nil))
    }

    func testNordicPacketHeaderLengthBeyondFrameIsReported() throws {
        let dir = TempDir()
        var frame = nordic(version: 3, flags: 0x03, channel: 1, rssi: 2, ll: [])
        frame = Array(frame.prefix(12))  // the 10-byte packet header is cut
        let r = readAll(dir.write("nrf-short.pcap", pcap(dlt: 272, [frame])))
        XCTAssertEqual(r.records.first?.kind, .linkLayer)
        XCTAssertNotNil(r.records.first?.linkLayer?.problem)
        XCTAssertEqual(r.records.first?.data, frame)
    }

    /// Wireshark's nRF length check: header length + payload length must equal the record's
    /// length, else the packet is not decoded.
    func testNordicPayloadLengthMismatchIsReported() throws {
        let dir = TempDir()
        var frame = nordic(version: 2, flags: 0x03, channel: 1, rssi: 2, ll: llPacket)
        frame[1] = frame[1] &+ 1  // payload length one more than present
        let r = readAll(dir.write("nrf-len.pcap", pcap(dlt: 272, [frame])))
        XCTAssertEqual(r.records.first?.linkLayer?.problem, "nRF Sniffer header says \(frame.count + 1) bytes, the record has \(frame.count)")
    }

    /// DLT 256: channel, signal, noise, AA offenses, reference AA u32 LE, flags u16 LE.
    func llPHDR(channel: UInt8, signal: Int8, flags: UInt16) -> [UInt8] {
        var b: [UInt8] = [channel, UInt8(bitPattern: signal), 0xA0, 0x00, 0x2A, 0x4B, 0x65, 0x50]
        b.le16(flags)
        return b + llPacket
    }

    func testLEWithPHDRFlags() throws {
        let dir = TempDir()
        let frames = [
            // signal valid, CRC checked and valid, PDU type 2 (central -> peripheral)
            llPHDR(channel: 5, signal: -45, flags: 0x0002 | 0x0400 | 0x0800 | 2 << 7),
            // signal not valid, CRC checked and bad, PDU type 3 (peripheral -> central), MIC checked and bad
            llPHDR(channel: 6, signal: -50, flags: 0x0400 | 3 << 7 | 0x1000),
            // CRC not checked, PDU type 0 (unknown direction), MIC checked and valid
            llPHDR(channel: 7, signal: 0, flags: 0x1000 | 0x2000),
            // "decrypted" flag
            llPHDR(channel: 39, signal: -1, flags: 0x0002 | 0x0008 | 1 << 7),
            // nine bytes: too short for the header
            Array(llPHDR(channel: 1, signal: 0, flags: 0).prefix(9)),
        ]
        let r = readAll(dir.write("phdr.pcap", pcap(dlt: 256, frames)))
        XCTAssertNil(r.error)
        XCTAssertEqual(r.linkType, .bluetoothLELLWithPHDR)
        XCTAssertEqual(r.records.map(\.kind), [.linkLayer, .linkLayer, .linkLayer, .linkLayer, .other])
        for rec in r.records.prefix(4) { XCTAssertEqual(rec.data, llPacket) }
        // The header's RF channel becomes the channel index: RF 5, 6, 7 are indexes 4, 5, 6; RF 39 is 39.
        XCTAssertEqual(r.records[0].linkLayer, info(channel: 4, rssi: -45, direction: .centralToPeripheral, crcOK: true, encrypted: false, micOK: nil, pduType: 2))
        XCTAssertEqual(r.records[1].linkLayer, info(channel: 5, rssi: nil, direction: .peripheralToCentral, crcOK: false, encrypted: true, micOK: false, pduType: 3))
        XCTAssertEqual(r.records[2].linkLayer, info(channel: 6, rssi: nil, direction: .unknown, crcOK: nil, encrypted: true, micOK: true, pduType: 0))
        XCTAssertEqual(r.records[3].linkLayer, info(channel: 39, rssi: -1, direction: .unknown, crcOK: nil, encrypted: true, micOK: true, pduType: 1))
        XCTAssertNil(r.records[4].linkLayer)
        XCTAssertEqual(r.records[4].data.count, 9)
    }

    /// PPI: version 0, flags 0, header length u16 LE, inner DLT u32 LE, then fields (here one
    /// Ubertooth field of type 30006 with 4 bytes of data).
    func ppi(inner: UInt32, headerLength: UInt16 = 16, ll: [UInt8]) -> [UInt8] {
        var b: [UInt8] = [0, 0]
        b.le16(headerLength)
        b.le32(inner)
        b.le16(30006); b.le16(4); b += [0x01, 0x02, 0x03, 0x04]
        return b + ll
    }

    func testPPIWrappingDLT147And251() throws {
        let dir = TempDir()
        let frames = [
            ppi(inner: 147, ll: llPacket),
            ppi(inner: 251, ll: llPacket),
            ppi(inner: 1, ll: llPacket),                       // Ethernet inside: not ours
            ppi(inner: 147, headerLength: 200, ll: llPacket),  // header longer than the frame
            ppi(inner: 147, headerLength: 4, ll: llPacket),    // header shorter than its fixed part
            [0, 0, 8],                                         // not even the fixed header
        ]
        let r = readAll(dir.write("ppi.pcap", pcap(dlt: 192, frames)))
        XCTAssertNil(r.error)
        XCTAssertEqual(r.linkType, .ppi)
        XCTAssertTrue(r.linkType!.isLinkLayer)
        XCTAssertEqual(r.records.map(\.kind), [.linkLayer, .linkLayer, .other, .other, .other, .other])
        XCTAssertEqual(r.records[0].data, llPacket)
        XCTAssertEqual(r.records[1].data, llPacket)
        XCTAssertEqual(r.records[0].linkLayer, LinkLayerInfo(), "PPI gives no direction, CRC or channel")
        XCTAssertEqual(r.records[0].linkLayer?.direction, .unknown)
        XCTAssertEqual(r.records[2].data, frames[2])
        XCTAssertNil(r.records[2].linkLayer)
    }

    func testRealSnifferCapturesAreAllLinkLayer() throws {
        for (name, link, count) in [("sweyntooth__capture_cc2640_dhcheck_skip.pcap", LinkType.nordicBLE, 46),
                                    ("crackle__known_ltk.pcap", .ppi, 303),
                                    ("crackle__le_secure_connections.pcapng", .bluetoothLELLWithPHDR, 303)] {
            let r = readAll(try RealCaptures.path(name))
            XCTAssertNil(r.error, name)
            XCTAssertEqual(r.linkType, link, name)
            XCTAssertEqual(r.records.count, count, name)
            XCTAssertTrue(r.records.allSatisfy { $0.kind == .linkLayer }, name)
            // Every packet starts at an access address: the advertising one or a connection's.
            let addresses = Set(r.records.map { UInt32($0.data[0]) | UInt32($0.data[1]) << 8 | UInt32($0.data[2]) << 16 | UInt32($0.data[3]) << 24 })
            XCTAssertTrue(addresses.contains(0x8E89_BED6), name)
            XCTAssertLessThanOrEqual(addresses.count, 4, name)
        }
    }

    func testOtherPcapLinkTypes() throws {
        let dir = TempDir()
        // DLT 187: H4 without direction; commands are sent and events received by their nature.
        var r = readAll(dir.write("h4.pcap", pcap(dlt: 187, [[0x01, 0x03, 0x0C, 0x00], [0x04, 0x0E, 0x01, 0x01], [0x02, 0x40, 0x00, 0x00, 0x00], []])))
        XCTAssertNil(r.error)
        XCTAssertEqual(r.records.map(\.kind), [.command, .event, .acl, .other])
        XCTAssertEqual(r.records.map(\.direction), [.sent, .received, .unknown, .unknown])
        XCTAssertEqual(r.records[0].data, [0x03, 0x0C, 0x00])
        // DLT 201: direction u32 BE, then H4.
        r = readAll(dir.write("phdr201.pcap", pcap(dlt: 201, [[0, 0, 0, 1, 0x02, 0x40, 0x00, 0x00, 0x00], [0, 0, 0, 0, 0x01, 0x03, 0x0C, 0x00], [0, 0, 0]])))
        XCTAssertEqual(r.records.map(\.kind), [.acl, .command, .other])
        XCTAssertEqual(r.records.map(\.direction), [.received, .sent, .unknown])
        XCTAssertEqual(r.records[0].data, [0x40, 0x00, 0x00, 0x00])
        XCTAssertEqual(r.records[2].data, [0, 0, 0])
        // DLT 254: adapter u16 BE, opcode u16 BE.
        r = readAll(dir.write("mon.pcap", pcap(dlt: 254, [[0x00, 0x02, 0x00, 0x05, 0x40, 0x00, 0x00, 0x00], [0x00, 0x00, 0x00, 0x0C, 0x41, 0x00]])))
        XCTAssertEqual(r.records.map(\.kind), [.acl, .text])
        XCTAssertEqual(r.records.map(\.controller), [2, 0])
        XCTAssertEqual(r.records.map(\.rawType), [5, 12])
        XCTAssertEqual(r.records.map(\.direction), [.received, .unknown])
        XCTAssertEqual(r.records[0].data, [0x40, 0x00, 0x00, 0x00])
        // DLT 251: the LL packet as is.
        r = readAll(dir.write("ll.pcap", pcap(dlt: 251, [llPacket])))
        XCTAssertEqual(r.records.first?.kind, .linkLayer)
        XCTAssertEqual(r.records.first?.data, llPacket)
    }

    func testPcapMagicsAndTimestampPrecision() throws {
        let dir = TempDir()
        // One DLT 187 record, written in each of the four pcap flavours; nanoseconds are read as microseconds.
        func file(magic: UInt32, bigEndian: Bool, fraction: UInt32) -> [UInt8] {
            var b: [UInt8] = []
            func u32(_ v: UInt32) { bigEndian ? b.be32(v) : b.le32(v) }
            func u16(_ v: UInt16) { bigEndian ? b.be16(v) : b.le16(v) }
            u32(magic); u16(2); u16(4); u32(0); u32(0); u32(65535); u32(187)
            u32(1_600_000_000); u32(fraction); u32(4); u32(4)
            return b + [0x01, 0x03, 0x0C, 0x00]
        }
        for (magic, bigEndian, fraction) in [(UInt32(0xA1B2_C3D4), false, UInt32(123_456)), (0xA1B2_C3D4, true, 123_456),
                                             (0xA1B2_3C4D, false, 123_456_789), (0xA1B2_3C4D, true, 123_456_789)] {
            let bytes = file(magic: magic, bigEndian: bigEndian, fraction: fraction)
            let r = readAll(dir.write("m.pcap", bytes))
            XCTAssertNil(r.error)
            XCTAssertEqual(r.format, .pcap)
            XCTAssertEqual(r.records.count, 1)
            XCTAssertEqual(r.records.first?.timestamp, 1_600_000_000_123_456, "magic \(String(magic, radix: 16)) big-endian \(bigEndian)")
            XCTAssertEqual(r.records.first?.data, [0x03, 0x0C, 0x00])
            XCTAssertEqual(r.records.first?.fileOffset, 24)
        }
    }
}
