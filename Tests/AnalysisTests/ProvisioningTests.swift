import ATT
import Capture
import HCI
import Profiles
import Protocols
import XCTest
@testable import Analysis

/// Provisioning phases and the Wi-Fi join diagnoses (wrong password, AP not found, 5 GHz-only
/// SSID) for nRF7 and ESP-IDF, on message sequences built here and run through the protocol
/// decoders and the timeline builder.
final class ProvisioningTests: XCTestCase {
    /// A provisioning session as the protocol decoders see it: values on characteristics.
    struct Log {
        var steps: [(time: Int64, frame: Int, events: [ProfileEvent])] = []
        var time: Int64 = 1_748_772_000_000_000
        var frame = 0
        var nrf7 = NRF7Protocol()
        var esp = ESPProvisioningProtocol()
        let key = ConnectionKey(controller: 0, handle: 0x40)

        mutating func value(_ uuid: BluetoothUUID, _ operation: ValueOperation, _ bytes: [UInt8], after: Int64 = 100_000) {
            time += after
            frame += 1
            let v = ProfileValue(connection: key, characteristic: uuid, endpoint: nil, handle: 1, operation: operation, bytes: bytes,
                                 frame: frame, firstFrame: frame, time: time)
            let events = NRF7Protocol.characteristics.contains(uuid) ? nrf7.decode(v) : esp.decode(v)
            steps.append((time, frame, events))
        }

        // nRF7
        mutating func request(_ r: NRF7.Request) { value(NRF7.controlPoint, .write, r.encode()) }
        mutating func response(_ r: NRF7.Response) { value(NRF7.controlPoint, .indicate, r.encode()) }
        mutating func result(_ r: NRF7.Result, after: Int64 = 100_000) { value(NRF7.dataOut, .notify, r.encode(), after: after) }

        mutating func nrf7Scan(_ networks: [(String, band: Int, channel: UInt32, rssi: Int32)]) {
            request(NRF7.Request(opCode: NRF7.opCode(2), scanParams: NRF7.ScanParams(band: NRF7.band(0))))
            response(NRF7.Response(requestOpCode: NRF7.opCode(2), status: NRF7.status(0)))
            for n in networks {
                result(NRF7.Result(scanRecord: NRF7.ScanRecord(wifi: NRF7.WifiInfo(ssid: n.0, bssid: [2, 0, 0, 0, 0, 1], band: n.band,
                                                                                   channel: n.channel, auth: 3), rssi: n.rssi)))
            }
        }

        mutating func nrf7Join(_ ssid: String, states: [Int], reason: Int? = nil) {
            request(NRF7.Request(opCode: NRF7.opCode(4), config: NRF7.WifiConfig(wifi: NRF7.WifiInfo(ssid: ssid, auth: 3), passphrase: "pw-pw-pw-pw")))
            response(NRF7.Response(requestOpCode: NRF7.opCode(4), status: NRF7.status(0)))
            for (i, s) in states.enumerated() {
                result(NRF7.Result(state: NRF7.state(s), reason: i == states.count - 1 ? reason.map(NRF7.reason) : nil), after: 1_000_000)
            }
        }

        // ESP-IDF (security 0: the messages in the clear)
        mutating func esp(_ endpoint: ESPProvisioning.Endpoint, _ bytes: [UInt8], write: Bool) {
            value(endpoint.defaultUUID, write ? .write : .read, bytes)
        }

        mutating func espSession0() {
            esp(.session, ESPProvisioning.SessionMessage(.sec0Command).encode(), write: true)
            esp(.session, ESPProvisioning.SessionMessage(.sec0Response(status: ESPProvisioning.status(0))).encode(), write: false)
        }

