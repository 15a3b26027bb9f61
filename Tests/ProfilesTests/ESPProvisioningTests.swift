import _CryptoExtras
import ATT
import Capture
import Crypto
import Foundation
import GATT
import TestSupport
import XCTest
import Profiles
@testable import Protocols
@testable import ESPProvisioningCodec

/// ESP-IDF provisioning: known-answer vectors written from the proto3 layouts (tags, varints,
/// lengths; zero values left off the wire), invalid ones, a security 1 session built here with
/// fresh X25519 keys and encrypted as the phone and device would, and a random-bytes run.
final class ESPProvisioningTests: XCTestCase {
    /// The record pipeline of ProfileDecoderTests, with a configuration for the protocol stage.
    final class ConfiguredPipeline {
        let gatt = GATTDecoder()
        let profiles: ProfileDecoder
        var frame = 0
        var out: [ProfileEvent] = []

        init(profile: String, configuration: ProtocolKeys = .init()) throws {
            let loaded = try XCTUnwrap(GATTLabProtocols.all.builtInTable(named: profile))
            gatt.defaultTable = loaded.table
            gatt.defaultTableSource = .builtIn(profile)
            profiles = ProfileDecoder(protocols: GATTLabProtocols.all, keys: configuration)
        }

        func att(_ pdu: ATTPDU, sent: Bool) {
            let a = pdu.encode()
            let l2cap: [UInt8] = [UInt8(a.count & 0xFF), UInt8(a.count >> 8), 0x04, 0x00] + a
            let bytes = [0x40, 0x20, UInt8(l2cap.count & 0xFF), UInt8(l2cap.count >> 8)] + l2cap
            frame += 1
            let number = frame
            let direction: Direction = sent ? .sent : .received
            bytes.withUnsafeBytes { raw in
                gatt.consume(CaptureRecord(number: number, fileOffset: 0, timestamp: Int64(number) * 1000,
                                           direction: direction, kind: .acl, originalLength: bytes.count, data: raw))
            }
            profiles.consume(gatt, record: CaptureRecord(number: number, fileOffset: 0, timestamp: Int64(number) * 1000,
                                                         direction: direction, kind: .acl, originalLength: 0,
                                                         data: UnsafeRawBufferPointer(start: nil, count: 0)))
            out += profiles.events
        }
    }

    // MARK: proto-ver

