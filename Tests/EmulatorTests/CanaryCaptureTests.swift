import Capture
import Profiles
import Protocols
import XCTest
@testable import Emulator

/// The canary recording: one file with known secrets in every place a phone's log carries them.
final class CanaryCaptureTests: XCTestCase {
    func testCanaryRecordingHoldsTheSecretsAndDecodes() async throws {
        let password = "CANARY-pass-7f3a9c"
        let pop = "CANARY-pop-51d2"
        let ltk: [UInt8] = Array("CANARY-LTK-0xA5!".utf8)
        let clientKey = (0..<32).map { UInt8(0xC0 &+ $0) }
        let recording = await CanaryCapture.make(password: password, proofOfPossession: pop, ltk: ltk, clientPrivateKey: clientKey)
        let again = await CanaryCapture.make(password: password, proofOfPossession: pop, ltk: ltk, clientPrivateKey: clientKey)
        XCTAssertEqual(recording.packets, again.packets, "deterministic")
        let times = recording.packets.map(\.time)
        XCTAssertEqual(times, times.sorted(), "the second session comes later")

        // The phone's ACL data holds the password (the speaker's credentials) and the LTK (twice).
        let sent = recording.packets.filter { $0.kind == .acl && $0.direction == .sent }.flatMap { $0.bytes.dropFirst(4) }
        XCTAssertTrue(Self.contains(sent, Array(password.utf8)))
        let steps = PairingTests.steps(recording)
        let starts = steps.filter { $0.text == "cmd 2019" }
        XCTAssertEqual(starts.count, 2, "pairing (STK), then the bonded reconnection (LTK)")
        XCTAssertEqual(Array(starts[1].bytes.suffix(16)), ltk)
        XCTAssertEqual(steps.first { $0.text == "<SMP 06" }?.bytes.dropFirst().map { $0 }, ltk)

        // Two handles, the ESP one later.
        let handles = recording.packets.filter { $0.kind == .acl }.map { UInt16($0.bytes[0]) | UInt16($0.bytes[1] & 0x0F) << 8 }
        XCTAssertEqual(handles.first, 0x0040)
        XCTAssertEqual(handles.last, 0x0041)
        XCTAssertEqual(Set(handles), [0x0040, 0x0041])
        let esp = recording.packets.filter { $0.kind == .acl && $0.bytes[0] == 0x41 }.flatMap { $0.bytes.dropFirst(4) }
        XCTAssertFalse(Self.contains(esp, Array(password.utf8)), "the ESP session carries the password encrypted only")
        XCTAssertFalse(Self.contains(esp, Array(pop.utf8)), "a PoP never crosses the link")

        // It decodes: the speaker's credentials, and the ESP session decrypted with PoP and key.
        let keys = ProtocolKeys(["esp-pop": Secret(Array(pop.utf8), label: "PoP"), "esp-client-key": Secret(clientKey, label: "key")])
        let d = ScenarioTests.decode(recording, configuration: keys)
        XCTAssertEqual(d.malformed, [])
        XCTAssertEqual(d.link, ["connected", "encrypted:true", "disconnected:Connection Terminated by Local Host",
                                "connected", "encrypted:true", "disconnected:Connection Terminated by Local Host",
                                "connected", "disconnected:Connection Terminated by Local Host"])
        let passwords = d.events.compactMap { e -> [UInt8]? in
            switch e.message {
            case let c as SpeakerOTA.Credentials: c.password.unsafeBytes
            case let m as ESPProvisioning.ConfigMessage: if case .setConfig(let s) = m.payload { s.passphrase.unsafeBytes } else { nil }
            default: nil
            }
        }
        XCTAssertEqual(passwords, [Array(password.utf8), Array(password.utf8)])
        XCTAssertEqual(d.summary.last, "esp.config:Connected", "the device joined with the canary password")
        // Without the PoP the ESP half stays encrypted: the password is on the air only encrypted.
        let opaque = ScenarioTests.decode(recording)
        XCTAssertTrue(opaque.summary.contains("esp.opaque:prov-config:encrypted"), "\(opaque.summary)")
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }
}
