import ATT

/// Names for UUIDs people meet in these captures: the Bluetooth SIG's common services,
/// characteristics and descriptors, and the device protocols GATTLab decodes. Like Wireshark's
/// UUID tables, a new protocol adds its entries here and nothing else changes.
public enum KnownUUIDs {
    /// A readable name for a UUID, if known.
    public static func name(_ uuid: BluetoothUUID) -> String? {
        if let short = uuid.uuid16 { return sig[short] }
        return custom[uuid]
    }

    /// Characteristics whose values carry secrets (Wi-Fi passwords and the like) as a whole.
    /// Until a protocol decoder picks the secret field out, their raw values are redacted.
    public static let secretBearing: Set<BluetoothUUID> = [
        uuid("00000005-1234-5678-9abc-def012345678"),  // speaker OTA_CREDENTIALS: SSID, NUL, password
        uuid("14387802-130c-49e7-b877-2881c89cb258"),  // nRF7 control point: SET_CONFIG carries the passphrase
        uuid("021aff52-0382-4aea-bff4-6b3f1c5adfb4"),  // ESP prov-config: CmdSetConfig carries the passphrase
    ]

    /// The same, for endpoints known by their 0x2901 name (ESP-IDF's custom UUIDs).
    public static let secretBearingNames: Set<String> = ["prov-config"]

    static func uuid(_ s: String) -> BluetoothUUID {
        BluetoothUUID(string: s) ?? BluetoothUUID(uuid16: 0)
    }

    static let custom: [BluetoothUUID: String] = [
        uuid("00000001-1234-5678-9abc-def012345678"): "Speaker service",
        uuid("00000002-1234-5678-9abc-def012345678"): "Speaker DSP control",
        uuid("00000003-1234-5678-9abc-def012345678"): "Speaker DSP preset",
        uuid("00000004-1234-5678-9abc-def012345678"): "Speaker DSP level",
        uuid("00000005-1234-5678-9abc-def012345678"): "OTA_CREDENTIALS",
        uuid("00000006-1234-5678-9abc-def012345678"): "OTA_URL",
        uuid("00000007-1234-5678-9abc-def012345678"): "OTA_CONTROL",
        uuid("00000008-1234-5678-9abc-def012345678"): "OTA_STATUS",
        uuid("12345678-9abc-def0-1234-000000000008"): "Sensor Wi-Fi scan",
        uuid("14387800-130c-49e7-b877-2881c89cb258"): "nRF7 Wi-Fi provisioning service",
        uuid("14387801-130c-49e7-b877-2881c89cb258"): "nRF7 Info",
        uuid("14387802-130c-49e7-b877-2881c89cb258"): "nRF7 Control Point",
        uuid("14387803-130c-49e7-b877-2881c89cb258"): "nRF7 Data Out",
        uuid("021a9004-0382-4aea-bff4-6b3f1c5adfb4"): "ESP provisioning service",
        uuid("021aff4f-0382-4aea-bff4-6b3f1c5adfb4"): "ESP prov-ctrl",
        uuid("021aff50-0382-4aea-bff4-6b3f1c5adfb4"): "ESP prov-scan",
        uuid("021aff51-0382-4aea-bff4-6b3f1c5adfb4"): "ESP prov-session",
        uuid("021aff52-0382-4aea-bff4-6b3f1c5adfb4"): "ESP prov-config",
        uuid("021aff53-0382-4aea-bff4-6b3f1c5adfb4"): "ESP proto-ver",
        uuid("6e400001-b5a3-f393-e0a9-e50e24dcca9e"): "Nordic UART Service",
        uuid("6e400002-b5a3-f393-e0a9-e50e24dcca9e"): "Nordic UART RX",
        uuid("6e400003-b5a3-f393-e0a9-e50e24dcca9e"): "Nordic UART TX",
        uuid("8ec90001-f315-4f60-9fb8-838830daea50"): "Nordic DFU Control Point",
        uuid("8ec90002-f315-4f60-9fb8-838830daea50"): "Nordic DFU Packet",
        uuid("8ec90003-f315-4f60-9fb8-838830daea50"): "Nordic Buttonless DFU",
    ]

