import ATT
import Capture
import Profiles
@testable import Protocols
@testable import ImprovCodec
import XCTest

/// Improv's codec: known answers worked out from the spec (improv-wifi.com/ble), round trips,
/// and every way a hostile frame is refused without a trap.
final class ImprovCodecTests: XCTestCase {
    static func hex(_ s: String) -> [UInt8] { ImprovTestSupport.hex(s) }

    func testUUIDsAreTheSpecs() {
        XCTAssertEqual(Improv.service.canonicalString.lowercased(), "00467768-6228-2272-4663-277478268000")
        XCTAssertEqual(Improv.currentState.canonicalString.lowercased(), "00467768-6228-2272-4663-277478268001")
        XCTAssertEqual(Improv.errorState.canonicalString.lowercased(), "00467768-6228-2272-4663-277478268002")
        XCTAssertEqual(Improv.rpcCommand.canonicalString.lowercased(), "00467768-6228-2272-4663-277478268003")
        XCTAssertEqual(Improv.rpcResult.canonicalString.lowercased(), "00467768-6228-2272-4663-277478268004")
        XCTAssertEqual(Improv.capabilities.canonicalString.lowercased(), "00467768-6228-2272-4663-277478268005")
        XCTAssertEqual(Improv.serviceDataUUID, BluetoothUUID(uuid16: 0x4677))
    }

    /// WIFI_SETTINGS "MyWirelessAP" / "mysecurepassword": 01 1e 0c ... 10 ... c0.
    func testWiFiSettingsKnownAnswer() throws {
        let bytes = Self.hex("011e0c4d79576972656c6573734150106d7973656375726570617373776f7264c0")
        let (c, problems) = Improv.Command.decode(bytes)
        XCTAssertEqual(problems, [])
        let command = try XCTUnwrap(c)
        XCTAssertEqual(command.command.name, "WIFI_SETTINGS")
        XCTAssertEqual(command.ssid, Array("MyWirelessAP".utf8))
        XCTAssertEqual(command.password?.unsafeBytes, Array("mysecurepassword".utf8))
        XCTAssertEqual(command.checksum, .valid)
        XCTAssertEqual(Improv.Command.wifiSettings(ssid: Array("MyWirelessAP".utf8), password: Array("mysecurepassword".utf8)).encode(), bytes)
        let layout = try XCTUnwrap(ImprovProtocol.credentials(in: bytes, characteristic: Improv.rpcCommand, endpoint: nil))
        XCTAssertEqual(layout.format, "improv-wifi-settings")
        XCTAssertEqual(layout.fields, ["ssid", "password"])
        XCTAssertEqual(layout.ssid, Array("MyWirelessAP".utf8))
        XCTAssertEqual(layout.secret.map { Array(bytes[$0]) }, [Array("mysecurepassword".utf8)])
        XCTAssertNil(ImprovProtocol.credentials(in: bytes, characteristic: Improv.rpcResult, endpoint: nil))
    }

    func testCommandsWithoutDataKnownAnswers() {
        for (raw, hex, name) in [(2, "020002", "IDENTIFY"), (3, "030003", "GET_DEVICE_INFO"), (4, "040004", "GET_WIFI_NETWORKS")] {
            let (c, p) = Improv.Command.decode(Self.hex(hex))
            XCTAssertEqual(p, [], hex)
            XCTAssertEqual(c?.command.raw, raw)
            XCTAssertEqual(c?.command.name, name)
            XCTAssertEqual(Improv.Command(command: raw).encode(), Self.hex(hex))
        }
    }

    func testResultsKnownAnswers() throws {
        let url = try XCTUnwrap(Improv.Result.decode(Self.hex("011a19687474703a2f2f696d70726f762d6c696768742e6c6f63616ca7")).0)
        XCTAssertEqual(url.redirectURL, Array("http://improv-light.local".utf8))
        let scan = try XCTUnwrap(Improv.Result.decode(Self.hex("041107486f6d654e6574032d3532045750413281")).0)
        XCTAssertEqual(scan.networks, [WiFiNetwork(ssid: Array("HomeNet".utf8), rssi: -52, authMode: "WPA2")])
        XCTAssertFalse(scan.endsScan)
        XCTAssertTrue(try XCTUnwrap(Improv.Result.decode(Self.hex("040004")).0).endsScan)
        XCTAssertEqual(scan.encode(), Self.hex("041107486f6d654e6574032d3532045750413281"))
    }

