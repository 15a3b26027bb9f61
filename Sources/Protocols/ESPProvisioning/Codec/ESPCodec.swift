import Capture
import Foundation
import ProtocolsShared
import SwiftProtobuf
import Profiles

/// Decoding and encoding between the generated protobuf types and GATTLab's values.
/// proto3: an absent field is its zero value; enums are open, so unknown numbers arrive as
/// `UNRECOGNIZED(n)` and are kept. Wrong wire types on known fields (set aside by the runtime
/// as unknown fields) and structural damage are `esp.malformed`.
struct ESPDecoding {
    var problems: [ProtocolProblem] = []

    mutating func parse<M: SwiftProtobuf.Message>(_ type: M.Type, _ bytes: [UInt8], what: String) -> M? {
        ProtoWire.parse(type, bytes, what: what, problemID: "esp.malformed", problems: &problems)
    }

    mutating func named(_ raw: Int, _ names: [String], _ what: String) -> ProtoEnumValue {
        let v = ESPProvisioning.named(raw, names)
        if !v.isKnown { problems.append(.init("esp.unknown-enum", "\(what) has the unknown value \(raw)")) }
        return v
    }

    mutating func unknownFields(_ unknown: Data, in message: String, known: Set<Int>) {
        guard !unknown.isEmpty, let list = try? ProtoWire.fields([UInt8](unknown)).get() else { return }
        for f in list where known.contains(f.number) {
            problems.append(.init("esp.malformed", "\(message) field \(f.number) has the wrong wire type (\(f.wireType))"))
        }
        let numbers = list.map(\.number).filter { !known.contains($0) }
        guard !numbers.isEmpty else { return }
        problems.append(.init("esp.unknown-field", "\(message) has unknown field\(numbers.count == 1 ? "" : "s") \(numbers.map(String.init).joined(separator: ", ")) (kept)"))
    }
}

extension ESPProvisioning.Version {
    public func encode() -> [UInt8] { Array(text.utf8) }

    public static func decode(_ bytes: [UInt8]) -> (ESPProvisioning.Version?, [ProtocolProblem]) {
        let (text, valid) = ProtocolText.decode(bytes)
        var problems: [ProtocolProblem] = []
        if !valid { problems.append(.init("esp.version-not-utf8", "the proto-ver answer is not valid UTF-8")) }
        // Nesting is bounded before parsing: no real answer nests deeper than three levels.
        let depth = bytes.count(where: { $0 == UInt8(ascii: "[") || $0 == UInt8(ascii: "{") })
        guard depth <= 64, let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            problems.append(.init("esp.version-not-json", "proto-ver answered \"\(text)\", not JSON"))
            return (.init(text: text, version: text.isEmpty ? nil : text, securityVersion: nil, capabilities: []), problems)
        }
        let prov = object["prov"] as? [String: Any]
        if prov == nil { problems.append(.init("esp.version-no-prov", "the proto-ver JSON has no \"prov\" object")) }
        let version = prov?["ver"] as? String
        let sec = (prov?["sec_ver"] as? NSNumber)?.intValue
        let caps = (prov?["cap"] as? [Any])?.compactMap { $0 as? String } ?? []
        let v = ESPProvisioning.Version(text: text, version: version, securityVersion: sec, capabilities: caps)
        if v.noPoP, sec == 1 {
            problems.append(.init("esp.no-pop", "security 1 without proof of possession (capability no_pop): a session can be intercepted"))
        }
        if sec == 0 { problems.append(.init("esp.security0", "security 0: provisioning data, the Wi-Fi password included, crosses in the clear")) }
        return (v, problems)
    }
}

extension ESPProvisioning.SessionMessage {
    public func encode() -> [UInt8] {
        var m = (try? ESPProto_SessionData(serializedBytes: unknownFields)) ?? ESPProto_SessionData()
        m.secVer = ESPProto_SecSchemeVersion(rawValue: securityVersion.raw) ?? .secScheme0
        let type = messageType?.raw ?? 0
        switch payload {
        case .none:
            break
        case .sec0Command, .sec0Response:
            var p = ESPProto_Sec0Payload()
            p.msg = ESPProto_Sec0MsgType(rawValue: type) ?? .s0SessionCommand
            if case .sec0Response(let status) = payload {
                var r = ESPProto_S0SessionResp()
                r.status = ESPProto_Status(rawValue: status.raw) ?? .success
                p.sr = r
            } else {
                p.sc = ESPProto_S0SessionCmd()
            }
            m.sec0 = p
        case .sec1Command0, .sec1Response0, .sec1Command1, .sec1Response1:
            var p = ESPProto_Sec1Payload()
            p.msg = ESPProto_Sec1MsgType(rawValue: type) ?? .sessionCommand0
            switch payload {
            case .sec1Command0(let key):
                var c = ESPProto_SessionCmd0()
                c.clientPubkey = Data(key)
                p.sc0 = c
            case .sec1Response0(let status, let key, let random):
                var r = ESPProto_SessionResp0()
                r.status = ESPProto_Status(rawValue: status.raw) ?? .success
                r.devicePubkey = Data(key)
                r.deviceRandom = Data(random)
                p.sr0 = r
            case .sec1Command1(let verify):
                var c = ESPProto_SessionCmd1()
                c.clientVerifyData = Data(verify)
                p.sc1 = c
            case .sec1Response1(let status, let verify):
                var r = ESPProto_SessionResp1()
                r.status = ESPProto_Status(rawValue: status.raw) ?? .success
                r.deviceVerifyData = Data(verify)
                p.sr1 = r
            default:
                break
            }
            m.sec1 = p
        case .sec2(let step):
            var p = ESPProto_Sec2Payload()
            p.msg = ESPProto_Sec2MsgType(rawValue: step.raw) ?? .s2SessionCommand0
            m.sec2 = p
        }
        return ProtobufEncoding.bytes(m)
    }

