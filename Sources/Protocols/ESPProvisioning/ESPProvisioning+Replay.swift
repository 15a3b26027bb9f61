import ATT
import Capture
import Emulator
import GATT
import Profiles
import Replay

/// ESP-IDF provisioning in replays: a security 1 session cannot be replayed byte for byte (the
/// device makes new keys each time), so the replay runs the session itself (`ESPLiveReplay`,
/// ESPProvisioning+ReplaySession.swift) from the plaintext extraction put in the script.
extension ESPProvisioningProtocol: ReplaySessionDriving {
    /// `esp`: the member scripts have carried since before the protocols became plug-ins.
    public static var scriptKey: String { "esp" }

    public static func discoveredNames(_ table: AttributeTable) -> [String: String] {
        ESPSessionReplay.endpointNames(table)
    }

    public static func annotate(_ script: inout SessionScript, discovered: [String: String], options: ExtractOptions) {
        ESPSessionReplay.annotate(&script, endpoints: discovered, options: options)
    }

    public static func checkSessionData(_ value: ScriptValue) throws {
        _ = try value.decoded(as: SessionScript.ESPSession.self)
    }

    public static func sessionDriver(for script: SessionScript, options: ReplayOptions) throws(ReplayError) -> (any ReplaySessionDriver)? {
        try ESPLiveReplay.make(script, options: options)
    }

    public static func emulatedDevice(_ spec: EmulatedDeviceSpec, for script: SessionScript, settings: [String: String]) -> DeviceFactory? {
        ESPSessionReplay.shapedDevice(spec, for: script, settings: settings)
    }

    public static func extractionSummary(_ script: SessionScript) -> String? {
        guard let e = script.esp else { return nil }
        return "ESP-IDF security \(e.security.map(String.init) ?? "unknown"): \(e.live ? "the session runs live" : "the recorded bytes are replayed (\(e.note ?? "no plaintext"))")"
    }

    public static func runWarning(_ script: SessionScript) -> String? {
        guard let e = script.esp, e.security == 1, !e.live else { return nil }
        return "ESP-IDF security 1 without plaintext (\(e.note ?? "not decrypted")): the recorded ciphertext is sent, "
            + "which only a device with the recorded keys accepts; extract with --esp-client-key and --esp-pop to run the session live"
    }
}

extension SessionScript {
    /// The script's ESP-IDF session (its `esp` member), decoded; nil when it has none (or one that
    /// does not decode, which `SessionScript.parse` refuses). Setting it writes the member.
    public var esp: ESPSession? {
        get { sessions[ESPProvisioningProtocol.scriptKey].flatMap { try? $0.decoded(as: ESPSession.self) } }
        set { sessions[ESPProvisioningProtocol.scriptKey] = newValue.flatMap { try? ScriptValue(encoding: $0) } }
    }

    /// An ESP-IDF provisioning session as the script carries it (`esp` in the JSON): enough for
    /// the replay to run the session itself instead of sending the recorded bytes.
    public struct ESPSession: Codable, Sendable, Hashable {
        /// The security scheme the recording used: 0, 1 or 2; nil when the capture shows neither
        /// the proto-ver answer nor the session handshake.
        public var security: Int?
        /// The steps carry their plaintext (`plain`, `expect.plain`): the replay runs the session
        /// live (its own key pair, the PoP) and compares the plaintext by meaning. False: the
        /// recorded bytes are sent, which only a device with the recorded keys accepts.
        public var live: Bool
        /// Why the session is not live, for people.
        public var note: String?
        /// The proof of possession the phone used (security 1), '*' for each byte when redacted.
        public var pop: String?
        /// The PoP was overwritten with '*': `--set pop=...` gives it at run time.
        public var popRedacted: Bool?
        /// The device reported `no_pop` in proto-ver: the session key is the X25519 secret alone.
        public var noPoP: Bool?
        /// The endpoints by characteristic UUID, as the recording's user descriptions (0x2901)
        /// name them; default UUIDs need no entry.
        public var endpoints: [String: String]?

        public init(security: Int?, live: Bool, note: String? = nil, pop: String? = nil, popRedacted: Bool? = nil,
                    noPoP: Bool? = nil, endpoints: [String: String]? = nil) {
            self.security = security
            self.live = live
            self.note = note
            self.pop = pop
            self.popRedacted = popRedacted
            self.noPoP = noPoP
            self.endpoints = endpoints
        }
    }
}

