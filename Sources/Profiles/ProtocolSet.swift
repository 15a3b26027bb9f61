import ATT
import Capture
import GATT

/// The device protocols an engine works with. The engines name no protocol: they get a set at
/// their entry point (the command line passes `GATTLabProtocols.all`, the one registration list
/// in Sources/Protocols/Registry.swift) and pick out what each hook needs by casting the types,
/// such as `protocols.conforming(to: (any EmulatedProtocol.Type).self)`. What a protocol
/// supports is which hook protocols its type conforms to.
public struct ProtocolSet: Sendable {
    /// In registration order, which is the order of every list shown to the user.
    public let types: [any DeviceProtocol.Type]

    /// Every protocol's secret characteristics and endpoint names, gathered once:
    /// `isSecretBearing` is asked for every ATT value decode prints.
    private let secretCharacteristics: Set<BluetoothUUID>
    private let secretEndpointNames: Set<String>

    public init(_ types: [any DeviceProtocol.Type]) {
        self.types = types
        secretCharacteristics = types.reduce(into: []) { $0.formUnion($1.secretCharacteristics) }
        secretEndpointNames = types.reduce(into: []) { $0.formUnion($1.secretEndpointNames) }
    }

    /// The registered types that conform to a hook, given as its existential metatype.
    public func conforming<Hook>(to hook: Hook.Type) -> [Hook] {
        types.compactMap { $0 as? Hook }
    }

    /// The protocol registered under this name (`esp-prov`).
    public func named(_ name: String) -> (any DeviceProtocol.Type)? {
        types.first { $0.name == name }
    }

    /// Names of the registered protocols a device advertising this service UUID speaks.
    public func protocols(advertising uuid: BluetoothUUID) -> [String] {
        types.filter { $0.advertisedServices.contains(uuid) }.map { $0.name }
    }

    /// What the registered protocols that claim this service UUID read in its service data
    /// (protocol name, what it read), in registration order.
    public func advertisedStates(serviceData: [UInt8], uuid: BluetoothUUID) -> [(protocol: String, state: AdvertisedState)] {
        types.compactMap { type in
            guard type.advertisedServices.contains(uuid), let s = type.advertisedState(serviceData: serviceData, uuid: uuid) else { return nil }
            return (type.name, s)
        }
    }

    /// Short names of the protocols with a built-in table (`--profile NAME`), in registration order.
    public var builtInNames: [String] { types.filter { $0.builtInTable != nil }.map { $0.shortName } }

    /// The built-in table `--profile NAME` names, parsed.
    public func builtInTable(named shortName: String) -> (name: String?, table: AttributeTable)? {
        types.first { $0.shortName == shortName }?.builtInAttributeTable
    }

    /// Whether values of this characteristic (found by UUID, or by its 0x2901 name) carry a
    /// secret as a whole for some registered protocol.
    public func isSecretBearing(_ uuid: BluetoothUUID, endpointName: String? = nil) -> Bool {
        secretCharacteristics.contains(uuid) || endpointName.map(secretEndpointNames.contains) == true
    }

    /// Every name the protocols give their UUIDs.
    public var uuidNames: [BluetoothUUID: String] {
        types.reduce(into: [:]) { names, type in names.merge(type.uuidNames) { a, _ in a } }
    }

    /// Every key any registered protocol takes, in registration order.
    public var keyOptions: [ProtocolKeyOption] { types.flatMap { $0.keys } }

    /// The first given key (option name: text) whose value does not parse, in registration
    /// order: the command line refuses it, naming what a valid value looks like, never the value.
    public func malformedKey(_ given: [String: String?]) -> ProtocolKeyOption? {
        keyOptions.first { option in
            guard case let text?? = given[option.name] else { return false }
            return option.parse(text) == nil
        }
    }

    /// The key option with this name (`esp-pop`), if a protocol takes it.
    public func keyOption(named name: String) -> ProtocolKeyOption? {
        keyOptions.first { $0.name == name }
    }
}

extension ProtocolSet {
    /// Where the credentials lie in a value, by the protocol that claims it; nil when none does.
    public func credentials(in bytes: [UInt8], characteristic: BluetoothUUID, endpoint: String?) -> CredentialLayout? {
        for type in types {
            if let c = type.credentials(in: bytes, characteristic: characteristic, endpoint: endpoint) { return c }
        }
        return nil
    }