    public static func decode(_ bytes: [UInt8]) -> (ESPProvisioning.SessionMessage?, [ProtocolProblem]) {
        var d = ESPDecoding()
        guard let m = d.parse(ESPProto_SessionData.self, bytes, what: "SessionData") else { return (nil, d.problems) }
        d.unknownFields(m.unknownFields.data, in: "SessionData", known: [2, 10, 11, 12])
        let sec = d.named(m.secVer.rawValue, ESPProvisioning.secSchemeNames, "SessionData.sec_ver")
        var type: ProtoEnumValue?
        var payload = Payload.none
        switch m.proto {
        case .sec0(let p)?:
            type = d.named(p.msg.rawValue, ESPProvisioning.sec0TypeNames, "Sec0Payload.msg")
            switch p.payload {
            case .sc?: payload = .sec0Command
            case .sr(let r)?: payload = .sec0Response(status: d.named(r.status.rawValue, ESPProvisioning.statusNames, "S0SessionResp.status"))
            case nil:
                // A msg type with no payload to carry: nothing to act on, and nothing the encoder could write back.
                d.problems.append(.init("esp.empty-session", "Sec0Payload without a command or response"))
                type = nil
            }
        case .sec1(let p)?:
            type = d.named(p.msg.rawValue, ESPProvisioning.sec1TypeNames, "Sec1Payload.msg")
            switch p.payload {
            case .sc0(let c)?: payload = .sec1Command0(clientPublicKey: [UInt8](c.clientPubkey))
            case .sr0(let r)?:
                payload = .sec1Response0(status: d.named(r.status.rawValue, ESPProvisioning.statusNames, "SessionResp0.status"),
                                         devicePublicKey: [UInt8](r.devicePubkey), deviceRandom: [UInt8](r.deviceRandom))
            case .sc1(let c)?: payload = .sec1Command1(clientVerifyData: [UInt8](c.clientVerifyData))
            case .sr1(let r)?:
                payload = .sec1Response1(status: d.named(r.status.rawValue, ESPProvisioning.statusNames, "SessionResp1.status"),
                                         deviceVerifyData: [UInt8](r.deviceVerifyData))
            case nil:
                d.problems.append(.init("esp.empty-session", "Sec1Payload without a handshake message"))
                type = nil
            }
        case .sec2(let p)?:
            let step = d.named(p.msg.rawValue, ESPProvisioning.sec2TypeNames, "Sec2Payload.msg")
            type = step
            payload = .sec2(step: step)
        case nil:
            break
        }
        if let type, let want = Self.expectedType(payload), type.raw != want {
            d.problems.append(.init("esp.type-mismatch", "msg says \(type) but the payload is another step"))
        }
        if case .sec1Response0(_, let key, let random) = payload {
            if key.count != 32 { d.problems.append(.init("esp.sec1-key-length", "device public key of \(key.count) bytes; X25519 keys have 32")) }
            if random.count != 16 { d.problems.append(.init("esp.sec1-random-length", "device random of \(random.count) bytes; the IV has 16")) }
        }
        if case .sec1Command0(let key) = payload, key.count != 32 {
            d.problems.append(.init("esp.sec1-key-length", "client public key of \(key.count) bytes; X25519 keys have 32"))
        }
        return (.init(securityVersion: sec, messageType: type, payload: payload, unknownFields: [UInt8](m.unknownFields.data)), d.problems)
    }

    static func expectedType(_ p: Payload) -> Int? {
        switch p {
        case .sec0Command, .sec1Command0: 0
        case .sec0Response, .sec1Response0: 1
        case .sec1Command1: 2
        case .sec1Response1: 3
        case .none, .sec2: nil
        }
    }
}