    func testStatesErrorsAndCapabilities() {
        for (raw, name) in [(1, "AUTHORIZATION_REQUIRED"), (2, "AUTHORIZED"), (3, "PROVISIONING"), (4, "PROVISIONED")] {
            XCTAssertEqual(Improv.CurrentState.decode([UInt8(raw)]).0?.state.name, name)
        }
        for (raw, name) in [(0, "NO_ERROR"), (1, "INVALID_RPC_PACKET"), (2, "UNKNOWN_RPC_COMMAND"), (3, "UNABLE_TO_CONNECT"),
                            (4, "NOT_AUTHORIZED"), (0xFF, "UNKNOWN_ERROR")] {
            XCTAssertEqual(Improv.ErrorState.decode([UInt8(raw)]).0?.error.name, name)
        }
        XCTAssertEqual(Improv.CurrentState.decode([0x09]).1.map(\.id), ["improv.state-unknown"])
        XCTAssertEqual(Improv.CurrentState.decode([0x09]).0?.state.description, "unknown(9)")
        XCTAssertNil(Improv.CurrentState.decode([]).0)
        XCTAssertEqual(Improv.Capabilities.decode([0x05]).0?.names, ["IDENTIFY", "SCAN_WIFI"])
        XCTAssertEqual(Improv.Capabilities(0x80).names, ["bit7"])
    }

    func testServiceData() {
        let (d, p) = Improv.ServiceData.decode([0x02, 0x01, 0, 0, 0, 0])
        XCTAssertEqual(p, [])
        XCTAssertEqual(d?.state.name, "AUTHORIZED")
        XCTAssertEqual(d?.capabilities, 0x01)
        XCTAssertEqual(d?.encode(), [0x02, 0x01, 0, 0, 0, 0])
        XCTAssertEqual(Improv.ServiceData.decode([0x01, 0x00]).1.map(\.id), ["improv.service-data-length"])
        XCTAssertEqual(Improv.ServiceData.decode([0x01]).0?.capabilities, nil)
        XCTAssertNil(Improv.ServiceData.decode([]).0)
    }

    func testBadChecksumAndLengthAreRefused() {
        var bytes = Self.hex("011e0c4d79576972656c6573734150106d7973656375726570617373776f7264c0")
        bytes[bytes.count - 1] ^= 0x01
        XCTAssertNil(Improv.Command.decode(bytes).0)
        XCTAssertEqual(Improv.Command.decode(bytes).1.map(\.id), ["improv.bad-checksum"])
        XCTAssertEqual(Improv.Command.decode([0x02, 0x05, 0x00, 0x07]).1.map(\.id), ["improv.frame-cut"])
        XCTAssertEqual(Improv.Command.decode([0x02, 0x00, 0x02, 0x00, 0x00]).1.map(\.id), ["improv.bad-length"])
        XCTAssertEqual(Improv.Command.decode([0x02]).1.map(\.id), ["improv.frame-short"])
        XCTAssertEqual(Improv.Command.decode([]).1.map(\.id), ["improv.frame-short"])
        // A string whose length runs past the data.
        let (c, p) = Improv.Command.decode(Improv.Frame(command: 0x01, data: [0x09, 0x41, 0x01, 0x42]).encode() ?? [])
        XCTAssertNil(c)
        XCTAssertTrue(p.map(\.id).contains("improv.bad-string"), "\(p)")
        // Unknown commands decode, named as such.
        let unknown = Improv.Command.decode(Improv.Frame(command: 0x42, data: []).encode() ?? [])
        XCTAssertEqual(unknown.0?.command.description, "unknown(66)")
        XCTAssertEqual(unknown.1.map(\.id), ["improv.unknown-command"])
    }