/// ESP-IDF provisioning in scripts: the plaintext of a recorded session (extraction), and the
/// emulated device shaped like the recorded one (`replay run --target emu:esp`). The live
/// protocomm client that runs such a script is `ESPLiveReplay`.
public enum ESPSessionReplay {
    // MARK: Endpoints

    static let versionName = ESPProvisioning.Endpoint.version.rawValue
    static let sessionName = ESPProvisioning.Endpoint.session.rawValue
    static let scanName = ESPProvisioning.Endpoint.scan.rawValue
    static let configName = ESPProvisioning.Endpoint.config.rawValue

    /// The endpoint a step reads or writes (`prov-session`, `prov-config`, a custom name), or nil
    /// when the step is not on an ESP-IDF endpoint.
    public static func endpoint(of step: ReplayStep, in script: SessionScript) -> String? {
        endpoint(of: step, endpoints: script.esp?.endpoints)
    }

    /// The same with the script's endpoint names at hand: decoding the session data once, not per step.
    static func endpoint(of step: ReplayStep, endpoints: [String: String]?) -> String? {
        guard step.descriptor == nil, let text = step.characteristic, let uuid = BluetoothUUID(string: text) else { return nil }
        if let name = endpoints?[uuid.canonicalString] { return name }
        if let e = ESPProvisioning.Endpoint(uuid: uuid) { return e.rawValue }
        // Custom endpoints of the default service: 0xFF54 onwards in bytes 2-3.
        let service = ESPProvisioning.service
        if uuid.bitWidth == 128, uuid.low == service.low, uuid.high & 0xFFFF_0000_FFFF_FFFF == service.high & 0xFFFF_0000_FFFF_FFFF {
            return "custom endpoint \(uuid.canonicalString)"
        }
        return nil
    }

    /// Endpoint names by characteristic UUID: every named characteristic of a service that holds
    /// a standard endpoint (found by its name, so a device with its own UUIDs is covered). At
    /// most `limit`: ESP-IDF devices have a handful, a hostile table must not fill memory.
    static func endpointNames(_ table: AttributeTable, limit: Int = 64) -> [String: String] {
        var names: [String: String] = [:]
        let standard = Set(ESPProvisioning.Endpoint.allCases.map(\.rawValue))
        let named = table.userDescriptions.filter { standard.contains($0.value) }.map(\.key).prefix(16)
        let services = table.services.values.filter { s in
            s.uuid == ESPProvisioning.service || named.contains { $0 >= s.startHandle && $0 <= s.endHandle }
        }.prefix(16)
        for (handle, name) in table.userDescriptions.sorted(by: { $0.key < $1.key }) where names.count < limit {
            guard services.contains(where: { handle >= $0.startHandle && handle <= $0.endHandle }),
                  let info = table.info(for: handle), info.role == .value else { continue }
            names[info.uuid.canonicalString] = name
        }
        return names
    }

    // MARK: Extraction

