import ATT
import Emulator
import Profiles
import Replay

/// The speaker's values in replay: what they mean, which differences are the device's cadence,
/// its credentials and URL rebuilt for `--set`, and its download pace read from a recording.
extension SpeakerOTAProtocol: ReplayingProtocol {
    public static func describe(_ bytes: [UInt8], characteristic: BluetoothUUID, written: Bool) -> String? {
        switch characteristic {
        case SpeakerOTA.status:
            guard let s = SpeakerOTA.Status.decode(bytes).0 else { return "status of \(bytes.count) bytes (undecodable)" }
            return statusPhase(s) + (s.state == .downloading || s.progress > 0 ? " \(s.progress) %" : "")
        case SpeakerOTA.control:
            guard let cmd = SpeakerOTA.ControlCommand.decode(bytes).0 else { return "control of \(bytes.count) bytes" }
            return cmd.command.map { "command \($0)" } ?? "command 0x" + Replay.Hex.string([cmd.rawCommand])
        case SpeakerOTA.credentials:
            guard let nul = bytes.firstIndex(of: 0) else { return "credentials without NUL (\(bytes.count) bytes)" }
            return "credentials SSID \"\(ProtocolText.display(bytes[..<nul]))\", password of \(bytes.count - nul - 1) bytes"
        case SpeakerOTA.url:
            return "URL \(ProtocolText.display(bytes))"
        default:
            return nil
        }
    }

    /// A status's state and error, the protocol's meaning (`status DOWNLOADING error ...`).
    static func statusPhase(_ s: SpeakerOTA.Status) -> String {
        var text = "status \(s.state?.description ?? "state 0x" + Replay.Hex.string([s.rawState]))"
        if s.rawError != 0 { text += " error \(s.error?.description ?? "0x" + Replay.Hex.string([s.rawError]))" }
        return text
    }

    public static func sameMeaning(recorded: [UInt8], observed: [UInt8], characteristic: BluetoothUUID, progress: Bool) -> Bool {
        // Progress, KB and RSSI differ from run to run; state and error are the protocol's meaning.
        guard characteristic == SpeakerOTA.status, recorded.count == observed.count,
              let r = SpeakerOTA.Status.decode(recorded).0, let o = SpeakerOTA.Status.decode(observed).0 else { return false }
        return r.rawState == o.rawState && r.rawError == o.rawError
    }

    public static func progressReader(for characteristic: BluetoothUUID) -> (any ProgressReading)? {
        characteristic == SpeakerOTA.status ? StatusProgress() : nil
    }

    /// Statuses fold into the phases reached (state and error), with the download's percent.
    struct StatusProgress: ProgressReading {
        var style: ProgressStyle { .phases }

        mutating func read(_ value: [UInt8]) -> ProgressStep {
            // What does not decode is compared as it is: one phase per distinct value.
            guard let s = SpeakerOTA.Status.decode(value).0 else { return ProgressStep(phase: "undecodable status \(Replay.Hex.string(value))") }
            return ProgressStep(phase: SpeakerOTAProtocol.statusPhase(s), progress: s.state == .downloading ? Int(s.progress) : nil,
                                progressPhase: "downloading", terminal: s.rawError != 0 || s.state == .success)
        }
    }

    public static func rebuildCredentials(_ recorded: [UInt8], format: String, redacted: Bool,
                                          settings: CredentialSettings) throws(CredentialRebuildError) -> [UInt8]? {
        switch format {
        case "speaker-credentials":
            if redacted, settings.password == nil { throw .needs("password") }
            guard let nul = recorded.firstIndex(of: 0) else {
                guard let password = settings.password else { return recorded }
                return (settings.ssid ?? []) + [0] + password
            }
            return (settings.ssid ?? Array(recorded[..<nul])) + [0] + (settings.password ?? Array(recorded[(nul + 1)...]))
        case "speaker-url":
            if let url = settings.url { return url }
            if redacted { throw .needs("url") }
            return recorded
        default:
            return nil
        }
    }

    /// DOWNLOADING statuses say how big the image was and how often progress came.
    public static func readCadence(_ steps: [ReplayStep], into c: inout RecordedCadence) {
        func status(_ s: ReplayStep) -> SpeakerOTA.Status? {
            guard s.action == .notification, s.characteristic == SpeakerOTA.status.canonicalString,
                  let v = s.expect?.value.flatMap(Replay.Hex.bytes) else { return nil }
            return SpeakerOTA.Status.decode(v).0
        }
        let downloading = steps.compactMap { s -> (at: Int64, status: SpeakerOTA.Status)? in
            guard let st = status(s), st.state == .downloading else { return nil }
            return (s.at, st)
        }
        guard let last = downloading.last, last.status.totalKB > 0 else { return }
        c.firmwareKB = last.status.totalKB
        // What the statuses between START and the download said of the image size.
        let before = steps.compactMap { s -> UInt16? in
            guard let st = status(s), st.state == .wifiConnecting || st.state == .wifiConnected else { return nil }
            return st.totalKB
        }
        if !before.isEmpty { c.totalKBFromDownload = before.allSatisfy { $0 == 0 } }
        let gains = zip(downloading, downloading.dropFirst()).map { Int($1.status.downloadedKB) - Int($0.status.downloadedKB) }.filter { $0 > 0 }
        if let step = RecordedDevice.median(gains.map(Int64.init)) { c.progressEveryKB = Int(step) }
        if let first = downloading.first, last.at > first.at, last.status.downloadedKB > first.status.downloadedKB {
            let kb = Int64(last.status.downloadedKB - first.status.downloadedKB)
            c.downloadKBPerSecond = Int(max(1, kb * 1_000_000 / (last.at - first.at)))
        }
    }
}
