import ATT
import Profiles
import Transport

/// What a scenario run produced.
public struct ScenarioResult: Sendable {
    public var name: String
    public var seed: UInt64
    public var recording: Recording
    /// One line per step the central took, for the CLI and for test failure messages.
    public var log: [String]
}

/// A named, seeded run of a scripted central against an emulated device, recorded as the phone's
/// HCI log. Same seed and MTU, same bytes.
public struct Scenario: Sendable {
    public var name: String
    public var summary: String
    var device: @Sendable (UInt16) -> DeviceFactory
    /// The device's configuration, for devices quirks can be planted in (speaker and sensor).
    var configuration: DeviceConfiguration?
    var script: @Sendable (ScriptedCentral, UInt16, Log) async throws(CentralError) -> Void
    /// The largest MTU the device's stack accepts (23: a stack without MTU exchange support).
    public var serverMTU: UInt16 = 247

    /// Runs the scenario. `mtu` is what the phone asks for in Exchange MTU (23 or 247 typically).
    public func run(seed: UInt64 = 1, mtu: UInt16 = 247, timing: LinkTiming = LinkTiming()) async throws(CentralError) -> ScenarioResult {
        let link = EmulatedLink(seed: seed, timing: timing, device: device(serverMTU))
        let log = Log()
        try await runScript(over: link, mtu: mtu, log: log)
        return ScenarioResult(name: name, seed: seed, recording: await link.recording(), log: log.lines)
    }

    /// Runs the scenario's phone over any link, such as a `UnixSocketLink` to the scenario's
    /// device served in another process (`EmulatedDeviceSpec.named(name)`). Returns the step log,
    /// which is the same as `run(seed:mtu:)`'s for the same seed and MTU.
    public func run(over link: any TimedATTBearer & LinkControl, mtu: UInt16) async throws(CentralError) -> [String] {
        let log = Log()
        try await runScript(over: link, mtu: mtu, log: log)
        return log.lines
    }

    private func runScript(over link: any TimedATTBearer & LinkControl, mtu: UInt16, log: Log) async throws(CentralError) {
        let central = ScriptedCentral(bearer: link)
        do {
            try await script(central, mtu, log)
        } catch {
            log.add("stopped: \(error)")
            throw error
        }
        if await link.isConnected() { await link.close() }
    }

    public static func named(_ name: String) -> Scenario? { all.first { $0.name == name } }

    public static let all: [Scenario] = [
        speaker("speaker-ota", "normal update: credentials, URL, START, download with progress, SUCCESS",
                SpeakerConfiguration(), reboot: false),
        speaker("speaker-wrong-password", "START with a wrong Wi-Fi password: WIFI_CONNECTING, then ERROR WIFI_CONNECT",
                with { $0.faults = [.wrongPassword] }, reboot: false),
        speaker("speaker-5ghz-ssid", "START with a 5 GHz-only SSID: ERROR WIFI_CONNECT",
                with { $0.faults = [.ssid5GHzOnly] }, reboot: false),
        speaker("speaker-http-connect", "the firmware server is unreachable: ERROR HTTP_CONNECT",
                with { $0.faults = [.httpConnect] }, reboot: false),
        speaker("speaker-http-status", "the firmware server answers with an error: ERROR HTTP_RESPONSE",
                with { $0.faults = [.httpStatus] }, reboot: false),
        speaker("speaker-download-stall", "the download stops at 63 % and fails 30 s later with ERROR DOWNLOAD",
                with { $0.faults = [.downloadStall(atPercent: 63)] }, reboot: false),
        speaker("speaker-verify-failure", "the image fails verification: VERIFYING, then ERROR VERIFY",
                with { $0.faults = [.verifyFailure] }, reboot: false),
        speaker("speaker-reboot-validate", "full update, REBOOT (the link drops), reconnect, PENDING_VERIFY, VALIDATE, IDLE",
                SpeakerConfiguration(), reboot: true),
        speaker("speaker-encrypted-credentials", "credentials need encryption: Insufficient Encryption, pairing, write again",
                with { $0.credentialsNeedEncryption = true }, reboot: false),
        speaker("speaker-short-status", "status notifications cut to 3 bytes by the firmware",
                with { $0.statusCutTo = 3 }, reboot: false),
        speaker("speaker-disconnect-downloading", "the device drops the link as it starts downloading",
                with { $0.disconnectAt = .downloading }, reboot: false),
        speaker("speaker-rollback", "full update and REBOOT, but no VALIDATE: PENDING_VERIFY, then the device rolls back to IDLE",
                SpeakerConfiguration(), reboot: true, validate: false),
        speaker("speaker-mtu23-only", "a stack that stays at MTU 23 whatever the phone asks: credentials and URL as long writes",
                SpeakerConfiguration(), reboot: false).serving(mtu: 23),
        sensor("sensor-scan", "SCAN answered with chunked notifications ending in END", SensorConfiguration()),
        sensor("sensor-scan-separate-markers", "SCAN answered with MORE/END as notifications of their own",
               with { $0.separateMarkers = true }),
        sensor("sensor-scan-missing-end", "SCAN answer without END: the phone times out and disconnects",
               with { $0.missingEnd = true }),
        sensor("sensor-scan-dropped", "the first notification of the answer is lost (at MTU 247 the whole answer)",
               with { $0.droppedNotifications = [0] }),
        sensor("sensor-scan-delayed", "the answer is held back 8.5 s: the phone's 10 s scan timeout ends it first",
               with { $0.delayedNotifications = [0: 8_500_000] }),
        sensor("sensor-mtu23-only", "a stack that stays at MTU 23: the answer in 20-byte chunks",
               SensorConfiguration()).serving(mtu: 23),
    ] + provisioningScenarios + auditScenarios

