import Analysis
import Profiles

extension ESPProvisioningProtocol: ProtocolAnalysis {}

// MARK: Timeline lines

extension ESPProvisioning.Version: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        ("proto-ver \(version ?? "?"), security \(securityVersion.map(String.init) ?? "?"), capabilities \(capabilities.joined(separator: " "))",
         [Field("version", .string(version ?? "")), Field("security", .int(securityVersion ?? -1)),
          Field("capabilities", .strings(capabilities))])
    }
}

extension ESPProvisioning.SessionMessage: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        let type = messageType?.description ?? "?"
        var summary = "session \(securityVersion) \(type)"
        switch payload {
        case .sec0Response(let st), .sec1Response0(let st, _, _), .sec1Response1(let st, _): summary += ": \(st)"
        default: break
        }
        return (summary, [Field("scheme", .string(securityVersion.description)), Field("message", .string(type))])
    }
}

extension ESPProvisioning.ConfigMessage: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        switch payload {
        case .setConfig(let sc):
            let ssid = ProtocolText.display(sc.ssid)
            return ("CmdSetConfig \"\(ssid)\" (passphrase \(sc.passphrase.count) bytes)",
                    [Field("message", .string("CmdSetConfig")), Field("ssid", .string(ssid)), Field("passphrase", .secret(sc.passphrase))])
        case .status(let r):
            var fields = [Field("message", .string("RespGetStatus")), Field("station", .string(r.stationState.description))]
            var summary = "station \(r.stationState)"
            switch r.detail {
            case .failReason(let reason): fields.append(Field("reason", .string(reason.description))); summary += " (\(reason))"
            case .connected(let cs):
                fields.append(Field("ssid", .string(cs.ssidText))); fields.append(Field("ip", .string(cs.ip4Address)))
                summary += " to \"\(ProtocolText.display(cs.ssid))\", IP \(ProtocolText.display(cs.ip4Address))"
            case .attemptFailed(let n): summary += " (attempt failed, \(n) left)"
            case .none: break
            }
            return (summary, fields)
        case .setConfigResponse(let st), .applyConfigResponse(let st):
            return ("\(messageType): \(st)", [Field("message", .string(messageType.description)), Field("status", .string(st.description))])
        default:
            return ("\(messageType)", [Field("message", .string(messageType.description))])
        }
    }
}

extension ESPProvisioning.ScanMessage: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        var summary = "\(messageType)"
        if case .statusResponse(let finished, let n) = payload { summary += finished ? ": finished, \(n) results" : ": scanning" }
        var fields = [Field("message", .string(messageType.description))]
        if case .resultResponse(let entries) = payload {
            summary += ": " + entries.map { ProtocolText.display($0.ssid) }.joined(separator: ", ")
            fields.append(Field("networks", .networks(entries.map(WiFiNetwork.init))))
        }
        return (summary, fields)
    }
}

extension ESPProvisioning.OpaquePayload: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        (encrypted ? "\(endpoint): \(length) bytes, encrypted (security \(security.map(String.init) ?? "?"))"
                   : "\(endpoint): \(length) bytes",
         [Field("endpoint", .string(endpoint)), Field("encrypted", .bool(encrypted)), Field("length", .int(length))])
    }
}
