import ATT
import Capture
import GATT
import HCI
import Profiles
import XCTest
@testable import Analysis
@testable import Emulator
import Protocols
import Report

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

        /// One LE Extended Advertising Report (AUX_ADV_IND, connectable, SID 0) from `address`
        /// with Data Status `status` (0 complete, 1 more to come, 2 truncated).
        mutating func extended(_ address: [UInt8], rssi: Int8, status: UInt16, data: [UInt8], after: Int64 = 10_000) {
            time += after
            let type = 0x0001 | status << 5
            var p: [UInt8] = [0x0D, 1, UInt8(type & 0xFF), UInt8(type >> 8), 0x01] + address.reversed()
            p += [0x01, 0x02, 0x00, 0x7F, UInt8(bitPattern: rssi), 0, 0, 0, 0, 0, 0, 0, 0, 0, UInt8(data.count)] + data
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

    /// Extended reports that continue in the next ones: the device's summary reads the joined
    /// data (the 128-bit service cut across the first two reports, the name across the last
    /// two), each report still counts once, and a cut structure is no problem.
    func testTheSummaryReadsTheJoinedDataOfChainedReports() throws {
        var log = Log()
        let name = Array("chained-provisioner".utf8)
        let whole = nrf7AD + [UInt8(name.count + 1), 0x09] + name + [0x00, 0x00]
        let parts = [Array(whole[0..<12]), Array(whole[12..<40]), Array(whole[40...])]
        for (i, part) in parts.enumerated() { log.extended(nrf7, rssi: -60, status: i < 2 ? 1 : 0, data: part) }
        let t = log.timeline()
        let d = try XCTUnwrap(t.devices.first { $0.address == "F4:01:02:03:04:05" })
        let a = try XCTUnwrap(d.advertising)
        XCTAssertEqual(a.reports, 3)
        XCTAssertEqual(t.advertising?.reports, 3)
        XCTAssertEqual(a.names, ["nrf7-prov", "chained-provisioner"])
        XCTAssertEqual(a.services, [NRF7.service])
        XCTAssertEqual(a.protocols, ["nrf7"])
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

    /// The signal is judged in the window before the failure (the last 10 s, at most 20
    /// reports), not over the whole capture: strong for 40 s and weak only in the last 2.4 s
    /// before the failed connection is a weak signal; weak for 40 s and strong at the failure is not.
    func testTheWeakSignalIsJudgedJustBeforeTheFailure() throws {
        var walkedAway = Log()
        for _ in 0..<40 { walkedAway.advertise(other, rssi: -50, after: 1_000_000) }
        for _ in 0..<12 { walkedAway.advertise(other, rssi: -95, after: 200_000) }
        walkedAway.createConnection(other)
        walkedAway.connectionFailed(other)
        let t = walkedAway.timeline()
        let d = try XCTUnwrap(t.devices.first { $0.address == "C0:11:12:13:14:15" })
        XCTAssertEqual(d.advertising?.rssiMedian, -50, "the whole capture was strong")
        let w = try XCTUnwrap(d.advertising?.failureWindows.first)
        XCTAssertEqual(w.reports, 20, "12 weak reports and the 8 strong ones of the 10 s before, at most 20")
        XCTAssertEqual(w.rssiMedian, -95)
        let finding = try XCTUnwrap(t.findings.first { $0.id == "adv.weak-signal" })
        XCTAssertTrue(finding.evidence.hasPrefix("in the 10 s before the failed connection"), finding.evidence)
        XCTAssertTrue(finding.evidence.contains("median of -95 dBm"), finding.evidence)
        XCTAssertEqual(finding.time, w.time)

        var cameCloser = Log()
        for _ in 0..<40 { cameCloser.advertise(other, rssi: -95, after: 1_000_000) }
        for _ in 0..<12 { cameCloser.advertise(other, rssi: -50, after: 200_000) }
        cameCloser.createConnection(other)
        cameCloser.connectionFailed(other)
        let c = cameCloser.timeline()
        XCTAssertEqual(c.devices.first { $0.address == "C0:11:12:13:14:15" }?.advertising?.rssiMedian, -95)
        XCTAssertFalse(c.findings.contains { $0.id == "adv.weak-signal" }, "strong when it failed")
    }

    /// Nothing heard in the window before the failure: the whole capture is judged, and the finding says so.
    func testWithoutReportsJustBeforeTheFailureTheWholeCaptureIsJudged() throws {
        var log = Log()
        for _ in 0..<9 { log.advertise(other, rssi: -94) }
        log.time += 60_000_000
        log.createConnection(other)
        log.connectionFailed(other)
        let finding = try XCTUnwrap(log.timeline().findings.first { $0.id == "adv.weak-signal" })
        XCTAssertTrue(finding.evidence.hasPrefix("over the whole capture"), finding.evidence)
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

    /// A protocol that reads its service data (Improv's 0x4677: state, capabilities) has the
    /// device's announcements in its timeline: the first, then each change, with what was wrong.
    func testServiceDataAProtocolReadsIsAnnouncedOncePerChange() throws {
        let improv: [UInt8] = [0xE4, 0x01, 0x02, 0x03, 0x04, 0x06]
        func ad(_ data: [UInt8]) -> [UInt8] { [0x02, 0x01, 0x06, UInt8(data.count + 3), 0x16, 0x77, 0x46] + data }
        var log = Log()
        for _ in 0..<3 { log.advertise(improv, rssi: -55, ad: ad([0x01, 0x03, 0, 0, 0, 0])) }
        for _ in 0..<2 { log.advertise(improv, rssi: -55, ad: ad([0x02, 0x03, 0, 0, 0, 0])) }
        log.advertise(improv, rssi: -55, ad: ad([0x04, 0x03, 0, 0, 0, 0]))
        log.advertise(improv, rssi: -55, ad: ad([0x04]))
        log.advertise(other, rssi: -55, ad: [0x02, 0x01, 0x06, 0x05, 0x16, 0x0F, 0x18, 0x55])  // battery service data: nobody's
        let t = log.timeline()
        let a = try XCTUnwrap(t.devices.first { $0.address == "E4:01:02:03:04:06" }?.advertising)
        XCTAssertEqual(a.protocols, ["improv"])
        XCTAssertEqual(a.announcements.map(\.state.summary), [
            "state AUTHORIZATION_REQUIRED, capabilities IDENTIFY, DEVICE_INFO",
            "state AUTHORIZED, capabilities IDENTIFY, DEVICE_INFO",
            "state PROVISIONED, capabilities IDENTIFY, DEVICE_INFO",
            "state PROVISIONED",
        ])
        XCTAssertEqual(a.announcements.map(\.frame), [1, 4, 6, 7])
        XCTAssertEqual(a.announcements.last?.state.problems.map(\.id), ["improv.service-data-length"])
        XCTAssertTrue(t.devices.first { $0.address == "C0:11:12:13:14:15" }?.advertising?.announcements.isEmpty ?? false)
        let text = TimelineText.render(t, options: RenderOptions())
        XCTAssertTrue(text.contains("announced (improv) at "), text)
        XCTAssertTrue(text.contains(": state AUTHORIZED, capabilities IDENTIFY, DEVICE_INFO  #4"), text)
    }

    /// A device that changes its service data on every report keeps 16 announcements.
    func testAnnouncementsStayBounded() throws {
        let improv: [UInt8] = [0xE4, 0x01, 0x02, 0x03, 0x04, 0x06]
        var log = Log()
        for i in 0..<100 { log.advertise(improv, rssi: -55, ad: [0x02, 0x01, 0x06, 0x09, 0x16, 0x77, 0x46, UInt8(i % 2 + 1), UInt8(i % 256), 0, 0, 0, 0]) }
        let a = try XCTUnwrap(log.timeline().devices.first?.advertising)
        XCTAssertEqual(a.announcements.count, 16)
        XCTAssertEqual(a.announcementsNotKept, 84)
    }
}