        mutating func espScan(_ entries: [(String, channel: UInt32, rssi: Int32)]) {
            esp(.scan, ESPProvisioning.ScanMessage(.start(blocking: true, passive: false, groupChannels: 0, periodMs: 120)).encode(), write: true)
            esp(.scan, ESPProvisioning.ScanMessage(.startResponse).encode(), write: false)
            esp(.scan, ESPProvisioning.ScanMessage(.result(startIndex: 0, count: UInt32(entries.count))).encode(), write: true)
            esp(.scan, ESPProvisioning.ScanMessage(.resultResponse(entries.map {
                ESPProvisioning.ScanEntry(ssid: Array($0.0.utf8), channel: $0.channel, rssi: $0.rssi, bssid: [2, 0, 0, 0, 0, 2],
                                          auth: ESPProvisioning.auth(3))
            })).encode(), write: false)
        }

        mutating func espJoin(_ ssid: String, fail reason: Int?) {
            esp(.config, ESPProvisioning.ConfigMessage(.setConfig(.init(ssid: ssid, passphrase: "pw-pw-pw-pw"))).encode(), write: true)
            esp(.config, ESPProvisioning.ConfigMessage(.setConfigResponse(status: ESPProvisioning.status(0))).encode(), write: false)
            esp(.config, ESPProvisioning.ConfigMessage(.applyConfig).encode(), write: true)
            esp(.config, ESPProvisioning.ConfigMessage(.applyConfigResponse(status: ESPProvisioning.status(0))).encode(), write: false)
            for final in [false, true] {
                esp(.config, ESPProvisioning.ConfigMessage(.getStatus).encode(), write: true)
                let report: ESPProvisioning.StatusReport
                if !final {
                    report = .init(status: ESPProvisioning.status(0), stationState: ESPProvisioning.stationState(1), detail: .none)
                } else if let reason {
                    report = .init(status: ESPProvisioning.status(0), stationState: ESPProvisioning.stationState(3),
                                   detail: .failReason(ESPProvisioning.failReason(reason)))
                } else {
                    report = .init(status: ESPProvisioning.status(0), stationState: ESPProvisioning.stationState(0),
                                   detail: .connected(.init(ip4Address: "192.168.1.20", authMode: ESPProvisioning.auth(3), ssid: Array(ssid.utf8),
                                                            bssid: [2, 0, 0, 0, 0, 2], channel: 6)))
                }
                esp(.config, ESPProvisioning.ConfigMessage(.status(report)).encode(), write: false)
            }
        }

        func timeline() -> Timeline {
            let builder = TimelineBuilder(source: "synthetic", format: "btsnoop", protocols: GATTLabProtocols.all)
            for s in steps {
                withUnsafeBytes(of: UInt8(0)) { raw in
                    let record = CaptureRecord(number: s.frame, fileOffset: 0, timestamp: s.time, direction: .received, kind: .acl,
                                               originalLength: 0, data: UnsafeRawBufferPointer(rebasing: raw[0..<0]))
                    builder.consume(record, gatt: [], profile: s.events)
                }
            }
            return builder.finish()
        }
    }

    static let home = ("HomeNet", band: 1, channel: UInt32(6), rssi: Int32(-48))

