/// Names for the Bluetooth SIG's assigned numbers: company identifiers, 16-bit UUIDs of
/// services, characteristics, descriptors, declarations, member services (0xFCxx-0xFExx), SDOs
/// and units, and appearance values. The tables are generated from the SIG's published YAML
/// (`AssignedNumbers+Generated.swift`, by `Scripts/assigned-numbers.py`); vendor services with
/// 128-bit UUIDs are in `VendorServices`. Every lookup is a binary search over a sorted array.
public enum AssignedNumbers {
    /// The company of a company identifier (manufacturer-specific data, LMP/LL version).
    public static func company(_ id: UInt16) -> String? { companyTable[id] }

    /// A GATT service's name (0x18xx).
    public static func service(_ uuid16: UInt16) -> String? { serviceTable[uuid16] }

    /// A GATT characteristic's name (0x2Axx, 0x2Bxx).
    public static func characteristic(_ uuid16: UInt16) -> String? { characteristicTable[uuid16] }

    /// A GATT descriptor's name (0x29xx).
    public static func descriptor(_ uuid16: UInt16) -> String? { descriptorTable[uuid16] }

    /// A GATT declaration's name (0x2800 Primary Service ... 0x2803 Characteristic).
    public static func declaration(_ uuid16: UInt16) -> String? { declarationTable[uuid16] }

    /// The member that a member UUID (0xFCxx-0xFExx) was assigned to, e.g. 0xFE59 "Nordic
    /// Semiconductor ASA". Members use them as service UUIDs and in service data.
    public static func memberService(_ uuid16: UInt16) -> String? { memberTable[uuid16] }

    /// A standards body's UUID (0xFFxx), e.g. 0xFFFD "Universal Second Factor Authenticator".
    public static func sdo(_ uuid16: UInt16) -> String? { sdoTable[uuid16] }

    /// A unit of the Characteristic Presentation Format descriptor (0x27xx).
    public static func unit(_ uuid16: UInt16) -> String? { unitTable[uuid16] }

    /// An appearance value (category << 6 | subcategory), e.g. 0x03C1 "Human Interface Device:
    /// Keyboard"; a subcategory not listed gets its category's name.
    public static func appearance(_ value: UInt16) -> String? {
        appearanceTable[value] ?? appearanceTable[value & ~0x3F]
    }

    /// Any 16-bit UUID used as a GATT attribute or service type: declarations, services,
    /// characteristics, descriptors, member services and SDO UUIDs (units are values, not types).
    public static func uuid16Name(_ uuid16: UInt16) -> String? {
        switch uuid16 {
        case 0x2800...0x28FF: declaration(uuid16)
        case 0x2900...0x29FF: descriptor(uuid16)
        case 0xFC00...0xFEFF: memberService(uuid16)
        case 0xFF00...0xFFFF: sdo(uuid16) ?? memberService(uuid16)
        default: service(uuid16) ?? characteristic(uuid16) ?? descriptor(uuid16) ?? memberService(uuid16)
        }
    }

    /// One generated table: a string literal with a line per entry, "XXXX name" (four hex
    /// digits, a space, the name), sorted by number. It is indexed once, on first use; a lookup
    /// is a binary search over the numbers.
    struct Table: Sendable {
        let text: StaticString
        /// Sorted numbers, and where each entry's name starts and ends in `text`.
        let keys: [UInt16]
        let nameStarts: [Int32]
        let nameEnds: [Int32]

        init(_ text: StaticString) {
            self.text = text
            var keys: [UInt16] = [], starts: [Int32] = [], ends: [Int32] = []
            text.withUTF8Buffer { bytes in
                var i = 0
                while i < bytes.count {
                    var end = i
                    while end < bytes.count, bytes[end] != 0x0A { end += 1 }
                    // "XXXX name": a malformed line (never in a generated file) is skipped.
                    if end - i > 5, bytes[i + 4] == 0x20, let key = Table.hex(bytes, i) {
                        keys.append(key)
                        starts.append(Int32(i + 5))
                        ends.append(Int32(end))
                    }
                    i = end + 1
                }
            }
            self.keys = keys
            self.nameStarts = starts
            self.nameEnds = ends
        }

        static func hex(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int) -> UInt16? {
            var value: UInt16 = 0
            for b in bytes[at..<at + 4] {
                let digit: UInt8
                switch b {
                case 0x30...0x39: digit = b - 0x30
                case 0x41...0x46: digit = b - 0x41 + 10
                case 0x61...0x66: digit = b - 0x61 + 10
                default: return nil
                }
                value = value << 4 | UInt16(digit)
            }
            return value
        }

        /// The index of `key` in `keys`, by binary search.
        func index(of key: UInt16) -> Int? {
            var low = 0
            var high = keys.count
            while low < high {
                let mid = low + (high - low) / 2
                let k = keys[mid]
                if k == key { return mid }
                if k < key { low = mid + 1 } else { high = mid }
            }
            return nil
        }

        subscript(key: UInt16) -> String? {
            guard let i = index(of: key) else { return nil }
            let start = Int(nameStarts[i]), end = Int(nameEnds[i])
            return text.withUTF8Buffer { String(decoding: UnsafeBufferPointer(rebasing: $0[start..<end]), as: UTF8.self) }
        }

        var count: Int { keys.count }

        /// Every entry in order of number.
        var entries: [(UInt16, String)] { keys.compactMap { k in self[k].map { (k, $0) } } }
    }
}
