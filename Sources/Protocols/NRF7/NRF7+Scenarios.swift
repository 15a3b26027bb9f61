import ATT
import Emulator
import Profiles

/// The nRF7's scenarios: the phone app's provisioning flow as Nordic's nRF Wi-Fi Provisioner
/// runs it, with the ways a join can fail, and for the audit a control point open on a plain link.
extension NRF7Protocol {
    public static var scenarios: [Scenario] {
        Scenario.nrf7Scenarios
    }

    public static var auditScenarios: [Scenario] {
        Scenario.nrf7AuditScenarios
    }
}

extension Scenario {
    fileprivate static var nrf7Scenarios: [Scenario] {
        [
            nrf7("nrf7-provision", "nRF7: pair (Insufficient Authentication first), GET_STATUS, scan, SET_CONFIG, AUTHENTICATION to CONNECTED",
                 NRF7Configuration(), ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase),
            nrf7("nrf7-wrong-password", "nRF7: SET_CONFIG with a wrong passphrase: AUTHENTICATION, then CONNECTION_FAILED AUTH_ERROR",
                 NRF7Configuration(), ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.wrongPassphrase),
            nrf7("nrf7-network-not-found", "nRF7: an SSID that is not in range: CONNECTION_FAILED NETWORK_NOT_FOUND",
                 NRF7Configuration(), ssid: "HomeNet-Garage", passphrase: WiFiEnvironment.homePassphrase),
            nrf7("nrf7-invalid-passphrase", "nRF7: a 65-byte passphrase: Response INVALID_ARGUMENT",
                 NRF7Configuration(), ssid: WiFiEnvironment.homeSSID, passphrase: String(repeating: "correct horse battery ", count: 3)),
            nrf7("nrf7-dhcp-failure", "nRF7: joined, but DHCP never answers: OBTAINING_IP, then CONNECTION_FAILED FAIL_IP",
                 with { $0.dhcpFails = true }, ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase),
            nrf7("nrf7-disconnect-obtaining-ip", "nRF7: the device resets while obtaining an IP address (link lost, 0x08)",
                 with { $0.disconnectAt = 3 }, ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase),
        ]
    }

    fileprivate static var nrf7AuditScenarios: [Scenario] {
        [
            nrf7("nrf7-open-control-point", "nRF7 firmware whose control point needs no encryption: GET_STATUS, scan, SET_CONFIG, CONNECTED on a plain link",
                 with { $0.controlPointNeedsEncryption = false }, ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase),
        ]
    }

    static func nrf7(_ name: String, _ summary: String, _ configuration: NRF7Configuration, ssid: String, passphrase: String) -> Scenario {
        Scenario(name: name, summary: summary, configuration: configuration) {
            central, mtu, log async throws(CentralError) in
            try await nrf7Session(central, mtu: mtu, log: log, ssid: ssid, passphrase: passphrase)
        }
    }

    /// Writes a Request to the Control Point and waits for its indicated Response.
    static func nrf7Request(_ central: ScriptedCentral, _ request: NRF7.Request, log: ScenarioLog) async throws(CentralError) -> NRF7.Response? {
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

    static func nrf7Session(_ central: ScriptedCentral, mtu: UInt16, log: ScenarioLog, ssid: String, passphrase: String) async throws(CentralError) {
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
}