    static let sig: [UInt16: String] = [
        // GATT declarations
        0x2800: "Primary Service", 0x2801: "Secondary Service", 0x2802: "Include", 0x2803: "Characteristic",
        // Descriptors
        0x2900: "Characteristic Extended Properties", 0x2901: "Characteristic User Description",
        0x2902: "Client Characteristic Configuration", 0x2903: "Server Characteristic Configuration",
        0x2904: "Characteristic Presentation Format", 0x2905: "Characteristic Aggregate Format",
        0x2906: "Valid Range", 0x2907: "External Report Reference", 0x2908: "Report Reference",
        // Services
        0x1800: "Generic Access", 0x1801: "Generic Attribute", 0x1802: "Immediate Alert",
        0x1803: "Link Loss", 0x1804: "Tx Power", 0x1805: "Current Time", 0x1809: "Health Thermometer",
        0x180A: "Device Information", 0x180D: "Heart Rate", 0x180F: "Battery", 0x1810: "Blood Pressure",
        0x1812: "Human Interface Device", 0x1813: "Scan Parameters", 0x1814: "Running Speed and Cadence",
        0x1816: "Cycling Speed and Cadence", 0x1818: "Cycling Power", 0x1819: "Location and Navigation",
        0x181A: "Environmental Sensing", 0x181C: "User Data", 0x181D: "Weight Scale",
        0x181E: "Bond Management", 0x1822: "Pulse Oximeter", 0x1826: "Fitness Machine",
        0x1827: "Mesh Provisioning", 0x1828: "Mesh Proxy", 0xFE59: "Nordic Secure DFU",
        0xFEF5: "Dialog Semiconductor", 0xFE95: "Xiaomi", 0xFD6F: "Exposure Notification",
        // Characteristics
        0x2A00: "Device Name", 0x2A01: "Appearance", 0x2A02: "Peripheral Privacy Flag",
        0x2A03: "Reconnection Address", 0x2A04: "Peripheral Preferred Connection Parameters",
        0x2A05: "Service Changed", 0x2A06: "Alert Level", 0x2A07: "Tx Power Level",
        0x2A19: "Battery Level", 0x2A23: "System ID", 0x2A24: "Model Number String",
        0x2A25: "Serial Number String", 0x2A26: "Firmware Revision String",
        0x2A27: "Hardware Revision String", 0x2A28: "Software Revision String",
        0x2A29: "Manufacturer Name String", 0x2A2A: "IEEE 11073-20601 Regulatory Certification Data List",
        0x2A37: "Heart Rate Measurement", 0x2A38: "Body Sensor Location", 0x2A39: "Heart Rate Control Point",
        0x2A4A: "HID Information", 0x2A4B: "Report Map", 0x2A4C: "HID Control Point", 0x2A4D: "Report",
        0x2A4E: "Protocol Mode", 0x2A50: "PnP ID", 0x2A22: "Boot Keyboard Input Report",
        0x2A32: "Boot Keyboard Output Report", 0x2A33: "Boot Mouse Input Report",
        0x2A1C: "Temperature Measurement", 0x2A1D: "Temperature Type", 0x2A35: "Blood Pressure Measurement",
        0x2A53: "RSC Measurement", 0x2A5B: "CSC Measurement", 0x2A5C: "CSC Feature", 0x2A63: "Cycling Power Measurement",
        0x2A6E: "Temperature", 0x2A6F: "Humidity", 0x2AA6: "Central Address Resolution",
        0x2AC9: "Resolvable Private Address Only", 0x2B29: "Client Supported Features",
        0x2B2A: "Database Hash", 0x2B3A: "Server Supported Features",
    ]
}
