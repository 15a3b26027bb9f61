import Capture
import XCTest
import Profiles
@testable import Protocols
@testable import SpeakerOTACodec

/// Known answers for every speaker OTA message, from PROTOCOLS.md section 3, valid and not.
final class SpeakerOTATests: XCTestCase {
    func ids(_ p: [ProtocolProblem]) -> [String] { p.map(\.id) }

    func testUUIDsAreTheDocumentedOnes() {
        XCTAssertEqual(SpeakerOTA.service.description, "00000001-1234-5678-9abc-def012345678")
        XCTAssertEqual(SpeakerOTA.credentials.description, "00000005-1234-5678-9abc-def012345678")
        XCTAssertEqual(SpeakerOTA.url.description, "00000006-1234-5678-9abc-def012345678")
        XCTAssertEqual(SpeakerOTA.control.description, "00000007-1234-5678-9abc-def012345678")
        XCTAssertEqual(SpeakerOTA.status.description, "00000008-1234-5678-9abc-def012345678")
    }

    func testCredentials() throws {
        let bytes: [UInt8] = Array("HomeNet".utf8) + [0] + Array("hunter22".utf8)
        let (c, p) = SpeakerOTA.Credentials.decode(bytes)
        XCTAssertEqual(p, [])
        let creds = try XCTUnwrap(c)
        XCTAssertEqual(creds.ssidText, "HomeNet")
        XCTAssertEqual(creds.password.unsafeBytes, Array("hunter22".utf8))
        XCTAssertEqual(creds.encode(), bytes)
        XCTAssertEqual("\(creds.password)", "<redacted:8 bytes>", "the password prints redacted")
        XCTAssertFalse(String(describing: creds).contains("hunter22"))
        // An open network: empty password.
        XCTAssertEqual(ids(SpeakerOTA.Credentials.decode(Array("Cafe".utf8) + [0]).1), [])
    }

    func testCredentialsProblems() {
        XCTAssertEqual(ids(SpeakerOTA.Credentials.decode(Array("NoSeparator".utf8)).1), ["credentials.missing-nul"])
        XCTAssertNil(SpeakerOTA.Credentials.decode(Array("NoSeparator".utf8)).0)
        XCTAssertEqual(ids(SpeakerOTA.Credentials.decode([0] + Array("pw".utf8)).1), ["credentials.ssid-empty"])
        let ssid33 = [UInt8](repeating: 0x41, count: 33)
        XCTAssertEqual(ids(SpeakerOTA.Credentials.decode(ssid33 + [0]).1), ["credentials.ssid-too-long"])
        XCTAssertEqual(ids(SpeakerOTA.Credentials.decode([UInt8](repeating: 0x41, count: 32) + [0]).1), [])
        let pw65 = [UInt8](repeating: 0x70, count: 65)
        XCTAssertEqual(ids(SpeakerOTA.Credentials.decode([0x41] + [0] + pw65).1), ["credentials.password-too-long"])
        XCTAssertEqual(ids(SpeakerOTA.Credentials.decode([0x41] + [0] + [UInt8](repeating: 0x70, count: 64)).1), [])
        XCTAssertEqual(ids(SpeakerOTA.Credentials.decode(ssid33 + [0] + pw65).1),
                       ["credentials.too-long", "credentials.ssid-too-long", "credentials.password-too-long"])
        XCTAssertEqual(ids(SpeakerOTA.Credentials.decode([0x41, 0, 0x62, 0, 0x63]).1), ["credentials.repeated-nul"])
        XCTAssertEqual(ids(SpeakerOTA.Credentials.decode([0xC3, 0x28, 0, 0x61]).1), ["credentials.ssid-not-utf8"])
        XCTAssertEqual(ids(SpeakerOTA.Credentials.decode([0x61, 0, 0xFF]).1), ["credentials.password-not-utf8"])
    }

    func testURL() throws {
        let (u, p) = SpeakerOTA.FirmwareURL.decode(Array("https://chaoticvolt.eu/firmware/speaker_latest.bin".utf8))
        XCTAssertEqual(p, [])
        XCTAssertEqual(u?.scheme, "https")
        XCTAssertEqual(SpeakerOTA.FirmwareURL.decode(Array("HTTP://x/y".utf8)).0?.scheme, "http")
        XCTAssertEqual(ids(SpeakerOTA.FirmwareURL.decode([]).1), ["url.empty"])
        XCTAssertEqual(ids(SpeakerOTA.FirmwareURL.decode(Array("fw.bin".utf8)).1), ["url.no-scheme"])
        XCTAssertEqual(ids(SpeakerOTA.FirmwareURL.decode(Array(("https://" + String(repeating: "a", count: 249)).utf8)).1), ["url.too-long"])
        XCTAssertEqual(ids(SpeakerOTA.FirmwareURL.decode(Array(("https://" + String(repeating: "a", count: 248)).utf8)).1), [])
        XCTAssertEqual(ids(SpeakerOTA.FirmwareURL.decode(Array("http://x/".utf8) + [0xFF]).1), ["url.not-utf8"])
    }

