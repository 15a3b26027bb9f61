import ATT
import Analysis
import Capture
import Profiles

extension SpeakerOTAProtocol: ProtocolAnalysis {
    public static var lane: TimelineEvent.Lane { .ota }

    public static func phaseTracker(device: Int) -> (any PhaseTracking)? { OTAPhaseTracker(device: device) }

    /// REBOOT: the device drops the link and comes back with the new firmware.
    public static func asksToReboot(_ message: any ProfileMessage) -> Bool {
        (message as? SpeakerOTA.ControlCommand)?.command == .reboot
    }

    /// Credentials and the URL are written whole; a codec problem on them (`credentials.*`,
    /// `url.*`) may be a value cut short.
    public static func isWholeValueWrite(_ e: ProfileEvent) -> Bool {
        [SpeakerOTA.credentials, SpeakerOTA.url].contains(e.characteristic)
            && (e.message is SpeakerOTA.Credentials || e.message is SpeakerOTA.FirmwareURL
                || e.problems.contains { $0.id.hasPrefix("credentials") || $0.id.hasPrefix("url") })
    }

    /// START's progress comes as OTA_STATUS notifications.
    public static func answersNeedSubscription(to message: any ProfileMessage) -> (characteristic: BluetoothUUID, name: String)? {
        (message as? SpeakerOTA.ControlCommand)?.command == .start ? (SpeakerOTA.status, "OTA_STATUS") : nil
    }

    /// The update's outcome, from the last status: failed, succeeded, rolled back, interrupted.
    public static func story(of events: TimelineEventSelection, in timeline: Timeline, device: Int, links: String) -> (TimelineDevice.Outcome, String)? {
        let statuses = events.compactMap { e in e.message(as: SpeakerOTA.Status.self) }
        guard let last = statuses.last else { return nil }
        let lastDisconnect = events.last { $0.kind == "link.disconnected" }
        let started = statuses.contains { $0.state == .wifiConnecting }
        let validated = events.contains { $0.message(as: SpeakerOTA.ControlCommand.self)?.command == .validate }
        let everSucceeded = statuses.contains { $0.state == .success }
        switch last.state {
        case .error?:
            let e = last.error.map { "\($0) (\($0.meaning))" } ?? "unknown error"
            return (.failed, "OTA update failed: ERROR \(e); \(links)")
        case .success?:
            return (.succeeded, "OTA update downloaded and verified (SUCCESS), not yet rebooted; \(links)")
        case .pendingVerify?:
            return (.incomplete, "new firmware booted (PENDING_VERIFY) but not validated: it will roll back; \(links)")
        case .idle? where everSucceeded || statuses.contains(where: { $0.state == .pendingVerify }):
            return validated ? (.succeeded, "OTA update installed and validated; \(links)")
                : (.failed, "the device rolled back to its old firmware (no VALIDATE); \(links)")
        case .downloading?, .verifying?, .wifiConnecting?, .wifiConnected?:
            let state = last.state?.description ?? "?"
            let at = last.state == .downloading ? " at \(last.progress) %" : ""
            let why = lastDisconnect.map { " when the link ended (\($0.fields.first { $0.name == "reason" }.map { f -> String in if case .string(let s) = f.value { s } else { "" } } ?? ""))" } ?? " when the capture ended"
            return (.interrupted, "OTA update interrupted in \(state)\(at)\(why); \(links)")
        default:
            return (started ? .incomplete : .unknown, "OTA \(started ? "started" : "not started"), last status \(last.state?.description ?? "unknown"); \(links)")
        }
    }

    // MARK: Diagnoses

