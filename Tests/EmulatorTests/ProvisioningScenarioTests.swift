import ATT
import Capture
import Foundation
import GATT
import Profiles
@testable import Protocols
import XCTest
@testable import Emulator

/// The nRF7 and ESP-IDF device models and their scenarios, decoded through GATTLab's pipeline;
/// the speaker and sensor scenarios added with them.
final class ProvisioningScenarioTests: XCTestCase {
    func summary(_ name: String, mtu: UInt16 = 247, configuration: ProtocolKeys = .init()) async throws -> ScenarioTests.Decoded {
        let scenario = try XCTUnwrap(Scenario.named(name, protocols: GATTLabProtocols.all), name)
        let d = ScenarioTests.decode(try await scenario.run(seed: 1, mtu: mtu).recording, configuration: configuration)
        XCTAssertEqual(d.malformed, [], name)
        return d
    }

    static let espKeys = ProtocolKeys(["esp-pop": Secret(Array("abcd1234".utf8), label: "PoP"), "esp-client-key": Secret(Scenario.espClientPrivateKey, label: "key")])

    // MARK: nRF7

    func testNRF7Provision() async throws {
        let d = try await summary("nrf7-provision")
        XCTAssertEqual(d.summary, [
            "nrf7.info",
            "nrf7.request:GET_STATUS", "nrf7.response:GET_STATUS:SUCCESS",
            "nrf7.request:START_SCAN", "nrf7.response:START_SCAN:SUCCESS", "nrf7.scan-record",
            "nrf7.request:STOP_SCAN", "nrf7.response:STOP_SCAN:SUCCESS",
            "nrf7.request:SET_CONFIG", "nrf7.response:SET_CONFIG:SUCCESS",
            "nrf7.state:AUTHENTICATION", "nrf7.state:ASSOCIATION", "nrf7.state:OBTAINING_IP", "nrf7.state:CONNECTED",
            "nrf7.request:GET_STATUS", "nrf7.response:GET_STATUS:SUCCESS",
        ])
        XCTAssertEqual(d.link.prefix(2), ["connected", "encrypted:true"])
        XCTAssertEqual(d.events.filter { if let r = $0.message as? NRF7.Result { r.scanRecord != nil } else { false } }.count, 6,
                       "every network in range, 5 GHz included (nRF7002 is dual-band)")
        XCTAssertTrue(d.events.allSatisfy(\.problems.isEmpty), "\(d.events.filter { !$0.problems.isEmpty })")
        // The final status carries what the device joined, and the address DHCP gave it.
        guard let last = d.events.last?.message as? NRF7.Response, let status = last.deviceStatus else { return XCTFail("no status") }
        XCTAssertEqual(status.state?.name, "CONNECTED")
        XCTAssertEqual(status.provisioningInfo?.ssidText, "HomeNet")
        XCTAssertEqual(status.ip4Text?.hasPrefix("192.168.1."), true)
    }

    /// Zephyr does not send what does not fit in MTU-3: at MTU 23 every scan record and the full
    /// status are lost, the small Responses and state changes arrive.
    func testNRF7AtMTU23LosesWhatDoesNotFit() async throws {
        let d = try await summary("nrf7-provision", mtu: 23)
        XCTAssertFalse(d.summary.contains("nrf7.scan-record"))
        XCTAssertEqual(d.summary.suffix(2), ["nrf7.state:CONNECTED", "nrf7.request:GET_STATUS"], "the last Response never came")
        let scheduler = VirtualScheduler(start: 0)
        let device = NRF7Device(scheduler: scheduler, seed: 1)
        device.server.encrypted = true
        _ = device.server.handle(ATTPDU.writeRequest(handle: device.controlHandle + 1, value: [0x02, 0x00]).encode())
        let out = device.server.handle(ATTPDU.writeRequest(handle: device.controlHandle,
                                                           value: NRF7.Request(opCode: NRF7.opCode(1)).encode()).encode())
        XCTAssertEqual(out.count, 2, "write response, then the indicated Response (8 bytes fit in 20)")
        XCTAssertEqual(device.server.oversizedDropped, 0)
    }

