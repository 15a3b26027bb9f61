import ATT
import Capture
import Profiles

/// The timeline's view of one protocol message: its lane, a line for people (no secrets) and
/// its fields (secrets as `Secret`).
enum EventDescription {
    static func describe(_ e: ProfileEvent) -> (TimelineEvent.Lane, String, [Field]) {
        let problems = e.problems.isEmpty ? "" : " [" + e.problems.map(\.id).joined(separator: ", ") + "]"
        guard let m = e.message else {
            return (lane(e.protocolName), "\(e.kind): undecodable" + problems, [])
        }
        let (summary, fields) = describe(m)
        return (lane(e.protocolName), summary + problems, fields)
    }

    static func lane(_ protocolName: String) -> TimelineEvent.Lane {
        switch protocolName {
        case "speaker-ota": .ota
        case "sensor-scan": .scan
        default: .provisioning
        }
    }

    static func describe(_ m: any ProfileMessage) -> (String, [Field]) {
        switch m {
        case let c as SpeakerOTA.Credentials:
            let ssid = ProtocolText.display(c.ssid)
            return ("credentials for \"\(ssid)\" (password \(c.password.count) bytes)",
                    [Field("ssid", .string(ssid)), Field("password", .secret(c.password))])
        case let u as SpeakerOTA.FirmwareURL:
            let shown = u.display(reveal: false)
            let url: FieldValue = u.secretParts.isEmpty ? .string(shown) : .partlySecret(redacted: shown, full: Secret(u.bytes, label: "firmware URL"))
            var fields = [Field("url", url)]
            if let scheme = u.scheme { fields.append(Field("scheme", .string(scheme))) }
            if let host = u.host { fields.append(Field("host", .string(ProtocolText.display(host)))) }
            return ("firmware URL \(shown)", fields)
        case let c as SpeakerOTA.ControlCommand:
            let name = c.command?.description ?? "unknown command 0x\(Hex.string([c.rawCommand]))"
            return (name, [Field("command", .string(name)), Field("parameter", .int(Int(c.parameter)))])
        case let s as SpeakerOTA.Status:
            return status(s)
        case is SensorScan.Request:
            return ("SCAN", [])
        case let r as SensorScan.Response:
            let names = r.networks.map { "\(ProtocolText.display($0.ssid)) \($0.rssi)" }
            var summary = "\(r.networks.count) network\(r.networks.count == 1 ? "" : "s") in \(r.chunks) notification\(r.chunks == 1 ? "" : "s")"
            if !r.complete { summary += ", truncated (no END)" }
            if r.markerStyle != "none" { summary += ", markers \(r.markerStyle)" }
            if !names.isEmpty { summary += ": " + names.prefix(12).joined(separator: ", ") + (names.count > 12 ? ", ..." : "") }
            var fields = [Field("networks", networks(r.networks.map(WiFiNetwork.init))),
                          Field("complete", .bool(r.complete)), Field("chunks", .int(r.chunks)), Field("markerStyle", .string(r.markerStyle))]
            if r.markerStyles.count > 1 { fields.append(Field("markerStyles", .strings(r.markerStyles))) }
            return (summary, fields)
        case let i as NRF7.Info:
            return ("nRF7 protocol version \(i.version.map(String.init) ?? "?")", i.version.map { [Field("version", .int(Int($0)))] } ?? [])
        case let r as NRF7.Request:
            var fields = [Field("op", .string(r.opCode?.description ?? "none"))]
            var summary = "request \(r.opCode?.description ?? "without op code")"
            if let c = r.config {
                let ssid = c.wifi?.ssid.map { ProtocolText.display($0) } ?? ""
                fields.append(Field("ssid", .string(ssid)))
                if let p = c.passphrase { fields.append(Field("passphrase", .secret(p))) }
                summary += " for \"\(ssid)\"" + (c.passphrase.map { " (passphrase \($0.count) bytes)" } ?? "")
            }
            return (summary, fields)
        case let r as NRF7.Response:
            var fields = [Field("op", .string(r.requestOpCode?.description ?? "none")), Field("status", .string(r.status?.description ?? "none"))]
            var summary = "response to \(r.requestOpCode?.description ?? "?"): \(r.status?.description ?? "no status")"
            if let s = r.deviceStatus {
                if let st = s.state { fields.append(Field("state", .string(st.description))); summary += ", state \(st)" }
                if let ssid = s.provisioningInfo?.ssid { fields.append(Field("ssid", .string(ProtocolText.display(ssid)))); summary += ", \"\(ProtocolText.display(ssid))\"" }
                if let ip = s.ip4Text { fields.append(Field("ip", .string(ip))); summary += ", IP \(ip)" }
            }
            return (summary, fields)
        case let r as NRF7.Result:
            if let rec = r.scanRecord {
                let ssid = rec.wifi?.ssid.map { ProtocolText.display($0) } ?? "?"
                let network = WiFiNetwork(rec)
                var summary = "scan record \"\(ssid)\"" + (rec.rssi.map { " \($0) dBm" } ?? "")
                if let n = network, let band = n.band { summary += ", \(band)" + (n.channel.map { " channel \($0)" } ?? "") }
                return (summary, [Field("ssid", .string(ssid))] + (rec.rssi.map { [Field("rssi", .int(Int($0)))] } ?? [])
                            + [Field("networks", networks(network.map { [$0] } ?? []))])
            }
            var fields: [Field] = []
            var summary = "state \(r.state?.description ?? "?")"
            if let s = r.state { fields.append(Field("state", .string(s.description))) }
            if let reason = r.reason { fields.append(Field("reason", .string(reason.description))); summary += " (\(reason))" }
            return (summary, fields)
        case let v as ESPProvisioning.Version:
            return ("proto-ver \(v.version ?? "?"), security \(v.securityVersion.map(String.init) ?? "?"), capabilities \(v.capabilities.joined(separator: " "))",
                    [Field("version", .string(v.version ?? "")), Field("security", .int(v.securityVersion ?? -1)),
                     Field("capabilities", .strings(v.capabilities))])
        case let s as ESPProvisioning.SessionMessage:
            let type = s.messageType?.description ?? "?"
            var summary = "session \(s.securityVersion) \(type)"
            switch s.payload {
            case .sec0Response(let st), .sec1Response0(let st, _, _), .sec1Response1(let st, _): summary += ": \(st)"
            default: break
            }
            return (summary, [Field("scheme", .string(s.securityVersion.description)), Field("message", .string(type))])
        case let c as ESPProvisioning.ConfigMessage:
            switch c.payload {
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
                return ("\(c.messageType): \(st)", [Field("message", .string(c.messageType.description)), Field("status", .string(st.description))])
            default:
                return ("\(c.messageType)", [Field("message", .string(c.messageType.description))])
            }
        case let s as ESPProvisioning.ScanMessage:
            var summary = "\(s.messageType)"
            if case .statusResponse(let finished, let n) = s.payload { summary += finished ? ": finished, \(n) results" : ": scanning" }
            var fields = [Field("message", .string(s.messageType.description))]
            if case .resultResponse(let entries) = s.payload {
                summary += ": " + entries.map { ProtocolText.display($0.ssid) }.joined(separator: ", ")
                fields.append(Field("networks", networks(entries.map(WiFiNetwork.init))))
            }
            return (summary, fields)
        case let o as ESPProvisioning.OpaquePayload:
            return (o.encrypted ? "\(o.endpoint): \(o.length) bytes, encrypted (security \(o.security.map(String.init) ?? "?"))"
                                : "\(o.endpoint): \(o.length) bytes",
                    [Field("endpoint", .string(o.endpoint)), Field("encrypted", .bool(o.encrypted)), Field("length", .int(o.length))])
        default:
            // A message type this table does not know (none yet: each protocol will describe its own).
            return ("message", [])
        }
    }

