/// Services that vendors defined outside the SIG's lists, as met in the field: 128-bit UUIDs,
/// and 16-bit member UUIDs named by the service they carry rather than the member they were
/// assigned to (0xFE59 is "Nordic Semiconductor ASA" in the SIG's list, "Nordic Secure DFU"
/// here). Hand-written and small; each UUID was checked against a public source named beside it.
/// Not here: Microsoft Swift Pair, which is manufacturer data of company 0x0006 in advertising,
/// not a GATT UUID; Bluetooth Mesh Provisioning and Proxy (0x1827, 0x1828), which the SIG lists.
public enum VendorServices {
    public enum Kind: String, Sendable { case service, characteristic }

    public struct Entry: Sendable {
        public let high: UInt64
        public let low: UInt64
        public let name: String
        public let kind: Kind
    }

    /// The name of a 128-bit vendor UUID (its two halves as `BluetoothUUID` keeps them).
    public static func name(high: UInt64, low: UInt64) -> String? { byValue[Key(high: high, low: low)]?.name }

    /// Whether a 128-bit vendor UUID names a service or a characteristic.
    public static func kind(high: UInt64, low: UInt64) -> Kind? { byValue[Key(high: high, low: low)]?.kind }

    /// The service a member UUID (or a SIG UUID that GATTLab names differently) carries.
    public static func service16(_ uuid16: UInt16) -> String? {
        var low = 0, high = services16.count
        while low < high {
            let mid = (low + high) / 2
            if services16[mid].0 == uuid16 { return services16[mid].1 }
            if services16[mid].0 < uuid16 { low = mid + 1 } else { high = mid }
        }
        return nil
    }

    /// 16-bit UUIDs named by their service, sorted.
    static let services16: [(UInt16, String)] = [
        (0xFD6F, "Exposure Notification"),  // Apple/Google Exposure Notification service UUID
        (0xFE2C, "Google Fast Pair"),  // nRF Connect SDK doc: "The Fast Pair service uses UUID of 0xFE2C"
        (0xFE59, "Nordic Secure DFU"),  // Nordic Secure DFU service (nRF5 SDK bootloader, Android/iOS DFU libraries)
        (0xFEAA, "Eddystone"),  // Eddystone protocol specification: service UUID 0xFEAA
    ]