    func testNRF7Diagnoses() {
        func findings(_ build: (inout Log) -> Void) -> [String] {
            var log = Log()
            build(&log)
            // No CCCD writes in these logs: the subscription rule is not what they test.
            return log.timeline().findings.map(\.id).filter { $0 != "gatt.not-subscribed" }
        }
        XCTAssertEqual(findings { $0.nrf7Scan([Self.home]); $0.nrf7Join("HomeNet", states: [1, 2, 3, 4]) }, [])
        XCTAssertEqual(findings { $0.nrf7Scan([Self.home]); $0.nrf7Join("HomeNet", states: [1, 5], reason: 0) }, ["wifi.wrong-password"])
        XCTAssertEqual(findings { $0.nrf7Scan([Self.home]); $0.nrf7Join("HomeNet-Garage", states: [1, 5], reason: 1) }, ["wifi.ap-not-found"])
        // The scan shows the SSID on 5 GHz only (band field, or a 5 GHz channel with band ANY).
        XCTAssertEqual(findings { $0.nrf7Scan([Self.home, ("Attic", band: 2, channel: 36, rssi: -60)]); $0.nrf7Join("Attic", states: [1, 5], reason: 1) },
                       ["wifi.5ghz-only-ssid"])
        XCTAssertEqual(findings { $0.nrf7Scan([Self.home, ("Attic", band: 0, channel: 149, rssi: -60)]); $0.nrf7Join("Attic", states: [1, 5], reason: 4) },
                       ["wifi.5ghz-only-ssid"])
        // On both bands: not a band problem.
        XCTAssertEqual(findings {
            $0.nrf7Scan([Self.home, ("Attic", band: 2, channel: 36, rssi: -60), ("Attic", band: 1, channel: 11, rssi: -70)])
            $0.nrf7Join("Attic", states: [1, 5], reason: 1)
        }, ["wifi.ap-not-found"])
        // Other reasons keep the generic rule.
        XCTAssertEqual(findings { $0.nrf7Scan([Self.home]); $0.nrf7Join("HomeNet", states: [1, 2, 3, 5], reason: 3) }, ["nrf7.connection-failed"])
    }

    func testESPDiagnoses() {
        func findings(_ build: (inout Log) -> Void) -> [String] {
            var log = Log()
            log.espSession0()
            build(&log)
            return log.timeline().findings.map(\.id).filter { !$0.hasPrefix("protocol.") }
        }
        let home = ("HomeNet", channel: UInt32(6), rssi: Int32(-48))
        XCTAssertEqual(findings { $0.espScan([home]); $0.espJoin("HomeNet", fail: nil) }, [])
        XCTAssertEqual(findings { $0.espScan([home]); $0.espJoin("HomeNet", fail: 0) }, ["wifi.wrong-password"])
        XCTAssertEqual(findings { $0.espScan([home]); $0.espJoin("Garage", fail: 1) }, ["wifi.ap-not-found"])
        XCTAssertEqual(findings { $0.espJoin("Garage", fail: 1) }, ["wifi.ap-not-found"])
        XCTAssertEqual(findings { $0.espScan([home, ("Attic", channel: 40, rssi: -55)]); $0.espJoin("Attic", fail: 1) }, ["wifi.5ghz-only-ssid"])
        // The ESP32 does not see 5 GHz: the name says 5G and its 2.4 GHz twin is in the scan.
        var log = Log()
        log.espSession0()
        log.espScan([home])
        log.espJoin("HomeNet-5G", fail: 1)
        let t = log.timeline()
        let f = t.findings.first { $0.id == "wifi.5ghz-only-ssid" }
        XCTAssertNotNil(f, "\(t.findings.map(\.id))")
        XCTAssertTrue(f?.evidence.contains("\"HomeNet\" is there on 2.4 GHz") == true, f?.evidence ?? "")
        XCTAssertFalse(t.findings.contains { $0.id == "esp.connection-failed" })
    }

    func testNRF7Phases() {
        var log = Log()
        log.nrf7Scan([Self.home, ("Attic", band: 2, channel: 36, rssi: -60)])
        log.nrf7Join("HomeNet", states: [1, 2, 3, 5], reason: 0)
        let phases = log.timeline().phases
        XCTAssertEqual(phases.map(\.name), ["scan", "config", "connection"])
        XCTAssertEqual(phases.map(\.outcome), [.ok, .ok, .failed])
        XCTAssertEqual(phases[0].detail, "2 networks")
        XCTAssertEqual(phases[2].detail, "CONNECTION_FAILED (AUTH_ERROR)")
        XCTAssertEqual(phases[2].duration, 4_000_000)
    }