    /// Scan results as objects: ssid, bssid, channel, rssi, authMode, band (those known).
    static func networks(_ list: [WiFiNetwork]) -> FieldValue {
        .objects(list.map { n in
            var f = [Field("ssid", .string(n.ssidText))]
            if let b = n.bssidText { f.append(Field("bssid", .string(b))) }
            if let c = n.channel { f.append(Field("channel", .int(c))) }
            if let r = n.rssi { f.append(Field("rssi", .int(r))) }
            if let a = n.authMode { f.append(Field("authMode", .string(a))) }
            if let b = n.band { f.append(Field("band", .string(b))) }
            return f
        })
    }

    static func status(_ s: SpeakerOTA.Status) -> (String, [Field]) {
        let state = s.state?.description ?? "unknown state 0x\(Hex.string([s.rawState]))"
        var fields = [Field("state", .string(state)), Field("progress", .int(Int(s.progress))),
                      Field("downloadedKB", .int(Int(s.downloadedKB))), Field("totalKB", .int(Int(s.totalKB))), Field("rssi", .int(Int(s.rssi)))]
        var summary = state
        if s.state == .error || s.rawError != 0 {
            let error = s.error?.description ?? "unknown error 0x\(Hex.string([s.rawError]))"
            fields.append(Field("error", .string(error)))
            if let e = s.error {
                fields.append(Field("meaning", .string(Meanings.otaError(e))))
                if let r = e.retryable { fields.append(Field("retryable", .bool(r))) }
                summary += " \(error) (\(Meanings.otaError(e))\(e.retryable.map { $0 ? ", retryable" : ", not retryable" } ?? ""))"
            } else {
                summary += " \(error)"
            }
        }
        if s.state == .downloading || s.state == .verifying {
            summary += " \(s.progress) % (\(s.downloadedKB)/\(s.totalKB) KB)"
        }
        if s.rssi != 0 { summary += ", RSSI \(s.rssi) dBm" }
        return (summary, fields)
    }
}