    public static var diagnoses: [Diagnoses.Rule] {
        [
            Diagnoses.Rule(id: "ota.wifi-join-failed", severity: .error, title: "The device could not join the Wi-Fi network",
                 advice: "Check the password; the speaker's ESP32 joins 2.4 GHz networks only.", find: wifiJoinFailed),
            Diagnoses.Rule(id: "ota.http-connect-failed", severity: .error, title: "The device could not reach the firmware server",
                 advice: "Check that the server is reachable from the device's network (DNS, firewall, captive portal) and that the URL's host and port are right; retryable.",
                 find: { c in otaErrors(c, [.httpConnect]) }),
            Diagnoses.Rule(id: "ota.http-status-failed", severity: .error, title: "The firmware server answered with an error",
                 advice: "Check that the firmware file exists at that URL and that the server does not need authentication; not fixed by retrying as is.",
                 find: { c in otaErrors(c, [.httpResponse]) }),
            Diagnoses.Rule(id: "ota.image-rejected", severity: .error, title: "The firmware image was rejected",
                 advice: "The image failed verification or could not be written: check the build and signature of the image; retrying the same image will not help.",
                 find: { c in otaErrors(c, [.verify, .write, .invalidImage]) }),
            Diagnoses.Rule(id: "ota.error", severity: .error, title: "The update ended in an error",
                 advice: "See the error's meaning; follow the protocol's order: credentials, URL, then START.",
                 find: { c in otaErrors(c, [.download, .noCredentials, .noURL, .cancelled, .rollbackFailed]) }),
            Diagnoses.Rule(id: "ota.download-stalled", severity: .error, title: "The download stalled",
                 advice: "No progress for longer than 15 s: the device's Wi-Fi link or the server stalled. Check RSSI at the device and the server's throughput; the download is retryable.",
                 find: downloadStalled),
            Diagnoses.Rule(id: "ota.link-dropped", severity: .error, title: "The link dropped while the update was running",
                 advice: "The phone lost the device mid-update; see the disconnect reason. Keep the phone close and the app in the foreground, and reconnect to read the status: the device may have carried on.",
                 find: linkDroppedDuringUpdate),
            Diagnoses.Rule(id: "ota.not-validated", severity: .warning, title: "PENDING_VERIFY was never validated",
                 advice: "The app must send VALIDATE after it reconnects to the rebooted device; without it the device rolls back to the old firmware by itself.",
                 find: notValidated),
            Diagnoses.Rule(id: "ota.state-not-allowed", severity: .warning, title: "A status change the protocol does not allow",
                 advice: "The device's state machine skipped or reversed a step: a firmware bug, or notifications lost in between.",
                 find: stateNotAllowed),
            Diagnoses.Rule(id: "ota.progress-backwards", severity: .warning, title: "Download progress went backwards",
                 advice: "The device restarted the download, or statuses arrived out of order: check for a second START or a device reset.",
                 find: progressBackwards),
            Diagnoses.Rule(id: "ota.url-plain-http", severity: .warning, title: "The firmware URL is plain http",
                 advice: "Use https so the image cannot be replaced on the way; the device must still verify the image's signature.",
                 find: plainHTTP),
        ]
    }

    /// No progress for longer than this during a download is a stall.
    static let stallThreshold: Int64 = 15_000_000

    private static func status(_ e: TimelineEvent) -> SpeakerOTA.Status? { e.message(as: SpeakerOTA.Status.self) }