    func testNRF7Faults() async throws {
        var d = try await summary("nrf7-wrong-password")
        XCTAssertEqual(d.summary.suffix(2), ["nrf7.state:ASSOCIATION", "nrf7.state:CONNECTION_FAILED:AUTH_ERROR"], "WPA checks the passphrase after association")
        d = try await summary("nrf7-network-not-found")
        XCTAssertEqual(d.summary.suffix(2), ["nrf7.response:SET_CONFIG:SUCCESS", "nrf7.state:CONNECTION_FAILED:NETWORK_NOT_FOUND"])
        d = try await summary("nrf7-invalid-passphrase")
        XCTAssertEqual(d.summary.last, "nrf7.response:SET_CONFIG:INVALID_ARGUMENT")
        XCTAssertTrue(d.events.contains { $0.problems.contains { $0.id.contains("passphrase") } }, "the decoder flags the 66-byte passphrase")
        d = try await summary("nrf7-dhcp-failure")
        XCTAssertEqual(d.summary.suffix(2), ["nrf7.state:OBTAINING_IP", "nrf7.state:CONNECTION_FAILED:FAIL_IP"])
        d = try await summary("nrf7-disconnect-obtaining-ip")
        XCTAssertEqual(d.summary.last, "nrf7.state:OBTAINING_IP")
        XCTAssertEqual(d.link.last, "disconnected:Connection Timeout")
    }

    func testNRF7NeedsAnEncryptedLink() {
        let device = NRF7Device(scheduler: VirtualScheduler(start: 0), seed: 2)
        let s = device.server
        let request = NRF7.Request(opCode: NRF7.opCode(1)).encode()
        let unencrypted = [ATTPDU.errorResponse(requestOpcode: 0x12, handle: device.controlHandle, error: .insufficientAuthentication).encode()]
        XCTAssertEqual(s.handle(ATTPDU.writeRequest(handle: device.controlHandle, value: request).encode()), unencrypted)
        let cccd = try? XCTUnwrap(s.cccd(of: device.dataOutHandle))
        XCTAssertEqual(s.handle(ATTPDU.writeRequest(handle: cccd ?? 0, value: [1, 0]).encode()),
                       [ATTPDU.errorResponse(requestOpcode: 0x12, handle: cccd ?? 0, error: .insufficientAuthentication).encode()])
        XCTAssertEqual(s.handle(ATTPDU.readRequest(handle: 12).encode()), [ATTPDU.readResponse(value: [0x08, 0x01]).encode()], "Info is open")
        s.encrypted = true
        XCTAssertEqual(s.handle(ATTPDU.writeRequest(handle: device.controlHandle, value: request).encode()), [ATTPDU.writeResponse.encode()],
                       "no indication: the phone did not subscribe")
        XCTAssertEqual(s.handle(ATTPDU.writeRequest(handle: device.controlHandle, value: [0xFF, 0xFF]).encode()).count, 1)
    }

    // MARK: ESP-IDF

    func testESPSecurity1DecryptsWithTheKeys() async throws {
        let plain = try await summary("esp-sec1-provision")
        XCTAssertTrue(plain.summary.contains("esp.opaque:prov-config:encrypted"), "\(plain.summary)")
        XCTAssertFalse(plain.summary.contains { $0.hasPrefix("esp.config") })
        for mtu: UInt16 in [23, 247] {
            let d = try await summary("esp-sec1-provision", mtu: mtu, configuration: Self.espKeys)
            XCTAssertEqual(Array(d.summary.prefix(6)), ["esp.opaque:proto-ver", "esp.version", "esp.session:Session_Command0",
                                                        "esp.session:Session_Response0", "esp.session:Session_Command1",
                                                        "esp.session:Session_Response1"])
            XCTAssertFalse(d.summary.contains { $0.hasPrefix("esp.opaque:prov-") }, "everything decrypts at MTU \(mtu): \(d.summary)")
            XCTAssertTrue(d.summary.contains("esp.scan:RespScanResult"))
            XCTAssertEqual(d.summary.suffix(2), ["esp.config:CmdGetStatus", "esp.config:Connected"])
            let set = d.events.compactMap { e -> ESPProvisioning.SetConfig? in
                if let m = e.message as? ESPProvisioning.ConfigMessage, case .setConfig(let c) = m.payload { return c }
                return nil
            }
            XCTAssertEqual(set.map(\.ssidText), ["HomeNet"])
            XCTAssertEqual(set.first?.passphrase.unsafeBytes, Array(WiFiEnvironment.homePassphrase.utf8))
            XCTAssertTrue(d.events.allSatisfy(\.problems.isEmpty), "\(d.events.filter { !$0.problems.isEmpty }.map(\.problems))")
        }
    }