    /// `bytes` with every credential overwritten with '*'; unchanged when it carries none.
    public func redactingCredentials(_ bytes: [UInt8], characteristic: BluetoothUUID, endpoint: String?) -> [UInt8] {
        credentials(in: bytes, characteristic: characteristic, endpoint: endpoint)?.redacting(bytes) ?? bytes
    }
}

/// Where the credentials lie in one value of a protocol: the bytes to overwrite, and the SSID
/// that goes with them.
public struct CredentialLayout: Sendable, Hashable {
    /// The value's format, stable: replay scripts keep it (`speaker-credentials`).
    public var format: String
    /// What `replay run --set NAME=...` may give for it (`ssid`, `password`, `url`).
    public var fields: [String]
    /// The secret bytes (empty: the value carries none this time, such as a URL without a
    /// password or token).
    public var secret: [Range<Int>]
    public var ssid: [UInt8]?

    public init(format: String, fields: [String], secret: [Range<Int>], ssid: [UInt8]? = nil) {
        self.format = format
        self.fields = fields
        self.secret = secret
        self.ssid = ssid
    }

    /// What overwrites a secret's bytes.
    public static let filler: UInt8 = 0x2A  // '*'

    /// `bytes` with the secret ranges overwritten.
    public func redacting(_ bytes: [UInt8]) -> [UInt8] {
        var out = bytes
        for r in secret where r.lowerBound >= 0 && r.upperBound <= out.count {
            for i in r { out[i] = Self.filler }
        }
        return out
    }
}

/// A key a protocol needs to read encrypted sessions, given by the user on the command line
/// as `--NAME VALUE`. The value is a secret: it is parsed into a `Secret` and never printed,
/// not even in the error for a malformed one.
public struct ProtocolKeyOption: Sendable {
    /// The option's name without dashes (`esp-pop`), also the key's name in `ProtocolKeys`.
    public let name: String
    /// What the value is, for help (`text`, `hex`).
    public let valueName: String
    public let help: String
    /// What a valid value looks like, for the one-line usage error of a malformed one.
    public let expected: String
    /// The `Secret`'s label, as redaction notes show it.
    public let label: String
    private let parseValue: @Sendable (String) -> [UInt8]?

    public init(name: String, valueName: String, help: String, expected: String, label: String,
                parse: @escaping @Sendable (String) -> [UInt8]?) {
        self.name = name
        self.valueName = valueName
        self.help = help
        self.expected = expected
        self.label = label
        parseValue = parse
    }

    /// The value as a secret, nil when malformed.
    public func parse(_ text: String) -> Secret? {
        parseValue(text).map { Secret($0, label: label) }
    }

    /// The bytes of a text value as it is (UTF-8).
    public static let text: @Sendable (String) -> [UInt8]? = { Array($0.utf8) }

    /// A key of `count` bytes in hex digits; spaces, colons and a leading 0x are allowed.
    public static func hex(bytes count: Int) -> @Sendable (String) -> [UInt8]? {
        { text in
            var t = Substring(text.lowercased().filter { !$0.isWhitespace && $0 != ":" })
            if t.hasPrefix("0x") { t = t.dropFirst(2) }
            guard t.count == 2 * count else { return nil }
            var out: [UInt8] = []
            out.reserveCapacity(count)
            var i = t.startIndex
            while i < t.endIndex {
                let j = t.index(i, offsetBy: 2)
                guard let b = UInt8(t[i..<j], radix: 16) else { return nil }
                out.append(b)
                i = j
            }
            return out
        }
    }
}

/// The keys the user gave, by option name. Every value is a `Secret`, so no output shows it.
public struct ProtocolKeys: Sendable {
    public var values: [String: Secret]

    public init(_ values: [String: Secret] = [:]) {
        self.values = values
    }

    public subscript(name: String) -> Secret? {
        get { values[name] }
        set { values[name] = newValue }
    }

    public var isEmpty: Bool { values.isEmpty }

    /// The keys among `given` (option name: text) that a registered protocol takes and that
    /// parse; malformed ones are left out (the command line refuses them first).
    public static func parse(_ given: [String: String?], protocols: ProtocolSet) -> ProtocolKeys {
        var keys = ProtocolKeys()
        for (name, text) in given {
            guard let text, let option = protocols.keyOption(named: name) else { continue }
            keys[name] = option.parse(text)
        }
        return keys
    }
}