    private static func wifiJoinFailed(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        var hits: [Diagnoses.Hit] = []
        for (d, events) in c.eventsByDevice(carrying: [SpeakerOTA.Credentials.self, SpeakerOTA.Status.self]) {
            var ssid: String?
            var rssi: Int8?
            var joinStart: Int64?
            for e in events {
                if let cred = e.message(as: SpeakerOTA.Credentials.self) { ssid = ProtocolText.display(cred.ssid) }
                guard let s = status(e) else { continue }
                if s.rssi != 0 { rssi = s.rssi }
                if s.state == .wifiConnecting, joinStart == nil { joinStart = e.time }
                guard s.state == .error, s.error == .wifiConnect else { continue }
                var evidence = "ERROR WIFI_CONNECT at \(c.seconds(e.time))"
                if let j = joinStart { evidence += ", \(c.duration(e.time - j)) after WIFI_CONNECTING" }
                evidence += "; SSID \(ssid.map { "\"\($0)\"" } ?? "unknown (credentials not in the capture)")"
                evidence += rssi.map { "; RSSI \($0) dBm" } ?? "; RSSI not reported"
                var advice = "Check the Wi-Fi password. The speaker's ESP32 joins 2.4 GHz networks only"
                let lower = (ssid ?? "").lowercased()
                if lower.contains("5g") || lower.contains("5 g") || lower.contains("5ghz") {
                    advice += ": \"\(ssid ?? "")\" looks like a 5 GHz network: give the 2.4 GHz SSID."
                } else {
                    advice += ": a 5 GHz-only SSID fails this way."
                }
                if let r = rssi, r < -75 { advice += " RSSI \(r) dBm is weak: move the speaker closer to the access point." }
                hits.append(Diagnoses.Hit(device: d, time: e.time, frames: e.frames, evidence: evidence, advice: advice))
                joinStart = nil
            }
        }
        return hits
    }

    /// The ERROR statuses with a code in `codes`: each the first of its run of the same code.
    /// Four rules ask, for different codes: the statuses are walked once for all of them.
    private static func otaErrors(_ c: Diagnoses.Context, _ codes: Set<SpeakerOTA.ErrorCode>) -> [Diagnoses.Hit] {
        c.shared("speaker-ota.errors") { allOtaErrors(c) }.filter { codes.contains($0.code) }.map(\.hit)
    }

    private static func allOtaErrors(_ c: Diagnoses.Context) -> [(code: SpeakerOTA.ErrorCode, hit: Diagnoses.Hit)] {
        var hits: [(code: SpeakerOTA.ErrorCode, hit: Diagnoses.Hit)] = []
        for (d, events) in c.eventsByDevice(carrying: [SpeakerOTA.FirmwareURL.self, SpeakerOTA.Status.self]) {
            var url: SpeakerOTA.FirmwareURL?
            var lastError: SpeakerOTA.ErrorCode?
            for e in events {
                if let u = e.message(as: SpeakerOTA.FirmwareURL.self) { url = u }
                guard let s = status(e) else { continue }
                guard s.state == .error, let code = s.error else { lastError = nil; continue }
                defer { lastError = code }
                guard lastError != code else { continue }
                var evidence = "ERROR \(code) at \(c.seconds(e.time)): \(code.meaning)"
                if let r = code.retryable { evidence += r ? "; retryable" : "; not retryable" }
                if code == .httpConnect || code == .httpResponse {
                    if let u = url {
                        evidence += "; URL scheme \(u.scheme ?? "none"), host \(u.host.map { ProtocolText.display($0) } ?? "unknown")"
                    } else {
                        evidence += "; URL not in the capture"
                    }
                }
                hits.append((code, Diagnoses.Hit(device: d, time: e.time, frames: e.frames, evidence: evidence)))
            }
        }
        return hits
    }

    private static func downloadStalled(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        var hits: [Diagnoses.Hit] = []
        for (d, events) in c.eventsByDevice(carrying: [SpeakerOTA.Status.self], kinds: ["link.disconnected"]) {
            var lastChange: (time: Int64, frame: Int, percent: Int)?
            var reported = false
            func check(_ t: Int64, _ frames: [Int], _ why: String) {
                guard let l = lastChange, !reported, t - l.time > stallThreshold else { return }
                reported = true
                hits.append(Diagnoses.Hit(device: d, time: l.time, frames: [l.frame] + frames,
                                evidence: "progress stayed at \(l.percent) % for \(c.duration(t - l.time)) (from \(c.seconds(l.time))), then \(why)"))
            }
            for e in events {
                if e.kind == "link.disconnected", lastChange != nil {
                    check(e.time, e.frames, "the link dropped")
                    lastChange = nil
                    continue
                }
                guard let s = status(e) else { continue }
                if s.state == .downloading {
                    if lastChange?.percent != Int(s.progress) {
                        check(e.time, e.frames, "it moved on to \(s.progress) %")
                        lastChange = (e.time, e.frames.last ?? 0, Int(s.progress))
                        reported = false
                    }
                } else if lastChange != nil {
                    check(e.time, e.frames, "\(s.state?.description ?? "another state")\(s.state == .error ? " \(s.error?.description ?? "")" : "")")
                    lastChange = nil
                }
            }
            if let l = lastChange, let end = c.timeline.lastTime { check(end, [], "the capture ended"); _ = l }
        }
        return hits
    }

    private static func linkDroppedDuringUpdate(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        var hits: [Diagnoses.Hit] = []
        let running: Set<SpeakerOTA.State> = [.wifiConnecting, .wifiConnected, .downloading, .verifying]
        for (d, events) in c.eventsByDevice(carrying: [SpeakerOTA.Status.self], kinds: ["link.disconnected"]) {
            var state: SpeakerOTA.State?
            var progress = 0
            for e in events {
                if let s = status(e) { state = s.state; progress = Int(s.progress) }
                guard e.kind == "link.disconnected", let st = state, running.contains(st),
                      let conn = e.connection, let reason = c.timeline.connections[conn].disconnectReason else { continue }
                hits.append(Diagnoses.Hit(device: d, time: e.time, frames: e.frames,
                                evidence: "link ended in \(st)\(st == .downloading ? " at \(progress) %" : "") at \(c.seconds(e.time)): \(reason.name) (0x\(Hex.string([reason.rawValue]))), \(c.timeline.connections[conn].disconnectMeaning ?? Meanings.disconnect(reason))"))
                state = nil
            }
        }
        return hits
    }

    private static func notValidated(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        var hits: [Diagnoses.Hit] = []
        for (d, events) in c.eventsByDevice(carrying: [SpeakerOTA.Status.self, SpeakerOTA.ControlCommand.self], kinds: ["link.disconnected"]) {
            var pending: TimelineEvent?
            var rolledBack: TimelineEvent?
            for e in events {
                if let s = status(e) {
                    if s.state == .pendingVerify, pending == nil { pending = e }
                    if s.state == .idle, pending != nil { rolledBack = e }
                }
                if let cmd = e.message(as: SpeakerOTA.ControlCommand.self), cmd.command == .validate || cmd.command == .rollback { pending = nil; rolledBack = nil }
                if e.kind == "link.disconnected", let p = pending {
                    hits.append(Diagnoses.Hit(device: d, time: p.time, frames: p.frames + e.frames,
                                    evidence: "PENDING_VERIFY at \(c.seconds(p.time)); the link ended at \(c.seconds(e.time)) without VALIDATE" +
                                    (rolledBack.map { "; the device went back to IDLE at \(c.seconds($0.time)): it rolled back" } ?? "")))
                    pending = nil
                    rolledBack = nil
                }
            }
            if let p = pending {
                hits.append(Diagnoses.Hit(device: d, time: p.time, frames: p.frames,
                                evidence: "PENDING_VERIFY at \(c.seconds(p.time)) and no VALIDATE before the capture ended" +
                                (rolledBack.map { "; the device went back to IDLE at \(c.seconds($0.time)): it rolled back" } ?? "")))
            }
        }
        return hits
    }

    private static func stateNotAllowed(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        var hits: [Diagnoses.Hit] = []
        for (d, events) in c.eventsByDevice(carrying: [SpeakerOTA.Status.self]) {
            var last: SpeakerOTA.State?
            for e in events {
                guard let s = status(e), let state = s.state else { continue }
                // A reboot resets the state machine: the status after a reconnection starts afresh.
                if let l = last, !state.allowed(after: l) {
                    hits.append(Diagnoses.Hit(device: d, time: e.time, frames: e.frames, evidence: "\(l) then \(state) at \(c.seconds(e.time))"))
                }
                last = state
            }
        }
        return hits
    }

    private static func progressBackwards(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        var hits: [Diagnoses.Hit] = []
        for (d, events) in c.eventsByDevice(carrying: [SpeakerOTA.Status.self]) {
            var last: (Int, TimelineEvent)?
            for e in events {
                guard let s = status(e) else { continue }
                guard s.state == .downloading else { if s.state != .verifying { last = nil }; continue }
                if let (p, prev) = last, Int(s.progress) < p {
                    hits.append(Diagnoses.Hit(device: d, time: e.time, frames: prev.frames + e.frames,
                                    evidence: "progress \(p) % at \(c.seconds(prev.time)), then \(s.progress) % at \(c.seconds(e.time))"))
                }
                last = (Int(s.progress), e)
            }
        }
        return hits
    }

    private static func plainHTTP(_ c: Diagnoses.Context) -> [Diagnoses.Hit] {
        c.events(carrying: SpeakerOTA.FirmwareURL.self).compactMap { e in
            guard let u = e.message(as: SpeakerOTA.FirmwareURL.self), u.scheme?.lowercased() == "http" else { return nil }
            return Diagnoses.Hit(device: e.device, time: e.time, frames: e.frames, evidence: "URL \(u.display(reveal: false)) at \(c.seconds(e.time))")
        }
    }

}

