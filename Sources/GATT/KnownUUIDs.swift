import ATT
import AssignedNumbers

/// Names for UUIDs people meet in these captures: first the device protocols GATTLab decodes
/// (`custom`, and `sig` for the few SIG UUIDs named differently here), then common vendor
/// services (`VendorServices`), then the Bluetooth SIG's assigned numbers (`AssignedNumbers`,
/// generated from its YAML). Like Wireshark's UUID tables, a new protocol adds its entries here
/// and nothing else changes.
public enum KnownUUIDs {
    /// A readable name for a UUID, if known.
    public static func name(_ uuid: BluetoothUUID) -> String? {
        if let short = uuid.uuid16 {
            if squatted.contains(short) { return nil }
            return sig[short] ?? VendorServices.service16(short) ?? AssignedNumbers.uuid16Name(short)
        }
        return custom[uuid] ?? VendorServices.name(high: uuid.high, low: uuid.low)
    }

    /// Where a name for a UUID comes from: a device protocol GATTLab decodes, a vendor's
    /// service, or the SIG's assigned numbers.
    public enum Source: String, Sendable { case deviceProtocol, vendor, sig }

    /// The name of a service UUID and where it comes from; nil when nothing is known.
    public static func service(_ uuid: BluetoothUUID) -> (name: String, source: Source)? {
        if let short = uuid.uuid16 {
            if let n = sig[short] { return (n, .sig) }
            if let n = VendorServices.service16(short) { return (n, .vendor) }
            if let n = AssignedNumbers.service(short) { return (n, .sig) }
            if squatted.contains(short) { return nil }
            if let n = AssignedNumbers.memberService(short) ?? AssignedNumbers.sdo(short) {
                return ("\(n) (0x\(String(short, radix: 16, uppercase: true)))", .vendor)
            }
            return nil
        }
        if let n = custom[uuid] { return (n, .deviceProtocol) }
        if VendorServices.kind(high: uuid.high, low: uuid.low) == .service, let n = VendorServices.name(high: uuid.high, low: uuid.low) {
            return (n, .vendor)
        }
        return nil
    }

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
    ]

    /// 16-bit UUIDs that countless devices took for their own services before the SIG assigned
    /// them (0xFFF0 with characteristics 0xFFF1-0xFFF4 is the usual vendor-serial layout of
    /// cheap modules; the SIG has since given them to PKOC, ICCE, Aliro and FiRa). Naming them
    /// after the new owners would mislabel nearly every device that uses them, so they stay
    /// unnamed, as tshark leaves them.
    static let squatted: Set<UInt16> = [0xFFF0, 0xFFF1, 0xFFF2, 0xFFF3, 0xFFF4]

    /// SIG UUIDs named differently from the SIG's YAML (which says "GAP" and "GATT"): the
    /// names the rest of GATTLab and its tests use. Everything else comes from `AssignedNumbers`.
    static let sig: [UInt16: String] = [
        0x1800: "Generic Access", 0x1801: "Generic Attribute",
    ]
}