    func testESPSecurity0AndFaults() async throws {
        var d = try await summary("esp-sec0-provision")
        XCTAssertEqual(Array(d.summary.prefix(4)), ["esp.opaque:proto-ver", "esp.version:esp.security0", "esp.session:S0_Session_Command",
                                                    "esp.session:S0_Session_Response"])
        XCTAssertEqual(d.summary.last, "esp.config:Connected")
        XCTAssertTrue(d.events.contains { $0.problems.contains { $0.id == "esp.cleartext-passphrase" } }, "sec0 sends the password in the clear")
        d = try await summary("esp-sec0-5ghz-ssid")
        XCTAssertEqual(d.summary.last, "esp.config:ConnectionFailed")
        d = try await summary("esp-sec1-wrong-password", configuration: Self.espKeys)
        XCTAssertEqual(d.summary.last, "esp.config:ConnectionFailed")
        guard let m = d.events.last?.message as? ESPProvisioning.ConfigMessage, case .status(let r) = m.payload else { return XCTFail() }
        XCTAssertEqual(r.detail, .failReason(ESPProvisioning.failReason(0)))
        // A wrong PoP: the device cannot verify the phone and refuses Session_Command1.
        d = try await summary("esp-sec1-wrong-pop", configuration: Self.espKeys)
        XCTAssertEqual(d.summary.last, "esp.session:Session_Command1")
        XCTAssertTrue(d.opcodes.contains { $0.opcode == 0x01 }, "an Error Response")
    }

    func testESPDeviceRefusesWhatProtocommRefuses() {
        let device = ESPDevice(scheduler: VirtualScheduler(start: 0), seed: 3)
        let s = device.server
        let config = s.valueHandle(of: ESPProvisioning.Endpoint.config.defaultUUID) ?? 0
        let session = s.valueHandle(of: ESPProvisioning.Endpoint.session.defaultUUID) ?? 0
        let getStatus = ESPProvisioning.ConfigMessage(.getStatus).encode()
        XCTAssertEqual(s.handle(ATTPDU.writeRequest(handle: config, value: getStatus).encode()),
                       [ATTPDU.errorResponse(requestOpcode: 0x12, handle: config, error: .invalidPDU).encode()], "no session yet")
        XCTAssertEqual(s.handle(ATTPDU.writeRequest(handle: session, value: ESPProvisioning.SessionMessage(.sec0Command).encode()).encode()),
                       [ATTPDU.errorResponse(requestOpcode: 0x12, handle: session, error: .invalidPDU).encode()], "security 1 device")
        // A verify step without Session_Command0 first (40 bytes: at an MTU that carries them).
        _ = s.handle(ATTPDU.exchangeMTURequest(clientRxMTU: 247).encode())
        let verify = ESPProvisioning.SessionMessage(.sec1Command1(clientVerifyData: [UInt8](repeating: 1, count: 32))).encode()
        XCTAssertEqual(s.handle(ATTPDU.writeRequest(handle: session, value: verify).encode()).first?.first, 0x01)
        XCTAssertEqual(device.refused, ["prov-config", "prov-session", "prov-session"])
        // proto-ver answers anything, and the answer is what a read returns.
        let version = s.valueHandle(of: ESPProvisioning.Endpoint.version.defaultUUID) ?? 0
        XCTAssertEqual(s.handle(ATTPDU.writeRequest(handle: version, value: Array("ESP".utf8)).encode()), [ATTPDU.writeResponse.encode()])
        XCTAssertEqual(s.handle(ATTPDU.readRequest(handle: version).encode()),
                       [ATTPDU.readResponse(value: Array(ESPConfiguration().versionJSON.utf8)).encode()])
    }