extension SpeakerOTA.State {
    /// The OTA states the device team allows after each state (PROTOCOLS.md §3). ERROR and IDLE
    /// (cancel, rollback, validate) may follow anything.
    static let allowedNext: [SpeakerOTA.State: Set<SpeakerOTA.State>] = [
        .idle: [.idle, .credentialsReceived, .urlReceived, .pendingVerify],
        .credentialsReceived: [.credentialsReceived, .urlReceived, .wifiConnecting],
        .urlReceived: [.credentialsReceived, .urlReceived, .wifiConnecting],
        .wifiConnecting: [.wifiConnecting, .wifiConnected],
        .wifiConnected: [.wifiConnected, .downloading],
        .downloading: [.downloading, .verifying],
        .verifying: [.verifying, .success],
        .success: [.success, .pendingVerify],
        .pendingVerify: [.pendingVerify],
        .error: [.error, .credentialsReceived, .urlReceived, .wifiConnecting],
    ]

    func allowed(after previous: SpeakerOTA.State) -> Bool {
        if self == .error || self == .idle { return true }
        return Self.allowedNext[previous]?.contains(self) ?? true
    }
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
                fields.append(Field("meaning", .string(e.meaning)))
                if let r = e.retryable { fields.append(Field("retryable", .bool(r))) }
                summary += " \(errorName) (\(e.meaning)\(e.retryable.map { $0 ? ", retryable" : ", not retryable" } ?? ""))"
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

extension SpeakerOTA.ErrorCode {
    /// What the error means to someone debugging a field failure (PROTOCOLS.md §3).
    var meaning: String {
        switch self {
        case .none: "no error"
        case .wifiConnect: "the device could not join the Wi-Fi network"
        case .httpConnect: "the device could not reach the firmware server"
        case .httpResponse: "the firmware server answered with an error status"
        case .download: "the download failed part way"
        case .verify: "the downloaded image failed verification"
        case .write: "writing the image to flash failed"
        case .noCredentials: "START or URL without Wi-Fi credentials first"
        case .noURL: "START without a firmware URL first"
        case .invalidImage: "the image is not a valid firmware image"
        case .cancelled: "the update was cancelled"
        case .rollbackFailed: "going back to the previous image failed"
        }
    }
}
