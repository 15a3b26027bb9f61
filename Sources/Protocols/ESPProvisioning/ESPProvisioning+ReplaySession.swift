import ATT
import Capture
import Emulator
import Profiles
import Replay
import Transport

/// The phone's side of an ESP-IDF provisioning session during a replay. With a live script
/// (`esp.live`: the steps carry their plaintext) it is a protocomm client of its own: the
/// recorded session steps are performed with a fresh X25519 key pair and the PoP, every write to
/// a protected endpoint sends its plaintext encrypted with the new session's CTR stream, and every
/// answer is decrypted and compared with the recorded plaintext by meaning. Without plaintext the
/// recorded bytes are sent as they are (the runner's own steps) and the first session step says
/// what that means.
///
/// What legitimately differs from run to run is tolerated and said: polling cadence (a scan or a
/// station that is done sooner or later than at the recorded poll: polled again, as the phone
/// would), the number and order of scan result pages (the networks are compared as a set, by
/// SSID and auth mode), RSSI, channel, BSSID and IP address.
final class ESPLiveReplay: ReplaySessionDriver {
    let script: SessionScript
    /// The script's endpoint names (`esp.endpoints`), decoded once.
    let endpoints: [String: String]?
    let live: Bool
    let security: Int?
    /// The plaintext each write sends, `--set` applied.
    let plaintexts: [Int: [UInt8]]
    let pop: [UInt8]
    let popSource: String
    /// Steps that read a scan's last recorded result page: where the networks are compared.
    let lastResultPages: Set<Int>
    private var keys: SplitMix64

    // The session of the current connection.
    private var clientPrivate: [UInt8] = []
    private var clientPublic: [UInt8] = []
    private var devicePublic: [UInt8]?
    private var handshake: ESPSecurity1.Stream?
    private var stream: ESPSecurity1.Stream?
    private var established = false
    private var sessionProblem: String?
    private var notedCiphertext = false
    private var scan = ScanProgress()

    /// One scan, as recorded and as observed.
    struct ScanProgress {
        var recordedCount: Int?
        var observedCount: Int?
        var recorded: [ESPProvisioning.ScanEntry] = []
        var observed: [ESPProvisioning.ScanEntry] = []
        /// Result indexes the device has answered.
        var fetched = Set<Int>()
        /// The page the last CmdScanResult asked for.
        var asked: (start: Int, count: Int)?
    }

    /// How long the replay polls again for a station or scan that is not done where the
    /// recording's was (esp_prov polls once a second).
    static let pollInterval: Int64 = 1_000_000
    static let stationPolls = 30
    static let scanPolls = 15

    /// nil for a script with no ESP-IDF steps. Throws when the script needs a `--set` it was not
    /// given: a redacted password in a plaintext CmdSetConfig, or a redacted PoP.
    static func make(_ script: SessionScript, options: ReplayOptions) throws(ReplayError) -> ESPLiveReplay? {
        let esp = script.esp
        let endpoints = esp?.endpoints
        let onESP = script.steps.contains { ($0.action == .read || $0.action == .write) && ESPSessionReplay.endpoint(of: $0, endpoints: endpoints) != nil }
        guard onESP else { return nil }
        let live = esp?.live == true && (esp?.security == 0 || esp?.security == 1)
        var plaintexts: [Int: [UInt8]] = [:]
        var pop: [UInt8] = []
        var popSource = "no PoP"
        if live {
            for (i, step) in script.steps.enumerated() where step.action == .write {
                guard let hex = step.plain, let bytes = Hex.bytes(hex) else { continue }
                if let field = step.credentials {
                    plaintexts[i] = try CredentialValues.rebuild(bytes, field, settings: options.settings, step: i + 1, protocols: options.protocols)
                } else {
                    plaintexts[i] = bytes
                }
            }
            if esp?.security == 1 {
                if esp?.noPoP == true {
                    popSource = "no PoP: the device reports no_pop"
                } else if let given = options.settings["pop"] {
                    pop = Array(given.utf8)
                    popSource = "PoP from --set pop="
                } else if esp?.popRedacted == true {
                    throw .usage("the script's ESP proof of possession was redacted at extraction; give it with --set pop=...")
                } else if let recorded = esp?.pop, !recorded.isEmpty {
                    pop = Array(recorded.utf8)
                    popSource = "PoP given"
                }
            }
        }
        var lastPages = Set<Int>()
        if live {
            var last: Int?
            for (i, step) in script.steps.enumerated() {
                guard let name = ESPSessionReplay.endpoint(of: step, endpoints: endpoints), name == ESPSessionReplay.scanName else {
                    if step.action == .connect, let l = last { lastPages.insert(l); last = nil }
                    continue
                }
                let plain = (step.action == .write ? step.plain : step.expect?.plain).flatMap(Hex.bytes)
                guard let m = plain.flatMap({ ESPProvisioning.ScanMessage.decode($0).0 }) else { continue }
                switch m.payload {
                case .start: if let l = last { lastPages.insert(l); last = nil }
                case .resultResponse where step.action == .read: last = i
                default: break
                }
            }
            if let l = last { lastPages.insert(l) }
        }
        return ESPLiveReplay(script: script, session: esp, live: live, plaintexts: plaintexts, pop: pop, popSource: popSource,
                             lastResultPages: lastPages, seed: options.seed)
    }