    /// 128-bit vendor UUIDs: (UUID, name, kind).
    static let table: [(String, String, Kind)] = [
        // Nordic UART Service (nRF Connect SDK NUS): RX is written by the phone, TX notifies.
        ("6e400001-b5a3-f393-e0a9-e50e24dcca9e", "Nordic UART Service", .service),
        ("6e400002-b5a3-f393-e0a9-e50e24dcca9e", "Nordic UART RX", .characteristic),
        ("6e400003-b5a3-f393-e0a9-e50e24dcca9e", "Nordic UART TX", .characteristic),
        // Nordic Secure DFU (service 0xFE59): control point, packet, buttonless entries (Nordic DFU libraries).
        ("8ec90001-f315-4f60-9fb8-838830daea50", "Nordic DFU Control Point", .characteristic),
        ("8ec90002-f315-4f60-9fb8-838830daea50", "Nordic DFU Packet", .characteristic),
        ("8ec90003-f315-4f60-9fb8-838830daea50", "Nordic Buttonless DFU", .characteristic),
        ("8ec90004-f315-4f60-9fb8-838830daea50", "Nordic Buttonless DFU (bonded)", .characteristic),
        ("8e400001-f315-4f60-9fb8-838830daea50", "Nordic Experimental Buttonless DFU", .service),
        // Nordic legacy DFU (nRF5 SDK before 12): service, control point, packet, status report, revision.
        ("00001530-1212-efde-1523-785feabcd123", "Nordic Legacy DFU", .service),
        ("00001531-1212-efde-1523-785feabcd123", "Nordic Legacy DFU Control Point", .characteristic),
        ("00001532-1212-efde-1523-785feabcd123", "Nordic Legacy DFU Packet", .characteristic),
        ("00001533-1212-efde-1523-785feabcd123", "Nordic Legacy DFU Status Report", .characteristic),
        ("00001534-1212-efde-1523-785feabcd123", "Nordic Legacy DFU Version", .characteristic),
        // Nordic LED Button Service (nRF Connect SDK LBS).
        ("00001523-1212-efde-1523-785feabcd123", "Nordic LED Button Service", .service),
        ("00001524-1212-efde-1523-785feabcd123", "Nordic LBS Button", .characteristic),
        ("00001525-1212-efde-1523-785feabcd123", "Nordic LBS LED", .characteristic),
        // TI Over-the-Air Download (OAD profile, BLE-Stack 3.x user guide).
        ("f000ffc0-0451-4000-b000-000000000000", "TI OAD", .service),
        ("f000ffc1-0451-4000-b000-000000000000", "TI OAD Image Identify", .characteristic),
        ("f000ffc2-0451-4000-b000-000000000000", "TI OAD Image Block", .characteristic),
        ("f000ffc3-0451-4000-b000-000000000000", "TI OAD Image Count", .characteristic),
        ("f000ffc4-0451-4000-b000-000000000000", "TI OAD Image Status", .characteristic),
        ("f000ffc5-0451-4000-b000-000000000000", "TI OAD Control Point", .characteristic),
        ("f000ffd0-0451-4000-b000-000000000000", "TI OAD Reset", .service),
        ("f000ffd1-0451-4000-b000-000000000000", "TI OAD Reset Control", .characteristic),
        // Espressif unified provisioning, ESP-IDF's default service UUID (wifi_provisioning, protocomm_ble).
        ("021a9004-0382-4aea-bff4-6b3f1c5adfb4", "ESP provisioning service", .service),
        // Apple Notification Center Service (ANCS specification).
        ("7905f431-b5ce-4e99-a40f-4b1e122d00d0", "Apple Notification Center Service", .service),
        ("9fbf120d-6301-42d9-8c58-25e699a21dbd", "ANCS Notification Source", .characteristic),
        ("69d1d8f3-45e1-49a8-9821-9bbdfdaad9d9", "ANCS Control Point", .characteristic),
        ("22eac6e9-24d6-4bb5-be44-b36ace7c7bfb", "ANCS Data Source", .characteristic),
        // Apple Media Service (AMS specification).
        ("89d3502b-0f36-433a-8ef4-c502ad55f8dc", "Apple Media Service", .service),
        ("9b3c81d8-57b1-4a8a-b8df-0e56f7ca51c2", "AMS Remote Command", .characteristic),
        ("2f7cabce-808d-411f-9a0c-bb92ba96c102", "AMS Entity Update", .characteristic),
        ("c6b2f38c-23ab-46d8-a6ab-a3a870bbd5d7", "AMS Entity Attribute", .characteristic),
        // Google Fast Pair (service 0xFE2C) characteristics.
        ("fe2c1233-8366-4814-8eb0-01de32100bea", "Fast Pair Model ID", .characteristic),
        ("fe2c1234-8366-4814-8eb0-01de32100bea", "Fast Pair Key-based Pairing", .characteristic),
        ("fe2c1235-8366-4814-8eb0-01de32100bea", "Fast Pair Passkey", .characteristic),
        ("fe2c1236-8366-4814-8eb0-01de32100bea", "Fast Pair Account Key", .characteristic),
        ("fe2c1237-8366-4814-8eb0-01de32100bea", "Fast Pair Additional Data", .characteristic),
    ]

    struct Key: Hashable, Sendable {
        let high: UInt64
        let low: UInt64
    }

    static let byValue: [Key: Entry] = {
        var result: [Key: Entry] = [:]
        for (text, name, kind) in table {
            guard let (high, low) = parse(text) else { continue }  // VendorServicesTests checks every entry parses
            result[Key(high: high, low: low)] = Entry(high: high, low: low, name: name, kind: kind)
        }
        return result
    }()

    /// Every entry, parsed (for tests and listings).
    public static var entries: [Entry] { table.compactMap { t in parse(t.0).map { Entry(high: $0.0, low: $0.1, name: t.1, kind: t.2) } } }

    /// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" as two 64-bit halves.
    static func parse(_ text: String) -> (UInt64, UInt64)? {
        let hex = text.filter { $0 != "-" }
        guard text.count == 36, hex.count == 32,
              let high = UInt64(hex.prefix(16), radix: 16), let low = UInt64(hex.suffix(16), radix: 16) else { return nil }
        return (high, low)
    }
}
