import ATT
import Emulator
import Profiles

/// The speaker's scenarios: the app's OTA update flow with each fault the firmware can have,
/// and the audit's sessions that show how an update can expose credentials (pairing, a readable
/// credentials characteristic, secrets in the firmware URL), with `speaker-secure-ota`, the
/// clean twin of them all.
extension SpeakerOTAProtocol {
    public static var scenarios: [Scenario] {
        Scenario.speakerScenarios
    }

    public static var auditScenarios: [Scenario] {
        Scenario.speakerAuditScenarios
    }
}

extension Scenario {
    fileprivate static var speakerScenarios: [Scenario] {
        [
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
        ]
    }

    fileprivate static var speakerAuditScenarios: [Scenario] {
        [
            speaker("speaker-secure-ota", "LE Secure Connections, Numeric Comparison, MITM, bonding, 16-byte key; credentials, https URL, update to SUCCESS",
                    SpeakerConfiguration(), reboot: false, pairing: securePairing),
            speaker("speaker-legacy-pairing", "legacy Just Works pairing with a 7-byte key, the LTK in Encryption Information; then the update",
                    SpeakerConfiguration(), reboot: false, pairing: legacyPairing),
            speaker("speaker-sc-justworks", "Secure Connections Just Works (no MITM protection), 16-byte key; then the update",
                    SpeakerConfiguration(), reboot: false, pairing: justWorksPairing),
            speaker("speaker-credentials-readback", "a firmware whose credentials characteristic is readable: the phone reads SSID and password back",
                    with { $0.credentialsReadable = true }, reboot: false, readBackCredentials: true),
            speaker("speaker-url-secrets", "a firmware URL with user:password and a token in its query, over plain http; then the update",
                    SpeakerConfiguration(), reboot: false, url: secretsURL),
        ]
    }

    /// A firmware URL with a user:password and an access token in it (and plain http).
    static let secretsURL = SpeakerOTA.FirmwareURL("http://admin:hunter2@updates.example.com/fw/speaker.bin?token=8c1f4e2ad9b7")

    /// LE Secure Connections with Numeric Comparison, MITM protection and bonding, 16-byte key.
    static let securePairing = PairingOptions(method: .secureConnections, association: .numericComparison, mitm: true,
                                                     bonding: true, keySize: 16)
    /// Legacy Just Works with a 7-byte key; the device hands over its LTK (Encryption Information).
    static let legacyPairing = PairingOptions(method: .legacy, association: .justWorks, mitm: false, bonding: true, keySize: 7,
                                                     centralKeys: [.idKey], peripheralKeys: [.encKey, .idKey])
    /// Secure Connections Just Works: encrypted, but unauthenticated (no MITM protection).
    static let justWorksPairing = PairingOptions(method: .secureConnections, association: .justWorks, mitm: false,
                                                        bonding: true, keySize: 16)

    static let credentials = SpeakerOTA.Credentials(ssid: "HomeNet", password: "correct horse battery staple")
    static let firmwareURL = SpeakerOTA.FirmwareURL("https://fw.chaoticvolt.example/speaker/v2.4.1.bin")

    static func speaker(_ name: String, _ summary: String, _ configuration: SpeakerConfiguration, reboot: Bool,
                        validate: Bool = true, pairing: PairingOptions? = nil, url: SpeakerOTA.FirmwareURL = firmwareURL,
                        readBackCredentials: Bool = false) -> Scenario {
        Scenario(name: name, summary: summary, configuration: configuration) {
            central, mtu, log async throws(CentralError) in
            try await speakerSession(central, mtu: mtu, log: log, configuration: configuration, reboot: reboot, validate: validate,
                                     pairing: pairing, url: url, readBackCredentials: readBackCredentials)
        }
    }

    static func status(_ bytes: [UInt8]?) -> SpeakerOTA.Status? {
        bytes.flatMap { SpeakerOTA.Status.decode($0).0 }
    }

    /// The app's update flow. `pairing`: the app bonds right after subscribing; `url`: the
    /// firmware URL it sends; `readBackCredentials`: it reads OTA_CREDENTIALS after writing them.
    static func speakerSession(_ central: ScriptedCentral, mtu: UInt16, log: ScenarioLog, configuration: SpeakerConfiguration,
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
}
