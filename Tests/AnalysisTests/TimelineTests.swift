import ATT
import Capture
import GATT
import HCI
import Profiles
import Protocols
import XCTest
@testable import Analysis
@testable import Emulator

/// Each diagnosis rule on a session that triggers it and one that must not, built PDU by PDU as
/// a phone's HCI log (the speaker's built-in table stands in for discovery). The Captures/ tests
/// cover the rules the emulator's scenarios trigger; these cover the rest and the edges.
final class TimelineTests: XCTestCase {
    /// A phone's log of one speaker session, written PDU by PDU.
    struct Session {
        var recorder = HCIRecorder(handle: 0x0040, aclBufferSize: 27)
        var time: Int64 = 1_748_772_000_000_000
        let peer: [UInt8] = [0x3D, 0xC5, 0x3A, 0x0E, 0xF9, 0xF0]
        var mtu = 23

        init(mtu: Int = 185, subscribe: Bool = true) {
            recorder.connectionComplete(peer: peer, interval: 12, at: time)
            if mtu != 23 {
                send(.exchangeMTURequest(clientRxMTU: UInt16(mtu)))
                receive(.exchangeMTUResponse(serverRxMTU: UInt16(mtu)))
                self.mtu = mtu
            }
            if subscribe {
                send(.writeRequest(handle: 21, value: [1, 0]))
                receive(.writeResponse)
            }
        }

        mutating func step(_ micros: Int64 = 30_000) { time += micros }
        mutating func send(_ pdu: ATTPDU) { step(); recorder.att(pdu.encode(), sent: true, at: time) }
        mutating func receive(_ pdu: ATTPDU) { step(); recorder.att(pdu.encode(), sent: false, at: time) }
        mutating func write(_ handle: UInt16, _ value: [UInt8]) { send(.writeRequest(handle: handle, value: value)); receive(.writeResponse) }
        mutating func credentials(_ ssid: String, _ password: String) { write(14, SpeakerOTA.Credentials(ssid: ssid, password: password).encode()) }
        mutating func url(_ u: String) { write(16, Array(u.utf8)) }
        mutating func control(_ c: SpeakerOTA.Command) { write(18, [c.rawValue, 0]) }
        mutating func status(_ s: SpeakerOTA.State, _ e: SpeakerOTA.ErrorCode = .none, progress: UInt8 = 0, after: Int64 = 500_000) {
            step(after)
            receive(.handleValueNotification(handle: 20, value: SpeakerOTA.Status(state: s, error: e, progress: progress,
                                                                                   downloadedKB: UInt16(progress) * 10, totalKB: 1000, rssi: -60).encode()))
        }
        mutating func disconnect(_ reason: UInt8 = 0x13) { step(); recorder.disconnectionComplete(reason: reason, at: time) }

        /// The standard flow up to DOWNLOADING.
        mutating func start(ssid: String = "HomeNet", url: String = "https://fw.example/v2.bin") {
            credentials(ssid, "correct horse battery staple")
            status(.credentialsReceived)
            self.url(url)
            status(.urlReceived)
            control(.start)
            status(.wifiConnecting)
            status(.wifiConnected, after: 2_000_000)
        }

        func timeline() -> Timeline { recorder.timeline(builtInTable: "speaker") }

        func findings() -> Set<String> { Set(timeline().findings.map(\.id)) }
    }