    /// The same scenario on a device whose stack accepts at most `mtu`.
    func serving(mtu: UInt16) -> Scenario {
        var s = self
        s.serverMTU = mtu
        return s
    }

    static func with<T>(_ change: (inout T) -> Void) -> T where T: DefaultInit {
        var v = T()
        change(&v)
        return v
    }
}

protocol DefaultInit { init() }
extension SpeakerConfiguration: DefaultInit {}
extension SensorConfiguration: DefaultInit {}
extension NRF7Configuration: DefaultInit {}
extension ESPConfiguration: DefaultInit {}

/// A step log shared by a script and its runner.
final class Log: @unchecked Sendable {
    // Used by one task at a time (the script, then the runner), never concurrently.
    private(set) var lines: [String] = []
    func add(_ line: String) { lines.append(line) }
}

extension Scenario {
    static let credentials = SpeakerOTA.Credentials(ssid: "HomeNet", password: "correct horse battery staple")
    static let firmwareURL = SpeakerOTA.FirmwareURL("https://fw.chaoticvolt.example/speaker/v2.4.1.bin")

    static func speaker(_ name: String, _ summary: String, _ configuration: SpeakerConfiguration, reboot: Bool,
                        validate: Bool = true, pairing: PairingOptions? = nil, url: SpeakerOTA.FirmwareURL = firmwareURL,
                        readBackCredentials: Bool = false) -> Scenario {
        Scenario(name: name, summary: summary, device: { mtu in SpeakerDevice.factory(configuration, serverMTU: mtu) },
                 configuration: .speaker(configuration)) {
            central, mtu, log async throws(CentralError) in
            try await speakerSession(central, mtu: mtu, log: log, configuration: configuration, reboot: reboot, validate: validate,
                                     pairing: pairing, url: url, readBackCredentials: readBackCredentials)
        }
    }

    static func status(_ bytes: [UInt8]?) -> SpeakerOTA.Status? {
        bytes.flatMap { SpeakerOTA.Status.decode($0).0 }
    }

    /// Connects, exchanges MTU, discovers and subscribes to OTA_STATUS.
    static func open(_ central: ScriptedCentral, mtu: UInt16, log: Log, subscribeTo uuid: BluetoothUUID) async throws(CentralError) {
        await central.connect()
        let agreed = try await central.exchangeMTU(mtu)
        let table = try await central.discover()
        log.add("connected, MTU \(agreed), \(table.characteristics.count) characteristics")
        try await central.subscribe(uuid)
    }

