import Emulator
import Profiles

/// A recording that holds known secrets in every place a phone's HCI log can carry them, for
/// tests that prove a tool never leaks them (audit output, redacted captures):
/// 1. connection handle 0x0040, a speaker: legacy pairing whose device LTK (Encryption
///    Information) is `ltk`, credentials whose password is `password`, an https URL; then a
///    bonded reconnection that encrypts with `ltk` (LE Enable Encryption with its EDIV and Rand);
/// 2. later, connection handle 0x0041, an ESP-IDF device with security 1, `proofOfPossession`
///    and the phone key `clientPrivateKey` (32 bytes, X25519), provisioned with the same
///    password (encrypted on the air) and joining a network that takes it.
/// A test fixture spanning two protocols, so it belongs to neither protocol's folder.
public enum CanaryCapture {
    public static let ssid = WiFiEnvironment.homeSSID

    /// The two sessions in one recording, in time order (the second starts a second after the
    /// first ends). The same arguments and seed give the same bytes. A step the emulation
    /// refuses (a password over 64 bytes, a key that is not 32 bytes) ends that session early;
    /// what was recorded until then is kept.
    public static func make(password: String, proofOfPossession: String, ltk: [UInt8], clientPrivateKey: [UInt8],
                            seed: UInt64 = 1) async -> Recording {
        var recording = await speakerSession(password: password, ltk: ltk, seed: seed)
        let esp = await espSession(password: password, pop: proofOfPossession, clientPrivateKey: clientPrivateKey, seed: seed &+ 1)
        let end = recording.packets.last?.time ?? EmulatedLink.epoch
        let shift = (end + 1_000_000) - (esp.packets.first?.time ?? end)
        recording.packets += esp.packets.map { p in
            var p = p
            p.time += max(0, shift)
            return p
        }
        return recording
    }

    static func speakerSession(password: String, ltk: [UInt8], seed: UInt64) async -> Recording {
        let link = EmulatedLink(seed: seed, handle: 0x0040, device: SpeakerDevice.factory(SpeakerConfiguration()))
        let central = ScriptedCentral(bearer: link)
        let log = ScenarioLog()
        let pairing = PairingOptions(method: .legacy, association: .justWorks, mitm: false, bonding: true, keySize: 16,
                                     centralKeys: [.idKey], peripheralKeys: [.encKey, .idKey], ltk: ltk)
        do throws(CentralError) {
            try await Scenario.open(central, mtu: 247, log: log, subscribeTo: SpeakerOTA.status)
            await central.pair(pairing)
            let credentials = SpeakerOTA.Credentials(ssid: ssid, password: password)
            guard try await central.write(SpeakerOTA.credentials, credentials.encode()) == nil else { return await finish(link) }
            _ = try await central.nextNotification(SpeakerOTA.status, within: 2_000_000)
            try await central.write(SpeakerOTA.url, Scenario.firmwareURL.encode())
            _ = try await central.nextNotification(SpeakerOTA.status, within: 2_000_000)
            await central.disconnect()
            try await central.wait(3_000_000)
            // The bonded phone comes back and encrypts with the LTK it was given.
            await central.connect()
            _ = try await central.exchangeMTU(247)
            await link.resumeEncryption()
            _ = try await central.read(SpeakerOTA.status)
            await central.disconnect()
        } catch {
            log.add("stopped: \(error)")
        }
        return await finish(link)
    }

    static func espSession(password: String, pop: String, clientPrivateKey: [UInt8], seed: UInt64) async -> Recording {
        var configuration = ESPConfiguration()
        configuration.security = 1
        configuration.proofOfPossession = pop
        // The home network takes the canary password, so the join succeeds.
        var environment = WiFiEnvironment.neighbourhood(seed: seed)
        for i in environment.networks.indices where environment.networks[i].ssid.hasPrefix(WiFiEnvironment.homeSSID) {
            environment.networks[i].passphrase = password
        }
        configuration.environment = environment
        let link = EmulatedLink(seed: seed, handle: 0x0041, device: ESPDevice.factory(configuration))
        let central = ScriptedCentral(bearer: link)
        var session = ESPPhoneSession(central: central, log: ScenarioLog(), security: 1, pop: pop, clientPrivateKey: clientPrivateKey)
        do throws(CentralError) {
            try await session.run(mtu: 247, ssid: ssid, passphrase: password)
        } catch {
            session.log.add("stopped: \(error)")
        }
        return await finish(link)
    }

    private static func finish(_ link: EmulatedLink) async -> Recording {
        if await link.isConnected() { await link.close() }
        return await link.recording()
    }
}