    /// `gattlab redact` overwrites the password with '*' and leaves the checksum: still read.
    func testARedactedWiFiSettingsStillDecodes() throws {
        let bytes = Self.hex("011e0c4d79576972656c6573734150106d7973656375726570617373776f7264c0")
        let layout = try XCTUnwrap(ImprovProtocol.credentials(in: bytes, characteristic: Improv.rpcCommand, endpoint: nil))
        let (c, p) = Improv.Command.decode(layout.redacting(bytes))
        XCTAssertEqual(p.map(\.id), ["improv.checksum-after-redaction"])
        XCTAssertEqual(c?.password?.unsafeBytes, [UInt8](repeating: 0x2A, count: 16))
        XCTAssertEqual(c?.ssid, Array("MyWirelessAP".utf8))
    }

    /// sdk-cpp parses frames without their checksum byte (`check_checksum=false`): accepted, named.
    func testFrameWithoutChecksumIsAcceptedAndNamed() {
        let (c, p) = Improv.Command.decode([0x03, 0x00])
        XCTAssertEqual(p.map(\.id), ["improv.checksum-missing"])
        XCTAssertEqual(c?.checksum, .absent)
        XCTAssertEqual(c?.encode(), [0x03, 0x00])
    }

    func testRoundTrips() throws {
        var random = SplitMix64(seed: 7)
        for _ in 0..<200 {
            let ssid = (0..<Int(random.next() % 33)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let password = (0..<Int(random.next() % 64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let c = Improv.Command.wifiSettings(ssid: ssid, password: password)
            let bytes = try XCTUnwrap(c.encode())
            XCTAssertEqual(bytes.last, Improv.checksum(bytes.dropLast()))
            let back = try XCTUnwrap(Improv.Command.decode(bytes).0)
            XCTAssertEqual(back, c)
            let strings = (0..<Int(random.next() % 6)).map { _ in (0..<Int(random.next() % 20)).map { _ in UInt8(truncatingIfNeeded: random.next()) } }
            let r = Improv.Result(command: Int(random.next() % 7), strings: strings)
            XCTAssertEqual(Improv.Result.decode(try XCTUnwrap(r.encode())).0, r)
        }
        XCTAssertNil(Improv.Command.wifiSettings(ssid: [UInt8](repeating: 0x41, count: 200), password: [UInt8](repeating: 0x42, count: 100)).encode(),
                     "data over 255 bytes does not fit in the length byte")
    }

    /// Hostile input: every prefix and every single-byte change of valid frames decodes or is
    /// refused, never traps.
    func testHostileBytesNeverTrap() {
        let frames = [Self.hex("011e0c4d79576972656c6573734150106d7973656375726570617373776f7264c0"),
                      Self.hex("041107486f6d654e6574032d3532045750413281")]
        for frame in frames {
            for n in 0...frame.count { _ = Improv.Command.decode(Array(frame.prefix(n))); _ = Improv.Result.decode(Array(frame.prefix(n))) }
            for i in frame.indices {
                for v: UInt8 in [0x00, 0x01, 0x7F, 0xFF] {
                    var b = frame
                    b[i] = v
                    _ = Improv.Command.decode(b)
                    _ = Improv.Result.decode(b)
                    _ = ImprovProtocol.credentials(in: b, characteristic: Improv.rpcCommand, endpoint: nil)
                }
            }
        }
        var random = SplitMix64(seed: 3)
        for _ in 0..<2000 {
            let b = (0..<Int(random.next() % 300)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            _ = Improv.Command.decode(b)
            _ = Improv.Result.decode(b)
            _ = Improv.ServiceData.decode(b)
            if let r = ImprovProtocol.credentials(in: b, characteristic: Improv.rpcCommand, endpoint: nil) {
                for range in r.secret { XCTAssertTrue(range.upperBound <= b.count) }
            }
        }
    }
}
