/// What the built-in tables of the device protocols (`--profile NAME`, each protocol's
/// `builtInTable`) share.
public enum BuiltInProfiles {
    /// GAP and GATT services as an ESP32 (NimBLE) or nRF Connect SDK device puts them first
    /// (handles 1-9): the head of every built-in table's service list.
    public static let commonServices = """
        {"uuid": "0x1800", "startHandle": 1, "endHandle": 5, "characteristics": [
          {"uuid": "0x2a00", "handle": 2, "valueHandle": 3, "properties": ["read"]},
          {"uuid": "0x2a01", "handle": 4, "valueHandle": 5, "properties": ["read"]}]},
        {"uuid": "0x1801", "startHandle": 6, "endHandle": 9, "characteristics": [
          {"uuid": "0x2a05", "handle": 7, "valueHandle": 8, "properties": ["indicate"],
           "descriptors": [{"uuid": "0x2902", "handle": 9}]}]}
        """
}