extension ESPProvisioning.ConfigMessage {
    public func encode() -> [UInt8] {
        var m = (try? ESPProto_WiFiConfigPayload(serializedBytes: unknownFields)) ?? ESPProto_WiFiConfigPayload()
        m.msg = ESPProto_WiFiConfigMsgType(rawValue: messageType.raw) ?? .typeCmdGetStatus
        switch payload {
        case .none: break
        case .getStatus: m.cmdGetStatus = ESPProto_CmdGetStatus()
        case .status(let s):
            var r = ESPProto_RespGetStatus()
            r.status = ESPProto_Status(rawValue: s.status.raw) ?? .success
            r.staState = ESPProto_WifiStationState(rawValue: s.stationState.raw) ?? .connected
            switch s.detail {
            case .none: break
            case .failReason(let f): r.failReason = ESPProto_WifiConnectFailedReason(rawValue: f.raw) ?? .authError
            case .connected(let c):
                var cs = ESPProto_WifiConnectedState()
                cs.ip4Addr = c.ip4Address
                cs.authMode = ESPProto_WifiAuthMode(rawValue: c.authMode.raw) ?? .open
                cs.ssid = Data(c.ssid)
                cs.bssid = Data(c.bssid)
                cs.channel = c.channel
                r.connected = cs
            case .attemptFailed(let n):
                var a = ESPProto_WifiAttemptFailed()
                a.attemptsRemaining = n
                r.attemptFailed = a
            }
            m.respGetStatus = r
        case .setConfig(let c):
            var s = ESPProto_CmdSetConfig()
            s.ssid = Data(c.ssid)
            s.passphrase = Data(c.passphrase.unsafeBytes)
            s.bssid = Data(c.bssid)
            s.channel = c.channel
            m.cmdSetConfig = s
        case .setConfigResponse(let status):
            var r = ESPProto_RespSetConfig()
            r.status = ESPProto_Status(rawValue: status.raw) ?? .success
            m.respSetConfig = r
        case .applyConfig: m.cmdApplyConfig = ESPProto_CmdApplyConfig()
        case .applyConfigResponse(let status):
            var r = ESPProto_RespApplyConfig()
            r.status = ESPProto_Status(rawValue: status.raw) ?? .success
            m.respApplyConfig = r
        }
        return ProtobufEncoding.bytes(m)
    }

    public static func decode(_ bytes: [UInt8]) -> (ESPProvisioning.ConfigMessage?, [ProtocolProblem]) {
        var d = ESPDecoding()
        guard let m = d.parse(ESPProto_WiFiConfigPayload.self, bytes, what: "WiFiConfigPayload") else { return (nil, d.problems) }
        d.unknownFields(m.unknownFields.data, in: "WiFiConfigPayload", known: [1, 10, 11, 12, 13, 14, 15])
        let type = d.named(m.msg.rawValue, ESPProvisioning.configTypeNames, "WiFiConfigPayload.msg")
        var payload = Payload.none
        switch m.payload {
        case .cmdGetStatus?: payload = .getStatus
        case .respGetStatus(let r)?:
            var detail = ESPProvisioning.StatusReport.Detail.none
            switch r.state {
            case .failReason(let f)?: detail = .failReason(d.named(f.rawValue, ESPProvisioning.failReasonNames, "RespGetStatus.fail_reason"))
            case .connected(let c)?:
                detail = .connected(.init(ip4Address: c.ip4Addr, authMode: d.named(c.authMode.rawValue, ESPProvisioning.authNames, "WifiConnectedState.auth_mode"),
                                          ssid: [UInt8](c.ssid), bssid: [UInt8](c.bssid), channel: c.channel))
            case .attemptFailed(let a)?: detail = .attemptFailed(attemptsRemaining: a.attemptsRemaining)
            case nil: break
            }
            payload = .status(.init(status: d.named(r.status.rawValue, ESPProvisioning.statusNames, "RespGetStatus.status"),
                                    stationState: d.named(r.staState.rawValue, ESPProvisioning.stationStateNames, "RespGetStatus.sta_state"),
                                    detail: detail))
        case .cmdSetConfig(let c)?:
            let s = ESPProvisioning.SetConfig(ssid: [UInt8](c.ssid), passphrase: Secret([UInt8](c.passphrase), label: "Wi-Fi password"),
                                              bssid: [UInt8](c.bssid), channel: c.channel)
            if s.ssid.count > 32 { d.problems.append(.init("esp.ssid-too-long", "SSID of \(s.ssid.count) bytes; at most 32")) }
            if s.passphrase.count > 64 { d.problems.append(.init("esp.passphrase-too-long", "passphrase of \(s.passphrase.count) bytes; at most 64")) }
            if !s.bssid.isEmpty, s.bssid.count != 6 { d.problems.append(.init("esp.bssid-length", "BSSID of \(s.bssid.count) bytes; a BSSID has 6")) }
            payload = .setConfig(s)
        case .respSetConfig(let r)?: payload = .setConfigResponse(status: d.named(r.status.rawValue, ESPProvisioning.statusNames, "RespSetConfig.status"))
        case .cmdApplyConfig?: payload = .applyConfig
        case .respApplyConfig(let r)?: payload = .applyConfigResponse(status: d.named(r.status.rawValue, ESPProvisioning.statusNames, "RespApplyConfig.status"))
        case nil: d.problems.append(.init("esp.empty-config", "WiFiConfigPayload without a command or response"))
        }
        let message = ESPProvisioning.ConfigMessage(messageType: type, payload: payload, unknownFields: [UInt8](m.unknownFields.data))
        if payload != .none, ESPProvisioning.ConfigMessage(payload).messageType.raw != type.raw {
            d.problems.append(.init("esp.type-mismatch", "msg says \(type) but the payload is another message"))
        }
        return (message, d.problems)
    }
}

