import CBlueZ

/// A Bluetooth device address in the order people write it (AA:BB:CC:DD:EE:FF, most significant
/// byte first); `bdaddr_t` stores the same bytes reversed.
public struct BlueZAddress: Sendable, Hashable, CustomStringConvertible {
    /// The six bytes, most significant first.
    public let bytes: [UInt8]

    /// Nil unless exactly six bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 6 else { return nil }
        self.bytes = bytes
    }

    /// Strictly `AA:BB:CC:DD:EE:FF`: six two-digit hex bytes (either case) separated by colons.
    public init?(_ text: String) {
        let groups = text.split(separator: ":", omittingEmptySubsequences: false)
        guard groups.count == 6 else { return nil }
        var bytes: [UInt8] = []
        for group in groups {
            guard group.utf8.count == 2, group.utf8.allSatisfy(\.isHexDigit), let byte = UInt8(group, radix: 16) else { return nil }
            bytes.append(byte)
        }
        self.bytes = bytes
    }

    public var description: String { bytes.map { hex2($0) }.joined(separator: ":") }

    var bdaddr: bdaddr_t {
        var address = bdaddr_t()
        withUnsafeMutableBytes(of: &address.b) { raw in
            for (i, byte) in bytes.reversed().enumerated() { raw[i] = byte }
        }
        return address
    }

    init(_ address: bdaddr_t) {
        var address = address
        self.bytes = withUnsafeBytes(of: &address.b) { Array($0.reversed()) }
    }
}

/// Whether an LE address is the device's public one or a random one (static or private).
public enum BlueZAddressType: String, Sendable, Hashable, CaseIterable {
    case `public`, random

    /// `l2_bdaddr_type` of `sockaddr_l2`.
    var kernelValue: UInt8 {
        switch self {
        case .public: UInt8(BDADDR_LE_PUBLIC)
        case .random: UInt8(BDADDR_LE_RANDOM)
        }
    }

    init?(kernelValue: UInt8) {
        switch Int32(kernelValue) {
        case Int32(BDADDR_LE_PUBLIC): self = .public
        case Int32(BDADDR_LE_RANDOM): self = .random
        default: return nil
        }
    }
}

/// The security a link must reach before ATT traffic flows (the kernel's BT_SECURITY option).
public enum BlueZSecurity: String, Sendable, Hashable, CaseIterable {
    /// No encryption.
    case low
    /// Encrypted, keys may be unauthenticated (Just Works).
    case medium
    /// Encrypted with authenticated keys (passkey or numeric comparison).
    case high

    /// `BT_SECURITY_LOW`, `_MEDIUM` or `_HIGH`.
    public var level: UInt8 {
        switch self {
        case .low: UInt8(BT_SECURITY_LOW)
        case .medium: UInt8(BT_SECURITY_MEDIUM)
        case .high: UInt8(BT_SECURITY_HIGH)
        }
    }

    /// Nil for levels without a case here (SDP, FIPS).
    public init?(level: UInt8) {
        guard let match = Self.allCases.first(where: { $0.level == level }) else { return nil }
        self = match
    }
}

/// Where a `bluez:` bearer connects: a local controller and a remote LE device,
/// written `hciN/AA:BB:CC:DD:EE:FF[/public|random]` (the text after `bluez:`).
public struct BlueZTarget: Sendable, Hashable, CustomStringConvertible {
    /// The local controller's index: N of hciN.
    public var controller: UInt16
    public var address: BlueZAddress
    public var addressType: BlueZAddressType

    public init(controller: UInt16, address: BlueZAddress, addressType: BlueZAddressType = .public) {
        self.controller = controller
        self.address = address
        self.addressType = addressType
    }

    static let form = "hciN/AA:BB:CC:DD:EE:FF[/public|random]"

    public init(parsing text: String) throws(BearerError) {
        func fail(_ why: String) -> BearerError { .failed("bluez target '\(printable(text))': \(why)") }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 2 else {
            throw fail(text.isEmpty ? "empty; expected \(Self.form)" : "expected \(Self.form), a controller and an address separated by '/'")
        }
        guard parts.count <= 3 else { throw fail("too many '/' parts; expected \(Self.form)") }

        let name = parts[0]
        let digits = name.dropFirst(3)
        guard name.hasPrefix("hci"), !digits.isEmpty, digits.utf8.count <= 5, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let index = UInt16(digits) else {
            throw fail("the controller must be hciN with N from 0 to 65535, like hci0, not '\(printable(String(name)))'")
        }
        guard let address = BlueZAddress(String(parts[1])) else {
            throw fail("the address must be six hex bytes like AA:BB:CC:DD:EE:FF")
        }
        var type = BlueZAddressType.public
        if parts.count == 3 {
            guard let given = BlueZAddressType(rawValue: String(parts[2])) else {
                throw fail("the address type must be public or random, not '\(printable(String(parts[2])))'")
            }
            type = given
        }
        self.init(controller: index, address: address, addressType: type)
    }

    /// Parses back to the same target.
    public var description: String { "hci\(controller)/\(address)/\(addressType.rawValue)" }
}

private func hex2(_ byte: UInt8) -> String {
    let text = String(byte, radix: 16, uppercase: true)
    return byte < 0x10 ? "0" + text : text
}

/// User text in an error message: control and format characters escaped, at most 80 characters.
private func printable(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars.prefix(80) {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .unassigned, .privateUse:
            out += "\\u{\(String(scalar.value, radix: 16))}"
        default:
            out.unicodeScalars.append(scalar)
        }
    }
    return text.unicodeScalars.count > 80 ? out + "..." : out
}

private extension UInt8 {
    var isHexDigit: Bool { (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self) }
}