    /// Gives the ESP-IDF steps of `script` their plaintext and the script its `esp` section
    /// (`endpoints`: the names discovery found, by characteristic UUID).
    /// Security 0 needs nothing: the plaintext is the bytes. Security 1 needs the phone's private
    /// key and the PoP (unless the device reports `no_pop`): the handshake is followed as
    /// `ESPProvisioningProtocol` follows it, the phone's SessionCmd1 proves the PoP, and every
    /// later value on a protected endpoint is decrypted with the session's one CTR stream.
    /// Secrets in the plaintext (the Wi-Fi password of CmdSetConfig) and the PoP are redacted
    /// unless `revealSecrets`. Not live when anything cannot be decrypted: the script then says
    /// why and keeps the recorded bytes only.
    static func annotate(_ script: inout SessionScript, endpoints names: [String: String], options: ExtractOptions) {
        let probe = names.isEmpty ? nil : names
        let onESP = script.steps.indices.filter { i in
            [.read, .write].contains(script.steps[i].action) && endpoint(of: script.steps[i], endpoints: probe) != nil
        }
        guard !onESP.isEmpty else { return }
        let reveal = options.revealSecrets
        let clientKey = options.keys["esp-client-key"]?.unsafeBytes
        let clientPublic = clientKey.flatMap { ESPSecurity1.publicKey(privateKey: $0) }
        let givenPoP = options.keys["esp-pop"]?.unsafeBytes

        var security: Int?
        var noPoP = false
        var note: String?
        func why(_ text: String) { if note == nil { note = text } }
        var usedPoP: [UInt8]?
        var sawHandshake = false
        // The phone's side of one connection's session.
        var keyMatches = false
        var devicePublic: [UInt8]?
        var candidates: [(pop: [UInt8], stream: ESPSecurity1.Stream)] = []
        var stream: ESPSecurity1.Stream?
        var steps = script.steps
        var plainEdits: [Int: ReplayStep] = [:]

        for i in steps.indices {
            let step = steps[i]
            if step.action == .connect {
                (keyMatches, devicePublic, candidates, stream) = (false, nil, [], nil)
                continue
            }
            guard step.action == .read || step.action == .write, let name = endpoint(of: step, endpoints: probe) else { continue }
            let written = step.action == .write
            guard let bytes = (written ? step.value : step.expect?.value).flatMap(Hex.bytes) else { continue }
            switch name {
            case versionName:
                guard !written else { continue }
                if let v = ESPProvisioning.Version.decode(bytes).0 {
                    if let s = v.securityVersion { security = s }
                    noPoP = noPoP || v.noPoP
                    steps[i].expect?.meaning = "proto-ver \(ProtocolText.display(bytes))"
                }
            case sessionName:
                guard let m = ESPProvisioning.SessionMessage.decode(bytes).0 else { continue }
                if written { steps[i].meaning = describe(session: m) } else { steps[i].expect?.meaning = describe(session: m) }
                switch m.payload {
                case .none:
                    security = m.securityVersion.raw
                case .sec0Command, .sec0Response:
                    security = 0
                case .sec1Command0(let key):
                    security = 1
                    sawHandshake = true
                    (devicePublic, candidates, stream) = (nil, [], nil)
                    keyMatches = clientPublic != nil && clientPublic == key
                    if clientKey == nil {
                        why("security 1 and no --esp-client-key (the phone's X25519 private key) to decrypt the session")
                    } else if !keyMatches {
                        why("--esp-client-key does not belong to this session's phone (its public key is not the recorded client_pubkey)")
                    }
                case .sec1Response0(let status, let key, let random):
                    guard keyMatches, let clientKey, status.raw == 0 else { continue }
                    guard let shared = try? ESPSecurity1.sharedSecret(privateKey: clientKey, peerPublicKey: key) else {
                        why("the recorded device public key has \(key.count) bytes; X25519 keys have 32")
                        continue
                    }
                    devicePublic = key
                    // The phone's PoP is the given one; a device with no_pop takes none (as the
                    // decoder does), and a phone that used none is recognised by its verify data.
                    var pops: [[UInt8]] = noPoP ? [[]] : [givenPoP ?? []]
                    if !noPoP, givenPoP?.isEmpty == false { pops.append([]) }
                    candidates = pops.compactMap { pop in
                        ESPSecurity1.Stream(key: ESPSecurity1.sessionKey(sharedSecret: shared, proofOfPossession: pop), iv: random).map { (pop, $0) }
                    }
                    if candidates.isEmpty { why("the recorded device_random has \(random.count) bytes; the IV has 16") }
                case .sec1Command1(let verify):
                    guard let devicePublic, !candidates.isEmpty else { continue }
                    for c in candidates {
                        var s = c.stream
                        guard s.apply(verify) == devicePublic else { continue }
                        stream = s
                        usedPoP = c.pop
                        break
                    }
                    candidates = []
                    if stream == nil {
                        why(givenPoP == nil && !noPoP
                            ? "the recorded Session_Command1 does not verify without a PoP: give --esp-pop"
                            : "the recorded Session_Command1 does not verify with --esp-pop: give the PoP the phone used")
                    }
                case .sec1Response1(_, let verify):
                    if var s = stream {
                        _ = s.apply(verify)
                        stream = s
                    }
                case .sec2:
                    security = 2
                    why("security 2 (SRP6a + AES-GCM) cannot be run live")
                }
            default:
                // An endpoint the session protects.
                var plain: [UInt8]
                switch security {
                case 0?:
                    plain = bytes
                case 1?:
                    guard var s = stream else {
                        why(sawHandshake ? "\(name) is encrypted and the session could not be decrypted"
                                         : "\(name) is encrypted and the capture has no session handshake before it")
                        continue
                    }
                    plain = s.apply(bytes)
                    stream = s
                default:
                    why("\(name) carries a payload before the capture shows the security scheme (no proto-ver answer or session)")
                    continue
                }
                var edited = steps[i]
                let uuid = edited.characteristic.flatMap(BluetoothUUID.init(string:)) ?? ESPProvisioning.service
                let secret = options.protocols.credentials(in: plain, characteristic: uuid, endpoint: name)
                // Security 0 values were redacted as they were read; redacting again changes nothing.
                if let secret, !reveal { plain = secret.redacting(plain) }
                let meaning = describe(plain, endpoint: name)
                if written {
                    edited.plain = Hex.string(plain)
                    if let secret, security == 1 || edited.credentials == nil {
                        edited.credentials = .init(format: secret.format, fields: secret.fields,
                                                   ssid: secret.ssid.map { String(decoding: $0, as: UTF8.self) },
                                                   redacted: !reveal && !secret.secret.isEmpty)
                    }
                    edited.meaning = meaning ?? edited.meaning
                } else {
                    var expect = edited.expect ?? .init()
                    expect.plain = Hex.string(plain)
                    expect.meaning = meaning ?? expect.meaning
                    edited.expect = expect
                }
                plainEdits[i] = edited
            }
        }

        if security == 1, !sawHandshake { why("security 1 and the capture has no session handshake") }
        let live = (security == 0 || security == 1) && note == nil
        if live { for (i, s) in plainEdits { steps[i] = s } }
        script.steps = steps
        var pop: String?
        if security == 1, !noPoP, let p = usedPoP ?? givenPoP {
            // Empty: the phone used none although the device did not say no_pop.
            pop = reveal || p.isEmpty ? String(decoding: p, as: UTF8.self) : String(repeating: "*", count: p.count)
        }
        script.esp = SessionScript.ESPSession(security: security, live: live, note: note, pop: pop,
                                              popRedacted: pop.map { $0.isEmpty ? false : !reveal },
                                noPoP: security == 1 ? noPoP : nil, endpoints: names.isEmpty ? nil : names)
    }

