import ATT
import GATT
import Profiles

/// What nRF7 provisioning tells the GATT layer: its `--profile nrf7` table and
/// the control point whose SET_CONFIG carries the passphrase.
extension NRF7Protocol {
    public static let shortName = "nrf7"

    public static let uuidNames: [BluetoothUUID: String] = [
        NRF7.service: "nRF7 Wi-Fi provisioning service",
        NRF7.info: "nRF7 Info",
        NRF7.controlPoint: "nRF7 Control Point",
        NRF7.dataOut: "nRF7 Data Out",
    ]

    public static let builtInTable: String? = """
        {"name": "nRF7 Wi-Fi provisioning", "services": [\(BuiltInProfiles.commonServices),
          {"uuid": "14387800-130c-49e7-b877-2881c89cb258", "startHandle": 10, "endHandle": 18, "characteristics": [
            {"uuid": "14387801-130c-49e7-b877-2881c89cb258", "handle": 11, "valueHandle": 12, "properties": ["read"]},
            {"uuid": "14387802-130c-49e7-b877-2881c89cb258", "handle": 13, "valueHandle": 14, "properties": ["write", "indicate"],
             "descriptors": [{"uuid": "0x2902", "handle": 15}]},
            {"uuid": "14387803-130c-49e7-b877-2881c89cb258", "handle": 16, "valueHandle": 17, "properties": ["notify"],
             "descriptors": [{"uuid": "0x2902", "handle": 18}]}]}]}
        """

    public static let secretCharacteristics: Set<BluetoothUUID> = [NRF7.controlPoint]
}

extension NRF7Protocol {
    /// A SET_CONFIG request's passphrase: Request.config (11) . WifiConfig.passphrase (2); the
    /// SSID at config.wifi (1) . ssid (1).
    public static func credentials(in bytes: [UInt8], characteristic: BluetoothUUID, endpoint: String?) -> CredentialLayout? {
        guard characteristic == NRF7.controlPoint, let range = ProtoWire.bytesField([11, 2], in: bytes) else { return nil }
        let ssid = ProtoWire.bytesField([11, 1, 1], in: bytes).map { Array(bytes[$0]) }
        return CredentialLayout(format: "nrf7-set-config", fields: ["ssid", "password"], secret: [range], ssid: ssid)
    }
}

extension WiFiNetwork {
    public init?(_ r: NRF7.ScanRecord) {
        guard let w = r.wifi else { return nil }
        let band = w.band.flatMap { $0.raw == 1 || $0.raw == 2 ? $0.name : nil }
        self.init(ssid: w.ssid ?? [], bssid: w.bssid, channel: w.channel.map { Int($0) }, rssi: r.rssi.map { Int($0) },
                  authMode: w.auth?.description, band: band)
    }
}
