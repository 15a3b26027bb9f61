import ATT
import GATT
import Profiles

/// What the sensor protocol tells the GATT layer: its `--profile sensor` table.
extension SensorScanProtocol {
    public static let shortName = "sensor"

    public static let uuidNames: [BluetoothUUID: String] = [SensorScan.characteristic: "Sensor Wi-Fi scan"]

    public static let builtInTable: String? = """
        {"name": "Sensor (Wi-Fi scan)", "services": [\(BuiltInProfiles.commonServices),
          {"uuid": "12345678-9abc-def0-1234-000000000000", "startHandle": 10, "endHandle": 13, "characteristics": [
            {"uuid": "12345678-9abc-def0-1234-000000000008", "handle": 11, "valueHandle": 12, "properties": ["write", "notify"],
             "descriptors": [{"uuid": "0x2902", "handle": 13}]}]}]}
        """
}

extension WiFiNetwork {
    public init(_ n: SensorScan.Network) { self.init(ssid: n.ssid, rssi: n.rssi) }
}