    /// Issue 16: a device without a protocol GATTLab decodes is summarised by the services its
    /// discovery named, not as "no device protocol recognised"; the phone's own services (the
    /// phone answering the device's discovery) are not the device's.
    func testASummaryNamesTheDiscoveredServices() {
        func group(_ start: UInt16, _ end: UInt16, _ uuid: [UInt8]) -> ATTGroupData { ATTGroupData(handle: start, endGroupHandle: end, value: uuid) }
        var s = Session(mtu: 23, subscribe: false)
        s.send(.readByGroupTypeRequest(startHandle: 1, endHandle: 0xFFFF, type: BluetoothUUID(uuid16: 0x2800)))
        s.receive(.readByGroupTypeResponse(length: 6, entries: [group(1, 5, [0x00, 0x18]), group(6, 9, [0x01, 0x18]),
                                                                 group(10, 20, [0x0D, 0x18]), group(21, 30, [0x0F, 0x18])]))
        s.send(.readByGroupTypeRequest(startHandle: 31, endHandle: 0xFFFF, type: BluetoothUUID(uuid16: 0x2800)))
        s.receive(.readByGroupTypeResponse(length: 20, entries: [group(31, 40, [0x9E, 0xCA, 0xDC, 0x24, 0x0E, 0xE5, 0xA9, 0xE0,
                                                                                0x93, 0xF3, 0xA3, 0xB5, 0x01, 0x00, 0x40, 0x6E])]))
        s.send(.readByGroupTypeRequest(startHandle: 41, endHandle: 0xFFFF, type: BluetoothUUID(uuid16: 0x2800)))
        s.receive(.readByGroupTypeResponse(length: 6, entries: [group(41, 50, [0x59, 0xFE]), group(51, 60, [0x34, 0x12])]))
        // The device discovers the phone: the phone's answer names the phone's services.
        s.receive(.readByGroupTypeRequest(startHandle: 1, endHandle: 0xFFFF, type: BluetoothUUID(uuid16: 0x2800)))
        s.send(.readByGroupTypeResponse(length: 6, entries: [group(1, 5, [0x05, 0x18])]))
        s.disconnect()
        let t = s.timeline()
        XCTAssertEqual(t.devices.count, 1)
        XCTAssertEqual(t.devices.first?.services.count, 7)
        XCTAssertEqual(t.devices.first?.outcome, .unknown)
        XCTAssertTrue(t.devices.first?.summary.hasPrefix(
            "no provisioning or OTA protocol; services: Heart Rate, Battery, Nordic UART Service, Nordic Secure DFU and 1 unknown; 1 connection") == true,
            t.devices.first?.summary ?? "")
        XCTAssertFalse(t.devices.first?.summary.contains("Current Time") == true)

        XCTAssertNil(Summaries.knownServices([]))
        XCTAssertNil(Summaries.knownServices([BluetoothUUID(uuid16: 0x1800), BluetoothUUID(uuid16: 0x1801), BluetoothUUID(uuid16: 0xFFF0)]),
                     "nothing known beyond GAP and GATT: still no device protocol recognised")
        XCTAssertEqual(Summaries.knownServices([BluetoothUUID(uuid16: 0x1826), BluetoothUUID(uuid16: 0xFEE7), BluetoothUUID(uuid16: 0xFFF0)]),
                       "no provisioning or OTA protocol; services: Fitness Machine, Tencent Holdings Limited. (0xFEE7) and 1 unknown")
        XCTAssertEqual(Summaries.knownServices([BluetoothUUID(uuid16: 0x180F), BluetoothUUID(string: "14387800-130c-49e7-b877-2881c89cb258")!]),
                       "no provisioning or OTA traffic; services: Battery, nRF7 Wi-Fi provisioning service")
    }

    func testRulesHaveUniqueIDsAndText() {
        let ids = Diagnoses.rules(GATTLabProtocols.all).map(\.id)
        XCTAssertEqual(Set(ids).count, ids.count)
        for r in Diagnoses.rules(GATTLabProtocols.all) {
            XCTAssertFalse(r.title.isEmpty || r.advice.isEmpty, r.id)
            XCTAssertTrue(r.id.contains("."), r.id)
        }
    }

    func testACleanUpdateHasNoFindingsAndTheRightPhases() {
        var s = Session()
        s.start()
        for p: UInt8 in stride(from: 10, through: 100, by: 10) { s.status(.downloading, progress: p, after: 1_000_000) }
        s.status(.verifying, progress: 100)
        s.status(.success, progress: 100, after: 1_000_000)
        s.disconnect(0x16)
        let t = s.timeline()
        XCTAssertEqual(t.findings.map(\.id), [])
        XCTAssertEqual(t.devices.map(\.outcome), [.succeeded])
        XCTAssertEqual(t.phases.map(\.name), ["credentials", "url", "wifi-join", "http-connect", "download", "verification", "success"])
        let download = t.phases.first { $0.name == "download" }
        // 1000 KB from 10 % to 100 %: 900 KB over the 10 s between the first and the VERIFYING status.
        XCTAssertEqual(download?.detail?.hasPrefix("900 KB at"), true, download?.detail ?? "")
        XCTAssertEqual(t.progress.count, 11)
    }

    func testProgressBackwardsAndStatesNotAllowed() {
        var s = Session()
        s.start()
        s.status(.downloading, progress: 20)
        s.status(.downloading, progress: 30)
        s.status(.downloading, progress: 25)
        s.status(.idle)
        s.status(.success, progress: 100)  // IDLE -> SUCCESS skips everything
        let ids = s.findings()
        XCTAssertTrue(ids.contains("ota.progress-backwards"), "\(ids)")
        XCTAssertTrue(ids.contains("ota.state-not-allowed"), "\(ids)")
    }

    func testPlainHTTPURL() {
        var s = Session()
        s.start(url: "http://fw.example/v2.bin")
        XCTAssertTrue(s.findings().contains("ota.url-plain-http"))
        var t = Session()
        t.start(url: "https://fw.example/v2.bin")
        XCTAssertFalse(t.findings().contains("ota.url-plain-http"))
    }

