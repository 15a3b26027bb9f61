import ATT
import TestSupport
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

    // MARK: Chained extended reports

    /// One LE Extended Advertising Report: connectable, not legacy (AUX_ADV_IND), Data Status
    /// `status` (0 complete, 1 more to come, 2 truncated), random address `address`, SID `sid`.
    func extended(_ data: [UInt8], status: UInt16, address: [UInt8]? = nil, sid: UInt8 = 3, scanResponse: Bool = false, rssi: UInt8 = 0xC0) -> [UInt8] {
        let type = 0x0001 | (scanResponse ? 0x0008 : 0) | status << 5
        var p: [UInt8] = [1, UInt8(type & 0xFF), UInt8(type >> 8), 0x01] + (address ?? self.address)
        p += [0x01, 0x02, sid, 0x7F, rssi, 0x00, 0x00, 0x00] + [0, 0, 0, 0, 0, 0] + [UInt8(data.count)] + data
        return [0x3E, UInt8(truncatingIfNeeded: p.count + 1), 0x0D] + p
    }

    /// AD structures split across three reports (the name cut after its type, the service data
    /// cut mid-value): each report is reported; the last one carries the joined structures and
    /// the chain's length, and nobody calls the cut structures malformed.
    func testAChainOfExtendedReportsIsJoinedOnItsLastReport() throws {
        let whole = ad + [0x0E, 0x09] + Array("Long-name-XYZ".utf8) + [0x02, 0x01, 0x04]
        let parts = [Array(whole[0..<7]), Array(whole[7..<30]), Array(whole[30...])]
        let decoder = LinkDecoder()
        var got: [AdvertisingReport] = []
        for (i, part) in parts.enumerated() {
            // Another advertiser's complete report in between does not break the chain.
            if i == 1 { got += reports(decoder.feed(.event, extended([0x02, 0x01, 0x06], status: 0, address: [1, 2, 3, 4, 5, 0xC6]))) }
            let d = decoder.feed(.event, extended(part, status: i < 2 ? 1 : 0), number: i + 2)
            XCTAssertEqual(d.malformedLayers, [])
            got += reports(d)
        }
        XCTAssertEqual(got.count, 4, "one report per report")
        let mine = got.filter { $0.address?.description == "C1:02:03:04:05:06" }
        XCTAssertEqual(mine.map(\.dataStatus), ["incomplete", "incomplete", "complete"])
        XCTAssertEqual(mine.map(\.fragments), [nil, nil, 3])
        XCTAssertEqual(mine.map(\.problem), [nil, nil, nil])
        XCTAssertEqual(mine[0].data.structures, [.flags(6)], "the first report keeps what fits whole")
        let last = try XCTUnwrap(mine.last)
        XCTAssertEqual(last.data.structures.count, 10)
        XCTAssertEqual(last.data.structures[1], .localName("Speaker", complete: true), "cut across reports 1 and 2")
        XCTAssertEqual(last.data.structures[5], .serviceData(BluetoothUUID(uuid16: 0xFEAA), [0x10, 0x20]), "cut across reports 2 and 3")
        XCTAssertEqual(last.data.structures[8], .localName("Long-name-XYZ", complete: true))
        XCTAssertEqual(got.first { $0.address?.description == "C6:05:04:03:02:01" }?.fragments, nil)
        XCTAssertTrue(decoder.advertisingChains.chains.isEmpty, "a finished chain is forgotten")
    }

    /// A chain the controller ended as truncated: the last report says so, and a structure cut
    /// at the end is not a problem; a new chain after it starts afresh.
    func testATruncatedChainIsNamedAndStartsNoLaterChain() throws {
        let decoder = LinkDecoder()
        decoder.feed(.event, extended([0x02, 0x01, 0x06, 0x0A, 0x09, 0x41, 0x42], status: 1))
        let cut = try XCTUnwrap(reports(decoder.feed(.event, extended([0x43, 0x44], status: 2))).first)
        XCTAssertEqual(cut.dataStatus, "truncated")
        XCTAssertEqual(cut.fragments, 2)
        XCTAssertEqual(cut.data.structures, [.flags(6)])
        XCTAssertNil(cut.problem)
        let next = try XCTUnwrap(reports(decoder.feed(.event, extended([0x02, 0x01, 0x02], status: 0))).first)
        XCTAssertNil(next.fragments)
        XCTAssertEqual(next.data.structures, [.flags(2)])
    }

    /// Scan response and advertising data of one advertiser, or two SIDs, are separate chains.
    func testChainsAreKeptApartBySIDAndScanResponse() throws {
        let decoder = LinkDecoder()
        decoder.feed(.event, extended([0x02, 0x01], status: 1, sid: 1))
        decoder.feed(.event, extended([0x03, 0x09], status: 1, sid: 1, scanResponse: true))
        decoder.feed(.event, extended([0x03, 0x09], status: 1, sid: 2))
        let rsp = try XCTUnwrap(reports(decoder.feed(.event, extended([0x41, 0x42], status: 0, sid: 1, scanResponse: true))).first)
        XCTAssertEqual(rsp.data.localName, "AB")
        let sid2 = try XCTUnwrap(reports(decoder.feed(.event, extended([0x43, 0x44], status: 0, sid: 2))).first)
        XCTAssertEqual(sid2.data.localName, "CD")
        let adv = try XCTUnwrap(reports(decoder.feed(.event, extended([0x06], status: 0, sid: 1))).first)
        XCTAssertEqual(adv.data.structures, [.flags(6)])
        XCTAssertEqual([rsp, sid2, adv].map(\.fragments), [2, 2, 2])
    }

    /// Hostile input: a chain that never ends keeps at most 1650 bytes and the last report says
    /// what was left out; chains that never end are at most `maxChains`, the oldest dropped.
    func testChainsAreBounded() throws {
        let decoder = LinkDecoder()
        let filler = [UInt8](repeating: 0, count: 200)  // zero lengths: padding, no structures
        for _ in 0..<20 { decoder.feed(.event, extended(filler, status: 1)) }
        XCTAssertEqual(decoder.advertisingChains.chains.values.first?.data.count, AdvertisingChains.maxData)
        let last = try XCTUnwrap(reports(decoder.feed(.event, extended(filler, status: 0))).first)
        XCTAssertEqual(last.fragments, 21)
        XCTAssertTrue(last.problem?.contains("1650") == true, last.problem ?? "no problem")
        for i in 0..<1000 {
            decoder.feed(.event, extended([0x02, 0x01], status: 1, address: [UInt8(i & 0xFF), UInt8(i >> 8), 0, 0, 0, 0xC0]))
        }
        XCTAssertEqual(decoder.advertisingChains.chains.count, AdvertisingChains.maxChains)
        // The oldest were dropped: the first address's chain is gone, the last one's is joined.
        let old = try XCTUnwrap(reports(decoder.feed(.event, extended([0x06], status: 0, address: [0, 0, 0, 0, 0, 0xC0]))).first)
        XCTAssertNil(old.fragments)
        let recent = try XCTUnwrap(reports(decoder.feed(.event, extended([0x06], status: 0, address: [0xE7, 0x03, 0, 0, 0, 0xC0]))).first)
        XCTAssertEqual(recent.fragments, 2)
        XCTAssertEqual(recent.data.structures, [.flags(6)])
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

    /// `reportsAdvertising` off (what `info`, `audit` and `redact` ask for): every other event is
    /// the same, malformed reports and PDUs are still said, CONNECT_IND still opens its link.
    /// Random advertising (half of it well formed), HCI and sniffed, through both decoders.
    func testWithoutReportsEveryOtherEventIsTheSame() {
        var rng = SplitMix(seed: 20)
        let full = LinkDecoder(), lean = LinkDecoder()
        lean.reportsAdvertising = false
        var reports = 0, malformed = 0, connections = 0
        for i in 0..<20_000 {
            let n = Int.random(in: 0..<60, using: &rng)
            var body = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let wellFormed = i % 4 < 2
            let kind: RecordKind = i % 2 == 0 ? .event : .linkLayer
            var bytes: [UInt8]
            if kind == .event {
                let sub: UInt8 = [0x02, 0x0B, 0x0D][i % 3]
                if wellFormed {
                    bytes = sub == 0x0D
                        ? extended(Array(ad.prefix(n)), status: UInt16(i % 3), sid: UInt8(i % 2))
                        : leMeta(0x02, [1, UInt8(i % 5), 0x01] + address + [UInt8(min(n, ad.count))] + ad.prefix(n) + [0xC4])
                } else {
                    bytes = [0x3E, UInt8(truncatingIfNeeded: body.count + 1), sub] + body
                }
            } else {
                if wellFormed {
                    let type: UInt8 = [0x00, 0x01, 0x02, 0x04, 0x05, 0x06, 0x07][i % 7]
                    if type == 0x05 { body = address + address + (0..<22).map { _ in UInt8.random(in: 0...255, using: &rng) } }
                    else if type == 0x07 { body = [0x0A | 0x40, 0x01 | 0x08 | 0x40] + address + [0x34, 0x12, 0xF8] + ad.prefix(n) }
                    else { body = address + (type == 0x01 ? address : Array(ad.prefix(n))) }
                    bytes = advPDU(type, body)
                } else {
                    bytes = [0xD6, 0xBE, 0x89, 0x8E] + body
                }
            }
            let info = sniffer(crcOK: i % 10 == 9 ? false : true, channel: UInt8(i % 3 == 0 ? 5 : 37 + i % 3))
            let a = full.feed(kind, bytes, number: i + 1, linkLayer: kind == .linkLayer ? info : nil)
            let b = lean.feed(kind, bytes, number: i + 1, linkLayer: kind == .linkLayer ? info : nil)
            let others = a.events.filter { if case .advertising = $0 { false } else { true } }
            XCTAssertEqual(b.events.map { "\($0)" }, others.map { "\($0)" }, "record \(i + 1)")
            reports += a.events.count - others.count
            malformed += b.malformedLayers.count
            connections += b.events.filter { if case .connectionComplete = $0 { true } else { false } }.count
        }
        // Not vacuous: both kinds of report, complaints and connections were there to keep.
        XCTAssertGreaterThan(reports, 5_000)
        XCTAssertGreaterThan(malformed, 1_000)
        XCTAssertGreaterThan(connections, 100)
    }

    func testTheReportPDUTypeTestIsTheSetsMembership() {
        for t in 0...255 {
            XCTAssertEqual(AdvertisingReport.isReportPDUType(UInt8(t)), AdvertisingReport.reportPDUTypes.contains(UInt8(t)), "type \(t)")
        }
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