extension ESPProvisioning.ScanMessage {
    public func encode() -> [UInt8] {
        var m = (try? ESPProto_WiFiScanPayload(serializedBytes: unknownFields)) ?? ESPProto_WiFiScanPayload()
        m.msg = ESPProto_WiFiScanMsgType(rawValue: messageType.raw) ?? .typeCmdScanStart
        m.status = ESPProto_Status(rawValue: status.raw) ?? .success
        switch payload {
        case .none: break
        case .start(let blocking, let passive, let group, let period):
            var c = ESPProto_CmdScanStart()
            c.blocking = blocking
            c.passive = passive
            c.groupChannels = group
            c.periodMs = period
            m.cmdScanStart = c
        case .startResponse: m.respScanStart = ESPProto_RespScanStart()
        case .status: m.cmdScanStatus = ESPProto_CmdScanStatus()
        case .statusResponse(let finished, let count):
            var r = ESPProto_RespScanStatus()
            r.scanFinished = finished
            r.resultCount = count
            m.respScanStatus = r
        case .result(let start, let count):
            var c = ESPProto_CmdScanResult()
            c.startIndex = start
            c.count = count
            m.cmdScanResult = c
        case .resultResponse(let entries):
            var r = ESPProto_RespScanResult()
            r.entries = entries.map { e in
                var x = ESPProto_WiFiScanResult()
                x.ssid = Data(e.ssid)
                x.channel = e.channel
                x.rssi = e.rssi
                x.bssid = Data(e.bssid)
                x.auth = ESPProto_WifiAuthMode(rawValue: e.auth.raw) ?? .open
                return x
            }
            m.respScanResult = r
        }
        return ProtobufEncoding.bytes(m)
    }

    public static func decode(_ bytes: [UInt8]) -> (ESPProvisioning.ScanMessage?, [ProtocolProblem]) {
        var d = ESPDecoding()
        guard let m = d.parse(ESPProto_WiFiScanPayload.self, bytes, what: "WiFiScanPayload") else { return (nil, d.problems) }
        d.unknownFields(m.unknownFields.data, in: "WiFiScanPayload", known: [1, 2, 10, 11, 12, 13, 14, 15])
        let type = d.named(m.msg.rawValue, ESPProvisioning.scanTypeNames, "WiFiScanPayload.msg")
        let status = d.named(m.status.rawValue, ESPProvisioning.statusNames, "WiFiScanPayload.status")
        var payload = Payload.none
        switch m.payload {
        case .cmdScanStart(let c)?: payload = .start(blocking: c.blocking, passive: c.passive, groupChannels: c.groupChannels, periodMs: c.periodMs)
        case .respScanStart?: payload = .startResponse
        case .cmdScanStatus?: payload = .status
        case .respScanStatus(let r)?: payload = .statusResponse(finished: r.scanFinished, resultCount: r.resultCount)
        case .cmdScanResult(let c)?: payload = .result(startIndex: c.startIndex, count: c.count)
        case .respScanResult(let r)?:
            payload = .resultResponse(r.entries.map { e in
                ESPProvisioning.ScanEntry(ssid: [UInt8](e.ssid), channel: e.channel, rssi: e.rssi, bssid: [UInt8](e.bssid),
                                          auth: d.named(e.auth.rawValue, ESPProvisioning.authNames, "WiFiScanResult.auth"))
            })
        case nil: d.problems.append(.init("esp.empty-scan", "WiFiScanPayload without a command or response"))
        }
        let message = ESPProvisioning.ScanMessage(messageType: type, status: status, payload: payload, unknownFields: [UInt8](m.unknownFields.data))
        if payload != .none, ESPProvisioning.ScanMessage(payload).messageType.raw != type.raw {
            d.problems.append(.init("esp.type-mismatch", "msg says \(type) but the payload is another message"))
        }
        return (message, d.problems)
    }
}
