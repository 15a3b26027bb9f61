import ATT
import Capture
import Emulator
import Profiles

/// The ESP-IDF device's scenarios: provisioning as esp_prov and the ESP BLE Provisioning app
/// run it, security 0 and 1, with the ways it can fail, and for the audit security 1 without a
/// proof of possession.
extension ESPProvisioningProtocol {
    public static var scenarios: [Scenario] {
        Scenario.espScenarios
    }

    public static var auditScenarios: [Scenario] {
        Scenario.espAuditScenarios
    }
}

extension Scenario {
    fileprivate static var espScenarios: [Scenario] {
        [
            esp("esp-sec0-provision", "ESP-IDF security 0: proto-ver, session, scan in pages, set/apply config, Connected (password in the clear)",
                with { $0.security = 0 }, ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase),
            esp("esp-sec1-provision", "ESP-IDF security 1 (PoP abcd1234): X25519 handshake, encrypted scan and config, Connected",
                ESPConfiguration(), ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase),
            esp("esp-sec1-wrong-pop", "ESP-IDF security 1 with a wrong PoP: the device refuses Session_Command1 (Invalid PDU)",
                ESPConfiguration(), ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase, pop: "abcd1235"),
            esp("esp-sec1-wrong-password", "ESP-IDF security 1: a wrong passphrase: Connecting, then ConnectionFailed AuthError",
                ESPConfiguration(), ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.wrongPassphrase),
            esp("esp-sec0-5ghz-ssid", "ESP-IDF security 0: a 5 GHz-only SSID the ESP32 cannot see: ConnectionFailed NetworkNotFound",
                with { $0.security = 0 }, ssid: "HomeNet-5G", passphrase: WiFiEnvironment.homePassphrase),
        ]
    }

    fileprivate static var espAuditScenarios: [Scenario] {
        [
            esp("esp-sec1-no-pop", "ESP-IDF security 1 without a proof of possession (no_pop): the key is the X25519 secret alone; Connected",
                with { $0.proofOfPossession = "" }, ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase),
        ]
    }

    /// The phone's X25519 private key in every ESP security 1 scenario, so that their recordings
    /// can be decrypted: `gattlab decode --esp-pop abcd1234 --esp-client-key <this, in hex>`.
    public static let espClientPrivateKey: [UInt8] = {
        var r = SplitMix64(seed: 0x6573_705F_7072_6F76)
        return (0..<32).map { _ in UInt8(truncatingIfNeeded: r.next()) }
    }()

    static func esp(_ name: String, _ summary: String, _ configuration: ESPConfiguration, ssid: String, passphrase: String,
                    pop: String? = nil) -> Scenario {
        Scenario(name: name, summary: summary, configuration: configuration, serverMTU: 256) {
            central, mtu, log async throws(CentralError) in
            var session = ESPPhoneSession(central: central, log: log, security: configuration.security,
                                          pop: pop ?? configuration.proofOfPossession)
            try await session.run(mtu: mtu, ssid: ssid, passphrase: passphrase)
        }
    }
}

/// The phone side of ESP-IDF provisioning: write a request to an endpoint, read its response;
/// with security 1, both through the session's single CTR stream.
struct ESPPhoneSession {
    let central: ScriptedCentral
    let log: ScenarioLog
    let security: Int
    let pop: String
    /// The phone's X25519 private key for security 1.
    let clientPrivateKey: [UInt8]
    var stream: ESPSecurity1.Stream?

    init(central: ScriptedCentral, log: ScenarioLog, security: Int, pop: String, clientPrivateKey: [UInt8] = Scenario.espClientPrivateKey) {
        self.central = central
        self.log = log
        self.security = security
        self.pop = pop
        self.clientPrivateKey = clientPrivateKey
    }

    /// One request and its response in the clear (proto-ver, prov-session); nil when refused.
    func exchange(_ endpoint: ESPProvisioning.Endpoint, _ request: [UInt8]) async throws(CentralError) -> [UInt8]? {
        if let e = try await central.write(endpoint.defaultUUID, request) {
            log.add("\(endpoint.rawValue) refused: \(e)")
            return nil
        }
        return try await central.read(endpoint.defaultUUID)
    }

    /// One request and response on an encrypted endpoint (prov-config, prov-scan).
    mutating func secure(_ endpoint: ESPProvisioning.Endpoint, _ plain: [UInt8]) async throws(CentralError) -> [UInt8]? {
        var s = stream
        let request = s?.apply(plain) ?? plain
        guard let response = try await exchange(endpoint, request) else { return nil }
        let answer = s?.apply(response) ?? response
        stream = s
        return answer
    }

