import ATT
import Capture
import GATT
import HCI
import Profiles
@testable import Protocols
import XCTest
@testable import Emulator

/// The scenarios made for the credential audit, and the canary recording for leak tests.
final class AuditScenarioTests: XCTestCase {
    func decoded(_ name: String, mtu: UInt16 = 247, configuration: ProtocolKeys = .init()) async throws
        -> (ScenarioTests.Decoded, [PairingTests.Step]) {
        let scenario = try XCTUnwrap(Scenario.named(name, protocols: GATTLabProtocols.all), name)
        let r = try await scenario.run(seed: 1, mtu: mtu)
        let d = ScenarioTests.decode(r.recording, configuration: configuration)
        XCTAssertEqual(d.malformed, [], name)
        return (d, PairingTests.steps(r.recording))
    }

    static let fullUpdate = ScenarioTests.update + ["status:WIFI_CONNECTED", "status:DOWNLOADING", "status:VERIFYING", "status:SUCCESS"]

    func testAuditScenariosComeLastInOrder() {
        XCTAssertEqual(Scenario.all(GATTLabProtocols.all).suffix(7).map(\.name), [
            "speaker-secure-ota", "speaker-legacy-pairing", "speaker-sc-justworks", "speaker-credentials-readback",
            "speaker-url-secrets", "nrf7-open-control-point", "esp-sec1-no-pop",
        ])
    }

    func testPairedSpeakerUpdates() async throws {
        // (scenario, Pairing Request, Pairing Response, key size read)
        let cases: [(String, [UInt8], [UInt8], UInt8)] = [
            ("speaker-secure-ota", [0x01, 0x04, 0x00, 0x0D, 16], [0x02, 0x01, 0x00, 0x0D, 16], 16),
            ("speaker-legacy-pairing", [0x01, 0x04, 0x00, 0x09, 16], [0x02, 0x03, 0x00, 0x01, 7], 7),
            ("speaker-sc-justworks", [0x01, 0x04, 0x00, 0x09, 16], [0x02, 0x03, 0x00, 0x09, 16], 16),
        ]
        for (name, request, response, keySize) in cases {
            for mtu: UInt16 in [23, 247] {
                let (d, steps) = try await decoded(name, mtu: mtu)
                XCTAssertEqual(d.summary, Self.fullUpdate, name)
                XCTAssertEqual(d.link, ["connected", "encrypted:true", "disconnected:Connection Terminated by Local Host"], name)
                XCTAssertEqual(steps.first { $0.text == ">SMP 01" }?.bytes.prefix(5).map { $0 }, request, name)
                XCTAssertEqual(steps.first { $0.text == "<SMP 02" }?.bytes.prefix(5).map { $0 }, response, name)
                XCTAssertEqual(steps.first { $0.text == "evt 0E" }?.bytes.last, keySize, name)
                let legacy = name == "speaker-legacy-pairing"
                XCTAssertEqual(steps.contains { $0.text == "<SMP 06" }, legacy, "\(name): Encryption Information only in legacy")
                XCTAssertEqual(steps.contains { $0.text == ">SMP 0C" }, !legacy, "\(name): public keys only in SC")
            }
        }
    }

