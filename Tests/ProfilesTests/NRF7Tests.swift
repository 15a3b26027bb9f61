import ATT
import Capture
import TestSupport
import XCTest
import Profiles
@testable import Protocols
@testable import NRF7Codec

/// Hex with spaces, for vectors written out by hand from the proto layouts.
func hexBytes(_ s: String) -> [UInt8] {
    s.split(separator: " ").compactMap { UInt8($0, radix: 16) }
}

func ascii(_ s: String) -> [UInt8] { Array(s.utf8) }

/// nRF7 provisioning messages: known-answer vectors written from the field numbers and wire
/// types (tag = field << 3 | wire type), invalid ones, round trips and a random-bytes run.
final class NRF7Tests: XCTestCase {
    func testInfoVersion() {
        let (info, problems) = NRF7.Info.decode([0x08, 0x01])
        XCTAssertEqual(info?.version, 1)
        XCTAssertEqual(problems, [])
        XCTAssertEqual(NRF7.Info(version: 1).encode(), [0x08, 0x01])
        XCTAssertEqual(NRF7.Info.decode([]).1.map(\.id), ["nrf7.missing-field"])
    }

    func testGetStatusRequest() {
        let (r, p) = NRF7.Request.decode([0x08, 0x01])
        XCTAssertEqual(r?.opCode?.name, "GET_STATUS")
        XCTAssertEqual(p, [])
        XCTAssertEqual(NRF7.Request(opCode: NRF7.opCode(1)).encode(), [0x08, 0x01])
    }

    func testStartScanRequest() {
        // op_code 2; scan_params (field 10, LEN: 0x52) {band 1, passive true, period_ms 100, group_channels 5}
        let bytes = hexBytes("08 02 52 08 08 01 10 01 18 64 20 05")
        let (r, p) = NRF7.Request.decode(bytes)
        XCTAssertEqual(p, [])
        XCTAssertEqual(r?.opCode?.name, "START_SCAN")
        XCTAssertEqual(r?.scanParams?.band?.name, "2.4 GHz")
        XCTAssertEqual(r?.scanParams?.passive, true)
        XCTAssertEqual(r?.scanParams?.periodMs, 100)
        XCTAssertEqual(r?.scanParams?.groupChannels, 5)
        XCTAssertEqual(r?.encode(), bytes)
    }

    static let setConfig: [UInt8] =
        // op_code SET_CONFIG; config (field 11: 0x5A) of 38 bytes
        hexBytes("08 04 5A 26")
        // wifi (field 1) of 23: ssid "HomeNet", bssid AA..FF, band 1, channel 6, auth WPA2_PSK
        + hexBytes("0A 17 0A 07") + ascii("HomeNet") + hexBytes("12 06 AA BB CC DD EE FF 18 01 20 06 28 03")
        // passphrase (field 2) "secret123"; volatileMemory (field 3) false
        + hexBytes("12 09") + ascii("secret123") + hexBytes("18 00")

    func testSetConfigRequestCarriesThePassphraseAsASecret() throws {
        let (r, p) = NRF7.Request.decode(Self.setConfig)
        XCTAssertEqual(p, [])
        let request = try XCTUnwrap(r)
        XCTAssertEqual(request.opCode?.name, "SET_CONFIG")
        let config = try XCTUnwrap(request.config)
        XCTAssertEqual(config.wifi?.ssidText, "HomeNet")
        XCTAssertEqual(config.wifi?.bssidText, "AA:BB:CC:DD:EE:FF")
        XCTAssertEqual(config.wifi?.band?.name, "2.4 GHz")
        XCTAssertEqual(config.wifi?.channel, 6)
        XCTAssertEqual(config.wifi?.auth?.name, "WPA2_PSK")
        XCTAssertEqual(config.passphrase?.unsafeBytes, ascii("secret123"))
        XCTAssertEqual(config.passphrase?.label, "Wi-Fi password")
        XCTAssertEqual(config.volatileMemory, false)
        XCTAssertFalse("\(request)".contains("secret123"), "the passphrase never reaches a description")
        XCTAssertEqual(request.encode(), Self.setConfig)
        // Built from values, the same bytes.
        let built = NRF7.Request(opCode: NRF7.opCode(4), config: NRF7.WifiConfig(
            wifi: NRF7.WifiInfo(ssid: "HomeNet", bssid: [0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF], band: 1, channel: 6, auth: 3),
            passphrase: "secret123", volatileMemory: false))
        XCTAssertEqual(built.encode(), Self.setConfig)
    }

    func testSetConfigLimits() {
        let longSSID = [UInt8](repeating: 0x41, count: 33), longPass = [UInt8](repeating: 0x42, count: 65)
        let wifi = hexBytes("0A 21") + longSSID + hexBytes("12 03 01 02 03")
        let config = hexBytes("0A \(String(wifi.count, radix: 16))") + wifi + hexBytes("12 41") + longPass
        let bytes = hexBytes("08 04 5A \(String(config.count, radix: 16))") + config
        let (r, p) = NRF7.Request.decode(bytes)
        XCTAssertNotNil(r)
        XCTAssertEqual(Set(p.map(\.id)), ["nrf7.ssid-too-long", "nrf7.bssid-length", "nrf7.passphrase-too-long"])
        XCTAssertEqual(NRF7.Request.decode([0x08, 0x04]).1.map(\.id), ["nrf7.missing-field"], "SET_CONFIG without config")
    }

