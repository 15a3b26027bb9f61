import ATT
import GATT
import Profiles

/// What ESP-IDF provisioning tells the GATT layer: its `--profile esp` table
/// and prov-config, whose CmdSetConfig carries the passphrase (by UUID and by 0x2901 name).
extension ESPProvisioningProtocol {
    public static let shortName = "esp"

    /// The default service and endpoint UUIDs, named after the endpoints (`ESP prov-config`).
    public static let uuidNames: [BluetoothUUID: String] = ESPProvisioning.Endpoint.allCases.reduce(into: [ESPProvisioning.service: "ESP provisioning service"]) {
        $0[$1.defaultUUID] = "ESP " + $1.rawValue
    }

    public static let builtInTable: String? = """
        {"name": "ESP-IDF provisioning", "services": [\(BuiltInProfiles.commonServices),
          {"uuid": "021a9004-0382-4aea-bff4-6b3f1c5adfb4", "startHandle": 10, "endHandle": 25, "characteristics": [
            {"uuid": "021aff50-0382-4aea-bff4-6b3f1c5adfb4", "description": "prov-scan", "handle": 11, "valueHandle": 12, "properties": ["read", "write"],
             "descriptors": [{"uuid": "0x2901", "handle": 13}]},
            {"uuid": "021aff51-0382-4aea-bff4-6b3f1c5adfb4", "description": "prov-session", "handle": 14, "valueHandle": 15, "properties": ["read", "write"],
             "descriptors": [{"uuid": "0x2901", "handle": 16}]},
            {"uuid": "021aff52-0382-4aea-bff4-6b3f1c5adfb4", "description": "prov-config", "handle": 17, "valueHandle": 18, "properties": ["read", "write"],
             "descriptors": [{"uuid": "0x2901", "handle": 19}]},
            {"uuid": "021aff53-0382-4aea-bff4-6b3f1c5adfb4", "description": "proto-ver", "handle": 20, "valueHandle": 21, "properties": ["read", "write"],
             "descriptors": [{"uuid": "0x2901", "handle": 22}]},
            {"uuid": "021aff4f-0382-4aea-bff4-6b3f1c5adfb4", "description": "prov-ctrl", "handle": 23, "valueHandle": 24, "properties": ["read", "write"],
             "descriptors": [{"uuid": "0x2901", "handle": 25}]}]}]}
        """

    public static let secretCharacteristics: Set<BluetoothUUID> = [ESPProvisioning.Endpoint.config.defaultUUID]
    public static let secretEndpointNames: Set<String> = [ESPProvisioning.Endpoint.config.rawValue]
}

extension ESPProvisioningProtocol {
    /// A security 0 prov-config set-config's passphrase: WiFiConfigPayload.cmd_set_config (12) .
    /// passphrase (2). (Under security 1 the value is ciphertext; the replay finds it in the plaintext.)
    public static func credentials(in bytes: [UInt8], characteristic: BluetoothUUID, endpoint: String?) -> CredentialLayout? {
        guard characteristic == ESPProvisioning.Endpoint.config.defaultUUID || endpoint == ESPProvisioning.Endpoint.config.rawValue,
              let range = ProtoWire.bytesField([12, 2], in: bytes) else { return nil }
        var ssid: [UInt8]?
        if case .setConfig(let c)? = ESPProvisioning.ConfigMessage.decode(bytes).0?.payload { ssid = c.ssid }
        return CredentialLayout(format: "esp-set-config", fields: ["ssid", "password"], secret: [range], ssid: ssid)
    }
}

extension WiFiNetwork {
    public init(_ e: ESPProvisioning.ScanEntry) {
        self.init(ssid: e.ssid, bssid: e.bssid, channel: Int(e.channel), rssi: Int(e.rssi), authMode: e.auth.description)
    }
}