    // MARK: The emulated device shaped by the recording

    /// What the recording shows of the device: its scheme, proto-ver answer, no_pop, and
    /// whether it refused the phone's SessionCmd1 (the phone's PoP was not the device's).
    struct RecordedDevice {
        var security: Int?
        var versionText: String?
        var noPoP = false
        var refusedVerify = false
    }

    static func recordedDevice(_ script: SessionScript) -> RecordedDevice {
        var d = RecordedDevice()
        let esp = script.esp
        d.security = esp?.security
        d.noPoP = esp?.noPoP ?? false
        for step in script.steps where step.action == .read || step.action == .write {
            guard let name = endpoint(of: step, endpoints: esp?.endpoints) else { continue }
            if name == versionName, step.action == .read, d.versionText == nil,
               let bytes = step.expect?.value.flatMap(Hex.bytes), bytes.count <= GATTServer.maxValueLength {
                let text = String(decoding: bytes, as: UTF8.self)
                if Array(text.utf8) == bytes, let v = ESPProvisioning.Version.decode(bytes).0, v.securityVersion != nil {
                    d.versionText = text
                    d.security = d.security ?? v.securityVersion
                    d.noPoP = d.noPoP || v.noPoP
                }
            }
            if name == sessionName, step.action == .write, let bytes = step.value.flatMap(Hex.bytes),
               let m = ESPProvisioning.SessionMessage.decode(bytes).0 {
                d.security = d.security ?? m.securityVersion.raw
                if case .sec1Command1 = m.payload, step.expect?.result == "error" { d.refusedVerify = true }
            }
        }
        return d
    }