    mutating func run(mtu: UInt16, ssid: String, passphrase: String) async throws(CentralError) {
        await central.connect()
        let agreed = try await central.exchangeMTU(mtu)
        try await central.discover()
        let names = try await central.readUserDescriptions()
        log.add("connected, MTU \(agreed), endpoints \(names.values.sorted().joined(separator: " "))")
        guard let versionBytes = try await exchange(.version, Array("ESP".utf8)) else { return await central.disconnect() }
        let version = ESPProvisioning.Version.decode(versionBytes).0
        log.add("proto-ver: \(version?.text ?? "?")")
        guard try await establishSession() else { return await central.disconnect() }

        if version?.capabilities.contains("wifi_scan") == true { try await scan() }
        let set = ESPProvisioning.ConfigMessage(.setConfig(.init(ssid: ssid, passphrase: passphrase)))
        guard let setAnswer = try await secure(.config, set.encode()) else { return await central.disconnect() }
        log.add("CmdSetConfig: \(ESPProvisioning.ConfigMessage.decode(setAnswer).0.map { "\($0.payload)" } ?? "undecodable")")
        guard try await secure(.config, ESPProvisioning.ConfigMessage(.applyConfig).encode()) != nil else {
            return await central.disconnect()
        }
        // esp_prov polls the station state once a second.
        for _ in 0..<20 {
            try await central.wait(1_000_000)
            guard let bytes = try await secure(.config, ESPProvisioning.ConfigMessage(.getStatus).encode()),
                  case .status(let report)? = ESPProvisioning.ConfigMessage.decode(bytes).0?.payload
            else { break }
            if report.stationState.raw == 1 { continue }
            switch report.detail {
            case .connected(let c): log.add("station \(report.stationState): \(c.ssidText) channel \(c.channel), IP \(c.ip4Address)")
            case .failReason(let r): log.add("station \(report.stationState): \(r)")
            default: log.add("station \(report.stationState)")
            }
            break
        }
        await central.disconnect()
    }

    /// Security 0: one plaintext exchange. Security 1: the X25519 handshake with the PoP.
    mutating func establishSession() async throws(CentralError) -> Bool {
        guard security == 1 else {
            let answer = try await exchange(.session, ESPProvisioning.SessionMessage(.sec0Command).encode())
            log.add("session (security 0): \(answer == nil ? "refused" : "established")")
            return answer != nil
        }
        let privateKey = clientPrivateKey
        guard let publicKey = ESPSecurity1.publicKey(privateKey: privateKey),
              let bytes0 = try await exchange(.session, ESPProvisioning.SessionMessage(.sec1Command0(clientPublicKey: publicKey)).encode()),
              case .sec1Response0(_, let devicePublic, let random)? = ESPProvisioning.SessionMessage.decode(bytes0).0?.payload,
              let shared = try? ESPSecurity1.sharedSecret(privateKey: privateKey, peerPublicKey: devicePublic),
              var s = ESPSecurity1.Stream(key: ESPSecurity1.sessionKey(sharedSecret: shared, proofOfPossession: Array(pop.utf8)), iv: random)
        else {
            log.add("session: Session_Response0 missing or unusable")
            return false
        }
        let verify = s.apply(devicePublic)
        guard let bytes1 = try await exchange(.session, ESPProvisioning.SessionMessage(.sec1Command1(clientVerifyData: verify)).encode()) else {
            log.add("session refused: the device could not verify us (wrong PoP?)")
            return false
        }
        guard case .sec1Response1(_, let deviceVerify)? = ESPProvisioning.SessionMessage.decode(bytes1).0?.payload,
              s.apply(deviceVerify) == publicKey
        else {
            log.add("session: the device's verify data does not match")
            return false
        }
        stream = s
        // The emulator's own test key, printed so the recording can be decrypted (a real phone's
        // key is a secret: esp_prov prints it only in its verbose log).
        log.add("session (security 1\(pop.isEmpty ? ", no PoP" : "")): established; decrypt with \(pop.isEmpty ? "" : "--esp-pop \(pop) ")--esp-client-key \(Hex.string(privateKey, separator: ""))")
        return true
    }

    /// Non-blocking scan, polled, then the results in pages of four (as esp_prov pages them).
    mutating func scan() async throws(CentralError) {
        let start = ESPProvisioning.ScanMessage(.start(blocking: false, passive: false, groupChannels: 0, periodMs: 120))
        guard try await secure(.scan, start.encode()) != nil else { return }
        var count: UInt32 = 0
        for _ in 0..<10 {
            try await central.wait(1_000_000)
            guard let bytes = try await secure(.scan, ESPProvisioning.ScanMessage(.status).encode()),
                  case .statusResponse(let finished, let n)? = ESPProvisioning.ScanMessage.decode(bytes).0?.payload
            else { return }
            if finished {
                count = n
                break
            }
        }
        var names: [String] = []
        var index: UInt32 = 0
        while index < count {
            let page = min(4, count - index)
            guard let bytes = try await secure(.scan, ESPProvisioning.ScanMessage(.result(startIndex: index, count: page)).encode()),
                  case .resultResponse(let entries)? = ESPProvisioning.ScanMessage.decode(bytes).0?.payload, !entries.isEmpty
            else { break }
            names += entries.map(\.ssidText)
            index += UInt32(entries.count)
        }
        log.add("scan: \(names.count) networks: \(names.joined(separator: ", "))")
    }
}
