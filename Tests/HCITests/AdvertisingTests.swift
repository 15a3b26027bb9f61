import ATT
import XCTest

@testable import Capture
@testable import HCI

/// Advertising reports from HCI events (every report of an event) and from sniffed PDUs.
final class AdvertisingTests: XCTestCase {
    /// AD: flags 0x06, complete name "Speaker", complete 16-bit UUIDs 0x180D 0xFE59, TX power -4,
    /// manufacturer Apple 0x004C with 02 15, service data 0xFEAA with 10 20, appearance 0x0341, unknown type 0x2A.
    let ad: [UInt8] = [0x02, 0x01, 0x06,
                       0x08, 0x09] + Array("Speaker".utf8) + [
                       0x05, 0x03, 0x0D, 0x18, 0x59, 0xFE,
                       0x02, 0x0A, 0xFC,
                       0x05, 0xFF, 0x4C, 0x00, 0x02, 0x15,
                       0x05, 0x16, 0xAA, 0xFE, 0x10, 0x20,
                       0x03, 0x19, 0x41, 0x03,
                       0x02, 0x2A, 0x7F]
    let address: [UInt8] = [0x06, 0x05, 0x04, 0x03, 0x02, 0xC1]  // C1:02:03:04:05:06 little-endian

    func reports(_ d: Decoded) -> [AdvertisingReport] {
        d.events.compactMap { if case .advertising(let r) = $0 { r } else { nil } }
    }

    func leMeta(_ sub: UInt8, _ params: [UInt8]) -> [UInt8] {
        [0x3E, UInt8(truncatingIfNeeded: params.count + 1), sub] + params
    }

    func testEveryStructureOfAnAdvertisingReport() throws {
        let d = LinkDecoder().feed(.event, leMeta(0x02, [1, 0x00, 0x01] + address + [UInt8(ad.count)] + ad + [0xC4]))
        let r = try XCTUnwrap(reports(d).first)
        XCTAssertEqual(d.malformedLayers, [])
        XCTAssertEqual(r.address?.description, "C1:02:03:04:05:06")
        XCTAssertEqual(r.addressType, .randomDevice)
        XCTAssertEqual(r.eventName, "ADV_IND")
        XCTAssertTrue(r.connectable && r.scannable && !r.directed)
        XCTAssertEqual(r.rssi, -60)
        XCTAssertNil(r.problem)
        XCTAssertEqual(r.data.structures, [
            .flags(0x06), .localName("Speaker", complete: true),
            .serviceUUIDs([BluetoothUUID(uuid16: 0x180D), BluetoothUUID(uuid16: 0xFE59)], complete: true),
            .txPowerLevel(-4), .manufacturerData(company: 0x004C, [0x02, 0x15]),
            .serviceData(BluetoothUUID(uuid16: 0xFEAA), [0x10, 0x20]), .appearance(0x0341), .other(type: 0x2A, [0x7F]),
        ])
        XCTAssertEqual(r.data.localName, "Speaker")
        XCTAssertEqual(AdvertisingNames.company(0x004C), "Apple, Inc.")
    }

    func testSeveralReportsInOneEventAreEachReported() {
        var p: [UInt8] = [3]
        p += [0x04, 0x00] + address + [3, 0x02, 0x01, 0x06, 0xB0]  // SCAN_RSP
        p += [0x03, 0x00] + address + [0, 0xA0]  // ADV_NONCONN_IND, no data
        p += [0x00, 0x00] + address + [0, 0x7F]  // RSSI 127: not available
        let rs = reports(LinkDecoder().feed(.event, leMeta(0x02, p)))
        XCTAssertEqual(rs.map(\.eventName), ["SCAN_RSP", "ADV_NONCONN_IND", "ADV_IND"])
        XCTAssertEqual(rs.map(\.rssi), [-80, -96, nil])
    }

    func testAnEventShorterThanItsReportsKeepsThoseThatFitAndSaysSo() {
        let p: [UInt8] = [2, 0x00, 0x00] + address + [0, 0xB0, 0x00, 0x00] + address
        let d = LinkDecoder().feed(.event, leMeta(0x02, p))
        XCTAssertEqual(reports(d).count, 1)
        XCTAssertEqual(d.malformedLayers, [.hci])
    }

    func testADRunningPastTheEndIsAProblemOnTheReportNotAMalformedEvent() throws {
        let data: [UInt8] = [0x02, 0x01, 0x06, 0x09, 0x09, 0x41]
        let d = LinkDecoder().feed(.event, leMeta(0x02, [1, 0x00, 0x00] + address + [UInt8(data.count)] + data + [0xC0]))
        let r = try XCTUnwrap(reports(d).first)
        XCTAssertEqual(d.malformedLayers, [])
        XCTAssertEqual(r.data.structures, [.flags(6)])
        XCTAssertNotNil(r.problem)
    }