    private init(script: SessionScript, session: SessionScript.ESPSession?, live: Bool, plaintexts: [Int: [UInt8]], pop: [UInt8],
                 popSource: String, lastResultPages: Set<Int>, seed: UInt64) {
        self.script = script
        endpoints = session?.endpoints
        self.live = live
        security = session?.security
        self.plaintexts = plaintexts
        self.pop = pop
        self.popSource = popSource
        self.lastResultPages = lastResultPages
        keys = SplitMix64(seed: seed ^ 0x6573_705F_6C69_7665)
    }

    /// protocomm ends the session with the link: a new connection starts without one.
    func linkOpened() {
        (devicePublic, handshake, stream, established, sessionProblem) = (nil, nil, nil, false, nil)
        scan = ScanProgress()
    }

    // MARK: Steps

    /// Performs `step` when it is the session's to perform; false leaves it to the runner.
    func perform(_ step: ReplayStep, _ index: Int, _ o: inout StepOutcome, run: Run) async throws(Run.Stop) -> Bool {
        guard step.action == .read || step.action == .write, let name = ESPSessionReplay.endpoint(of: step, endpoints: endpoints) else { return false }
        guard live else {
            if !notedCiphertext, name == ESPSessionReplay.sessionName, step.action == .write,
               let bytes = step.value.flatMap(Hex.bytes), case .sec1Command0? = ESPProvisioning.SessionMessage.decode(bytes).0?.payload {
                notedCiphertext = true
                o.observe("security 1 replayed with the recorded bytes: the recorded ciphertext works only against the recorded device's keys "
                          + "(the emulator with the recording's seed); extract with --esp-client-key (and --esp-pop) to run the session live")
            }
            return false
        }
        if run.options.readOnly, name != ESPSessionReplay.versionName {
            // Writes are skipped by the runner, which says why; their answers cannot be read.
            guard step.action == .read else { return false }
            o.skip("the answer to a write that was not sent; --allow-writes sends it")
            return true
        }
        if name == ESPSessionReplay.versionName, step.action == .write { return false }
        let (found, label) = try await run.resolve(step, &o, descriptor: nil)
        o.name = label
        guard let handle = found else { return true }
        switch (name, step.action) {
        case (ESPSessionReplay.versionName, _): try await readVersion(handle, step, &o, run)
        case (ESPSessionReplay.sessionName, .write): try await writeSession(handle, step, &o, run)
        case (ESPSessionReplay.sessionName, _): try await readSession(handle, step, &o, run)
        case (_, .write): try await writeProtected(handle, name, step, index, &o, run)
        default: try await readProtected(handle, name, step, index, &o, run)
        }
        return true
    }

    // MARK: proto-ver

