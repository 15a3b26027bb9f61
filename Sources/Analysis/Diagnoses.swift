import ATT
import Capture
import HCI
import Profiles

/// The rule engine: each rule has a stable id, a severity, a title and advice, and finds its
/// evidence in a finished timeline. `Diagnoses.rules` is the catalogue (README lists it).
public enum Diagnoses {
    public struct Rule: Sendable {
        public var id: String
        public var severity: Finding.Severity
        public var title: String
        public var advice: String
        let find: @Sendable (Context) -> [Hit]
    }

    /// One place a rule fired. `advice` replaces the rule's when the evidence sharpens it.
    struct Hit {
        var device: Int?
        var time: Int64
        var frames: [Int]
        var evidence: String
        var advice: String? = nil
        var title: String? = nil
        /// A more precise id than the rule's (`protocol.status.short`).
        var id: String? = nil
    }

    /// What the builder knows beyond the events.
    struct Facts {
        var truncatedWrites: [(connection: Int, frame: Int, time: Int64, characteristic: String, length: Int, mtu: Int)]
        var subscribed: [Int: Set<BluetoothUUID>]
        var lastStatus: [Int: (SpeakerOTA.Status?, Int64)]
    }

    struct Context {
        var timeline: Timeline
        var facts: Facts
        /// Each device's events, grouped once: rules walk devices, and a capture may hold thousands.
        let byDevice: [Int: [TimelineEvent]]

        init(timeline: Timeline, facts: Facts) {
            self.timeline = timeline
            self.facts = facts
            byDevice = Dictionary(grouping: timeline.events.filter { $0.device != nil }) { $0.device ?? -1 }
        }

        var events: [TimelineEvent] { timeline.events }
        func seconds(_ t: Int64) -> String { TimelineBuilder.seconds(t - (timeline.firstTime ?? t)) }
        func events(of device: Int) -> [TimelineEvent] { byDevice[device] ?? [] }
    }

    /// No progress for longer than this during a download is a stall.
    public static let stallThreshold: Int64 = 15_000_000

    static func run(on timeline: Timeline, facts: Facts) -> [Finding] {
        let context = Context(timeline: timeline, facts: facts)
        var findings: [Finding] = []
        for rule in rules {
            for hit in rule.find(context) {
                findings.append(Finding(id: hit.id ?? rule.id, severity: rule.severity, title: hit.title ?? rule.title, device: hit.device,
                                        time: hit.time, frames: hit.frames, evidence: hit.evidence, advice: hit.advice ?? rule.advice))
            }
        }
        return findings.sorted { ($0.time, $0.id) < ($1.time, $1.id) }
    }

    static func status(_ e: TimelineEvent) -> SpeakerOTA.Status? {
        if let s = e.message as? SpeakerOTA.Status { return s }
        return nil
    }

    // MARK: The catalogue