    func testABlockingScanIsAnsweredWhenTheScanIsDone() throws {
        // ESP-IDF's wifi_prov_mgr_wifi_scan_start(blocking: true) returns only when the scan has
        // finished, polling every 120 ms; protocomm answers the write after it. A start while a
        // scan runs is answered at once and restarts nothing.
        let scheduler = VirtualScheduler(start: 0)
        var plain = ESPConfiguration()
        plain.security = 0
        let device = ESPDevice(scheduler: scheduler, seed: 3, configuration: plain)
        let s = device.server
        let scan = try XCTUnwrap(s.valueHandle(of: ESPProvisioning.Endpoint.scan.defaultUUID))
        let session = try XCTUnwrap(s.valueHandle(of: ESPProvisioning.Endpoint.session.defaultUUID))
        let written = [ATTPDU.writeResponse.encode()]
        XCTAssertEqual(s.handle(ATTPDU.writeRequest(handle: session, value: ESPProvisioning.SessionMessage(.sec0Command).encode()).encode()), written)
        func start(blocking: Bool) -> [[UInt8]] {
            let start = ESPProvisioning.ScanMessage(.start(blocking: blocking, passive: false, groupChannels: 0, periodMs: 120))
            return s.handle(ATTPDU.writeRequest(handle: scan, value: start.encode()).encode())
        }
        func status() throws -> ESPProvisioning.ScanMessage.Payload? {
            XCTAssertEqual(s.handle(ATTPDU.writeRequest(handle: scan, value: ESPProvisioning.ScanMessage(.status).encode()).encode()), written)
            guard case .readResponse(let value)? = try s.handle(ATTPDU.readRequest(handle: scan).encode()).first.map({ try ATTPDU.decode($0) })
            else { return nil }
            return ESPProvisioning.ScanMessage.decode(value).0?.payload
        }
        func runTimers(until time: Int64) -> [[UInt8]] {
            var sent: [[UInt8]] = []
            while let next = scheduler.nextTime, next <= time {
                scheduler.runNext()
                sent += s.takeOutgoing()
            }
            scheduler.advance(to: time)
            return sent
        }
        let duration = ESPConfiguration().scanDuration

        // Non-blocking: answered at once, the scan still running.
        XCTAssertEqual(start(blocking: false), written)
        guard case .statusResponse(let finished, _)? = try status() else { return XCTFail("no status") }
        XCTAssertFalse(finished)
        // A blocking start while it runs is answered at once and does not restart it.
        XCTAssertEqual(start(blocking: true), written)
        _ = runTimers(until: duration + 400_000)
        guard case .statusResponse(true, let count)? = try status() else { return XCTFail("the first scan did not finish") }
        XCTAssertGreaterThan(count, 0)

        // Blocking, nothing running: the Write Response waits for the scan.
        let asked = scheduler.now
        XCTAssertEqual(start(blocking: true), [], "held while the scan runs")
        XCTAssertEqual(runTimers(until: asked + duration - 1), [])
        XCTAssertEqual(runTimers(until: asked + duration + 400_000 + ESPDevice.blockingScanPoll), written)
        guard case .statusResponse(true, let again)? = try status() else { return XCTFail("finished when answered") }
        XCTAssertEqual(again, count)

        // The link goes while an answer is held: nothing is sent to the next link.
        XCTAssertEqual(start(blocking: true), [])
        s.resetConnection()
        device.disconnected()
        XCTAssertEqual(runTimers(until: scheduler.now + duration + 1_000_000), [])
        XCTAssertFalse(s.holdsResponse)
    }

    func testAHandlerThatSetsTheValueKeepsIt() {
        let device = ESPDevice(scheduler: VirtualScheduler(start: 0), seed: 3)
        let s = device.server
        let version = s.valueHandle(of: ESPProvisioning.Endpoint.version.defaultUUID) ?? 0
        _ = s.handle(ATTPDU.writeRequest(handle: version, value: [0x41]).encode())
        XCTAssertEqual(s.value(of: version), Array(ESPConfiguration().versionJSON.utf8))
        // Without a handler the written value is stored.
        let sensor = SensorDevice(scheduler: VirtualScheduler(start: 0), seed: 1)
        _ = sensor.server.handle(ATTPDU.writeRequest(handle: sensor.scanHandle, value: [0x41]).encode())
        XCTAssertEqual(sensor.server.value(of: sensor.scanHandle), [0x41])
    }

    // MARK: Speaker and sensor additions

    func testSpeakerRollsBackWithoutValidate() async throws {
        let d = try await summary("speaker-rollback")
        XCTAssertEqual(d.summary.suffix(2), ["status:PENDING_VERIFY", "status:IDLE"])
        XCTAssertEqual(d.link.filter { $0 == "connected" }.count, 2, "one reconnection after the reboot")
    }

    func testStacksThatStayAtMTU23() async throws {
        for name in ["speaker-mtu23-only", "sensor-mtu23-only"] {
            let scenario = try XCTUnwrap(Scenario.named(name, protocols: GATTLabProtocols.all))
            let r = try await scenario.run(seed: 1, mtu: 247)
            XCTAssertTrue(r.log.contains { $0.contains("MTU 23,") }, "\(name): \(r.log)")
        }
        let d = try await summary("speaker-mtu23-only")
        XCTAssertTrue(d.opcodes.contains { $0.opcode == 0x16 }, "prepare writes for the URL")
        XCTAssertEqual(d.summary.last, "status:SUCCESS")
        let s = try await summary("sensor-mtu23-only")
        XCTAssertEqual(s.summary.last, "scan.result:8")
    }

    func testDelayedAnswerMissesThePhonesTimeout() async throws {
        let d = try await summary("sensor-scan-delayed")
        XCTAssertEqual(d.summary, ["scan.request", "scan.result:truncated:0"], "the request, and at the hang-up an answer with nothing in it")
        XCTAssertEqual(d.link.last, "disconnected:Connection Terminated by Local Host")
    }
}