    static let statusResponse: [UInt8] =
        // request_op_code GET_STATUS, status SUCCESS, device_status (field 10) of 23 bytes
        hexBytes("08 01 10 00 52 17")
        // state CONNECTED; provisioning_info (field 10) {ssid "HomeNet", channel 6}
        + hexBytes("08 04 52 0B 0A 07") + ascii("HomeNet") + hexBytes("20 06")
        // connection_info (field 11) {ip4_addr 192.168.1.5}
        + hexBytes("5A 06 0A 04 C0 A8 01 05")

    func testStatusResponse() throws {
        let (r, p) = NRF7.Response.decode(Self.statusResponse)
        XCTAssertEqual(p, [])
        let response = try XCTUnwrap(r)
        XCTAssertEqual(response.requestOpCode?.name, "GET_STATUS")
        XCTAssertEqual(response.status?.name, "SUCCESS")
        XCTAssertEqual(response.deviceStatus?.state?.name, "CONNECTED")
        XCTAssertEqual(response.deviceStatus?.provisioningInfo?.ssidText, "HomeNet")
        XCTAssertEqual(response.deviceStatus?.provisioningInfo?.channel, 6)
        XCTAssertEqual(response.deviceStatus?.ip4Text, "192.168.1.5")
        XCTAssertEqual(response.encode(), Self.statusResponse)
        // An error status alone.
        XCTAssertEqual(NRF7.Response.decode(hexBytes("08 04 10 01")).0?.status?.name, "INVALID_ARGUMENT")
    }

    static let scanResult: [UInt8] =
        // scan_record (field 1) of 33: wifi (field 1) of 20 {ssid "Cafe", bssid 01..06, band 5 GHz, channel 36, auth WPA_WPA2_PSK}
        hexBytes("0A 21 0A 14 0A 04") + ascii("Cafe") + hexBytes("12 06 01 02 03 04 05 06 18 02 20 24 28 04")
        // rssi (field 2) -60: an int32 varint, sign-extended to ten bytes
        + hexBytes("10 C4 FF FF FF FF FF FF FF FF 01")

    func testScanResult() throws {
        let (r, p) = NRF7.Result.decode(Self.scanResult)
        XCTAssertEqual(p, [])
        let record = try XCTUnwrap(r?.scanRecord)
        XCTAssertEqual(record.wifi?.ssidText, "Cafe")
        XCTAssertEqual(record.wifi?.bssidText, "01:02:03:04:05:06")
        XCTAssertEqual(record.wifi?.band?.name, "5 GHz")
        XCTAssertEqual(record.wifi?.channel, 36)
        XCTAssertEqual(record.wifi?.auth?.name, "WPA_WPA2_PSK")
        XCTAssertEqual(record.rssi, -60)
        XCTAssertEqual(r?.encode(), Self.scanResult)
    }

    func testConnectionFailedResult() {
        let (r, p) = NRF7.Result.decode(hexBytes("10 05 18 01"))
        XCTAssertEqual(p, [])
        XCTAssertEqual(r?.state?.name, "CONNECTION_FAILED")
        XCTAssertEqual(r?.reason?.name, "NETWORK_NOT_FOUND")
        XCTAssertEqual(r?.encode(), hexBytes("10 05 18 01"))
        XCTAssertEqual(NRF7.Result.decode([]).1.map(\.id), ["nrf7.empty-result"])
    }

    func testUnknownEnumValuesAndFieldsAreKeptAndReported() {
        // state 9 (not defined); a proto2 parser keeps it as an unknown field: GATTLab recovers it.
        let (r, p) = NRF7.Result.decode(hexBytes("10 09"))
        XCTAssertEqual(r?.state, ProtoEnumValue(raw: 9, name: nil))
        XCTAssertEqual(r?.state?.description, "unknown(9)")
        XCTAssertEqual(p.map(\.id), ["nrf7.unknown-enum"])
        XCTAssertEqual(r?.encode(), hexBytes("10 09"))
        // auth 7 (newer firmware) inside a nested WifiInfo.
        let nested = hexBytes("0A 04 0A 02 28 07")
        let (n, np) = NRF7.Result.decode(nested)
        XCTAssertEqual(n?.scanRecord?.wifi?.auth?.raw, 7)
        XCTAssertEqual(np.map(\.id), ["nrf7.unknown-enum"])
        XCTAssertEqual(n?.encode(), nested)
        // Field 15 (varint 7) in a Request: an unknown field, kept.
        let (q, qp) = NRF7.Request.decode(hexBytes("08 01 78 07"))
        XCTAssertEqual(q?.opCode?.name, "GET_STATUS")
        XCTAssertEqual(q?.unknownFields, hexBytes("78 07"))
        XCTAssertEqual(qp.map(\.id), ["nrf7.unknown-field"])
        XCTAssertEqual(q?.encode(), hexBytes("08 01 78 07"))
    }

