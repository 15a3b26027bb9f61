import ATT
import AssignedNumbers
import Foundation

/// Names for UUIDs people meet in these captures: first the device protocols GATTLab decodes
/// (registered by them, and `sig` for the few SIG UUIDs named differently here), then common
/// vendor services (`VendorServices`), then the Bluetooth SIG's assigned numbers
/// (`AssignedNumbers`, generated from its YAML). Like Wireshark's UUID tables, a protocol
/// registers its names (`DeviceProtocol.uuidNames`, registered with the registration list) and
/// nothing here changes.
public enum KnownUUIDs {
    /// A readable name for a UUID, if known.
    public static func name(_ uuid: BluetoothUUID) -> String? {
        if let short = uuid.uuid16 {
            if squatted.contains(short) { return nil }
            return sig[short] ?? VendorServices.service16(short) ?? AssignedNumbers.uuid16Name(short)
        }
        return custom(uuid) ?? VendorServices.name(high: uuid.high, low: uuid.low)
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
        if let n = custom(uuid) { return (n, .deviceProtocol) }
        if VendorServices.kind(high: uuid.high, low: uuid.low) == .service, let n = VendorServices.name(high: uuid.high, low: uuid.low) {
            return (n, .vendor)
        }
        return nil
    }

    /// Adds names of 128-bit UUIDs a device protocol gives its service and characteristics. The
    /// registration list registers every protocol's before anything is decoded (as a dissector
    /// registers its fields at start-up); a name registered again replaces the earlier one.
    public static func register(_ names: [BluetoothUUID: String]) {
        registered.lock.withLock { registered.names.merge(names) { $1 } }
    }

    /// The registered names, behind a lock: registration may come from any thread, and every
    /// lookup reads them.
    private final class Registered: @unchecked Sendable {  // guarded by lock
        let lock = NSLock()
        var names: [BluetoothUUID: String] = [:]
    }

    private static let registered = Registered()

    private static func custom(_ uuid: BluetoothUUID) -> String? {
        registered.lock.withLock { registered.names[uuid] }
    }

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
