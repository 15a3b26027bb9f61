import ATT
import GATT
import Profiles

/// What the speaker protocol tells the GATT layer: its `--profile speaker` table
/// and the characteristic that carries the Wi-Fi password.
extension SpeakerOTAProtocol {
    public static let shortName = "speaker"

    /// The speaker's service, its DSP characteristics and the OTA ones, as the firmware team names them.
    public static let uuidNames: [BluetoothUUID: String] = [
        SpeakerOTA.service: "Speaker service",
        BluetoothUUID(high: 0x0000_0002_1234_5678, low: 0x9ABC_DEF0_1234_5678): "Speaker DSP control",
        BluetoothUUID(high: 0x0000_0003_1234_5678, low: 0x9ABC_DEF0_1234_5678): "Speaker DSP preset",
        BluetoothUUID(high: 0x0000_0004_1234_5678, low: 0x9ABC_DEF0_1234_5678): "Speaker DSP level",
        SpeakerOTA.credentials: "OTA_CREDENTIALS",
        SpeakerOTA.url: "OTA_URL",
        SpeakerOTA.control: "OTA_CONTROL",
        SpeakerOTA.status: "OTA_STATUS",
    ]

    public static let builtInTable: String? = """
        {"name": "ChaoticVolt speaker (OTA)", "services": [\(BuiltInProfiles.commonServices),
          {"uuid": "00000001-1234-5678-9abc-def012345678", "startHandle": 10, "endHandle": 21, "characteristics": [
            {"uuid": "00000002-1234-5678-9abc-def012345678", "handle": 11, "valueHandle": 12, "properties": ["read", "write"]},
            {"uuid": "00000005-1234-5678-9abc-def012345678", "handle": 13, "valueHandle": 14, "properties": ["write"]},
            {"uuid": "00000006-1234-5678-9abc-def012345678", "handle": 15, "valueHandle": 16, "properties": ["write"]},
            {"uuid": "00000007-1234-5678-9abc-def012345678", "handle": 17, "valueHandle": 18, "properties": ["write"]},
            {"uuid": "00000008-1234-5678-9abc-def012345678", "handle": 19, "valueHandle": 20, "properties": ["read", "notify"],
             "descriptors": [{"uuid": "0x2902", "handle": 21}]}]}]}
        """

    /// OTA_CREDENTIALS: SSID, NUL, password.
    public static let secretCharacteristics: Set<BluetoothUUID> = [SpeakerOTA.credentials]
}

extension SpeakerOTAProtocol {
    /// The password after the credentials' NUL (all of it without one); a URL's user info and tokens.
    public static func credentials(in bytes: [UInt8], characteristic: BluetoothUUID, endpoint: String?) -> CredentialLayout? {
        switch characteristic {
        case SpeakerOTA.credentials:
            guard let nul = bytes.firstIndex(of: 0) else {
                return CredentialLayout(format: "speaker-credentials", fields: ["ssid", "password"], secret: [0..<bytes.count])
            }
            return CredentialLayout(format: "speaker-credentials", fields: ["ssid", "password"], secret: [(nul + 1)..<bytes.count],
                                    ssid: Array(bytes[..<nul]))
        case SpeakerOTA.url:
            return CredentialLayout(format: "speaker-url", fields: ["url"], secret: SpeakerOTA.FirmwareURL(bytes: bytes).secretParts.map(\.range))
        default:
            return nil
        }
    }
}