    public static let rules: [Rule] = [
        Rule(id: "ota.wifi-join-failed", severity: .error, title: "The device could not join the Wi-Fi network",
             advice: "Check the password; the speaker's ESP32 joins 2.4 GHz networks only.", find: wifiJoinFailed),
        Rule(id: "ota.http-connect-failed", severity: .error, title: "The device could not reach the firmware server",
             advice: "Check that the server is reachable from the device's network (DNS, firewall, captive portal) and that the URL's host and port are right; retryable.",
             find: { c in otaErrors(c, [.httpConnect]) }),
        Rule(id: "ota.http-status-failed", severity: .error, title: "The firmware server answered with an error",
             advice: "Check that the firmware file exists at that URL and that the server does not need authentication; not fixed by retrying as is.",
             find: { c in otaErrors(c, [.httpResponse]) }),
        Rule(id: "ota.image-rejected", severity: .error, title: "The firmware image was rejected",
             advice: "The image failed verification or could not be written: check the build and signature of the image; retrying the same image will not help.",
             find: { c in otaErrors(c, [.verify, .write, .invalidImage]) }),
        Rule(id: "ota.error", severity: .error, title: "The update ended in an error",
             advice: "See the error's meaning; follow the protocol's order: credentials, URL, then START.",
             find: { c in otaErrors(c, [.download, .noCredentials, .noURL, .cancelled, .rollbackFailed]) }),
        Rule(id: "ota.download-stalled", severity: .error, title: "The download stalled",
             advice: "No progress for longer than 15 s: the device's Wi-Fi link or the server stalled. Check RSSI at the device and the server's throughput; the download is retryable.",
             find: downloadStalled),
        Rule(id: "ota.link-dropped", severity: .error, title: "The link dropped while the update was running",
             advice: "The phone lost the device mid-update; see the disconnect reason. Keep the phone close and the app in the foreground, and reconnect to read the status: the device may have carried on.",
             find: linkDroppedDuringUpdate),
        Rule(id: "ota.not-validated", severity: .warning, title: "PENDING_VERIFY was never validated",
             advice: "The app must send VALIDATE after it reconnects to the rebooted device; without it the device rolls back to the old firmware by itself.",
             find: notValidated),
        Rule(id: "ota.state-not-allowed", severity: .warning, title: "A status change the protocol does not allow",
             advice: "The device's state machine skipped or reversed a step: a firmware bug, or notifications lost in between.",
             find: stateNotAllowed),
        Rule(id: "ota.progress-backwards", severity: .warning, title: "Download progress went backwards",
             advice: "The device restarted the download, or statuses arrived out of order: check for a second START or a device reset.",
             find: progressBackwards),
        Rule(id: "ota.url-plain-http", severity: .warning, title: "The firmware URL is plain http",
             advice: "Use https so the image cannot be replaced on the way; the device must still verify the image's signature.",
             find: plainHTTP),
        Rule(id: "att.write-truncated", severity: .error, title: "A value longer than MTU-3 was sent as a plain write",
             advice: "A Write Request carries at most MTU-3 bytes: the rest was cut. Use a long write (Prepare/Execute Write), or exchange a larger MTU first.",
             find: truncatedWrites),
        Rule(id: "att.needs-encryption", severity: .info, title: "The device needs an encrypted link",
             advice: "Insufficient Encryption: the phone should encrypt the link with its bond (or pair if it has none) and repeat the request. If it happens on every connection, one side lost the bond: remove it on the phone and pair again.",
             find: { c in securityRefusals(c, .encryption) }),
        Rule(id: "att.needs-authentication", severity: .info, title: "The device needs an authenticated link",
             advice: "Insufficient Authentication: on a link that is not encrypted the phone must pair; on one already encrypted the device wants a key made with MITM protection (passkey or numeric comparison), not Just Works.",
             find: { c in securityRefusals(c, .authentication) }),
        Rule(id: "att.key-too-short", severity: .warning, title: "The encryption key is shorter than the device requires",
             advice: "Insufficient Encryption Key Size: the link was encrypted with a key shorter than the device accepts. Pair again with a 16-byte key; a controller that negotiates 7-byte keys is what the KNOB attack looks like.",
             find: { c in securityRefusals(c, .encryptionKeySize) }),
        Rule(id: "att.not-authorized", severity: .warning, title: "The device refused the request: not authorized",
             advice: "Insufficient Authorization is the device application's own refusal (a login, a button press, a session or an allow-list it keeps), not a pairing problem: pairing again will not help. Do first what the device's protocol asks.",
             find: { c in securityRefusals(c, .authorization) }),
        Rule(id: "gatt.not-subscribed", severity: .warning, title: "Answers expected on a characteristic the phone never subscribed to",
             advice: "Write the characteristic's CCCD (enable notifications or indications) before sending the request: the device sends its answers only to subscribers.",
             find: notSubscribed),
        Rule(id: "scan.no-end", severity: .warning, title: "A scan answer ended without END",
             advice: "The answer is truncated (link dropped, a timeout, or a new SCAN); the app should fall back to the networks it has and may repeat the scan.",
             find: scanWithoutEnd),
        Rule(id: "wifi.wrong-password", severity: .error, title: "The device rejected the Wi-Fi password",
             advice: "The access point refused the passphrase (nRF7 AUTH_ERROR, ESP AuthError): have the user type it again; check its case, and that the network is WPA2/WPA3 personal, not enterprise.",
             find: { c in Provisioning.hits(c, .wrongPassword) }),
        Rule(id: "wifi.ap-not-found", severity: .error, title: "The device did not find the Wi-Fi network",
             advice: "No access point with that SSID answered (nRF7 NETWORK_NOT_FOUND, ESP NetworkNotFound): check the spelling (SSIDs are case-sensitive) and that the device is in range; offer the networks from the device's own scan instead of typed names.",
             find: { c in Provisioning.hits(c, .apNotFound) }),
        Rule(id: "wifi.5ghz-only-ssid", severity: .error, title: "The SSID is on 5 GHz only and the device joins 2.4 GHz",
             advice: "The device's radio (ESP32, or firmware limited to 2.4 GHz) cannot see a 5 GHz-only network: give it the router's 2.4 GHz SSID, or enable 2.4 GHz (band steering with one SSID for both bands) on the access point.",
             find: { c in Provisioning.hits(c, .fiveGHzOnly) }),
        Rule(id: "nrf7.connection-failed", severity: .error, title: "The nRF7 device could not connect to Wi-Fi",
             advice: "AUTH_ERROR: wrong passphrase; NETWORK_NOT_FOUND: SSID not in range or misspelled; FAIL_IP: no DHCP answer.",
             find: nrf7Failed),
        Rule(id: "nrf7.request-failed", severity: .error, title: "The nRF7 device refused a request",
             advice: "INVALID_ARGUMENT: a field out of range (SSID over 32 bytes, passphrase over 64); INVALID_PROTO: the message did not parse.",
             find: nrf7Refused),
        Rule(id: "nrf7.response-missing", severity: .warning, title: "An nRF7 request got no Response",
             advice: "Zephyr does not send an indication longer than MTU-3: at a small MTU a Response with the device status is lost. Exchange a larger MTU (the nRF7 app asks for 498) before provisioning.",
             find: nrf7ResponseMissing),
        Rule(id: "esp.connection-failed", severity: .error, title: "The ESP device could not connect to Wi-Fi",
             advice: "AuthError: wrong passphrase; NetworkNotFound: SSID not in range, misspelled, or 5 GHz only (the ESP32 has a 2.4 GHz radio).",
             find: espFailed),
        Rule(id: "esp.session-refused", severity: .error, title: "The ESP device refused the provisioning session",
             advice: "With security 1 this means the proof of possession (PoP) did not match the device's; check the PoP on the device's label.",
             find: espSessionRefused),
        Rule(id: "link.never-established", severity: .error, title: "The connection was never established",
             advice: "The device did not answer the connection request: out of range, advertising stopped, or already connected to another phone.",
             find: neverEstablished),
        Rule(id: "protocol.problem", severity: .warning, title: "A message the protocol does not allow",
             advice: "See the problem's id: the device or app sent bytes outside the protocol's layout.",
             find: protocolProblems),
    ]

