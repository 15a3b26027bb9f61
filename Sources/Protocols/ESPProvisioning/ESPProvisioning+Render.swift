import Capture
import Profiles
import Report

// How `gattlab decode` shows ESP-IDF provisioning messages. The JSON keeps the protobuf field
// names of esp-idf (`secVer`, `staState`, ...), so it reads like the messages themselves.

extension ESPProvisioning.Version: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String {
        "ESP version \(version ?? "(none)") security \(securityVersion.map(String.init) ?? "?")"
            + (capabilities.isEmpty ? "" : " capabilities " + capabilities.joined(separator: ","))
    }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.string("ver", version)
        json.int("secVer", securityVersion)
        json.strings("cap", capabilities)
    }
}

extension ESPProvisioning.SessionMessage: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String {
        var t = "ESP session \(securityVersion)"
        switch payload {
        case .none: t += " (no payload)"
        case .sec0Command: t += " command"
        case .sec0Response(let s): t += " response \(s)"
        case .sec1Command0(let k): t += " SessionCmd0 client key \(Hex.string(k))"
        case .sec1Response0(let s, let k, let r): t += " SessionResp0 \(s) device key \(Hex.string(k)) random \(Hex.string(r))"
        case .sec1Command1(let d): t += " SessionCmd1 client verify \(d.count) bytes"
        case .sec1Response1(let s, let d): t += " SessionResp1 \(s) device verify \(d.count) bytes"
        case .sec2(let step): t += " \(step) (encrypted, sec2)"
        }
        return t
    }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.enumValue("secVer", securityVersion)
        json.enumValue("msg", messageType)
        switch payload {
        case .none, .sec0Command: break
        case .sec0Response(let s): json.enumValue("status", s)
        case .sec1Command0(let k): json.string("clientPubkey", Hex.string(k))
        case .sec1Response0(let s, let k, let r):
            json.enumValue("status", s)
            json.string("devicePubkey", Hex.string(k))
            json.string("deviceRandom", Hex.string(r))
        case .sec1Command1(let d): json.string("clientVerifyData", Hex.string(d))
        case .sec1Response1(let s, let d):
            json.enumValue("status", s)
            json.string("deviceVerifyData", Hex.string(d))
        case .sec2: json.bool("encrypted", true)
        }
    }
}

extension ESPProvisioning.ConfigMessage: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String {
        var t = "ESP config \(messageType)"
        switch payload {
        case .none, .getStatus, .applyConfig: break
        case .status(let s):
            t += " \(s.status) station \(s.stationState)"
            switch s.detail {
            case .none: break
            case .failReason(let f): t += " reason \(f)"
            case .connected(let c):
                t += " SSID \"\(ProtocolText.display(c.ssid))\" IP \(c.ip4Address) auth \(c.authMode) channel \(c.channel)"
                if !c.bssid.isEmpty { t += " BSSID \(mac(c.bssid))" }
            case .attemptFailed(let n): t += " \(n) attempts remaining"
            }
        case .setConfig(let c):
            t += " SSID \"\(ProtocolText.display(c.ssid))\" password " + c.passphrase.decodeText(reveal: reveal)
            if !c.bssid.isEmpty { t += " BSSID \(mac(c.bssid))" }
            if c.channel != 0 { t += " channel \(c.channel)" }
        case .setConfigResponse(let s), .applyConfigResponse(let s): t += " \(s)"
        }
        return t
    }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.enumValue("msg", messageType)
        switch payload {
        case .none, .getStatus, .applyConfig: break
        case .status(let s):
            json.enumValue("status", s.status)
            json.enumValue("staState", s.stationState)
            switch s.detail {
            case .none: break
            case .failReason(let f): json.enumValue("failReason", f)
            case .connected(let c):
                var cb = JSONBuild()
                cb.string("ip4", c.ip4Address)
                cb.enumValue("authMode", c.authMode)
                cb.string("ssid", ProtocolText.display(c.ssid))
                cb.string("bssid", mac(c.bssid))
                cb.int("channel", Int(c.channel))
                json.raw("connected", cb.text)
            case .attemptFailed(let n): json.int("attemptsRemaining", Int(n))
            }
        case .setConfig(let c):
            json.string("ssid", ProtocolText.display(c.ssid))
            json.string("passphrase", c.passphrase.decodeJSONText(reveal: reveal))
            if !c.bssid.isEmpty { json.string("bssid", mac(c.bssid)) }
            json.int("channel", Int(c.channel))
        case .setConfigResponse(let s), .applyConfigResponse(let s): json.enumValue("status", s)
        }
    }
}

extension ESPProvisioning.ScanMessage: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String {
        var t = "ESP scan \(messageType)"
        if status.raw != 0 { t += " status \(status)" }
        switch payload {
        case .none, .startResponse, .status: break
        case .start(let blocking, let passive, let group, let period):
            t += (blocking ? " blocking" : "") + (passive ? " passive" : " active") + " group \(group) period \(period) ms"
        case .statusResponse(let finished, let count): t += finished ? " finished, \(count) results" : " scanning, \(count) results"
        case .result(let start, let count): t += " from \(start) count \(count)"
        case .resultResponse(let entries):
            t += entries.count == 1 ? " 1 entry" : " \(entries.count) entries"
            if !entries.isEmpty {
                t += ": " + entries.map { "\(ProtocolText.display($0.ssid)) (ch \($0.channel), \($0.rssi) dBm, \($0.auth))" }.joined(separator: ", ")
            }
        }
        return t
    }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.enumValue("msg", messageType)
        json.enumValue("status", status)
        switch payload {
        case .none, .startResponse, .status: break
        case .start(let blocking, let passive, let group, let period):
            json.bool("blocking", blocking)
            json.bool("passive", passive)
            json.int("groupChannels", Int(group))
            json.int("periodMs", Int(period))
        case .statusResponse(let finished, let count):
            json.bool("scanFinished", finished)
            json.int("resultCount", Int(count))
        case .result(let start, let count):
            json.int("startIndex", Int(start))
            json.int("count", Int(count))
        case .resultResponse(let entries):
            json.raw("networks", NetworkJSON.array(entries.map(WiFiNetwork.init)))
            json.raw("entries", "[" + entries.map { e in
                var x = JSONBuild()
                x.string("ssid", ProtocolText.display(e.ssid))
                x.int("channel", Int(e.channel))
                x.int("rssi", Int(e.rssi))
                x.string("bssid", mac(e.bssid))
                x.enumValue("auth", e.auth)
                return x.text
            }.joined(separator: ",") + "]")
        }
    }
}

extension ESPProvisioning.OpaquePayload: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String { "ESP \(endpoint) \(length) bytes: \(reason)" }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.string("endpoint", endpoint)
        json.bool("encrypted", encrypted)
        json.int("security", security)
        json.int("length", length)
        json.string("reason", reason)
    }
}

/// A BSSID as esp-idf prints it: upper-case hex pairs joined by colons.
private func mac(_ bytes: [UInt8]) -> String { bytes.map { Hex.string([$0]).uppercased() }.joined(separator: ":") }