    /// An emulated ESP device like the recorded one: the recorded security scheme, proto-ver
    /// answer and PoP (`pop`, from `--set pop=`, else the script's unless redacted); no PoP for
    /// a device that reported `no_pop`. A device that refused the phone's PoP gets another one,
    /// so a recorded wrong-PoP session fails the same way. Everything else comes from `base`.
    public static func deviceConfiguration(for script: SessionScript, base: ESPConfiguration = ESPConfiguration(),
                                           pop: String? = nil) -> ESPConfiguration {
        let recorded = recordedDevice(script)
        guard let security = recorded.security, security == 0 || security == 1 else { return base }
        var c = base
        c.security = security
        c.versionText = recorded.versionText
        guard security == 1 else { return c }
        let esp = script.esp
        if recorded.noPoP {
            c.proofOfPossession = ""
        } else if let phone = pop ?? (esp?.popRedacted == true ? nil : esp?.pop) {
            c.proofOfPossession = !recorded.refusedVerify ? phone : base.proofOfPossession != phone ? base.proofOfPossession : "not-" + phone
        }
        return c
    }

    /// The device `replay run --target emu:NAME` runs: the plain `esp` device shaped by an ESP
    /// script (`deviceConfiguration`); any other device, scenario devices with their faults
    /// included, as it is.
    public static func emulatedDevice(_ spec: EmulatedDeviceSpec, for script: SessionScript,
                                      settings: [String: String] = [:]) -> DeviceFactory {
        shapedDevice(spec, for: script, settings: settings) ?? spec.factory
    }

    /// The shaped device, nil when `spec` is not one to shape (the hook's answer).
    static func shapedDevice(_ spec: EmulatedDeviceSpec, for script: SessionScript, settings: [String: String]) -> DeviceFactory? {
        // `esp` as named, or as built from the capture (emu:recorded); what shaping already put
        // in its configuration (the recorded table, Wi-Fi world, scan time) is kept.
        guard spec.name == "esp" || spec.name == "recorded", recordedDevice(script).security != nil else { return nil }
        return spec.reconfigured { (c: inout ESPConfiguration) in c = deviceConfiguration(for: script, base: c, pop: settings["pop"]) }.factory
    }

    // MARK: Meaning, for people

    static func describe(session m: ESPProvisioning.SessionMessage) -> String {
        switch m.payload {
        case .none: "SessionData \(m.securityVersion) without a message"
        case .sec0Command: "S0_Session_Command"
        case .sec0Response(let status): "S0_Session_Response \(status)"
        case .sec1Command0(let key): "Session_Command0 (client public key, \(key.count) bytes)"
        case .sec1Response0(let status, let key, let random):
            "Session_Response0 \(status) (device public key \(key.count) bytes, random \(random.count) bytes)"
        case .sec1Command1: "Session_Command1 (client verify data)"
        case .sec1Response1(let status, _): "Session_Response1 \(status) (device verify data)"
        case .sec2(let step): "security 2 \(step)"
        }
    }

    /// A plaintext message on a protected endpoint, nil when it does not decode. The password of
    /// CmdSetConfig is given by its length only.
    static func describe(_ plain: [UInt8], endpoint: String) -> String? {
        switch endpoint {
        case configName:
            guard let m = ESPProvisioning.ConfigMessage.decode(plain).0 else { return nil }
            return describe(config: m)
        case scanName:
            guard let m = ESPProvisioning.ScanMessage.decode(plain).0 else { return nil }
            return describe(scan: m)
        default:
            return "\(endpoint): \(plain.count) bytes"
        }
    }

    static func describe(config m: ESPProvisioning.ConfigMessage) -> String {
        switch m.payload {
        case .none: return "\(m.messageType) without a payload"
        case .getStatus: return "CmdGetStatus"
        case .status(let r): return "RespGetStatus \(r.status): \(describe(station: r))"
        case .setConfig(let c):
            return "CmdSetConfig SSID \"\(ProtocolText.display(c.ssid))\", password of \(c.passphrase.count) bytes"
        case .setConfigResponse(let s): return "RespSetConfig \(s)"
        case .applyConfig: return "CmdApplyConfig"
        case .applyConfigResponse(let s): return "RespApplyConfig \(s)"
        }
    }

    static func describe(station r: ESPProvisioning.StatusReport) -> String {
        switch r.detail {
        case .none: "station \(r.stationState)"
        case .failReason(let f): "station \(r.stationState) \(f)"
        case .connected(let c): "station \(r.stationState) to \"\(ProtocolText.display(c.ssid))\" (\(ProtocolText.display(c.ip4Address)))"
        case .attemptFailed(let n): "station \(r.stationState), attempt failed (\(n) left)"
        }
    }