    func testCredentialsReadBack() async throws {
        for mtu: UInt16 in [23, 247] {
            let (d, _) = try await decoded("speaker-credentials-readback", mtu: mtu)
            XCTAssertEqual(d.summary, ["status:IDLE", "credentials", "status:CREDS_RECEIVED", "credentials", "url", "status:URL_RECEIVED",
                                       "control:START", "status:WIFI_CONNECTING", "status:WIFI_CONNECTED", "status:DOWNLOADING",
                                       "status:VERIFYING", "status:SUCCESS"], "MTU \(mtu)")
        }
        // On the model: the declaration says Read and a Read returns SSID\0password; off by default.
        let scheduler = VirtualScheduler(start: 0)
        var c = SpeakerConfiguration()
        c.credentialsReadable = true
        let readable = SpeakerDevice(scheduler: scheduler, seed: 1, configuration: c)
        let value = SpeakerOTA.Credentials(ssid: "Home", password: "secret").encode()
        XCTAssertEqual(readable.server.handle(ATTPDU.writeRequest(handle: readable.credentialsHandle, value: value).encode()),
                       [ATTPDU.writeResponse.encode()])
        let read = readable.server.handle(ATTPDU.readRequest(handle: readable.credentialsHandle).encode())
        XCTAssertEqual(read.first, ATTPDU.readResponse(value: value).encode())
        XCTAssertEqual(readable.server.value(of: readable.credentialsHandle - 1)?.first, 0x0A, "read and write")
        let normal = SpeakerDevice(scheduler: scheduler, seed: 1)
        XCTAssertEqual(normal.server.handle(ATTPDU.readRequest(handle: normal.credentialsHandle).encode()),
                       [ATTPDU.errorResponse(requestOpcode: 0x0A, handle: normal.credentialsHandle, error: .readNotPermitted).encode()])
    }

    func testURLWithSecrets() async throws {
        let (d, _) = try await decoded("speaker-url-secrets")
        XCTAssertEqual(d.summary, Self.fullUpdate)
        let urls = d.events.compactMap { e -> String? in if let u = e.message as? SpeakerOTA.FirmwareURL { u.text } else { nil } }
        XCTAssertEqual(urls, ["http://admin:hunter2@updates.example.com/fw/speaker.bin?token=8c1f4e2ad9b7"])
    }

    func testESPSecurity1WithoutPoP() async throws {
        let keys = ProtocolKeys(["esp-client-key": Secret(Scenario.espClientPrivateKey, label: "key")])
        let (d, _) = try await decoded("esp-sec1-no-pop", configuration: keys)
        XCTAssertTrue(d.events.contains { $0.problems.contains { $0.id == "esp.no-pop" } }, "proto-ver says no_pop")
        XCTAssertTrue(d.summary.contains("esp.config:CmdSetConfig"), "\(d.summary)")
        XCTAssertEqual(d.summary.last, "esp.config:Connected", "decrypted with the client key alone")
        XCTAssertFalse(d.summary.contains { $0.contains("encrypted") })
        XCTAssertFalse(d.link.contains("encrypted:true"))
    }

    func testNRF7OpenControlPoint() async throws {
        for mtu: UInt16 in [23, 247] {
            let r = try await XCTUnwrap(Scenario.named("nrf7-open-control-point", protocols: GATTLabProtocols.all)).run(seed: 1, mtu: mtu)
            let d = ScenarioTests.decode(r.recording)
            XCTAssertEqual(d.malformed, [])
            XCTAssertEqual(d.link, ["connected", "disconnected:Connection Terminated by Local Host"], "never encrypted")
            XCTAssertTrue(d.summary.contains("nrf7.request:SET_CONFIG") && d.summary.contains("nrf7.state:CONNECTED"), "\(d.summary)")
            XCTAssertEqual(Self.securityErrors(r.recording), 0, "nothing asked to pair")
        }
        let provision = try await XCTUnwrap(Scenario.named("nrf7-provision", protocols: GATTLabProtocols.all)).run(seed: 1, mtu: 247)
        XCTAssertGreaterThan(Self.securityErrors(provision.recording), 0, "the default still needs encryption")
    }

    /// ATT Error Responses with Insufficient Authentication (0x05) or Encryption (0x0F).
    static func securityErrors(_ recording: Recording) -> Int {
        recording.packets.filter { p in
            p.kind == .acl && p.direction == .received && p.bytes.count >= 13 && p.bytes[6] == 0x04 && p.bytes[8] == 0x01
                && [0x05, 0x0F].contains(p.bytes[12])
        }.count
    }
}
