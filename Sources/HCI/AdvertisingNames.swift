/// Names for numbers that advertising carries. A stand-in: a table generated from the Bluetooth
/// SIG's Assigned Numbers can replace `company` without changing its callers.
public enum AdvertisingNames {
    /// The company a manufacturer-specific AD structure's identifier belongs to, where known.
    public static func company(_ id: UInt16) -> String? {
        switch id {
        case 0x0006: "Microsoft"
        case 0x004C: "Apple, Inc."
        case 0x0059: "Nordic Semiconductor ASA"
        case 0x00E0: "Google"
        case 0x02E5: "Espressif Incorporated"
        default: nil
        }
    }
}