    func testAWriteCutAtMTUMinus3() {
        // 36 bytes of credentials sent as one Write Request at MTU 23: only 20 arrive, no NUL.
        var s = Session(mtu: 23)
        s.write(14, Array(SpeakerOTA.Credentials(ssid: "HomeNet-Upstairs-Guest", password: "correct horse").encode().prefix(20)))
        let ids = s.findings()
        XCTAssertTrue(ids.contains("att.write-truncated"), "\(ids)")
        XCTAssertTrue(ids.contains("protocol.credentials.missing-nul"), "\(ids)")
        var ok = Session(mtu: 23)
        ok.write(14, SpeakerOTA.Credentials(ssid: "Home", password: "pw").encode())
        XCTAssertFalse(ok.findings().contains("att.write-truncated"))
    }

    func testCredentialLimits() {
        var s = Session(mtu: 247)
        s.credentials(String(repeating: "S", count: 40), String(repeating: "p", count: 70))
        let ids = s.findings()
        XCTAssertTrue(ids.isSuperset(of: ["protocol.credentials.ssid-too-long", "protocol.credentials.password-too-long",
                                          "protocol.credentials.too-long"]), "\(ids)")
    }

    func testStatusExpectedButNeverSubscribed() {
        var s = Session(subscribe: false)
        s.start()
        XCTAssertEqual(s.findings(), ["gatt.not-subscribed"])
        var t = Session(subscribe: true)
        t.start()
        XCTAssertEqual(t.findings(), [])
    }

    func testWifiJoinFailureNamesSSIDRSSIAndThe5GHzHint() throws {
        var s = Session()
        s.start(ssid: "HomeNet-5G")
        s.status(.error, .wifiConnect, after: 8_000_000)
        let f = try XCTUnwrap(s.timeline().findings.first { $0.id == "ota.wifi-join-failed" })
        XCTAssertTrue(f.evidence.contains("\"HomeNet-5G\"") && f.evidence.contains("RSSI -60 dBm"), f.evidence)
        XCTAssertTrue(f.advice.contains("5 GHz network"), f.advice)
    }

    func testStallAndLinkDropDuringDownload() {
        var s = Session()
        s.start()
        s.status(.downloading, progress: 40)
        s.status(.downloading, progress: 40, after: 20_000_000)
        s.disconnect(0x08)
        let t = s.timeline()
        XCTAssertEqual(Set(t.findings.map(\.id)), ["ota.download-stalled", "ota.link-dropped"])
        let drop = t.findings.first { $0.id == "ota.link-dropped" }
        XCTAssertTrue(drop?.evidence.contains("Connection Timeout (0x08)") == true && drop?.evidence.contains("at 40 %") == true,
                      drop?.evidence ?? "")
        XCTAssertEqual(t.devices.first?.outcome, .interrupted)
    }

    func testHTTPFailuresNameSchemeAndHost() throws {
        var s = Session()
        s.start(url: "https://user@fw.example:8443/a.bin")
        s.status(.error, .httpConnect)
        let f = try XCTUnwrap(s.timeline().findings.first { $0.id == "ota.http-connect-failed" })
        XCTAssertTrue(f.evidence.contains("scheme https, host fw.example:8443"), f.evidence)
    }

    func testNeverEstablished() {
        var s = Session(mtu: 23, subscribe: false)
        s.disconnect(0x3E)
        XCTAssertEqual(s.findings(), ["link.never-established"])
        var t = Session(mtu: 23, subscribe: false)
        t.disconnect(0x13)
        XCTAssertEqual(t.findings(), [])
    }

    func testOneDeviceAcrossReconnectionsAndGaps() {
        var s = Session()
        s.start()
        s.disconnect(0x08)
        s.step(15_000_000)
        s.recorder.connectionComplete(peer: s.peer, interval: 12, at: s.time)
        s.status(.idle)
        let t = s.timeline()
        XCTAssertEqual(t.devices.count, 1)
        XCTAssertEqual(t.connections.count, 2)
        XCTAssertEqual(t.connections.first?.disconnectReason?.rawValue, 0x08)
        XCTAssertEqual(t.devices.first?.address, "F0:F9:0E:3A:C5:3D")
    }

    func testHostileTextIsMadeSafe() {
        var s = Session(mtu: 247)
        s.credentials("Evil\u{1B}[2J\nNet", "pw")
        let e = s.timeline().events.first { $0.kind == "ota.credentials" }
        XCTAssertEqual(e?.summary.contains("\u{1B}"), false)
        XCTAssertEqual(e?.summary.contains("\n"), false)
        XCTAssertTrue(e?.summary.contains("\\x1b") == true, e?.summary ?? "")
    }
}
