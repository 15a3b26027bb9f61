import Capture
import Profiles
import Report

// How `gattlab decode` shows the speaker's OTA messages.

extension SpeakerOTA.Credentials: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String {
        "OTA credentials SSID \"\(ssidText)\" password \(password.decodeText(reveal: reveal))"
    }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.string("ssid", ssidText)
        json.string("password", password.decodeJSONText(reveal: reveal))
    }
}

extension SpeakerOTA.FirmwareURL: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String { "OTA URL \(display(reveal: reveal))" }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.string("url", display(reveal: reveal))
        json.string("scheme", scheme)
    }
}

extension SpeakerOTA.ControlCommand: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String {
        "OTA control \(command?.description ?? "0x" + Hex.string([rawCommand])) (parameter \(parameter))"
    }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.int("command", Int(rawCommand))
        json.string("commandName", command?.description)
        json.int("parameter", Int(parameter))
    }
}

extension SpeakerOTA.Status: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String {
        var t = "OTA status \(state?.description ?? "state 0x" + Hex.string([rawState]))"
        if rawError != 0 || state == .error {
            t += " error \(error?.description ?? "0x" + Hex.string([rawError]))"
            if let r = error?.retryable { t += r ? " (retryable)" : " (not retryable)" }
        }
        if state == .downloading || progress > 0 || totalKB > 0 {
            t += " \(progress)% \(downloadedKB)/\(totalKB) KB"
        }
        if rssi != 0 { t += " RSSI \(rssi) dBm" }
        return t
    }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.int("state", Int(rawState))
        json.string("stateName", state?.description)
        json.int("error", Int(rawError))
        json.string("errorName", error?.description)
        json.bool("retryable", error?.retryable)
        json.int("progress", Int(progress))
        json.int("downloadedKB", Int(downloadedKB))
        json.int("totalKB", Int(totalKB))
        json.int("rssi", Int(rssi))
    }
}