    // MARK: OTA rules

    static func wifiJoinFailed(_ c: Context) -> [Hit] {
        var hits: [Hit] = []
        for d in c.timeline.devices.indices {
            var ssid: String?
            var rssi: Int8?
            var joinStart: Int64?
            for e in c.events(of: d) {
                if let cred = e.message as? SpeakerOTA.Credentials { ssid = ProtocolText.display(cred.ssid) }
                guard let s = status(e) else { continue }
                if s.rssi != 0 { rssi = s.rssi }
                if s.state == .wifiConnecting, joinStart == nil { joinStart = e.time }
                guard s.state == .error, s.error == .wifiConnect else { continue }
                var evidence = "ERROR WIFI_CONNECT at \(c.seconds(e.time))"
                if let j = joinStart { evidence += ", \(TimelineBuilder.seconds(e.time - j)) after WIFI_CONNECTING" }
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
                hits.append(Hit(device: d, time: e.time, frames: e.frames, evidence: evidence, advice: advice))
                joinStart = nil
            }
        }
        return hits
    }

    static func otaErrors(_ c: Context, _ codes: Set<SpeakerOTA.ErrorCode>) -> [Hit] {
        var hits: [Hit] = []
        for d in c.timeline.devices.indices {
            var url: SpeakerOTA.FirmwareURL?
            var lastError: SpeakerOTA.ErrorCode?
            for e in c.events(of: d) {
                if let u = e.message as? SpeakerOTA.FirmwareURL { url = u }
                guard let s = status(e) else { continue }
                guard s.state == .error, let code = s.error else { lastError = nil; continue }
                defer { lastError = code }
                guard codes.contains(code), lastError != code else { continue }
                var evidence = "ERROR \(code) at \(c.seconds(e.time)): \(Meanings.otaError(code))"
                if let r = code.retryable { evidence += r ? "; retryable" : "; not retryable" }
                if code == .httpConnect || code == .httpResponse {
                    if let u = url {
                        evidence += "; URL scheme \(u.scheme ?? "none"), host \(u.host.map { ProtocolText.display($0) } ?? "unknown")"
                    } else {
                        evidence += "; URL not in the capture"
                    }
                }
                hits.append(Hit(device: d, time: e.time, frames: e.frames, evidence: evidence))
            }
        }
        return hits
    }

