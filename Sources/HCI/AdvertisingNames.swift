import AssignedNumbers

/// Names for what advertising carries, from the Bluetooth SIG's assigned numbers (the table
/// Scripts/assigned-numbers.py generates from the SIG's YAML).
public enum AdvertisingNames {
    /// The company a manufacturer-data company identifier belongs to, if assigned.
    public static func company(_ id: UInt16) -> String? {
        AssignedNumbers.company(id)
    }

    /// The name of an Appearance value (category, or category and subcategory), if assigned.
    public static func appearance(_ value: UInt16) -> String? {
        AssignedNumbers.appearance(value)
    }
}
