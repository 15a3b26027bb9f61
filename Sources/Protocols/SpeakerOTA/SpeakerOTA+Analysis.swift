import Analysis
import Capture
import Profiles

extension SpeakerOTAProtocol: ProtocolAnalysis {
    public static var lane: TimelineEvent.Lane { .ota }
}

// MARK: Timeline lines

extension SpeakerOTA.Credentials: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        let ssid = ProtocolText.display(ssid)
        return ("credentials for \"\(ssid)\" (password \(password.count) bytes)",
                [Field("ssid", .string(ssid)), Field("password", .secret(password))])
    }
}

extension SpeakerOTA.FirmwareURL: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        let shown = display(reveal: false)
        let url: FieldValue = secretParts.isEmpty ? .string(shown) : .partlySecret(redacted: shown, full: Secret(bytes, label: "firmware URL"))
        var fields = [Field("url", url)]
        if let scheme { fields.append(Field("scheme", .string(scheme))) }
        if let host { fields.append(Field("host", .string(ProtocolText.display(host)))) }
        return ("firmware URL \(shown)", fields)
    }
}

extension SpeakerOTA.ControlCommand: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        let name = command?.description ?? "unknown command 0x\(Hex.string([rawCommand]))"
        return (name, [Field("command", .string(name)), Field("parameter", .int(Int(parameter)))])
    }
}

extension SpeakerOTA.Status: TimelineDescribing {
    public func timelineDescription() -> (summary: String, fields: [Field]) {
        let stateName = state?.description ?? "unknown state 0x\(Hex.string([rawState]))"
        var fields = [Field("state", .string(stateName)), Field("progress", .int(Int(progress))),
                      Field("downloadedKB", .int(Int(downloadedKB))), Field("totalKB", .int(Int(totalKB))), Field("rssi", .int(Int(rssi)))]
        var summary = stateName
        if state == .error || rawError != 0 {
            let errorName = error?.description ?? "unknown error 0x\(Hex.string([rawError]))"
            fields.append(Field("error", .string(errorName)))
            if let e = error {
                fields.append(Field("meaning", .string(Meanings.otaError(e))))
                if let r = e.retryable { fields.append(Field("retryable", .bool(r))) }
                summary += " \(errorName) (\(Meanings.otaError(e))\(e.retryable.map { $0 ? ", retryable" : ", not retryable" } ?? ""))"
            } else {
                summary += " \(errorName)"
            }
        }
        if state == .downloading || state == .verifying {
            summary += " \(progress) % (\(downloadedKB)/\(totalKB) KB)"
        }
        if rssi != 0 { summary += ", RSSI \(rssi) dBm" }
        return (summary, fields)
    }
}