    func testDirectedAndExtendedReports() throws {
        let target: [UInt8] = [0x11, 0x12, 0x13, 0x14, 0x15, 0x16]
        let directed = reports(LinkDecoder().feed(.event, leMeta(0x0B, [1, 0x01, 0x01] + address + [0x00] + target + [0xC8])))
        XCTAssertEqual(directed.first?.targetAddress?.description, "16:15:14:13:12:11")
        XCTAssertEqual(directed.first?.directed, true)
        XCTAssertEqual(directed.first?.rssi, -56)
        // Extended: connectable+scannable+legacy (ADV_IND), public identity, 1M/none, SID none,
        // TX power none, RSSI -63, no periodic, direct address zero, 3 bytes of data.
        var p: [UInt8] = [1, 0x13, 0x00, 0x02] + address + [0x01, 0x00, 0xFF, 0x7F, 0xC1, 0x00, 0x00, 0x00] + [0, 0, 0, 0, 0, 0]
        p += [3, 0x02, 0x01, 0x06]
        let ext = try XCTUnwrap(reports(LinkDecoder().feed(.event, leMeta(0x0D, p))).first)
        XCTAssertEqual(ext.eventName, "ADV_IND")
        XCTAssertEqual(ext.addressType, .publicIdentity)
        XCTAssertEqual(ext.primaryPHY, .le1M)
        XCTAssertNil(ext.secondaryPHY)
        XCTAssertNil(ext.txPower)
        XCTAssertEqual(ext.rssi, -63)
        XCTAssertEqual(ext.dataStatus, "complete")
        XCTAssertEqual(ext.data.structures, [.flags(6)])
    }

    // MARK: Sniffers

    func advPDU(_ type: UInt8, txRandom: Bool = true, _ body: [UInt8], length: Int? = nil) -> [UInt8] {
        [0xD6, 0xBE, 0x89, 0x8E, type | (txRandom ? 0x40 : 0), UInt8(length ?? body.count)] + body + [0xC1, 0xC2, 0xC3]
    }

    func sniffer(crcOK: Bool? = true, channel: UInt8 = 38, rssi: Int8 = -70) -> LinkLayerInfo {
        var i = LinkLayerInfo()
        i.crcOK = crcOK
        i.channel = channel
        i.rssi = rssi
        i.phy = 1
        return i
    }

    func testSniffedAdvertisements() throws {
        let ind = try XCTUnwrap(reports(LinkDecoder().feed(.linkLayer, advPDU(0x00, address + ad), linkLayer: sniffer())).first)
        XCTAssertEqual(ind.eventName, "ADV_IND")
        XCTAssertEqual(ind.address?.description, "C1:02:03:04:05:06")
        XCTAssertEqual(ind.addressType, .randomDevice)
        XCTAssertEqual(ind.rssi, -70)
        XCTAssertEqual(ind.channel, 38)
        XCTAssertEqual(ind.primaryPHY, .le1M)
        XCTAssertEqual(ind.data.localName, "Speaker")
        let direct = try XCTUnwrap(reports(LinkDecoder().feed(.linkLayer, advPDU(0x01, address + address), linkLayer: sniffer())).first)
        XCTAssertTrue(direct.directed && direct.connectable)
        for (type, name) in [(UInt8(0x02), "ADV_NONCONN_IND"), (0x04, "SCAN_RSP"), (0x06, "ADV_SCAN_IND")] {
            XCTAssertEqual(reports(LinkDecoder().feed(.linkLayer, advPDU(type, address), linkLayer: sniffer())).first?.eventName, name)
        }
        // SCAN_REQ is no report; a bad CRC is noise: neither report nor complaint.
        XCTAssertTrue(LinkDecoder().feed(.linkLayer, advPDU(0x03, address + address), linkLayer: sniffer()).events.isEmpty)
        XCTAssertTrue(LinkDecoder().feed(.linkLayer, advPDU(0x00, address + ad), linkLayer: sniffer(crcOK: false)).events.isEmpty)
    }

    func testExtendedHeaderOfAnAuxPDU() throws {
        // AUX_ADV_IND on channel 5: header length 10, mode connectable; flags AdvA, ADI, TxPower.
        let body: [UInt8] = [0x0A | 0x40, 0x01 | 0x08 | 0x40] + address + [0x34, 0x12, 0xF8] + [0x02, 0x01, 0x06]
        let r = try XCTUnwrap(reports(LinkDecoder().feed(.linkLayer, advPDU(0x07, body), linkLayer: sniffer(channel: 5))).first)
        XCTAssertEqual(r.eventName, "AUX_ADV_IND")
        XCTAssertEqual(r.address?.description, "C1:02:03:04:05:06")
        XCTAssertTrue(r.connectable)
        XCTAssertEqual(r.sid, 1)
        XCTAssertEqual(r.txPower, -8)
        XCTAssertEqual(r.data.structures, [.flags(6)])
    }

    func testATruncatedPDUIsReportedAsFarAsItGoesAndMarkedMalformed() {
        let d = LinkDecoder().feed(.linkLayer, advPDU(0x04, address + [0x0A, 0x09, 0x4D], length: 21), linkLayer: sniffer())
        XCTAssertEqual(reports(d).count, 1)
        XCTAssertEqual(d.malformedLayers, [.linkLayer])
    }

    /// Hostile bytes: any advertising event or PDU decodes without trapping, in bounded output.
    func testRandomAdvertisingNeverTraps() {
        var rng = SystemRandomNumberGenerator()
        let decoder = LinkDecoder()
        for i in 0..<20_000 {
            let n = Int.random(in: 0..<80, using: &rng)
            let body = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if i % 2 == 0 {
                let sub: UInt8 = [0x02, 0x0B, 0x0D][i % 3]
                decoder.feed(.event, [0x3E, UInt8(truncatingIfNeeded: body.count + 1), sub] + body)
            } else {
                decoder.feed(.linkLayer, [0xD6, 0xBE, 0x89, 0x8E] + body, linkLayer: sniffer())
            }
            XCTAssertLessThanOrEqual(decoder.events.count, 256)
        }
    }
}