    static func downloadStalled(_ c: Context) -> [Hit] {
        var hits: [Hit] = []
        for d in c.timeline.devices.indices {
            var lastChange: (time: Int64, frame: Int, percent: Int)?
            var reported = false
            func check(_ t: Int64, _ frames: [Int], _ why: String) {
                guard let l = lastChange, !reported, t - l.time > stallThreshold else { return }
                reported = true
                hits.append(Hit(device: d, time: l.time, frames: [l.frame] + frames,
                                evidence: "progress stayed at \(l.percent) % for \(TimelineBuilder.seconds(t - l.time)) (from \(c.seconds(l.time))), then \(why)"))
            }
            for e in c.events(of: d) {
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

    static func linkDroppedDuringUpdate(_ c: Context) -> [Hit] {
        var hits: [Hit] = []
        let running: Set<SpeakerOTA.State> = [.wifiConnecting, .wifiConnected, .downloading, .verifying]
        for d in c.timeline.devices.indices {
            var state: SpeakerOTA.State?
            var progress = 0
            for e in c.events(of: d) {
                if let s = status(e) { state = s.state; progress = Int(s.progress) }
                guard e.kind == "link.disconnected", let st = state, running.contains(st),
                      let conn = e.connection, let reason = c.timeline.connections[conn].disconnectReason else { continue }
                hits.append(Hit(device: d, time: e.time, frames: e.frames,
                                evidence: "link ended in \(st)\(st == .downloading ? " at \(progress) %" : "") at \(c.seconds(e.time)): \(reason.name) (0x\(Hex.string([reason.rawValue]))), \(c.timeline.connections[conn].disconnectMeaning ?? Meanings.disconnect(reason))"))
                state = nil
            }
        }
        return hits
    }

    static func notValidated(_ c: Context) -> [Hit] {
        var hits: [Hit] = []
        for d in c.timeline.devices.indices {
            var pending: TimelineEvent?
            var rolledBack: TimelineEvent?
            for e in c.events(of: d) {
                if let s = status(e) {
                    if s.state == .pendingVerify, pending == nil { pending = e }
                    if s.state == .idle, pending != nil { rolledBack = e }
                }
                if let cmd = e.message as? SpeakerOTA.ControlCommand, cmd.command == .validate || cmd.command == .rollback { pending = nil; rolledBack = nil }
                if e.kind == "link.disconnected", let p = pending {
                    hits.append(Hit(device: d, time: p.time, frames: p.frames + e.frames,
                                    evidence: "PENDING_VERIFY at \(c.seconds(p.time)); the link ended at \(c.seconds(e.time)) without VALIDATE" +
                                    (rolledBack.map { "; the device went back to IDLE at \(c.seconds($0.time)): it rolled back" } ?? "")))
                    pending = nil
                    rolledBack = nil
                }
            }
            if let p = pending {
                hits.append(Hit(device: d, time: p.time, frames: p.frames,
                                evidence: "PENDING_VERIFY at \(c.seconds(p.time)) and no VALIDATE before the capture ended" +
                                (rolledBack.map { "; the device went back to IDLE at \(c.seconds($0.time)): it rolled back" } ?? "")))
            }
        }
        return hits
    }

    static func stateNotAllowed(_ c: Context) -> [Hit] {
        var hits: [Hit] = []
        for d in c.timeline.devices.indices {
            var last: SpeakerOTA.State?
            for e in c.events(of: d) {
                guard let s = status(e), let state = s.state else { continue }
                // A reboot resets the state machine: the status after a reconnection starts afresh.
                if let l = last, !Meanings.transitionAllowed(from: l, to: state) {
                    hits.append(Hit(device: d, time: e.time, frames: e.frames, evidence: "\(l) then \(state) at \(c.seconds(e.time))"))
                }
                last = state
            }
        }
        return hits
    }

    static func progressBackwards(_ c: Context) -> [Hit] {
        var hits: [Hit] = []
        for d in c.timeline.devices.indices {
            var last: (Int, TimelineEvent)?
            for e in c.events(of: d) {
                guard let s = status(e) else { continue }
                guard s.state == .downloading else { if s.state != .verifying { last = nil }; continue }
                if let (p, prev) = last, Int(s.progress) < p {
                    hits.append(Hit(device: d, time: e.time, frames: prev.frames + e.frames,
                                    evidence: "progress \(p) % at \(c.seconds(prev.time)), then \(s.progress) % at \(c.seconds(e.time))"))
                }
                last = (Int(s.progress), e)
            }
        }
        return hits
    }

    static func plainHTTP(_ c: Context) -> [Hit] {
        c.events.compactMap { e in
            guard let u = e.message as? SpeakerOTA.FirmwareURL, u.scheme?.lowercased() == "http" else { return nil }
            return Hit(device: e.device, time: e.time, frames: e.frames, evidence: "URL \(u.display(reveal: false)) at \(c.seconds(e.time))")
        }
    }

    // MARK: ATT and GATT rules

    static func truncatedWrites(_ c: Context) -> [Hit] {
        c.facts.truncatedWrites.map { w in
            Hit(device: c.timeline.connections[w.connection].device, time: w.time, frames: [w.frame],
                evidence: "\(w.characteristic): a Write of \(w.length) bytes at MTU \(w.mtu) (at most \(w.mtu - 3) fit) at \(c.seconds(w.time)); the value looks cut")
        }
    }

    /// One finding per connection and kind of security refusal, with what the link's encryption
    /// actually was: "never paired" is said only of a link that was never encrypted.
    static func securityRefusals(_ c: Context, _ requirement: ATTErrorCode.SecurityRequirement) -> [Hit] {
        var hits: [Hit] = []
        var seen = Set<Int>()
        for e in c.events where e.kind == "att.error" {
            guard case .string(requirement.rawValue)? = e.fields.first(where: { $0.name == "security" })?.value, let conn = e.connection,
                  seen.insert(conn).inserted else { continue }
            let connection = c.timeline.connections[conn]
            let error = e.string("error") ?? ""
            let characteristic = e.string("characteristic") ?? ""
            let encryptedThen = { if case .bool(true)? = e.fields.first(where: { $0.name == "encrypted" })?.value { true } else { false } }()
            let key = connection.keySize.map { " (\($0)-byte key)" } ?? ""
            var evidence = "\(error) on \(characteristic) at \(c.seconds(e.time))"
            var title: String?
            var advice: String?
            if encryptedThen {
                evidence += "; the link was encrypted at the time\(key)"
                switch requirement {
                case .authentication:
                    title = "The device needs a stronger pairing than the link has"
                    advice = "The link was already encrypted, so the device wants a key made with MITM protection: pair with passkey entry or numeric comparison (LE Secure Connections) instead of Just Works."
                case .encryption:
                    title = "The device refused on a link the capture shows encrypted"
                    advice = "Insufficient Encryption on an encrypted link: the device and phone disagree about the link's state (a race right after encryption started, or a firmware bug); repeat the request once the encryption change is complete."
                default: break
                }
            } else if let at = connection.encryptedAt, at >= e.time {
                evidence += "; the link was encrypted \(TimelineBuilder.seconds(at - e.time)) later\(key)"
            } else {
                let pairingFailed = c.events(of: connection.device).contains { $0.connection == conn && $0.kind == "link.pairing-failed" }
                evidence += pairingFailed ? "; pairing was attempted and failed, and the link was never encrypted"
                                          : "; the link was never encrypted afterwards"
                if requirement == .authentication || requirement == .encryption {
                    title = pairingFailed ? "The device needs pairing and pairing failed" : "The device needs pairing and the phone never paired"
                }
            }
            hits.append(Hit(device: connection.device, time: e.time, frames: e.frames, evidence: evidence, advice: advice, title: title))
        }
        return hits
    }

    static func notSubscribed(_ c: Context) -> [Hit] {
        var hits: [Hit] = []
        var reported = Set<Int>()
        for e in c.events {
            guard let conn = e.connection, !reported.contains(conn) else { continue }
            let needs: (BluetoothUUID, String)?
            switch e.message {
            case let cmd as SpeakerOTA.ControlCommand where cmd.command == .start: needs = (SpeakerOTA.status, "OTA_STATUS")
            case is SensorScan.Request: needs = (SensorScan.characteristic, "the scan characteristic")
            case is NRF7.Request: needs = (NRF7.controlPoint, "the nRF7 Control Point")
            default: needs = nil
            }
            guard let (uuid, name) = needs, c.facts.subscribed[conn]?.contains(uuid) != true else { continue }
            reported.insert(conn)
            hits.append(Hit(device: e.device, time: e.time, frames: e.frames,
                            evidence: "\(e.summary) at \(c.seconds(e.time)) with no subscription to \(name) on this connection"))
        }
        return hits
    }

    // MARK: Scan and provisioning rules

    static func scanWithoutEnd(_ c: Context) -> [Hit] {
        c.events.compactMap { e in
            guard let r = e.message as? SensorScan.Response, !r.complete else { return nil }
            if r.chunks == 0 {
                return Hit(device: e.device, time: e.time, frames: e.frames,
                           evidence: "SCAN was never answered: no notification and no END (at \(c.seconds(e.time)))")
            }
            return Hit(device: e.device, time: e.time, frames: e.frames,
                       evidence: "\(r.networks.count) network\(r.networks.count == 1 ? "" : "s") arrived in \(r.chunks) notification\(r.chunks == 1 ? "" : "s") and END never came (at \(c.seconds(e.time)))"
                           + (r.markerStyle == "none" ? "" : "; markers until then: \(r.markerStyle)"))
        }
    }

    static func nrf7Failed(_ c: Context) -> [Hit] {
        c.events.compactMap { e in
            guard let r = e.message as? NRF7.Result, r.state?.raw == 5, !Provisioning.explained(e, in: c) else { return nil }
            return Hit(device: e.device, time: e.time, frames: e.frames,
                       evidence: "CONNECTION_FAILED\(r.reason.map { " (\($0))" } ?? "") at \(c.seconds(e.time))")
        }
    }

    static func nrf7Refused(_ c: Context) -> [Hit] {
        c.events.compactMap { e in
            guard let r = e.message as? NRF7.Response, let s = r.status, s.raw != 0 else { return nil }
            return Hit(device: e.device, time: e.time, frames: e.frames,
                       evidence: "\(r.requestOpCode?.description ?? "request") answered \(s) at \(c.seconds(e.time))")
        }
    }

    static func nrf7ResponseMissing(_ c: Context) -> [Hit] {
        var hits: [Hit] = []
        var open: [Int: TimelineEvent] = [:]  // connection -> unanswered request
        func unanswered(_ conn: Int, _ why: String) {
            guard let r = open.removeValue(forKey: conn) else { return }
            let mtu = c.timeline.connections[conn].mtu
            hits.append(Hit(device: r.device, time: r.time, frames: r.frames,
                            evidence: "\(r.summary) at \(c.seconds(r.time)) and no Response before \(why); MTU \(mtu)"))
        }
        for e in c.events {
            guard let conn = e.connection else { continue }
            switch e.message {
            case is NRF7.Request:
                unanswered(conn, "the next request")
                if c.facts.subscribed[conn]?.contains(NRF7.controlPoint) == true { open[conn] = e }
            case is NRF7.Response: open[conn] = nil
            default:
                if e.kind == "link.disconnected" { unanswered(conn, "the link ended") }
            }
        }
        for conn in open.keys.sorted() { unanswered(conn, "the capture ended") }
        return hits
    }

    static func espFailed(_ c: Context) -> [Hit] {
        var hits: [Hit] = []
        var lastFailure: [Int: Int64] = [:]
        for e in c.events {
            guard let m = e.message as? ESPProvisioning.ConfigMessage, case .status(let r) = m.payload, let d = e.device else { continue }
            guard r.stationState.raw == 3 else { lastFailure[d] = nil; continue }
            guard lastFailure[d] == nil else { continue }
            lastFailure[d] = e.time
            // Wrong password, not found and 5 GHz-only have their own rules.
            if Provisioning.explained(e, in: c) { continue }
            var reason = ""
            if case .failReason(let f) = r.detail { reason = " (\(f))" }
            hits.append(Hit(device: d, time: e.time, frames: e.frames, evidence: "station ConnectionFailed\(reason) at \(c.seconds(e.time))"))
        }
        return hits
    }

    static func espSessionRefused(_ c: Context) -> [Hit] {
        var hits: [Hit] = []
        for e in c.events {
            if e.kind == "att.error", case .string(let ch)? = e.fields.first(where: { $0.name == "characteristic" })?.value,
               ch.contains("prov-session") {
                hits.append(Hit(device: e.device, time: e.time, frames: e.frames, evidence: "\(e.summary) at \(c.seconds(e.time))"))
            }
            if let s = e.message as? ESPProvisioning.SessionMessage {
                switch s.payload {
                case .sec0Response(let st), .sec1Response0(let st, _, _), .sec1Response1(let st, _):
                    if st.raw != 0 {
                        hits.append(Hit(device: e.device, time: e.time, frames: e.frames, evidence: "\(e.summary) at \(c.seconds(e.time))"))
                    }
                default: break
                }
            }
        }
        return hits
    }

    static func neverEstablished(_ c: Context) -> [Hit] {
        c.events.compactMap { e in
            guard e.kind == "link.connect-failed" || (e.kind == "link.disconnected" && e.fields.contains { $0.name == "code" && { if case .int(0x3E) = $0.value { true } else { false } }($0) })
            else { return nil }
            return Hit(device: e.device, time: e.time, frames: e.frames, evidence: "\(e.summary) at \(c.seconds(e.time))")
        }
    }

    /// Problems the codecs report (over-long fields, missing NUL, short status, unknown codes,
    /// too many networks, malformed lines...), one finding per problem id and device, titled by
    /// the problem. A scan's truncation has its own rule.
    static func protocolProblems(_ c: Context) -> [Hit] {
        var hits: [Hit] = []
        var counts: [String: Int] = [:]
        for e in c.events {
            for p in e.problems { counts["\(e.device ?? -1)/\(p.id)", default: 0] += 1 }
        }
        var seen = Set<String>()
        for e in c.events {
            for p in e.problems where p.id != "scan.truncated" && p.id != "esp.cleartext-passphrase" {
                let key = "\(e.device ?? -1)/\(p.id)"
                guard seen.insert(key).inserted else { continue }
                let count = counts[key] ?? 1
                hits.append(Hit(device: e.device, time: e.time, frames: e.frames,
                                evidence: "\(p.id): \(p.message) (\(e.kind) at \(c.seconds(e.time))\(count > 1 ? "; \(count) times" : ""))",
                                title: p.message, id: "protocol.\(p.id)"))
            }
        }
        return hits
    }
}
