import ATT
import Capture
import GATT
import HCI
import Profiles
import XCTest
@testable import Analysis
@testable import Emulator

/// Advertising in timelines: per-device summaries, advertise-only devices kept readable, and the
/// advertising diagnoses, on phone logs built event by event.
final class AdvertisingTimelineTests: XCTestCase {
    struct Log {
        var recorder = HCIRecorder(handle: 0x0040, aclBufferSize: 27)
        var time: Int64 = 1_748_772_000_000_000

        /// One LE Advertising Report (ADV_IND) from `address` (display order) with `ad`.
        mutating func advertise(_ address: [UInt8], rssi: Int8, ad: [UInt8] = [0x02, 0x01, 0x06], after: Int64 = 100_000) {
            time += after
            let p: [UInt8] = [0x02, 1, 0x00, 0x01] + address.reversed() + [UInt8(ad.count)] + ad + [UInt8(bitPattern: rssi)]
            recorder.event(0x3E, p, at: time)
        }

        mutating func createConnection(_ address: [UInt8]) {
            time += 10_000
            var p = [UInt8](repeating: 0, count: 25)
            p[4] = 0  // filter policy: the peer below
            p[5] = 1  // random
            for (i, b) in address.reversed().enumerated() { p[6 + i] = b }
            recorder.command(0x200D, p, at: time)
        }

        /// LE Connection Complete with a failure status.
        mutating func connectionFailed(_ address: [UInt8], status: UInt8 = 0x3E) {
            time += 500_000
            let p: [UInt8] = [0x01, status, 0x40, 0x00, 0x00, 0x01] + address.reversed() + [0x18, 0, 0, 0, 0xC8, 0, 0]
            recorder.event(0x3E, p, at: time)
        }

        func timeline() -> Timeline { recorder.timeline() }
    }

    let nrf7: [UInt8] = [0xF4, 0x01, 0x02, 0x03, 0x04, 0x05]
    let other: [UInt8] = [0xC0, 0x11, 0x12, 0x13, 0x14, 0x15]

    /// AD: flags, complete list of one 128-bit UUID (the nRF7 provisioning service), name "nrf7-prov".
    var nrf7AD: [UInt8] {
        [0x02, 0x01, 0x06, 0x11, 0x07] + NRF7.service.littleEndianBytes128 + [0x0A, 0x09] + Array("nrf7-prov".utf8)
    }

    func testAProvisioningDeviceThatAdvertisedAndWasNeverConnectedTo() throws {
        var log = Log()
        for i in 0..<30 { log.advertise(nrf7, rssi: Int8(-60 - i % 5), ad: nrf7AD) }
        let t = log.timeline()
        let d = try XCTUnwrap(t.devices.first { $0.address == "F4:01:02:03:04:05" })
        let a = try XCTUnwrap(d.advertising)
        XCTAssertEqual(a.reports, 30)
        XCTAssertEqual(a.protocols, ["nrf7"])
        XCTAssertEqual(a.names, ["nrf7-prov"])
        XCTAssertEqual(a.rssiMin, -64)
        XCTAssertEqual(a.rssiMax, -60)
        XCTAssertEqual(a.rssiMedian, -62)
        XCTAssertTrue(a.connectable)
        XCTAssertEqual(d.name, "nrf7-prov")
        XCTAssertTrue(d.summary.contains("seen only advertising"), d.summary)
        XCTAssertEqual(t.findings.filter { $0.id == "adv.provisioning-not-connected" }.map(\.device), [d.id])
        XCTAssertEqual(t.advertising?.reports, 30)
    }

    func testConnectingToAnAddressNeverHeardAdvertising() {
        var log = Log()
        log.advertise(other, rssi: -50)
        log.createConnection(nrf7)
        XCTAssertEqual(log.timeline().findings.filter { $0.id == "adv.connect-unheard" }.count, 1)
        // Connecting to what advertised, or a capture without advertising: nothing to say.
        var heard = Log()
        heard.advertise(nrf7, rssi: -50)
        heard.createConnection(nrf7)
        var quiet = Log()
        quiet.createConnection(nrf7)
        XCTAssertFalse(heard.timeline().findings.contains { $0.id.hasPrefix("adv.") })
        XCTAssertFalse(quiet.timeline().findings.contains { $0.id.hasPrefix("adv.") })
    }

    func testAWeakSignalBeforeFailedConnections() {
        var weak = Log()
        for _ in 0..<9 { weak.advertise(other, rssi: -94) }
        weak.createConnection(other)
        weak.connectionFailed(other)
        XCTAssertTrue(weak.timeline().findings.contains { $0.id == "adv.weak-signal" })
        var strong = Log()
        for _ in 0..<9 { strong.advertise(other, rssi: -55) }
        strong.createConnection(other)
        strong.connectionFailed(other)
        XCTAssertFalse(strong.timeline().findings.contains { $0.id == "adv.weak-signal" })
    }

    func testAProvisioningDeviceThatStoppedAdvertisingWhileTheScanWentOn() {
        var log = Log()
        for _ in 0..<20 { log.advertise(nrf7, rssi: -60, ad: nrf7AD) }
        for _ in 0..<60 { log.advertise(other, rssi: -70, after: 1_000_000) }
        XCTAssertTrue(log.timeline().findings.contains { $0.id == "adv.stopped" })
    }

    /// Thousands of advertisers: followed up to the cap, 20 listed, the rest counted; one long
    /// advertiser's RSSI series stays within its bucket cap.
    func testThousandsOfAdvertisersStayBounded() throws {
        var log = Log()
        for i in 0..<5000 {
            log.advertise([0xC0, 0, 0, 0, UInt8(i >> 8), UInt8(i & 0xFF)], rssi: -70, after: 1000)
            if i % 10 == 0 { log.advertise(nrf7, rssi: Int8(-50 - i % 40), ad: nrf7AD, after: 1000) }
        }
        let t = log.timeline()
        let o = try XCTUnwrap(t.advertising)
        XCTAssertEqual(o.advertisers, AdvertisingTracker.maxAdvertisers)
        XCTAssertGreaterThan(o.untrackedReports, 0)
        XCTAssertEqual(o.shown, AdvertisingTracker.maxShownAdvertisers)
        XCTAssertEqual(t.devices.count, AdvertisingTracker.maxShownAdvertisers)
        let d = try XCTUnwrap(t.devices.first { $0.address == "F4:01:02:03:04:05" }, "the provisioning device is the most relevant")
        XCTAssertLessThanOrEqual(d.advertising?.rssi.count ?? 0, AdvertisingTracker.maxSeries)
        XCTAssertEqual(d.advertising?.rssi.reduce(0) { $0 + $1.count }, 500)
    }
}
