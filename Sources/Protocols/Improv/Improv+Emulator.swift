import ATT
import Emulator
import Profiles

/// The Improv device in the emulator, and the sessions Home Assistant's client runs against it:
/// read capabilities and state, wait for authorization, optionally scan, send WIFI_SETTINGS (cut
/// into writes of at most MTU-3 bytes, or of 20 for a client that does not wait for the MTU), and
/// wait for PROVISIONED or an error.
extension ImprovProtocol: EmulatedProtocol {
    public static var deviceKind: String { "improv" }

    public static var devices: [EmulatedDeviceSpec] {
        [
            EmulatedDeviceSpec(name: "improv", kind: "improv", summary: "an ESPHome device with Improv Wi-Fi over BLE (esp32_improv)",
                               configuration: ImprovConfiguration()),
        ]
    }

    public static var scenarios: [Scenario] {
        let home = WiFiEnvironment.homeSSID, password = WiFiEnvironment.homePassphrase
        return [
            improv("improv-provision", "Improv: capabilities, device info, scan, WIFI_SETTINGS, PROVISIONING to PROVISIONED with the next URL",
                   ImprovConfiguration(), ssid: home, password: password, scan: true),
            improv("improv-authorize", "Improv: AUTHORIZATION_REQUIRED until the button is pressed, AUTHORIZED, WIFI_SETTINGS, PROVISIONED",
                   Scenario.with { $0.requiresAuthorization = true }, ssid: home, password: password),
            improv("improv-wrong-password", "Improv: WIFI_SETTINGS with a wrong password: PROVISIONING, then UNABLE_TO_CONNECT",
                   ImprovConfiguration(), ssid: home, password: WiFiEnvironment.wrongPassphrase),
            improv("improv-not-authorized", "Improv: nobody presses the button; WIFI_SETTINGS is refused with NOT_AUTHORIZED",
                   Scenario.with { $0.requiresAuthorization = true; $0.authorizeAfter = nil }, ssid: home, password: password),
            improv("improv-split-rpc", "Improv: a client writing 20-byte pieces; the device joins WIFI_SETTINGS from several writes",
                   ImprovConfiguration(), ssid: home, password: password, piece: 20),
            improv("improv-reset-provisioning", "Improv: the device resets while PROVISIONING (link lost, 0x08): provisioning never finishes",
                   Scenario.with { $0.resetWhileProvisioning = true }, ssid: home, password: password),
        ]
    }

    static func improv(_ name: String, _ summary: String, _ configuration: ImprovConfiguration, ssid: String, password: String,
                       scan: Bool = false, piece: Int? = nil) -> Scenario {
        Scenario(name: name, summary: summary, configuration: configuration) { central, mtu, log async throws(CentralError) in
            try await session(central, mtu: mtu, log: log, ssid: ssid, password: password, scan: scan, piece: piece)
        }
    }

    /// Writes a frame in pieces of at most `piece` bytes (MTU-3 when nil), as clients do.
    static func send(_ central: ScriptedCentral, _ frame: [UInt8], mtu: UInt16, piece: Int?, log: ScenarioLog) async throws(CentralError) {
        let size = max(1, piece ?? (Int(mtu) - 3))
        var offset = 0
        var writes = 0
        while offset < frame.count {
            let end = min(frame.count, offset + size)
            if let e = try await central.write(Improv.rpcCommand, Array(frame[offset..<end])) { log.add("write refused: \(e)") }
            offset = end
            writes += 1
        }
        if writes > 1 { log.add("command sent in \(writes) writes") }
    }

    static func session(_ central: ScriptedCentral, mtu: UInt16, log: ScenarioLog, ssid: String, password: String,
                        scan: Bool, piece: Int?) async throws(CentralError) {
        try await Scenario.open(central, mtu: mtu, log: log, subscribeTo: Improv.currentState)
        try await central.subscribe(Improv.errorState)
        try await central.subscribe(Improv.rpcResult)
        let caps = Improv.Capabilities.decode(try await central.read(Improv.capabilities)).0
        log.add("capabilities \(caps?.names.joined(separator: ",") ?? "?")")
        var state = Improv.CurrentState.decode(try await central.read(Improv.currentState)).0?.state.raw ?? 0
        log.add("state \(Improv.state(state))")
        if state == 1 {
            // The app asks the user to press the button and waits for AUTHORIZED (up to 5 s here).
            if let v = try await central.nextNotification(Improv.currentState, within: 5_000_000) {
                state = Int(v.first ?? 0)
                log.add("state \(Improv.state(state))")
            } else {
                log.add("still AUTHORIZATION_REQUIRED after 5 s; sending anyway")
            }
        }
        if (caps?.raw ?? 0) & 0x02 != 0, let frame = Improv.Command(command: 0x03).encode() {
            try await send(central, frame, mtu: mtu, piece: piece, log: log)
            if let r = try await central.nextNotification(Improv.rpcResult, within: 2_000_000), let info = Improv.Result.decode(r).0 {
                log.add("device info " + info.strings.map { String(decoding: $0, as: UTF8.self) }.joined(separator: " "))
            }
        }
        if scan, let frame = Improv.Command(command: 0x04).encode() {
            try await send(central, frame, mtu: mtu, piece: piece, log: log)
            var count = 0
            // Results that do not decode (cut at MTU 23) are skipped, as the client logs and drops them.
            while let r = try await central.nextNotification(Improv.rpcResult, within: 4_000_000) {
                guard let result = Improv.Result.decode(r).0 else { continue }
                if result.endsScan { break }
                count += result.networks.count
            }
            log.add("scan: \(count) networks")
        }
        guard let frame = Improv.Command.wifiSettings(ssid: Array(ssid.utf8), password: Array(password.utf8)).encode() else { return }
        try await send(central, frame, mtu: mtu, piece: piece, log: log)
        // States and errors until PROVISIONED or an error (or nothing for 10 s).
        var finished = false
        while !finished {
            if let e = try await central.nextNotification(Improv.errorState, within: 1), let x = e.first, x != 0 {
                log.add("error \(Improv.error(Int(x)))")
                break
            }
            guard let v = try await central.nextNotification(Improv.currentState, within: 10_000_000) else {
                // However the wait ended (at once in process, at the timeout over a socket), a lost link is told first.
                if !(await central.isConnected()) {
                    log.add("the device dropped the link")
                } else if let e = try await central.nextNotification(Improv.errorState, within: 1), let x = e.first, x != 0 {
                    log.add("error \(Improv.error(Int(x)))")
                } else {
                    log.add("no state change within 10 s")
                }
                break
            }
            let s = Int(v.first ?? 0)
            log.add("state \(Improv.state(s))")
            if s == 4 {
                if let r = try await central.nextNotification(Improv.rpcResult, within: 2_000_000), let url = Improv.Result.decode(r).0?.redirectURL {
                    log.add("next URL \(String(decoding: url, as: UTF8.self))")
                }
                finished = true
            }
            if !(await central.isConnected()) { log.add("the device dropped the link"); break }
        }
        if await central.isConnected() { await central.disconnect() }
    }
}