    func testControl() {
        for command in SpeakerOTA.Command.allCases {
            let (c, p) = SpeakerOTA.ControlCommand.decode([command.rawValue, 0x00])
            XCTAssertEqual(c?.command, command)
            XCTAssertEqual(p, [])
            XCTAssertEqual(c?.encode(), [command.rawValue, 0x00])
        }
        XCTAssertEqual(SpeakerOTA.Command.start.description, "START")
        XCTAssertEqual(SpeakerOTA.Command.validate.description, "VALIDATE")
        XCTAssertEqual(ids(SpeakerOTA.ControlCommand.decode([0x10]).1), ["control.short"])
        XCTAssertEqual(ids(SpeakerOTA.ControlCommand.decode([0x10, 0, 0]).1), ["control.long"])
        XCTAssertEqual(ids(SpeakerOTA.ControlCommand.decode([0x42, 0]).1), ["control.unknown-command"])
        XCTAssertEqual(ids(SpeakerOTA.ControlCommand.decode([]).1), ["control.empty"])
        XCTAssertNil(SpeakerOTA.ControlCommand.decode([]).0)
    }

    func testStatusKnownAnswers() throws {
        // DOWNLOADING, no error, 63 %, 932 of 1480 KB, RSSI -66 dBm.
        let bytes: [UInt8] = [0x05, 0x00, 0x3F, 0xA4, 0x03, 0xC8, 0x05, 0xBE]
        let (s, p) = SpeakerOTA.Status.decode(bytes)
        XCTAssertEqual(p, [])
        let status = try XCTUnwrap(s)
        XCTAssertEqual(status.state, .downloading)
        XCTAssertEqual(status.error, SpeakerOTA.ErrorCode.none)
        XCTAssertEqual(status.progress, 63)
        XCTAssertEqual(status.downloadedKB, 932)
        XCTAssertEqual(status.totalKB, 1480)
        XCTAssertEqual(status.rssi, -66)
        XCTAssertEqual(status.encode(), bytes)
        // Every state and every error round-trips and has its documented name.
        let stateNames = ["IDLE", "CREDS_RECEIVED", "URL_RECEIVED", "WIFI_CONNECTING", "WIFI_CONNECTED", "DOWNLOADING",
                          "VERIFYING", "SUCCESS", "PENDING_VERIFY", "ERROR"]
        XCTAssertEqual(SpeakerOTA.State.allCases.map(\.description), stateNames)
        for state in SpeakerOTA.State.allCases {
            for error in SpeakerOTA.ErrorCode.allCases {
                let s = SpeakerOTA.Status(state: state, error: error, progress: 10, downloadedKB: 1, totalKB: 2, rssi: -50)
                let (back, _) = SpeakerOTA.Status.decode(s.encode())
                XCTAssertEqual(back, s)
            }
        }
        XCTAssertEqual(SpeakerOTA.ErrorCode(rawValue: 0x0B)?.description, "ROLLBACK_FAILED")
        XCTAssertEqual([SpeakerOTA.ErrorCode.wifiConnect, .httpConnect, .download].map(\.retryable), [true, true, true])
        XCTAssertEqual([SpeakerOTA.ErrorCode.verify, .write, .invalidImage].map(\.retryable), [false, false, false])
        XCTAssertNil(SpeakerOTA.ErrorCode.httpResponse.retryable)
    }

    func testStatusProblems() {
        for n in 0..<8 {
            let (s, p) = SpeakerOTA.Status.decode([UInt8](repeating: 0, count: n))
            XCTAssertNil(s, "\(n) bytes")
            XCTAssertEqual(ids(p), ["status.short"])
        }
        XCTAssertEqual(ids(SpeakerOTA.Status.decode([5, 0, 50, 0, 0, 0, 0, 0, 9]).1), ["status.long"])
        XCTAssertEqual(ids(SpeakerOTA.Status.decode([0x09, 0, 0, 0, 0, 0, 0, 0]).1), ["status.unknown-state"])
        XCTAssertEqual(ids(SpeakerOTA.Status.decode([0x05, 0x0C, 0, 0, 0, 0, 0, 0]).1), ["status.unknown-error"])
        XCTAssertEqual(ids(SpeakerOTA.Status.decode([0x05, 0, 101, 0, 0, 0, 0, 0]).1), ["status.progress-over-100"])
        XCTAssertEqual(ids(SpeakerOTA.Status.decode([0x05, 0, 50, 10, 0, 5, 0, 0]).1), ["status.downloaded-over-total"])
        XCTAssertEqual(ids(SpeakerOTA.Status.decode([0xFF, 0, 0, 0, 0, 0, 0, 0]).1), ["status.error-without-code"])
        XCTAssertEqual(ids(SpeakerOTA.Status.decode([0xFF, 0x04, 63, 0, 0, 0, 0, 0]).1), [])
    }
}
