import Capture

/// A Bluetooth device address, stored in display order (most significant byte first).
public struct BDAddr: Hashable, Sendable, CustomStringConvertible {
    public var bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)

    /// Reads the 6 little-endian bytes HCI and the link layer carry.
    public init(littleEndian d: UnsafeRawBufferPointer, at o: Int) {
        bytes = (d[o + 5], d[o + 4], d[o + 3], d[o + 2], d[o + 1], d[o])
    }

    public init(_ b: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)) { bytes = b }

    /// Parses "AA:BB:CC:DD:EE:FF" (any case).
    public init?(string: String) {
        // Exactly six pairs of hex digits with colons between, as BlueZ's str2ba accepts.
        let chars = Array(string.utf8)
        guard chars.count == 17 else { return nil }
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var v: [UInt8] = []
        for i in 0..<6 {
            if i > 0 && chars[3 * i - 1] != UInt8(ascii: ":") { return nil }
            guard let hi = hex(chars[3 * i]), let lo = hex(chars[3 * i + 1]) else { return nil }
            v.append(hi << 4 | lo)
        }
        bytes = (v[0], v[1], v[2], v[3], v[4], v[5])
    }

    public var array: [UInt8] { [bytes.0, bytes.1, bytes.2, bytes.3, bytes.4, bytes.5] }
    /// 00:00:00:00:00:00: no address (an accept-list connection, a cancelled attempt), never a device.
    public var isZero: Bool { value == 0 }
    /// "AA:BB:CC:DD:EE:FF", made in place (through arrays it allocated three times per address).
    public var description: String {
        String(unsafeUninitializedCapacity: 17) { out in
            let v = value
            for i in 0..<6 {
                let b = UInt8(truncatingIfNeeded: v >> UInt64(40 - 8 * i))
                if i > 0 { out[3 * i - 1] = UInt8(ascii: ":") }
                out[3 * i] = Self.upperHex(b >> 4)
                out[3 * i + 1] = Self.upperHex(b & 0xF)
            }
            return 17
        }
    }

    @inline(__always)
    private static func upperHex(_ n: UInt8) -> UInt8 { n < 10 ? 0x30 &+ n : 0x37 &+ n }

    /// The six bytes as one number, most significant first: what comparing and hashing use
    /// (addresses key the decoder's and the timeline's maps; through arrays each lookup allocated).
    @inline(__always)
    var value: UInt64 {
        UInt64(bytes.0) << 40 | UInt64(bytes.1) << 32 | UInt64(bytes.2) << 24
            | UInt64(bytes.3) << 16 | UInt64(bytes.4) << 8 | UInt64(bytes.5)
    }

    public static func == (a: BDAddr, b: BDAddr) -> Bool { a.value == b.value }
    public func hash(into h: inout Hasher) { h.combine(value) }
}

/// LE address types as HCI reports them.
public enum AddressType: UInt8, Sendable, Hashable, CustomStringConvertible {
    case publicDevice = 0, randomDevice = 1, publicIdentity = 2, randomIdentity = 3
    public var description: String {
        switch self {
        case .publicDevice: "public"
        case .randomDevice: "random"
        case .publicIdentity: "public identity"
        case .randomIdentity: "random identity"
        }
    }
}