    func readVersion(_ handle: UInt16, _ step: ReplayStep, _ o: inout StepOutcome, _ run: Run) async throws(Run.Stop) {
        guard let value = try await read(handle, step, &o, run) else { return }
        let observed = ESPProvisioning.Version.decode(value).0
        o.observe("proto-ver \(ProtocolText.display(value))")
        guard let hex = step.expect?.value, let bytes = Hex.bytes(hex) else { return }
        guard let recorded = ESPProvisioning.Version.decode(bytes).0, recorded.securityVersion != nil, let observed else {
            if bytes != value { o.diverge("recorded proto-ver \(ProtocolText.display(bytes)), observed \(ProtocolText.display(value))") }
            return
        }
        var differences: [String] = []
        if recorded.version != observed.version { differences.append("version \(recorded.version ?? "none") -> \(observed.version ?? "none")") }
        if recorded.securityVersion != observed.securityVersion {
            differences.append("sec_ver \(recorded.securityVersion.map(String.init) ?? "none") -> \(observed.securityVersion.map(String.init) ?? "none")")
        }
        if Set(recorded.capabilities) != Set(observed.capabilities) {
            differences.append("capabilities [\(recorded.capabilities.joined(separator: ", "))] -> [\(observed.capabilities.joined(separator: ", "))]")
        }
        if !differences.isEmpty { o.diverge("proto-ver differs from the recording: " + differences.joined(separator: "; ")) }
    }

    // MARK: prov-session

    func writeSession(_ handle: UInt16, _ step: ReplayStep, _ o: inout StepOutcome, _ run: Run) async throws(Run.Stop) {
        let recorded = (step.plain ?? step.value).flatMap(Hex.bytes)
        let message = recorded.flatMap { ESPProvisioning.SessionMessage.decode($0).0 }
        switch message?.payload {
        case .sec1Command0?:
            linkOpened()
            newKeyPair()
            let bytes = ESPProvisioning.SessionMessage(.sec1Command0(clientPublicKey: clientPublic)).encode()
            o.observe("Session_Command0 with the replay's own client key")
            _ = try await send(handle, bytes, step, &o, run)
        case .sec1Command1?:
            guard var s = handshake, let device = devicePublic else {
                o.diverge("not sent: \(sessionProblem ?? "no usable Session_Response0 came before it")")
                return
            }
            let verify = s.apply(device)
            handshake = s
            o.observe("Session_Command1: the device's key encrypted with the live session key (\(popSource))")
            let accepted = try await send(handle, ESPProvisioning.SessionMessage(.sec1Command1(clientVerifyData: verify)).encode(), step, &o, run)
            if !accepted {
                handshake = nil
                sessionProblem = "the device refused Session_Command1\(step.expect?.result == "error" ? ", as it did in the recording" : " (a wrong PoP?)")"
            }
        default:
            // Security 0, or a message this client does not make: sent as recorded.
            o.observe(message.map(ESPSessionReplay.describe(session:)) ?? "\(recorded?.count ?? 0) bytes as recorded")
            _ = try await send(handle, recorded ?? [], step, &o, run)
        }
    }

    func readSession(_ handle: UInt16, _ step: ReplayStep, _ o: inout StepOutcome, _ run: Run) async throws(Run.Stop) {
        guard let value = try await read(handle, step, &o, run) else { return }
        let recordedBytes = (step.expect?.plain ?? step.expect?.value).flatMap(Hex.bytes)
        let recorded = recordedBytes.flatMap { ESPProvisioning.SessionMessage.decode($0).0 }
        guard let observed = ESPProvisioning.SessionMessage.decode(value).0 else {
            o.observe("\(value.count) bytes that are not SessionData")
            if let recorded { o.diverge("recorded \(ESPSessionReplay.describe(session: recorded)), observed \(value.count) bytes that are not SessionData") }
            return
        }
        o.observe(ESPSessionReplay.describe(session: observed))
        let recordedStatus: ProtoEnumValue? = switch recorded?.payload {
        case .sec0Response(let s)?, .sec1Response0(let s, _, _)?, .sec1Response1(let s, _)?: s
        default: nil
        }
        func sameKind(_ a: ESPProvisioning.SessionMessage.Payload?, _ b: ESPProvisioning.SessionMessage.Payload) -> Bool {
            switch (a, b) {
            case (.sec0Response?, .sec0Response), (.sec1Response0?, .sec1Response0), (.sec1Response1?, .sec1Response1): true
            default: false
            }
        }
        if let recorded, !sameKind(recorded.payload, observed.payload) {
            o.diverge("recorded \(ESPSessionReplay.describe(session: recorded)), observed \(ESPSessionReplay.describe(session: observed))")
        }
        switch observed.payload {
        case .sec0Response(let status):
            compare(status: status, recorded: recordedStatus, &o)
            if status.raw == 0 {
                established = true
                o.observe("session sec0 established live")
            }
        case .sec1Response0(let status, let key, let random):
            compare(status: status, recorded: recordedStatus, &o)
            guard status.raw == 0 else {
                sessionProblem = "the device answered Session_Command0 with \(status)"
                return
            }
            guard let shared = try? ESPSecurity1.sharedSecret(privateKey: clientPrivate, peerPublicKey: key),
                  let s = ESPSecurity1.Stream(key: ESPSecurity1.sessionKey(sharedSecret: shared, proofOfPossession: pop), iv: random)
            else {
                sessionProblem = "Session_Response0 is unusable (device key of \(key.count) bytes, random of \(random.count); 32 and 16 expected)"
                o.diverge(sessionProblem ?? "")
                return
            }
            handshake = s
            devicePublic = key
        case .sec1Response1(let status, let verify):
            compare(status: status, recorded: recordedStatus, &o)
            guard var s = handshake else {
                sessionProblem = sessionProblem ?? "Session_Response1 without a handshake to finish"
                o.diverge(sessionProblem ?? "")
                return
            }
            if status.raw == 0, s.apply(verify) == clientPublic {
                stream = s
                established = true
                o.observe("session sec1 established live (\(popSource))")
            } else {
                handshake = nil
                sessionProblem = "the device's verify data does not decrypt to the replay's public key: it derived another session key (another PoP?)"
                if recordedStatus?.raw == 0 { o.diverge(sessionProblem ?? "") } else { o.observe(sessionProblem ?? "") }
            }
        default:
            break
        }
    }

