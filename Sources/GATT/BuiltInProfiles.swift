import ATT
import Foundation

/// Attribute tables of the devices GATTLab knows, for captures that start after discovery
/// (`--profile NAME`). They are also the tables the emulated devices serve, so a recording of an
/// emulated device and its profile agree by construction.
public enum BuiltInProfiles {
    public static let names = ["speaker", "sensor", "nrf7", "esp"]

    public static func table(named name: String) -> (name: String?, table: AttributeTable)? {
        guard let json = sources[name] else { return nil }
        return try? GATTTableFile.parse(Data(json.utf8), source: "built-in profile \(name)")
    }

    /// GAP and GATT services as an ESP32 (NimBLE) or nRF Connect SDK device puts them first.
    static let common = """
        {"uuid": "0x1800", "startHandle": 1, "endHandle": 5, "characteristics": [
          {"uuid": "0x2a00", "handle": 2, "valueHandle": 3, "properties": ["read"]},
          {"uuid": "0x2a01", "handle": 4, "valueHandle": 5, "properties": ["read"]}]},
        {"uuid": "0x1801", "startHandle": 6, "endHandle": 9, "characteristics": [
          {"uuid": "0x2a05", "handle": 7, "valueHandle": 8, "properties": ["indicate"],
           "descriptors": [{"uuid": "0x2902", "handle": 9}]}]}
        """

    static let sources: [String: String] = [
        "speaker": """
            {"name": "ChaoticVolt speaker (OTA)", "services": [\(common),
              {"uuid": "00000001-1234-5678-9abc-def012345678", "startHandle": 10, "endHandle": 21, "characteristics": [
                {"uuid": "00000002-1234-5678-9abc-def012345678", "handle": 11, "valueHandle": 12, "properties": ["read", "write"]},
                {"uuid": "00000005-1234-5678-9abc-def012345678", "handle": 13, "valueHandle": 14, "properties": ["write"]},
                {"uuid": "00000006-1234-5678-9abc-def012345678", "handle": 15, "valueHandle": 16, "properties": ["write"]},
                {"uuid": "00000007-1234-5678-9abc-def012345678", "handle": 17, "valueHandle": 18, "properties": ["write"]},
                {"uuid": "00000008-1234-5678-9abc-def012345678", "handle": 19, "valueHandle": 20, "properties": ["read", "notify"],
                 "descriptors": [{"uuid": "0x2902", "handle": 21}]}]}]}
            """,
        "sensor": """
            {"name": "Sensor (Wi-Fi scan)", "services": [\(common),
              {"uuid": "12345678-9abc-def0-1234-000000000000", "startHandle": 10, "endHandle": 13, "characteristics": [
                {"uuid": "12345678-9abc-def0-1234-000000000008", "handle": 11, "valueHandle": 12, "properties": ["write", "notify"],
                 "descriptors": [{"uuid": "0x2902", "handle": 13}]}]}]}
            """,
        "nrf7": """
            {"name": "nRF7 Wi-Fi provisioning", "services": [\(common),
              {"uuid": "14387800-130c-49e7-b877-2881c89cb258", "startHandle": 10, "endHandle": 18, "characteristics": [
                {"uuid": "14387801-130c-49e7-b877-2881c89cb258", "handle": 11, "valueHandle": 12, "properties": ["read"]},
                {"uuid": "14387802-130c-49e7-b877-2881c89cb258", "handle": 13, "valueHandle": 14, "properties": ["write", "indicate"],
                 "descriptors": [{"uuid": "0x2902", "handle": 15}]},
                {"uuid": "14387803-130c-49e7-b877-2881c89cb258", "handle": 16, "valueHandle": 17, "properties": ["notify"],
                 "descriptors": [{"uuid": "0x2902", "handle": 18}]}]}]}
            """,
        "esp": """
            {"name": "ESP-IDF provisioning", "services": [\(common),
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
            """,
    ]
}