    static func describe(scan m: ESPProvisioning.ScanMessage) -> String {
        let status = m.status.raw == 0 ? "" : " status \(m.status)"
        switch m.payload {
        case .none: return "\(m.messageType) without a payload\(status)"
        case .start(let blocking, _, _, let period): return "CmdScanStart (\(blocking ? "blocking" : "non-blocking"), \(period) ms per channel)"
        case .startResponse: return "RespScanStart\(status)"
        case .status: return "CmdScanStatus"
        case .statusResponse(let finished, let count):
            return "RespScanStatus \(finished ? "finished, \(count) result\(count == 1 ? "" : "s")" : "not finished")\(status)"
        case .result(let start, let count): return "CmdScanResult from \(start), \(count)"
        case .resultResponse(let entries):
            return "RespScanResult \(entries.count) network\(entries.count == 1 ? "" : "s")\(entries.isEmpty ? "" : ": ")"
                + entries.map { "\"\(ProtocolText.display($0.ssid))\"" }.joined(separator: ", ") + status
        }
    }
}

/// ESP-IDF provisioning in replay: the configuration rebuilt for `--set`, and the Wi-Fi world
/// (scan results, the configured network, the join's outcome) read from a recording.
extension ESPProvisioningProtocol: ReplayingProtocol {
    public static func rebuildCredentials(_ recorded: [UInt8], format: String, redacted: Bool,
                                          settings: CredentialSettings) throws(CredentialRebuildError) -> [UInt8]? {
        guard format == "esp-set-config" else { return nil }
        if redacted, settings.password == nil { throw .needs("password") }
        guard settings.ssid != nil || settings.password != nil else { return recorded }
        guard var message = ESPProvisioning.ConfigMessage.decode(recorded).0, case .setConfig(var c) = message.payload else {
            throw .undecodable("the recorded ESP config message")
        }
        if let password = settings.password { c.passphrase = Secret(password, label: "Wi-Fi password") }
        if let ssid = settings.ssid { c.ssid = ssid }
        message.payload = .setConfig(c)
        return message.encode()
    }

    public static func worldReader() -> (any RecordedWorldReading)? { ProvisioningWorld() }

    /// Scan results read from the scan endpoint, the configured network written to the config
    /// endpoint and its status read back. Security 0, or security 1 decrypted: ciphertext does
    /// not decode.
    struct ProvisioningWorld: RecordedWorldReading {
        mutating func read(_ step: RecordedWorldStep, into world: inout RecordedWorld) -> Bool {
            switch (step.characteristic, step.step.action) {
            case (ESPProvisioning.Endpoint.scan.defaultUUID, .read):
                guard let answer = step.answer, case .resultResponse(let entries)? = ESPProvisioning.ScanMessage.decode(answer).0?.payload else { return false }
                for e in entries {
                    world.add(ssid: e.ssid, bssid: e.bssid, channel: e.channel, band: nil, auth: e.auth.raw, rssi: e.rssi)
                }
                return true
            case (ESPProvisioning.Endpoint.config.defaultUUID, .write):
                // The plaintext as recorded (its password '*' when redacted; a security 1 value is
                // ciphertext, so the replay's values cannot stand in for it).
                let message = (step.step.plain ?? step.step.value).flatMap(Replay.Hex.bytes) ?? step.sent ?? []
                guard case .setConfig(let c)? = ESPProvisioning.ConfigMessage.decode(message).0?.payload else { return false }
                world.ssid = step.settings["ssid"].map { Array($0.utf8) } ?? c.ssid
                // A redacted plaintext holds '*' for the password: the one --set gives is it.
                world.password = step.redacted ? step.settings["password"].map { Array($0.utf8) } : c.passphrase.unsafeBytes
                return false
            case (ESPProvisioning.Endpoint.config.defaultUUID, .read):
                guard let answer = step.answer, case .status(let report)? = ESPProvisioning.ConfigMessage.decode(answer).0?.payload else { return false }
                switch report.detail {
                case .connected: world.join = .joined
                case .failReason(let reason): world.join = reason.raw == 1 ? .notFound : .wrongPassword
                case .none, .attemptFailed: break
                }
                return false
            default:
                return false
            }
        }
    }
}
