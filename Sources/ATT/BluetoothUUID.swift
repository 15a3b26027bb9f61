/// A Bluetooth UUID of 16, 32 or 128 bits.
///
/// Stored as the full 128-bit value so that a short UUID and its expansion on the Bluetooth base
/// (`0000xxxx-0000-1000-8000-00805F9B34FB`) compare and hash as the same attribute type, whichever
/// form a device happened to send. The width it was created with is kept too, so that a UUID read off
/// the air encodes back to exactly the bytes that were read.
public struct BluetoothUUID: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// Most significant 64 bits: the first 16 hex digits of the canonical text form.
    public let high: UInt64
    /// Least significant 64 bits: the last 16 hex digits of the canonical text form.
    public let low: UInt64
    /// 16, 32 or 128.
    private let width: UInt8

    @usableFromInline static let baseHigh: UInt64 = 0x0000_0000_0000_1000
    @usableFromInline static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB

    /// The Bluetooth base UUID, `00000000-0000-1000-8000-00805F9B34FB`, which every short UUID extends.
    public static let bluetoothBase = BluetoothUUID(high: baseHigh, low: baseLow)

    /// A 16-bit UUID assigned by the Bluetooth SIG (services, characteristics, descriptors).
    public init(uuid16: UInt16) {
        self.init(width: 16, high: UInt64(uuid16) << 32 | Self.baseHigh, low: Self.baseLow)
    }

    /// A 32-bit UUID assigned by the Bluetooth SIG. ATT has no 32-bit form on the wire; it goes out as 128 bits.
    public init(uuid32: UInt32) {
        self.init(width: 32, high: UInt64(uuid32) << 32 | Self.baseHigh, low: Self.baseLow)
    }

    /// A 128-bit UUID from its two halves as written in the canonical text form, so that vendor UUIDs
    /// can be constants without parsing a string.
    public init(high: UInt64, low: UInt64) {
        self.init(width: 128, high: high, low: low)
    }

    @usableFromInline
    init(width: UInt8, high: UInt64, low: UInt64) {
        self.width = width
        self.high = high
        self.low = low
    }

    /// Reads a UUID as ATT, GAP and SMP carry it: little-endian, 2, 4 or 16 bytes. Nil for any other count.
    /// Inlinable: decoders call it for every attribute of every discovery, and an unspecialised
    /// generic walk of the bytes cost a third of `gattlab info` (measured with callgrind).
    @inlinable
    public init?(littleEndianBytes bytes: some Collection<UInt8>) {
        let count = bytes.count
        guard count == 2 || count == 4 || count == 16 else { return nil }
        var low: UInt64 = 0
        var high: UInt64 = 0
        var shift: UInt64 = 0
        for byte in bytes {
            if shift < 64 { low |= UInt64(byte) << shift } else { high |= UInt64(byte) << (shift - 64) }
            shift += 8
        }
        switch count {
        case 2: self.init(uuid16: UInt16(truncatingIfNeeded: low))
        case 4: self.init(uuid32: UInt32(truncatingIfNeeded: low))
        default: self.init(high: high, low: low)
        }
    }

    /// Parses the ways people write UUIDs: "180A", "0x180a", "0000180a" (32-bit), 32 hex digits, or the
    /// canonical `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, in any case. Nil for anything else.
    public init?(string: String) {
        var chars = Array(string.utf8)[...]
        let hasPrefix = chars.count >= 2 && chars[chars.startIndex] == UInt8(ascii: "0")
            && (chars[chars.startIndex + 1] | 0x20) == UInt8(ascii: "x")
        if hasPrefix {
            chars = chars.dropFirst(2)
            guard chars.count == 4 || chars.count == 8 else { return nil }
        }
        switch chars.count {
        case 4:
            guard let value = Self.parseHex(chars) else { return nil }
            self.init(uuid16: UInt16(truncatingIfNeeded: value))
        case 8:
            guard let value = Self.parseHex(chars) else { return nil }
            self.init(uuid32: UInt32(truncatingIfNeeded: value))
        case 32:
            guard let high = Self.parseHex(chars.prefix(16)), let low = Self.parseHex(chars.suffix(16)) else {
                return nil
            }
            self.init(high: high, low: low)
        case 36:
            let start = chars.startIndex
            for dash in [8, 13, 18, 23] where chars[start + dash] != UInt8(ascii: "-") { return nil }
            let digits = chars.filter { $0 != UInt8(ascii: "-") }
            guard digits.count == 32, let high = Self.parseHex(digits.prefix(16)),
                let low = Self.parseHex(digits.suffix(16))
            else { return nil }
            self.init(high: high, low: low)
        default:
            return nil
        }
    }

    /// At most 16 hex digits; nil on any other character.
    private static func parseHex(_ chars: some Collection<UInt8>) -> UInt64? {
        guard !chars.isEmpty, chars.count <= 16 else { return nil }
        var value: UInt64 = 0
        for char in chars {
            let digit: UInt8
            switch char {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = char - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = char - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = char - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt64(digit)
        }
        return value
    }

    /// 16, 32 or 128: the form the UUID was created in, which decides how it encodes.
    public var bitWidth: Int { Int(width) }

    /// Whether the value is a short UUID expanded on the Bluetooth base (whatever width it was sent in).
    public var isOnBluetoothBase: Bool {
        low == Self.baseLow && high & 0xFFFF_FFFF == Self.baseHigh
    }

    /// The SIG-assigned 16-bit value, when there is one, so that a 128-bit form of a standard UUID is
    /// still recognised (for name tables, CCCD 0x2902, and so on).
    public var uuid16: UInt16? {
        guard isOnBluetoothBase, high >> 32 <= 0xFFFF else { return nil }
        return UInt16(truncatingIfNeeded: high >> 32)
    }

    /// The SIG-assigned 32-bit value (16-bit values included) when the UUID is on the Bluetooth base.
    public var uuid32: UInt32? {
        guard isOnBluetoothBase else { return nil }
        return UInt32(truncatingIfNeeded: high >> 32)
    }

    /// The bytes as they go on the air, little-endian, in the width the UUID was created with.
    public var littleEndianBytes: [UInt8] {
        switch width {
        case 16: return Self.littleEndian(high >> 32, count: 2)
        case 32: return Self.littleEndian(high >> 32, count: 4)
        default: return Self.littleEndian(low, count: 8) + Self.littleEndian(high, count: 8)
        }
    }

    /// The 16-byte little-endian form, which ATT uses for anything that is not 16-bit.
    public var littleEndianBytes128: [UInt8] {
        Self.littleEndian(low, count: 8) + Self.littleEndian(high, count: 8)
    }

    private static func littleEndian(_ value: UInt64, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    /// The 36-character lowercase form whatever the width, for output that must line up or be matched.
    public var canonicalString: String {
        let h = hexDigits(high, count: 16)
        let l = hexDigits(low, count: 16)
        var out: [UInt8] = []
        out.reserveCapacity(36)
        out += h[0..<8]
        out.append(UInt8(ascii: "-"))
        out += h[8..<12]
        out.append(UInt8(ascii: "-"))
        out += h[12..<16]
        out.append(UInt8(ascii: "-"))
        out += l[0..<4]
        out.append(UInt8(ascii: "-"))
        out += l[4..<16]
        return String(decoding: out, as: UTF8.self)
    }

    /// "0x180a" for 16-bit, "0x12345678" for 32-bit, canonical lowercase for 128-bit: the width shows
    /// what was on the air.
    public var description: String {
        switch width {
        case 16: return "0x" + String(decoding: hexDigits(high >> 32, count: 4), as: UTF8.self)
        case 32: return "0x" + String(decoding: hexDigits(high >> 32, count: 8), as: UTF8.self)
        default: return canonicalString
        }
    }

    public static func == (lhs: BluetoothUUID, rhs: BluetoothUUID) -> Bool {
        lhs.high == rhs.high && lhs.low == rhs.low
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(high)
        hasher.combine(low)
    }

    /// Orders by the 128-bit value, so short UUIDs sort among themselves by their short value.
    public static func < (lhs: BluetoothUUID, rhs: BluetoothUUID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }
}