    func testMalformedProtobufIsAProblemNotACrash() {
        let cases: [(String, [UInt8])] = [
            ("truncated varint", [0x08]),
            ("truncated 10-byte varint", hexBytes("08 FF FF FF")),
            ("length past the end", hexBytes("5A 10 08 01")),
            ("nested length past the end", hexBytes("5A 04 0A 09 0A 01")),
            ("wire type 7", [0x0F]),
            ("field number 0", hexBytes("00 01")),
        ]
        for (what, bytes) in cases {
            let (r, p) = NRF7.Request.decode(bytes)
            XCTAssertNil(r, what)
            XCTAssertEqual(p.map(\.id), ["nrf7.malformed"], what)
        }
        XCTAssertTrue(NRF7.Request.decode(hexBytes("5A 10 08 01")).1[0].message.contains("at byte 1"))
        // A known field with the wrong wire type: the runtime sets it aside; GATTLab calls it malformed
        // and keeps decoding the rest.
        for (what, bytes) in [("op_code with the LEN wire type", hexBytes("0A 01 01")),
                              ("config with the varint wire type", hexBytes("08 01 58 01"))] {
            let (r, p) = NRF7.Request.decode(bytes)
            XCTAssertNotNil(r, what)
            XCTAssertTrue(p.map(\.id).contains("nrf7.malformed"), what)
            XCTAssertFalse(p.map(\.id).contains("nrf7.unknown-field"), what)
        }
        XCTAssertEqual(NRF7.Response.decode([0x12]).1.map(\.id), ["nrf7.malformed"])
        XCTAssertEqual(NRF7.Result.decode(hexBytes("0A 05 01")).1.map(\.id), ["nrf7.malformed"])
        XCTAssertEqual(NRF7.Info.decode([0x08, 0x80]).1.map(\.id), ["nrf7.malformed"])
    }

    func testPipelineByCharacteristic() throws {
        let p = try ProfileDecoderTests.Pipeline(profile: "nrf7")
        p.att(.readRequest(handle: 12), sent: true)
        p.att(.readResponse(value: [0x08, 0x01]), sent: false)
        p.att(.writeRequest(handle: 14, value: Self.setConfig), sent: true)
        p.att(.handleValueIndication(handle: 14, value: hexBytes("08 04 10 00")), sent: false)
        p.att(.handleValueNotification(handle: 17, value: hexBytes("10 04")), sent: false)
        p.att(.writeRequest(handle: 14, value: [0x08]), sent: true)
        XCTAssertEqual(p.out.map(\.kind), ["nrf7.info", "nrf7.request", "nrf7.response", "nrf7.result", "nrf7.request"])
        XCTAssertEqual(p.out.map(\.protocolName), Array(repeating: "nrf7", count: 5))
        guard let r = p.out[1].message as? NRF7.Request else { return XCTFail("request") }
        XCTAssertEqual(r.config?.passphrase?.unsafeBytes, ascii("secret123"))
        guard let s = p.out[3].message as? NRF7.Result else { return XCTFail("result") }
        XCTAssertEqual(s.state?.name, "CONNECTED")
        XCTAssertNil(p.out[4].message)
        XCTAssertEqual(p.out[4].problems.map(\.id), ["nrf7.malformed"])
    }

    func testRandomBytesNeverTrap() {
        var rng = SplitMix(seed: 0x6E52_4637)
        let seeds = [Self.setConfig, Self.statusResponse, Self.scanResult, hexBytes("08 02 52 08 08 01 10 01 18 64 20 05")]
        var decoded = 0
        for i in 0..<4000 {
            var bytes: [UInt8]
            if i % 2 == 0 {
                bytes = (0..<Int.random(in: 0...80, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            } else {
                // Damage a valid message: flip, cut or insert bytes.
                bytes = seeds[i % seeds.count]
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    guard !bytes.isEmpty else { break }
                    let at = Int.random(in: 0..<bytes.count, using: &rng)
                    switch Int.random(in: 0...2, using: &rng) {
                    case 0: bytes[at] = UInt8.random(in: 0...255, using: &rng)
                    case 1: bytes.removeSubrange(at...)
                    default: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: at)
                    }
                }
            }
            if let r = NRF7.Request.decode(bytes).0 { decoded += 1; _ = NRF7.Request.decode(r.encode()) }
            if let r = NRF7.Response.decode(bytes).0 { _ = NRF7.Response.decode(r.encode()) }
            if let r = NRF7.Result.decode(bytes).0 { _ = NRF7.Result.decode(r.encode()) }
            _ = NRF7.Info.decode(bytes)
        }
        XCTAssertGreaterThan(decoded, 0)
    }
}