    /// The app's update flow. `pairing`: the app bonds right after subscribing; `url`: the
    /// firmware URL it sends; `readBackCredentials`: it reads OTA_CREDENTIALS after writing them.
    static func speakerSession(_ central: ScriptedCentral, mtu: UInt16, log: Log, configuration: SpeakerConfiguration,
                               reboot: Bool, validate: Bool = true, pairing: PairingOptions? = nil,
                               url: SpeakerOTA.FirmwareURL = firmwareURL, readBackCredentials: Bool = false) async throws(CentralError) {
        try await open(central, mtu: mtu, log: log, subscribeTo: SpeakerOTA.status)
        if let pairing {
            await central.pair(pairing)
            log.add("paired (\(pairing.usesSecureConnections ? "Secure Connections" : "legacy"), \(pairing.resultingAssociation), key size \(pairing.agreedKeySize)); link encrypted")
        }
        let initial = status(try await central.read(SpeakerOTA.status))
        log.add("status \(initial?.state?.description ?? "?")")
        if let e = try await central.write(SpeakerOTA.credentials, credentials.encode()) {
            log.add("credentials refused: \(e)")
            guard e.meansPairFirst else { return }
            await central.encrypt()
            log.add("paired; link encrypted")
            if let e = try await central.write(SpeakerOTA.credentials, credentials.encode()) {
                log.add("credentials refused again: \(e)")
                return
            }
        }
        _ = try await central.nextNotification(SpeakerOTA.status, within: 2_000_000)
        if readBackCredentials {
            let back = try await central.read(SpeakerOTA.credentials)
            log.add("credentials read back: \(back.count) bytes")
        }
        try await central.write(SpeakerOTA.url, url.encode())
        _ = try await central.nextNotification(SpeakerOTA.status, within: 2_000_000)
        try await central.write(SpeakerOTA.control, SpeakerOTA.ControlCommand(.start).encode())
        log.add("START")
        // Follow the update until it ends, fails, or goes quiet for a minute.
        var last: SpeakerOTA.Status?
        while let bytes = try await central.nextNotification(SpeakerOTA.status, within: 60_000_000) {
            guard let s = status(bytes) else {
                log.add("status of \(bytes.count) bytes")
                continue
            }
            last = s
            if s.state == .success || s.state == .error { break }
        }
        log.add("update ended: \(last?.state?.description ?? "no status") \(last?.error?.description ?? "")")
        guard await central.isConnected() else {
            log.add("the device dropped the link")
            return
        }
        guard reboot, last?.state == .success else {
            await central.disconnect()
            return
        }
        try await central.write(SpeakerOTA.control, SpeakerOTA.ControlCommand(.reboot).encode())
        let dropped = await central.waitForDisconnect(within: 10_000_000)
        log.add("REBOOT; link dropped: \(dropped)")
        try await central.wait(8_000_000)
        try await open(central, mtu: mtu, log: log, subscribeTo: SpeakerOTA.status)
        let after = status(try await central.read(SpeakerOTA.status))
        log.add("after reboot: \(after?.state?.description ?? "?")")
        guard validate else {
            // The app was closed before it validated: the device rolls back on its own.
            let next = status(try await central.nextNotification(SpeakerOTA.status, within: configuration.validateTimeout + 10_000_000))
            log.add("no VALIDATE; then: \(next?.state?.description ?? "no status")")
            await central.disconnect()
            return
        }
        try await central.write(SpeakerOTA.control, SpeakerOTA.ControlCommand(.validate).encode())
        let validated = status(try await central.nextNotification(SpeakerOTA.status, within: 2_000_000))
        log.add("VALIDATE: \(validated?.state?.description ?? "no status")")
        await central.disconnect()
    }

    static func sensor(_ name: String, _ summary: String, _ configuration: SensorConfiguration) -> Scenario {
        Scenario(name: name, summary: summary, device: { mtu in SensorDevice.factory(configuration, serverMTU: mtu) },
                 configuration: .sensor(configuration)) {
            central, mtu, log async throws(CentralError) in
            try await open(central, mtu: mtu, log: log, subscribeTo: SensorScan.characteristic)
            try await central.write(SensorScan.characteristic, SensorScan.request)
            log.add("SCAN")
            var joiner = SensorScan.Joiner()
            var chunks = 0
            var complete = false
            // The app gives the scan 10 s, and 3 s between chunks once they flow.
            var window: Int64 = 10_000_000
            while let chunk = try await central.nextNotification(SensorScan.characteristic, within: window) {
                chunks += 1
                window = 3_000_000
                if joiner.add(chunk) {
                    complete = true
                    break
                }
            }
            log.add("\(chunks) notifications, \(complete ? "END received" : "no END: timed out")")
            await central.disconnect()
        }
    }
}
