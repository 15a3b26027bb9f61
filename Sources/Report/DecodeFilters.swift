import ATT
import GATT
import HCI

// Which lines `decode` keeps: the filters of --connection, --handle and --uuid, parsed from
// the text the user gave (the CLI makes them command-line arguments).

/// `--connection`: an HCI handle (64, 0x40), a handle on another controller (hci1/0x40) or an access address.
public struct ConnectionFilter: Sendable {
    public var controller: UInt16?
    public var id: UInt32
    /// As the user wrote it, for messages.
    public var argument: String

    public init?(argument: String) {
        self.argument = argument
        var rest = Substring(argument.lowercased())
        if rest.hasPrefix("hci"), let slash = rest.firstIndex(of: "/") {
            guard let c = UInt16(rest[rest.index(rest.startIndex, offsetBy: 3)..<slash]) else { return nil }
            controller = c
            rest = rest[rest.index(after: slash)...]
        } else if rest.hasPrefix("aa:") {
            controller = ConnectionKey.linkLayerController
            rest = rest.dropFirst(3)
        }
        guard let v = parseInteger(rest, max: UInt64(UInt32.max)) else { return nil }
        id = UInt32(v)
    }

    public func matches(_ key: ConnectionKey) -> Bool {
        key.id == id && (controller == nil || controller == key.controller)
    }
}

/// `--handle`: decimal or 0x-prefixed hex.
public struct HandleFilter: Sendable {
    public var handle: UInt16
    public var argument: String

    public init?(argument: String) {
        self.argument = argument
        guard let v = parseInteger(Substring(argument.lowercased()), max: 0xFFFF) else { return nil }
        handle = UInt16(v)
    }
}

/// `--uuid`: a UUID in any usual form, or a known name ("OTA_STATUS", "Battery Level").
public struct UUIDFilter: Sendable {
    public var uuid: BluetoothUUID?
    public var name: String?
    public var argument: String

    public init?(argument: String) {
        self.argument = argument
        if let u = BluetoothUUID(string: argument) { uuid = u } else { name = argument.lowercased() }
    }

    public func matches(_ candidate: BluetoothUUID?) -> Bool {
        guard let candidate else { return false }
        if let uuid { return uuid == candidate }
        return KnownUUIDs.name(candidate)?.lowercased() == name
    }
}

func parseInteger(_ s: Substring, max: UInt64) -> UInt64? {
    let v = s.hasPrefix("0x") ? UInt64(s.dropFirst(2), radix: 16) : UInt64(s)
    guard let v, v <= max else { return nil }
    return v
}