    func testVersionJSON() {
        let (v, p) = ESPProvisioning.Version.decode(ascii(#"{"prov":{"ver":"v1.1","sec_ver":1,"cap":["wifi_scan","no_pop"]}}"#))
        XCTAssertEqual(v?.version, "v1.1")
        XCTAssertEqual(v?.securityVersion, 1)
        XCTAssertEqual(v?.capabilities, ["wifi_scan", "no_pop"])
        XCTAssertEqual(p.map(\.id), ["esp.no-pop"])
        XCTAssertEqual(ESPProvisioning.Version.decode(ascii("v1.0")).1.map(\.id), ["esp.version-not-json"])
        XCTAssertEqual(ESPProvisioning.Version.decode(ascii(String(repeating: "[", count: 5000))).1.map(\.id), ["esp.version-not-json"])
    }

    // MARK: prov-session

    func testSecurity0Session() {
        // sec0 (field 10: 0x52) { sc (field 20: A2 01) {} }; sec_ver 0 and msg 0 are left off.
        let command = hexBytes("52 03 A2 01 00")
        let (c, cp) = ESPProvisioning.SessionMessage.decode(command)
        XCTAssertEqual(cp, [])
        XCTAssertEqual(c?.securityVersion.name, "SecScheme0")
        XCTAssertEqual(c?.payload, .sec0Command)
        XCTAssertEqual(c?.encode(), command)
        // sec0 { msg 1, sr (field 21: AA 01) { status Success (left off) } }
        let response = hexBytes("52 05 08 01 AA 01 00")
        let (r, rp) = ESPProvisioning.SessionMessage.decode(response)
        XCTAssertEqual(rp, [])
        XCTAssertEqual(r?.messageType?.name, "S0_Session_Response")
        XCTAssertEqual(r?.payload, .sec0Response(status: ESPProvisioning.status(0)))
        XCTAssertEqual(r?.encode(), response)
    }

    static let clientKey = [UInt8](0x10..<0x30), deviceKey = [UInt8](0x40..<0x60), deviceRandom = [UInt8](0x70..<0x80)

    func testSecurity1HandshakeMessages() {
        // sec_ver 1; sec1 (field 11: 0x5A) { sc0 (field 20) { client_pubkey (1) } }
        let sc0 = hexBytes("10 01 5A 25 A2 01 22 0A 20") + Self.clientKey
        XCTAssertEqual(ESPProvisioning.SessionMessage.decode(sc0).0?.payload, .sec1Command0(clientPublicKey: Self.clientKey))
        // sec1 { msg 1, sr0 (field 21) { device_pubkey (2), device_random (3) } }
        let sr0 = hexBytes("10 01 5A 39 08 01 AA 01 34 12 20") + Self.deviceKey + hexBytes("1A 10") + Self.deviceRandom
        let (r0, p0) = ESPProvisioning.SessionMessage.decode(sr0)
        XCTAssertEqual(p0, [])
        XCTAssertEqual(r0?.payload, .sec1Response0(status: ESPProvisioning.status(0), devicePublicKey: Self.deviceKey, deviceRandom: Self.deviceRandom))
        // sec1 { msg 2, sc1 (field 22: B2 01) { client_verify_data (2) } }
        let sc1 = hexBytes("10 01 5A 27 08 02 B2 01 22 12 20") + Self.deviceKey
        XCTAssertEqual(ESPProvisioning.SessionMessage.decode(sc1).0?.payload, .sec1Command1(clientVerifyData: Self.deviceKey))
        // sec1 { msg 3, sr1 (field 23: BA 01) { device_verify_data (3) } }
        let sr1 = hexBytes("10 01 5A 27 08 03 BA 01 22 1A 20") + Self.clientKey
        XCTAssertEqual(ESPProvisioning.SessionMessage.decode(sr1).0?.payload,
                       .sec1Response1(status: ESPProvisioning.status(0), deviceVerifyData: Self.clientKey))
        for bytes in [sc0, sr0, sc1, sr1] {
            XCTAssertEqual(ESPProvisioning.SessionMessage.decode(bytes).1, [])
            XCTAssertEqual(ESPProvisioning.SessionMessage.decode(bytes).0?.encode(), bytes)
        }
        // A 16-byte key and a 4-byte random are reported.
        let short = hexBytes("10 01 5A 1D 08 01 AA 01 18 12 10") + [UInt8](repeating: 1, count: 16) + hexBytes("1A 04 01 02 03 04")
        XCTAssertEqual(Set(ESPProvisioning.SessionMessage.decode(short).1.map(\.id)), ["esp.sec1-key-length", "esp.sec1-random-length"])
    }

    func testSecurity2IsRecognised() {
        // sec_ver 2; sec2 (field 12: 0x62) { sc0 (field 20) { client_username "wifiprov" } }
        let bytes = hexBytes("10 02 62 0D A2 01 0A 0A 08") + ascii("wifiprov")
        let (m, p) = ESPProvisioning.SessionMessage.decode(bytes)
        XCTAssertEqual(p, [])
        XCTAssertEqual(m?.securityVersion.name, "SecScheme2")
        XCTAssertEqual(m?.payload, .sec2(step: ProtoEnumValue(raw: 0, name: "S2Session_Command0")))
    }

    // MARK: prov-config

    static let setConfig = hexBytes("08 02 62 14 0A 07") + ascii("HomeNet") + hexBytes("12 09") + ascii("secret123")

    func testCmdSetConfig() throws {
        // msg CmdSetConfig (2); cmd_set_config (field 12: 0x62) { ssid (1), passphrase (2) }
        let (m, p) = ESPProvisioning.ConfigMessage.decode(Self.setConfig)
        XCTAssertEqual(p, [])
        guard case .setConfig(let c)? = m?.payload else { return XCTFail("set config") }
        XCTAssertEqual(m?.messageType.name, "CmdSetConfig")
        XCTAssertEqual(c.ssidText, "HomeNet")
        XCTAssertEqual(c.passphrase.unsafeBytes, ascii("secret123"))
        XCTAssertEqual(c.passphrase.label, "Wi-Fi password")
        XCTAssertFalse("\(c)".contains("secret123"))
        XCTAssertEqual(m?.encode(), Self.setConfig)
        XCTAssertEqual(ESPProvisioning.ConfigMessage(.setConfig(.init(ssid: "HomeNet", passphrase: "secret123"))).encode(), Self.setConfig)
        // With BSSID (3) and channel (4).
        let full = hexBytes("08 02 62 1E 0A 07") + ascii("HomeNet") + hexBytes("12 09") + ascii("secret123")
            + hexBytes("1A 06 AA BB CC DD EE FF 20 06")
        guard case .setConfig(let f)? = ESPProvisioning.ConfigMessage.decode(full).0?.payload else { return XCTFail("full") }
        XCTAssertEqual(f.bssid, [0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF])
        XCTAssertEqual(f.channel, 6)
    }

    func testStatusResponses() {
        // resp_get_status (11: 0x5A) { connected (11: 0x5A) { ip4_addr, auth_mode 3, ssid, bssid, channel 6 } }
        let connected = hexBytes("08 01 5A 24 5A 22 0A 0B") + ascii("192.168.1.7") + hexBytes("10 03 1A 07") + ascii("HomeNet")
            + hexBytes("22 06 01 02 03 04 05 06 28 06")
        let (c, cp) = ESPProvisioning.ConfigMessage.decode(connected)
        XCTAssertEqual(cp, [])
        guard case .status(let s)? = c?.payload, case .connected(let state) = s.detail else { return XCTFail("connected") }
        XCTAssertEqual(s.stationState.name, "Connected", "sta_state left off the wire means Connected")
        XCTAssertEqual(s.status.name, "Success")
        XCTAssertEqual(state.ip4Address, "192.168.1.7")
        XCTAssertEqual(state.authMode.name, "WPA2_PSK")
        XCTAssertEqual(state.ssidText, "HomeNet")
        XCTAssertEqual(state.channel, 6)
        XCTAssertEqual(c?.encode(), connected)
        // sta_state ConnectionFailed (3), fail_reason (10, varint: 0x50) AuthError (0): a oneof keeps its zero.
        let failed = hexBytes("08 01 5A 04 10 03 50 00")
        guard case .status(let f)? = ESPProvisioning.ConfigMessage.decode(failed).0?.payload else { return XCTFail("failed") }
        XCTAssertEqual(f.stationState.name, "ConnectionFailed")
        XCTAssertEqual(f.detail, .failReason(ProtoEnumValue(raw: 0, name: "AuthError")))
        XCTAssertEqual(ESPProvisioning.ConfigMessage.decode(failed).0?.encode(), failed)
        guard case .status(let nf)? = ESPProvisioning.ConfigMessage.decode(hexBytes("08 01 5A 04 10 03 50 01")).0?.payload else { return XCTFail() }
        XCTAssertEqual(nf.detail, .failReason(ProtoEnumValue(raw: 1, name: "NetworkNotFound")))
        // sta_state Connecting, attempt_failed (12: 0x62) { attempts_remaining 2 }
        guard case .status(let a)? = ESPProvisioning.ConfigMessage.decode(hexBytes("08 01 5A 06 10 01 62 02 08 02")).0?.payload else { return XCTFail() }
        XCTAssertEqual(a.stationState.name, "Connecting")
        XCTAssertEqual(a.detail, .attemptFailed(attemptsRemaining: 2))
        // The other config messages.
        let others: [([UInt8], String, ESPProvisioning.ConfigMessage.Payload)] = [
            (hexBytes("52 00"), "CmdGetStatus", .getStatus),
            (hexBytes("08 03 6A 00"), "RespSetConfig", .setConfigResponse(status: ESPProvisioning.status(0))),
            (hexBytes("08 04 72 00"), "CmdApplyConfig", .applyConfig),
            (hexBytes("08 05 7A 02 08 05"), "RespApplyConfig", .applyConfigResponse(status: ESPProvisioning.status(5))),
        ]
        for (bytes, name, payload) in others {
            let (m, p) = ESPProvisioning.ConfigMessage.decode(bytes)
            XCTAssertEqual(p, [], name)
            XCTAssertEqual(m?.messageType.name, name)
            XCTAssertEqual(m?.payload, payload, name)
            XCTAssertEqual(m?.encode(), bytes, name)
        }
    }

    // MARK: prov-scan

    func testScanMessages() {
        // cmd_scan_start (10) { blocking, group_channels 4, period_ms 120 }
        let start = hexBytes("52 06 08 01 18 04 20 78")
        XCTAssertEqual(ESPProvisioning.ScanMessage.decode(start).0?.payload, .start(blocking: true, passive: false, groupChannels: 4, periodMs: 120))
        // msg 3, resp_scan_status (13: 0x6A) { scan_finished, result_count 2 }
        let status = hexBytes("08 03 6A 04 08 01 10 02")
        XCTAssertEqual(ESPProvisioning.ScanMessage.decode(status).0?.payload, .statusResponse(finished: true, resultCount: 2))
        // msg 4, cmd_scan_result (14: 0x72) { count 2 }
        let result = hexBytes("08 04 72 02 10 02")
        XCTAssertEqual(ESPProvisioning.ScanMessage.decode(result).0?.payload, .result(startIndex: 0, count: 2))
        // msg 5, resp_scan_result (15: 0x7A) { entries (1) x2 }; rssi -50 and -70 as ten-byte varints.
        let entries = hexBytes("08 05 7A 33")
            + hexBytes("0A 1D 0A 04") + ascii("Cafe") + hexBytes("10 06 18 CE FF FF FF FF FF FF FF FF 01 22 06 01 02 03 04 05 06 28 03")
            + hexBytes("0A 12 0A 03") + ascii("Lab") + hexBytes("10 0B 18 BA FF FF FF FF FF FF FF FF 01")
        let (m, p) = ESPProvisioning.ScanMessage.decode(entries)
        XCTAssertEqual(p, [])
        guard case .resultResponse(let list)? = m?.payload else { return XCTFail("entries") }
        XCTAssertEqual(list.map(\.ssidText), ["Cafe", "Lab"])
        XCTAssertEqual(list.map(\.rssi), [-50, -70])
        XCTAssertEqual(list.map(\.channel), [6, 11])
        XCTAssertEqual(list.map(\.auth.name), ["WPA2_PSK", "Open"])
        XCTAssertEqual(list[0].bssid, [1, 2, 3, 4, 5, 6])
        for bytes in [start, status, result, entries, hexBytes("08 01 5A 00")] {
            XCTAssertEqual(ESPProvisioning.ScanMessage.decode(bytes).1, [])
            XCTAssertEqual(ESPProvisioning.ScanMessage.decode(bytes).0?.encode(), bytes)
        }
    }

    // MARK: invalid

    func testInvalidAndUnknown() {
        for (what, bytes) in [("truncated varint", hexBytes("08")), ("length past the end", hexBytes("62 20 0A")),
                              ("wire type 6", hexBytes("0E")), ("truncated nested", hexBytes("62 03 0A 05 41"))] {
            XCTAssertNil(ESPProvisioning.ConfigMessage.decode(bytes).0, what)
            XCTAssertEqual(ESPProvisioning.ConfigMessage.decode(bytes).1.map(\.id), ["esp.malformed"], what)
            XCTAssertEqual(ESPProvisioning.ScanMessage.decode(bytes).1.map(\.id), ["esp.malformed"], what)
            XCTAssertEqual(ESPProvisioning.SessionMessage.decode(bytes).1.map(\.id), ["esp.malformed"], what)
        }
        // msg with the LEN wire type: set aside by the runtime, reported as malformed.
        XCTAssertTrue(ESPProvisioning.ConfigMessage.decode(hexBytes("0A 01 00 52 00")).1.map(\.id).contains("esp.malformed"))
        // msg 9: unknown type, kept.
        let (u, up) = ESPProvisioning.ConfigMessage.decode(hexBytes("08 09"))
        XCTAssertEqual(u?.messageType, ProtoEnumValue(raw: 9, name: nil))
        XCTAssertEqual(up.map(\.id), ["esp.unknown-enum", "esp.empty-config"])
        // Field 31 (varint; tag F8 01): unknown, kept and encoded again.
        let withUnknown = hexBytes("52 00 F8 01 01")
        let (k, kp) = ESPProvisioning.ConfigMessage.decode(withUnknown)
        XCTAssertEqual(kp.map(\.id), ["esp.unknown-field"])
        XCTAssertEqual(k?.encode(), withUnknown)
        // A type that does not match the payload.
        XCTAssertEqual(ESPProvisioning.ConfigMessage.decode(hexBytes("08 03 52 00")).1.map(\.id), ["esp.type-mismatch"])
    }

    // MARK: sessions on the pipeline

    /// A full ESP exchange on the built-in `esp` table (scan 12, session 15, config 18, proto-ver 21).
    func run(_ p: ConfiguredPipeline, _ exchanges: [(handle: UInt16, request: [UInt8], response: [UInt8])]) {
        p.att(.exchangeMTURequest(clientRxMTU: 517), sent: true)
        p.att(.exchangeMTUResponse(serverRxMTU: 517), sent: false)
        for x in exchanges {
            p.att(.writeRequest(handle: x.handle, value: x.request), sent: true)
            p.att(.writeResponse, sent: false)
            p.att(.readRequest(handle: x.handle), sent: true)
            p.att(.readResponse(value: x.response), sent: false)
        }
    }

    func testSecurity0SessionDecodesThePasswordAndFlagsIt() throws {
        let p = try ConfiguredPipeline(profile: "esp")
        run(p, [(21, ascii("ESP"), ascii(#"{"prov":{"ver":"v1.1","sec_ver":0,"cap":[]}}"#)),
                (15, hexBytes("52 03 A2 01 00"), hexBytes("52 05 08 01 AA 01 00")),
                (18, Self.setConfig, hexBytes("08 03 6A 00"))])
        XCTAssertEqual(p.out.map(\.kind), ["esp.version", "esp.version", "esp.session", "esp.session", "esp.config", "esp.config"])
        guard let m = p.out[4].message as? ESPProvisioning.ConfigMessage, case .setConfig(let c) = m.payload else { return XCTFail("config") }
        XCTAssertEqual(c.passphrase.unsafeBytes, ascii("secret123"))
        XCTAssertEqual(p.out[4].problems.map(\.id), ["esp.cleartext-passphrase"])
        XCTAssertEqual(p.out[1].problems.map(\.id), ["esp.security0"])
    }

    /// Security 1 built here: the phone's and device's X25519 keys, key = shared XOR SHA-256(PoP),
    /// one AES-256-CTR keystream from IV = device_random over, in order: the device's public key
    /// (SessionCmd1), the client's public key (SessionResp1), then each request and response.
    func security1Session(pop: String, rng: inout SplitMix) throws -> (exchanges: [(UInt16, [UInt8], [UInt8])], clientKey: [UInt8]) {
        let phone = Curve25519.KeyAgreement.PrivateKey()
        let device = Curve25519.KeyAgreement.PrivateKey()
        let phonePublic = Array(phone.publicKey.rawRepresentation), devicePublic = Array(device.publicKey.rawRepresentation)
        let random = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let shared = try phone.sharedSecretFromKeyAgreement(with: device.publicKey).withUnsafeBytes { Array($0) }
        let key = zip(shared, Array(SHA256.hash(data: Array(pop.utf8)))).map { $0 ^ $1 }

        let request = ESPProvisioning.ConfigMessage(.setConfig(.init(ssid: "Office 5G", passphrase: "correct horse battery staple",
                                                                     bssid: [0x02, 0x11, 0x22, 0x33, 0x44, 0x55], channel: 36))).encode()
        let response = hexBytes("08 03 6A 00")
        let getStatus = hexBytes("52 00")
        let status = hexBytes("08 01 5A 04 10 03 50 01")
        // The whole session's plaintext through one CTR stream, then cut back into messages.
        let plain = [devicePublic, phonePublic, request, response, getStatus, status]
        let cipher = Array(try AES._CTR.encrypt(Array(plain.joined()), using: SymmetricKey(data: key),
                                                nonce: AES._CTR.Nonce(nonceBytes: random)))
        var parts: [[UInt8]] = []
        var at = 0
        for m in plain {
            parts.append(Array(cipher[at..<(at + m.count)]))
            at += m.count
        }
        let sc0 = ESPProvisioning.SessionMessage(securityVersion: ProtoEnumValue(raw: 1, name: "SecScheme1"), messageType: ProtoEnumValue(raw: 0, name: nil),
                                                 payload: .sec1Command0(clientPublicKey: phonePublic)).encode()
        let sr0 = ESPProvisioning.SessionMessage(securityVersion: ProtoEnumValue(raw: 1, name: nil), messageType: ProtoEnumValue(raw: 1, name: nil),
                                                 payload: .sec1Response0(status: ESPProvisioning.status(0), devicePublicKey: devicePublic, deviceRandom: random)).encode()
        let sc1 = ESPProvisioning.SessionMessage(securityVersion: ProtoEnumValue(raw: 1, name: nil), messageType: ProtoEnumValue(raw: 2, name: nil),
                                                 payload: .sec1Command1(clientVerifyData: parts[0])).encode()
        let sr1 = ESPProvisioning.SessionMessage(securityVersion: ProtoEnumValue(raw: 1, name: nil), messageType: ProtoEnumValue(raw: 3, name: nil),
                                                 payload: .sec1Response1(status: ESPProvisioning.status(0), deviceVerifyData: parts[1])).encode()
        XCTAssertEqual(Array(sc0.prefix(7)), hexBytes("10 01 5A 25 A2 01 22"), "SessionCmd0 layout")
        return ([(21, ascii("ESP"), ascii(#"{"prov":{"ver":"v1.1","sec_ver":1,"cap":["wifi_scan"]}}"#)),
                 (15, sc0, sr0), (15, sc1, sr1), (18, parts[2], parts[3]), (18, parts[4], parts[5])],
                Array(phone.rawRepresentation))
    }

    func testSecurity1DecryptsWithPoPAndClientKey() throws {
        var rng = SplitMix(seed: 0xE5B1)
        let (exchanges, clientKey) = try security1Session(pop: "abcd1234", rng: &rng)
        let config = ProtocolKeys(["esp-pop": Secret(ascii("abcd1234"), label: "PoP"), "esp-client-key": Secret(clientKey, label: "key")])
        let p = try ConfiguredPipeline(profile: "esp", configuration: config)
        run(p, exchanges.map { ($0.0, $0.1, $0.2) })
        XCTAssertEqual(p.out.map(\.kind), ["esp.version", "esp.version"] + Array(repeating: "esp.session", count: 4)
                       + Array(repeating: "esp.config", count: 4))
        XCTAssertEqual(p.out.flatMap(\.problems), [])
        guard let set = p.out[6].message as? ESPProvisioning.ConfigMessage, case .setConfig(let c) = set.payload else { return XCTFail("set config: \(p.out[6])") }
        XCTAssertEqual(c.ssidText, "Office 5G")
        XCTAssertEqual(c.passphrase.unsafeBytes, ascii("correct horse battery staple"))
        XCTAssertEqual(c.channel, 36)
        guard let r = p.out[7].message as? ESPProvisioning.ConfigMessage else { return XCTFail("response") }
        XCTAssertEqual(r.payload, .setConfigResponse(status: ESPProvisioning.status(0)))
        guard let s = p.out[9].message as? ESPProvisioning.ConfigMessage, case .status(let st) = s.payload else { return XCTFail("status") }
        XCTAssertEqual(st.stationState.name, "ConnectionFailed")
        XCTAssertEqual(st.detail, .failReason(ProtoEnumValue(raw: 1, name: "NetworkNotFound")))
    }

    func testSecurity1WithoutKeysIsReportedEncrypted() throws {
        var rng = SplitMix(seed: 0xE5B2)
        let (exchanges, clientKey) = try security1Session(pop: "abcd1234", rng: &rng)
        let p = try ConfiguredPipeline(profile: "esp")
        run(p, exchanges.map { ($0.0, $0.1, $0.2) })
        let config = p.out.filter { $0.kind == "esp.config" }
        XCTAssertEqual(config.count, 4)
        for e in config {
            guard let o = e.message as? ESPProvisioning.OpaquePayload else { return XCTFail("opaque") }
            XCTAssertTrue(o.encrypted)
            XCTAssertEqual(o.security, 1)
            XCTAssertTrue(o.reason.hasPrefix("encrypted, sec1"), o.reason)
        }
        // The wrong PoP: the verifier does not match, and payloads stay encrypted.
        let wrong = try ConfiguredPipeline(profile: "esp", configuration: ProtocolKeys(["esp-pop": Secret(ascii("wrong"), label: "PoP"), "esp-client-key": Secret(clientKey, label: "key")]))
        run(wrong, exchanges.map { ($0.0, $0.1, $0.2) })
        XCTAssertEqual(wrong.out.flatMap(\.problems).map(\.id), ["esp.sec1-verify-failed"])
        XCTAssertEqual(wrong.out.filter { $0.message is ESPProvisioning.OpaquePayload }.count, 5, "version request and 4 config")
    }

    func testSecurity2IsReportedEncrypted() throws {
        let p = try ConfiguredPipeline(profile: "esp")
        run(p, [(15, hexBytes("10 02 62 0D A2 01 0A 0A 08") + ascii("wifiprov"), hexBytes("10 02 62 02 08 01")),
                (18, [0x99, 0x12, 0x44], [0x01])])
        guard let o = p.out.last?.message as? ESPProvisioning.OpaquePayload else { return XCTFail("opaque") }
        XCTAssertEqual(o.security, 2)
        XCTAssertTrue(o.reason.hasPrefix("encrypted, sec2"))
    }

    func testKeystreamContinuesAcrossMessages() throws {
        let key = (0..<32).map { UInt8($0) }, iv = (0..<16).map { UInt8(0xF0 + $0) }
        let data = (0..<100).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let whole = Array(try AES._CTR.encrypt(data, using: SymmetricKey(data: key), nonce: AES._CTR.Nonce(nonceBytes: iv)))
        var stream = try XCTUnwrap(ESPSecurity1.Stream(key: key, iv: iv))
        var pieces: [UInt8] = []
        for cut in [5, 32, 1, 17, 45] { pieces += stream.apply(Array(data[pieces.count..<(pieces.count + cut)])) }
        XCTAssertEqual(pieces, whole)
    }

    // MARK: hostile input

    func testRandomBytesNeverTrap() throws {
        var rng = SplitMix(seed: 0xE5B0_0001)
        var rngSession = SplitMix(seed: 7)
        let (exchanges, clientKey) = try security1Session(pop: "pop", rng: &rngSession)
        let seeds = exchanges.flatMap { [$0.1, $0.2] } + [Self.setConfig, hexBytes("52 06 08 01 18 04 20 78")]
        let p = try ConfiguredPipeline(profile: "esp", configuration: ProtocolKeys(["esp-pop": Secret(ascii("pop"), label: "PoP"), "esp-client-key": Secret(clientKey, label: "key")]))
        p.att(.exchangeMTURequest(clientRxMTU: 517), sent: true)
        p.att(.exchangeMTUResponse(serverRxMTU: 517), sent: false)
        for i in 0..<3000 {
            var bytes: [UInt8]
            if i % 2 == 0 {
                bytes = (0..<Int.random(in: 0...90, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            } else {
                bytes = seeds[i % seeds.count]
                for _ in 0..<Int.random(in: 1...3, using: &rng) where !bytes.isEmpty {
                    let at = Int.random(in: 0..<bytes.count, using: &rng)
                    if Bool.random(using: &rng) { bytes[at] ^= UInt8.random(in: 1...255, using: &rng) } else { bytes.removeSubrange(at...) }
                }
            }
            _ = ESPProvisioning.SessionMessage.decode(bytes).0?.encode()
            _ = ESPProvisioning.ConfigMessage.decode(bytes).0?.encode()
            _ = ESPProvisioning.ScanMessage.decode(bytes).0?.encode()
            _ = ESPProvisioning.Version.decode(bytes)
            // And through the protocol, on every endpoint, as writes and reads.
            let handle: UInt16 = [12, 15, 18, 21, 24][i % 5]
            if bytes.count < 500 {
                p.att(i % 3 == 0 ? .readResponse(value: bytes) : .writeRequest(handle: handle, value: bytes), sent: i % 3 != 0)
                if i % 3 == 1 { p.att(.readRequest(handle: handle), sent: true) }
            }
        }
        XCTAssertFalse(p.out.isEmpty)
    }
}