    func newKeyPair() {
        clientPrivate = (0..<4).flatMap { _ in
            let v = keys.next()
            return (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) }
        }
        clientPublic = ESPSecurity1.publicKey(privateKey: clientPrivate) ?? []
    }

    // MARK: Protected endpoints

    /// Whether messages can be sent: security 0, or security 1 with a live session.
    func sessionReady(_ o: inout StepOutcome, _ what: String) -> Bool {
        guard security == 1 else { return true }
        if established, stream != nil { return true }
        o.diverge("\(what): \(sessionProblem ?? "no live session was established before it")")
        return false
    }

    func writeProtected(_ handle: UInt16, _ name: String, _ step: ReplayStep, _ index: Int, _ o: inout StepOutcome,
                        _ run: Run) async throws(Run.Stop) {
        guard let plain = plaintexts[index] else {
            o.diverge("not sent: the step has no plaintext ('plain')")
            return
        }
        guard sessionReady(&o, "not sent") else { return }
        if name == ESPSessionReplay.scanName, let m = ESPProvisioning.ScanMessage.decode(plain).0 {
            switch m.payload {
            case .start: scan = ScanProgress()
            case .result(let start, let count): scan.asked = (Int(start), Int(count))
            default: break
            }
        }
        o.observe("sent \(ESPSessionReplay.describe(plain, endpoint: name) ?? "\(plain.count) bytes")")
        _ = try await send(handle, encrypt(plain), step, &o, run)
    }

    func readProtected(_ handle: UInt16, _ name: String, _ step: ReplayStep, _ index: Int, _ o: inout StepOutcome,
                       _ run: Run) async throws(Run.Stop) {
        guard sessionReady(&o, "not read") else { return }
        guard let value = try await read(handle, step, &o, run) else { return }
        let plain = decrypt(value)
        let recorded = step.expect?.plain.flatMap(Hex.bytes)
        switch name {
        case ESPSessionReplay.configName: try await compareConfig(handle, step, recorded, plain, &o, run)
        case ESPSessionReplay.scanName: try await compareScan(handle, step, index, recorded, plain, &o, run)
        default:
            o.observe("\(plain.count) bytes in the clear")
            if let recorded, recorded != plain {
                o.diverge("recorded plaintext \(Hex.string(recorded)), observed \(Hex.string(plain))")
            }
        }
    }

    func encrypt(_ plain: [UInt8]) -> [UInt8] {
        guard security == 1, var s = stream else { return plain }
        let out = s.apply(plain)
        stream = s
        return out
    }

    func decrypt(_ bytes: [UInt8]) -> [UInt8] { encrypt(bytes) }

    func compare(status: ProtoEnumValue, recorded: ProtoEnumValue?, _ o: inout StepOutcome) {
        guard let recorded, recorded.raw != status.raw else { return }
        o.diverge("recorded status \(recorded), observed \(status)")
    }

    // MARK: prov-config

    func compareConfig(_ handle: UInt16, _ step: ReplayStep, _ recordedBytes: [UInt8]?, _ plain: [UInt8], _ o: inout StepOutcome,
                       _ run: Run) async throws(Run.Stop) {
        guard let observed = ESPProvisioning.ConfigMessage.decode(plain).0 else {
            o.observe("\(plain.count) bytes that do not decode as WiFiConfigPayload")
            if recordedBytes != nil { o.diverge("the answer does not decode as WiFiConfigPayload: the session keys differ, or the device answered garbage") }
            return
        }
        guard let recordedBytes, let recorded = ESPProvisioning.ConfigMessage.decode(recordedBytes).0 else {
            o.observe(ESPSessionReplay.describe(config: observed))
            return
        }
        switch (recorded.payload, observed.payload) {
        case (.status(let r), .status(var s)):
            compare(status: s.status, recorded: r.status, &o)
            let done = [0, 3]
            if done.contains(r.stationState.raw), s.stationState.raw == 1 {
                // The recording's station was done at this poll and this one is still
                // connecting: poll on, as the phone does.
                var polls = 0
                while polls < Self.stationPolls, s.stationState.raw == 1 {
                    try? await run.link.wait(Self.pollInterval)
                    polls += 1
                    guard let answer = try await exchange(handle, ESPProvisioning.ConfigMessage(.getStatus).encode(), run),
                          case .status(let next)? = ESPProvisioning.ConfigMessage.decode(answer).0?.payload else { break }
                    s = next
                }
                o.observe("station Connecting where the recording's was \(r.stationState); polled \(polls) more time\(polls == 1 ? "" : "s") (polling cadence is a tolerance)")
            } else if r.stationState.raw == 1, done.contains(s.stationState.raw) {
                o.observe(ESPSessionReplay.describe(config: observed))
                o.observe("\(s.stationState) where the recording polled Connecting: the device got there sooner (polling cadence is a tolerance)")
                return
            }
            o.observe("RespGetStatus \(s.status): \(ESPSessionReplay.describe(station: s))")
            if let difference = Self.stationDifference(r, s) { o.diverge(difference) }
        case (.setConfigResponse(let r), .setConfigResponse(let s)), (.applyConfigResponse(let r), .applyConfigResponse(let s)):
            o.observe(ESPSessionReplay.describe(config: observed))
            compare(status: s, recorded: r, &o)
        default:
            o.observe(ESPSessionReplay.describe(config: observed))
            if ESPSessionReplay.describe(config: recorded) != ESPSessionReplay.describe(config: observed) {
                o.diverge("recorded \(ESPSessionReplay.describe(config: recorded)), observed \(ESPSessionReplay.describe(config: observed))")
            }
        }
    }

    /// Station state, failure reason and the network joined; IP, BSSID, channel and auth mode
    /// may differ.
    static func stationDifference(_ r: ESPProvisioning.StatusReport, _ s: ESPProvisioning.StatusReport) -> String? {
        let recorded = ESPSessionReplay.describe(station: r), observed = ESPSessionReplay.describe(station: s)
        if r.stationState.raw != s.stationState.raw { return "recorded \(recorded), observed \(observed)" }
        switch (r.detail, s.detail) {
        case (.failReason(let a), .failReason(let b)) where a.raw != b.raw:
            return "recorded \(recorded), observed \(observed)"
        case (.connected(let a), .connected(let b)) where a.ssid != b.ssid:
            return "recorded \(recorded), observed \(observed)"
        case (.failReason, .none), (.none, .failReason):
            return "recorded \(recorded), observed \(observed)"
        default:
            return nil
        }
    }

    // MARK: prov-scan

    func compareScan(_ handle: UInt16, _ step: ReplayStep, _ index: Int, _ recordedBytes: [UInt8]?, _ plain: [UInt8],
                     _ o: inout StepOutcome, _ run: Run) async throws(Run.Stop) {
        guard var observed = ESPProvisioning.ScanMessage.decode(plain).0 else {
            o.observe("\(plain.count) bytes that do not decode as WiFiScanPayload")
            if recordedBytes != nil { o.diverge("the answer does not decode as WiFiScanPayload: the session keys differ, or the device answered garbage") }
            return
        }
        guard let recordedBytes, let recorded = ESPProvisioning.ScanMessage.decode(recordedBytes).0 else {
            o.observe(ESPSessionReplay.describe(scan: observed))
            return
        }
        switch (recorded.payload, observed.payload) {
        case (.statusResponse(let rFinished, let rCount), .statusResponse(var finished, var count)):
            compare(status: observed.status, recorded: recorded.status, &o)
            if rFinished, !finished {
                var polls = 0
                while polls < Self.scanPolls, !finished {
                    try? await run.link.wait(Self.pollInterval)
                    polls += 1
                    guard let answer = try await exchange(handle, ESPProvisioning.ScanMessage(.status).encode(), run),
                          let next = ESPProvisioning.ScanMessage.decode(answer).0, case .statusResponse(let f, let n) = next.payload else { break }
                    (finished, count, observed) = (f, n, next)
                }
                o.observe("not finished where the recording's scan was; polled \(polls) more time\(polls == 1 ? "" : "s") (polling cadence is a tolerance)")
            }
            o.observe(ESPSessionReplay.describe(scan: observed))
            if !rFinished, finished {
                o.observe("finished where the recording polled 'not finished yet' (polling cadence is a tolerance)")
            }
            if rFinished, !finished { o.diverge("recorded \(ESPSessionReplay.describe(scan: recorded)); the scan did not finish") }
            if finished {
                scan.observedCount = Int(min(count, 1024))
                if rFinished, rCount != count { o.observe("\(count) results where the recording had \(rCount): the networks are compared after the last page") }
            }
            if rFinished { scan.recordedCount = Int(min(rCount, 1024)) }
        case (.resultResponse(let rEntries), .resultResponse(let entries)):
            o.observe(ESPSessionReplay.describe(scan: observed))
            let start = scan.asked?.start ?? scan.fetched.count
            let pastTheEnd = scan.observedCount.map { start >= $0 } ?? false
            if observed.status.raw != recorded.status.raw, !pastTheEnd {
                o.diverge("recorded status \(recorded.status), observed \(observed.status)")
            }
            scan.recorded += rEntries
            scan.observed += entries
            for i in start..<(start + min(entries.count, 1024)) { scan.fetched.insert(i) }
            if lastResultPages.contains(index) { try await finishScan(handle, &o, run) }
        case (.resultResponse, _) where scan.observedCount.map({ (scan.asked?.start ?? 0) >= $0 }) ?? false:
            // A page past the results this device found: its answer (an error status) is no difference.
            o.observe(ESPSessionReplay.describe(scan: observed) + ", past the \(scan.observedCount ?? 0) results this device found")
            if lastResultPages.contains(index) { try await finishScan(handle, &o, run) }
        default:
            o.observe(ESPSessionReplay.describe(scan: observed))
            compare(status: observed.status, recorded: recorded.status, &o)
            if recorded.messageType.raw != observed.messageType.raw {
                o.diverge("recorded \(ESPSessionReplay.describe(scan: recorded)), observed \(ESPSessionReplay.describe(scan: observed))")
            }
        }
    }

    /// At a scan's last recorded page: the pages the recording did not ask for (this device found
    /// more), then the networks compared as sets by SSID and auth mode.
    func finishScan(_ handle: UInt16, _ o: inout StepOutcome, _ run: Run) async throws(Run.Stop) {
        var extraPages = 0
        if let count = scan.observedCount {
            while extraPages < 64, let first = (0..<count).first(where: { !scan.fetched.contains($0) }) {
                var n = 0
                while n < 4, first + n < count, !scan.fetched.contains(first + n) { n += 1 }
                guard let answer = try await exchange(handle, ESPProvisioning.ScanMessage(.result(startIndex: UInt32(first), count: UInt32(n))).encode(), run),
                      case .resultResponse(let entries)? = ESPProvisioning.ScanMessage.decode(answer).0?.payload, !entries.isEmpty
                else { break }
                extraPages += 1
                scan.observed += entries
                for i in first..<(first + min(entries.count, n)) { scan.fetched.insert(i) }
            }
        }
        if extraPages > 0 { o.observe("read \(extraPages) more result page\(extraPages == 1 ? "" : "s") the recording did not ask for") }
        func key(_ e: ESPProvisioning.ScanEntry) -> String { "\"\(ProtocolText.display(e.ssid))\" (\(e.auth))" }
        let recorded = Set(scan.recorded.map(key)), observed = Set(scan.observed.map(key))
        // A recording that did not read all its results says nothing about the others.
        let readAll = scan.recorded.count >= (scan.recordedCount ?? scan.recorded.count)
        let missing = recorded.subtracting(observed).sorted()
        let extra = readAll ? observed.subtracting(recorded).sorted() : []
        if missing.isEmpty, extra.isEmpty {
            o.observe("the scan found the recorded \(recorded.count) network\(recorded.count == 1 ? "" : "s")"
                      + (readAll ? "" : " (among \(observed.count))") + "; RSSI, channel, order and pages are tolerances")
        } else {
            var parts: [String] = []
            if !missing.isEmpty { parts.append("missing \(missing.joined(separator: ", "))") }
            if !extra.isEmpty { parts.append("not recorded \(extra.joined(separator: ", "))") }
            o.diverge("the scan's networks differ from the recording's: " + parts.joined(separator: "; "))
        }
    }

    // MARK: ATT

    /// Writes `bytes` as the step's method says, or as a long write when they do not fit a
    /// Write Request (a live message may be longer than the recorded one); compares the result
    /// with the recording's. True when the device accepted it.
    func send(_ handle: UInt16, _ bytes: [UInt8], _ step: ReplayStep, _ o: inout StepOutcome, _ run: Run) async throws(Run.Stop) -> Bool {
        if step.method == .command {
            try await run.send(ATTPDU.writeCommand(handle: handle, value: bytes).encode())
            return true
        }
        let mtu = Int(await run.central.mtu)
        var answer: ATTPDU
        if bytes.count <= mtu - 3 {
            answer = try await run.request(.writeRequest(handle: handle, value: bytes))
        } else {
            let part = max(1, mtu - 5)
            var offset = 0
            answer = .executeWriteResponse
            while offset < bytes.count {
                let piece = Array(bytes[offset..<min(bytes.count, offset + part)])
                let reply = try await run.request(.prepareWriteRequest(handle: handle, offset: UInt16(clamping: offset), value: piece))
                if case .errorResponse = reply {
                    _ = try await run.request(.executeWriteRequest(flags: 0))
                    answer = reply
                    break
                }
                offset += piece.count
            }
            if case .executeWriteResponse = answer { answer = try await run.request(.executeWriteRequest(flags: 1)) }
        }
        switch answer {
        case .errorResponse(_, _, let e):
            o.observe(e.description)
            run.compareResult(step, &o, error: e)
            return false
        case .writeResponse, .executeWriteResponse:
            run.compareResult(step, &o, error: nil)
            return true
        default:
            o.diverge("unexpected answer \(ATTOpcode.name(for: answer.opcode))")
            return false
        }
    }

    /// Reads a value whole (Read Blob while the answers fill the MTU) and compares the ATT result
    /// with the recording's; nil when it was refused.
    func read(_ handle: UInt16, _ step: ReplayStep, _ o: inout StepOutcome, _ run: Run) async throws(Run.Stop) -> [UInt8]? {
        let first = try await run.request(.readRequest(handle: handle))
        switch first {
        case .errorResponse(_, _, let e):
            o.observe(e.description)
            run.compareResult(step, &o, error: e)
            return nil
        case .readResponse(var value):
            let mtu = Int(await run.central.mtu)
            var last = value.count
            while last == mtu - 1, value.count < GATTServer.maxValueLength {
                guard case .readBlobResponse(let more) = try await run.request(.readBlobRequest(handle: handle, offset: UInt16(clamping: value.count)))
                else { break }
                value += more
                last = more.count
            }
            run.compareResult(step, &o, error: nil)
            return value
        default:
            o.diverge("unexpected answer \(ATTOpcode.name(for: first.opcode))")
            return nil
        }
    }

    /// One request and its answer that the recording does not have (polling again, a page it did
    /// not ask for), through the session; nil when the device refused either.
    func exchange(_ handle: UInt16, _ plain: [UInt8], _ run: Run) async throws(Run.Stop) -> [UInt8]? {
        let bytes = encrypt(plain)
        guard case .writeResponse = try await run.request(.writeRequest(handle: handle, value: bytes)),
              case .readResponse(var value) = try await run.request(.readRequest(handle: handle)) else { return nil }
        let mtu = Int(await run.central.mtu)
        var last = value.count
        while last == mtu - 1, value.count < GATTServer.maxValueLength {
            guard case .readBlobResponse(let more) = try await run.request(.readBlobRequest(handle: handle, offset: UInt16(clamping: value.count)))
            else { break }
            value += more
            last = more.count
        }
        return decrypt(value)
    }
}
