import Profiles

/// Scenarios for the credential-handling audit: sessions that each show one way credentials
/// are exposed (legacy or unauthenticated pairing, a short key, a readable credentials
/// characteristic, secrets in the firmware URL, ESP security 1 without a PoP, an nRF7 control
/// point open on a plain link), and `speaker-secure-ota`, the clean twin of them all.
extension Scenario {
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

    static var auditScenarios: [Scenario] {
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
            esp("esp-sec1-no-pop", "ESP-IDF security 1 without a proof of possession (no_pop): the key is the X25519 secret alone; Connected",
                with { $0.proofOfPossession = "" }, ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase),
            nrf7("nrf7-open-control-point", "nRF7 firmware whose control point needs no encryption: GET_STATUS, scan, SET_CONFIG, CONNECTED on a plain link",
                 with { $0.controlPointNeedsEncryption = false }, ssid: WiFiEnvironment.homeSSID, passphrase: WiFiEnvironment.homePassphrase),
        ]
    }
}
