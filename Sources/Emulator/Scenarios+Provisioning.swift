import ATT
import Capture
import Profiles

/// Scenarios for the two standard provisioning protocols: the phone app's flow against an
/// emulated nRF7 (as Nordic's nRF Wi-Fi Provisioner app runs it) and an emulated ESP-IDF device
/// (as esp_prov and the ESP BLE Provisioning app run it).
extension Scenario {
    static let wrongPassword = "correct horse battery stapler"

    static var provisioningScenarios: [Scenario] {
        [
            nrf7("nrf7-provision", "nRF7: pair (Insufficient Authentication first), GET_STATUS, scan, SET_CONFIG, AUTHENTICATION to CONNECTED",
                 NRF7Configuration(), ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase),
            nrf7("nrf7-wrong-password", "nRF7: SET_CONFIG with a wrong passphrase: AUTHENTICATION, then CONNECTION_FAILED AUTH_ERROR",
                 NRF7Configuration(), ssid: WiFiEnvironment.homeSSID, passphrase: wrongPassword),
            nrf7("nrf7-network-not-found", "nRF7: an SSID that is not in range: CONNECTION_FAILED NETWORK_NOT_FOUND",
                 NRF7Configuration(), ssid: "HomeNet-Garage", passphrase: WiFiEnvironment.homePassphrase),
            nrf7("nrf7-invalid-passphrase", "nRF7: a 65-byte passphrase: Response INVALID_ARGUMENT",
                 NRF7Configuration(), ssid: WiFiEnvironment.homeSSID, passphrase: String(repeating: "correct horse battery ", count: 3)),
            nrf7("nrf7-dhcp-failure", "nRF7: joined, but DHCP never answers: OBTAINING_IP, then CONNECTION_FAILED FAIL_IP",
                 with { $0.dhcpFails = true }, ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase),
            nrf7("nrf7-disconnect-obtaining-ip", "nRF7: the device resets while obtaining an IP address (link lost, 0x08)",
                 with { $0.disconnectAt = 3 }, ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase),
            esp("esp-sec0-provision", "ESP-IDF security 0: proto-ver, session, scan in pages, set/apply config, Connected (password in the clear)",
                with { $0.security = 0 }, ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase),
            esp("esp-sec1-provision", "ESP-IDF security 1 (PoP abcd1234): X25519 handshake, encrypted scan and config, Connected",
                ESPConfiguration(), ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase),
            esp("esp-sec1-wrong-pop", "ESP-IDF security 1 with a wrong PoP: the device refuses Session_Command1 (Invalid PDU)",
                ESPConfiguration(), ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase, pop: "abcd1235"),
            esp("esp-sec1-wrong-password", "ESP-IDF security 1: a wrong passphrase: Connecting, then ConnectionFailed AuthError",
                ESPConfiguration(), ssid: WiFiEnvironment.homeSSID, passphrase: wrongPassword),
            esp("esp-sec0-5ghz-ssid", "ESP-IDF security 0: a 5 GHz-only SSID the ESP32 cannot see: ConnectionFailed NetworkNotFound",
                with { $0.security = 0 }, ssid: "HomeNet-5G", passphrase: WiFiEnvironment.homePassphrase),
        ]
    }

    // MARK: nRF7

    static func nrf7(_ name: String, _ summary: String, _ configuration: NRF7Configuration, ssid: String, passphrase: String) -> Scenario {
        Scenario(name: name, summary: summary, device: { mtu in NRF7Device.factory(configuration, serverMTU: mtu) },
                 configuration: .nrf7(configuration)) {
            central, mtu, log async throws(CentralError) in
            try await nrf7Session(central, mtu: mtu, log: log, ssid: ssid, passphrase: passphrase)
        }
    }

    /// Writes a Request to the Control Point and waits for its indicated Response.
    static func nrf7Request(_ central: ScriptedCentral, _ request: NRF7.Request, log: Log) async throws(CentralError) -> NRF7.Response? {
        if let e = try await central.write(NRF7.controlPoint, request.encode()) {
            log.add("\(request.opCode?.description ?? "request") refused: \(e)")
            return nil
        }
        guard let bytes = try await central.nextNotification(NRF7.controlPoint, within: 5_000_000) else {
            log.add("\(request.opCode?.description ?? "request"): no Response within 5 s")
            return nil
        }
        let response = NRF7.Response.decode(bytes).0
        log.add("\(request.opCode?.description ?? "request"): \(response?.status?.description ?? "undecodable Response")")
        return response
    }

