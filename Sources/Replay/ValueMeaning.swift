import ATT
import Profiles

/// What a value means, for scripts and reports, and whether two values mean the same: the
/// protocol's meaning, with what legitimately differs between runs (progress, downloaded KB,
/// RSSI) left out.
enum ValueMeaning {
    /// A short description of a value on a device protocol's characteristic, nil for others.
    static func describe(_ bytes: [UInt8], characteristic: BluetoothUUID?, written: Bool) -> String? {
        guard let c = characteristic else { return nil }
        switch c {
        case SpeakerOTA.status:
            guard let s = SpeakerOTA.Status.decode(bytes).0 else { return "status of \(bytes.count) bytes (undecodable)" }
            var text = "status \(s.state?.description ?? "state 0x" + Hex.string([s.rawState]))"
            if s.rawError != 0 { text += " error \(s.error?.description ?? "0x" + Hex.string([s.rawError]))" }
            if s.state == .downloading || s.progress > 0 { text += " \(s.progress) %" }
            return text
        case SpeakerOTA.control:
            guard let cmd = SpeakerOTA.ControlCommand.decode(bytes).0 else { return "control of \(bytes.count) bytes" }
            return cmd.command.map { "command \($0)" } ?? "command 0x" + Hex.string([cmd.rawCommand])
        case SpeakerOTA.credentials:
            guard let nul = bytes.firstIndex(of: 0) else { return "credentials without NUL (\(bytes.count) bytes)" }
            return "credentials SSID \"\(ProtocolText.display(bytes[..<nul]))\", password of \(bytes.count - nul - 1) bytes"
        case SpeakerOTA.url:
            return "URL \(ProtocolText.display(bytes))"
        case SensorScan.characteristic:
            return "\"\(ProtocolText.display(bytes))\""
        case NRF7.controlPoint where !written:
            guard let r = NRF7.Response.decode(bytes).0 else { return nil }
            var text = "response \(r.requestOpCode?.description ?? "?") \(r.status?.description ?? "?")"
            if let state = r.deviceStatus?.state { text += " state \(state)" }
            return text
        case NRF7.dataOut:
            guard let r = NRF7.Result.decode(bytes).0 else { return nil }
            if let record = r.scanRecord { return "network \"\(record.wifi?.ssidText ?? "")\"" }
            if let state = r.state { return "state \(state)\(r.reason.map { " \($0)" } ?? "")" }
            return nil
        default:
            return nil
        }
    }

    /// Whether an observed value is equivalent to the recorded one, and if not, why (one line).
    static func difference(recorded: [UInt8], observed: [UInt8], characteristic: BluetoothUUID?, progress: Bool = false) -> String? {
        if recorded == observed { return nil }
        switch characteristic {
        case NRF7.controlPoint? where progress:
            // The answer's operation, status and connection state are the protocol; the IP
            // address, BSSID, channel and scan parameters a status carries are the network's.
            if let r = NRF7.Response.decode(recorded).0, let o = NRF7.Response.decode(observed).0,
               r.requestOpCode == o.requestOpCode, r.status == o.status, r.deviceStatus?.state == o.deviceStatus?.state,
               r.deviceStatus?.provisioningInfo?.ssid == o.deviceStatus?.provisioningInfo?.ssid {
                return nil
            }
        case SpeakerOTA.status?:
            let r = SpeakerOTA.Status.decode(recorded).0
            let o = SpeakerOTA.Status.decode(observed).0
            guard let r, let o, recorded.count == observed.count else { break }
            // Progress, KB and RSSI differ from run to run; state and error are the protocol's meaning.
            if r.rawState == o.rawState && r.rawError == o.rawError { return nil }
        case SensorScan.characteristic?:
            if maskRSSI(recorded) == maskRSSI(observed) { return nil }
        default:
            break
        }
        let r = describe(recorded, characteristic: characteristic, written: false) ?? Hex.string(recorded)
        let o = describe(observed, characteristic: characteristic, written: false) ?? Hex.string(observed)
        return r == o ? "recorded \(Hex.string(recorded)), observed \(Hex.string(observed))" : "recorded \(r), observed \(o)"
    }

    /// A read whose value says what the device is rather than what the protocol did: a SIG
    /// characteristic (Device Name, firmware revision) or a descriptor.
    static func isInformational(_ characteristic: BluetoothUUID?) -> Bool {
        guard let c = characteristic else { return true }
        return c.uuid16 != nil
    }

    /// A scan chunk with the RSSI of each `SSID,RSSI` line replaced, so that signal strength
    /// (which changes with every scan) does not count as a difference.
    static func maskRSSI(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            out.append(bytes[i])
            if bytes[i] == UInt8(ascii: ",") {
                var j = i + 1
                if j < bytes.count, bytes[j] == UInt8(ascii: "-") { j += 1 }
                let digits = j
                while j < bytes.count, (0x30...0x39).contains(bytes[j]) { j += 1 }
                // A number that runs to the line's (or the chunk's) end is the RSSI.
                if j > digits, j == bytes.count || bytes[j] == 0x0A || bytes[j] == 0x0D {
                    out.append(UInt8(ascii: "#"))
                    i = j
                    continue
                }
            }
            i += 1
        }
        return out
    }
}