    func testESPPhasesSec0() {
        var log = Log()
        log.esp(.version, Array(#"{"prov":{"ver":"v1.1","sec_ver":0,"cap":["wifi_scan"]}}"#.utf8), write: false)
        log.espSession0()
        log.espScan([("HomeNet", channel: 6, rssi: -48)])
        log.espJoin("HomeNet", fail: 1)
        let phases = log.timeline().phases
        XCTAssertEqual(phases.map(\.name), ["session", "scan", "config", "apply", "connection"])
        XCTAssertEqual(phases.map(\.outcome), [.ok, .ok, .ok, .ok, .failed])
        XCTAssertEqual(phases[0].detail, "security 0: plaintext")
        XCTAssertEqual(phases[1].detail, "1 network")
        XCTAssertEqual(phases[4].detail, "ConnectionFailed (NetworkNotFound)")
        XCTAssertGreaterThan(phases[4].duration, 0)
    }

    func testESPPhasesSec2AreReportedAsNotDecryptable() {
        var log = Log()
        log.esp(.version, Array(#"{"prov":{"ver":"v1.1","sec_ver":2,"cap":["wifi_scan"]}}"#.utf8), write: false)
        for step in 0..<4 {
            log.esp(.session, ESPProvisioning.SessionMessage(.sec2(step: ProtoEnumValue(raw: step, name: nil))).encode(), write: step % 2 == 0)
        }
        log.esp(.scan, [0x9A, 0x01, 0x02, 0x03, 0x04], write: true)
        log.esp(.config, [0x7E, 0x11, 0x22, 0x33], write: true)
        let phases = log.timeline().phases
        XCTAssertEqual(phases.map(\.name), ["session", "scan", "config"])
        XCTAssertTrue(phases[0].detail?.contains("not decryptable") == true, phases[0].detail ?? "")
        XCTAssertTrue(phases[1].detail?.contains("sec2: not decryptable") == true, phases[1].detail ?? "")
    }

    /// Security 1 without the phone's key: the session phase names the scheme (with or without
    /// PoP) and the phases after it say they are encrypted and why.
    func testESPPhasesSec1() {
        for noPoP in [false, true] {
            var log = Log()
            let cap = noPoP ? #"["wifi_scan","no_pop"]"# : #"["wifi_scan"]"#
            log.esp(.version, Array(#"{"prov":{"ver":"v1.1","sec_ver":1,"cap":\#(cap)}}"#.utf8), write: false)
            let ok = ESPProvisioning.status(0)
            log.esp(.session, ESPProvisioning.SessionMessage(.sec1Command0(clientPublicKey: [UInt8](repeating: 1, count: 32))).encode(), write: true)
            log.esp(.session, ESPProvisioning.SessionMessage(.sec1Response0(status: ok, devicePublicKey: [UInt8](repeating: 2, count: 32),
                                                                            deviceRandom: [UInt8](repeating: 3, count: 16))).encode(), write: false)
            log.esp(.session, ESPProvisioning.SessionMessage(.sec1Command1(clientVerifyData: [UInt8](repeating: 4, count: 32))).encode(), write: true)
            log.esp(.session, ESPProvisioning.SessionMessage(.sec1Response1(status: ok, deviceVerifyData: [UInt8](repeating: 5, count: 32))).encode(), write: false)
            log.esp(.config, [0x13, 0x57, 0x9B, 0xDF], write: true)
            let phases = log.timeline().phases
            XCTAssertEqual(phases.map(\.name), ["session", "config"], "no_pop \(noPoP)")
            XCTAssertEqual(phases.first?.outcome, .ok)
            XCTAssertEqual(phases.first?.detail, noPoP ? "security 1 (X25519 + AES-CTR), no PoP" : "security 1 (X25519 + AES-CTR) with PoP")
            XCTAssertTrue(phases.last?.detail?.contains("encrypted, sec1") == true, phases.last?.detail ?? "")
            XCTAssertEqual(phases.last?.outcome, .open)
        }
    }
}