    static func nrf7Session(_ central: ScriptedCentral, mtu: UInt16, log: Log, ssid: String, passphrase: String) async throws(CentralError) {
        await central.connect()
        let agreed = try await central.exchangeMTU(mtu)
        let table = try await central.discover()
        log.add("connected, MTU \(agreed), \(table.characteristics.count) characteristics")
        let info = NRF7.Info.decode(try await central.read(NRF7.info)).0
        log.add("protocol version \(info?.version.map(String.init) ?? "?")")
        // The CCCDs need an encrypted link: the first write fails, the phone bonds and retries.
        do {
            try await central.subscribe(NRF7.controlPoint, indications: true)
        } catch .attError(_, _, let e) where e.meansPairFirst {
            log.add("subscribe refused: \(e); pairing")
            await central.encrypt()
            try await central.subscribe(NRF7.controlPoint, indications: true)
        }
        try await central.subscribe(NRF7.dataOut)
        _ = try await nrf7Request(central, NRF7.Request(opCode: NRF7.opCode(1)), log: log)

        _ = try await nrf7Request(central, NRF7.Request(opCode: NRF7.opCode(2), scanParams: NRF7.ScanParams(band: NRF7.band(0), passive: false,
                                                                                                           periodMs: 100)), log: log)
        var found: [NRF7.ScanRecord] = []
        while let bytes = try await central.nextNotification(NRF7.dataOut, within: 4_000_000) {
            if let record = NRF7.Result.decode(bytes).0?.scanRecord { found.append(record) }
        }
        log.add("scan: \(found.count) networks")
        _ = try await nrf7Request(central, NRF7.Request(opCode: NRF7.opCode(3)), log: log)

        // The app fills WifiInfo from the scan record the user picked, or the SSID alone.
        let ssidBytes = Array(ssid.utf8)
        let wifi = found.first { $0.wifi?.ssid == ssidBytes }?.wifi ?? NRF7.WifiInfo(ssid: ssidBytes)
        let config = NRF7.WifiConfig(wifi: wifi, passphrase: passphrase, volatileMemory: false)
        guard let response = try await nrf7Request(central, NRF7.Request(opCode: NRF7.opCode(4), config: config), log: log),
              response.status?.raw == 0
        else {
            await central.disconnect()
            return
        }
        var last: NRF7.Result?
        while let bytes = try await central.nextNotification(NRF7.dataOut, within: 20_000_000) {
            guard let result = NRF7.Result.decode(bytes).0, let state = result.state else { continue }
            last = result
            log.add("state \(state)\(result.reason.map { " (\($0))" } ?? "")")
            if state.raw == 4 || state.raw == 5 { break }
        }
        guard await central.isConnected() else {
            log.add("the device dropped the link")
            return
        }
        if last?.state?.raw == 4 {
            _ = try await nrf7Request(central, NRF7.Request(opCode: NRF7.opCode(1)), log: log)
        }
        await central.disconnect()
    }

    // MARK: ESP-IDF

    /// The phone's X25519 private key in every ESP security 1 scenario, so that their recordings
    /// can be decrypted: `gattlab decode --esp-pop abcd1234 --esp-client-key <this, in hex>`.
    public static let espClientPrivateKey: [UInt8] = {
        var r = SplitMix64(seed: 0x6573_705F_7072_6F76)
        return (0..<32).map { _ in UInt8(truncatingIfNeeded: r.next()) }
    }()

    static func esp(_ name: String, _ summary: String, _ configuration: ESPConfiguration, ssid: String, passphrase: String,
                    pop: String? = nil) -> Scenario {
        Scenario(name: name, summary: summary, device: { mtu in ESPDevice.factory(configuration, serverMTU: mtu) },
                 configuration: .esp(configuration), script: {
            central, mtu, log async throws(CentralError) in
            var session = ESPPhoneSession(central: central, log: log, security: configuration.security,
                                          pop: pop ?? configuration.proofOfPossession)
            try await session.run(mtu: mtu, ssid: ssid, passphrase: passphrase)
        }, serverMTU: 256)
    }
}

/// The phone side of ESP-IDF provisioning: write a request to an endpoint, read its response;
/// with security 1, both through the session's single CTR stream.
struct ESPPhoneSession {
    let central: ScriptedCentral
    let log: Log
    let security: Int
    let pop: String
    /// The phone's X25519 private key for security 1.
    let clientPrivateKey: [UInt8]
    var stream: ESPSecurity1.Stream?

    init(central: ScriptedCentral, log: Log, security: Int, pop: String, clientPrivateKey: [UInt8] = Scenario.espClientPrivateKey) {
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
