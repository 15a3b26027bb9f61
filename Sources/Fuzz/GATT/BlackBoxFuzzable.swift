import ATT
import Profiles

/// A device protocol the black-box GATT fuzzer knows (`gattlab fuzz device`): the roles of its
/// characteristics on a discovered table, its valid flows there (the campaign's seeds), and an
/// observer that follows its state through what the device says. The fuzzer names no protocol;
/// it asks the protocols of its `ProtocolSet` that conform to this, in registration order.
public protocol BlackBoxFuzzable: FuzzableProtocol {
    /// The role of a characteristic found on a device, by its UUID or its 0x2901 user
    /// description; nil when it is not one of the protocol's.
    static func blackBoxRole(of uuid: BluetoothUUID, userDescription: String?) -> BlackBoxRole?
    /// The protocol's valid flows on `map` (none when the map lacks its characteristics): every
    /// prefix of a flow that reaches a state, each command where it is accepted, limits one
    /// below and one above. Operations aim at the map's characteristics by index.
    static func blackBoxFlows(_ map: DeviceMap) -> [[GATTOperation]]
    /// A fresh observer of the protocol for one input; nil when its state is not followed.
    static func blackBoxObserver() -> (any BlackBoxObserving)?
    /// What a protocol state (as its observer names it) means for a wait; nil when the state
    /// is not the protocol's.
    static func blackBoxStateKind(_ state: String) -> BlackBoxStateKind?
}

extension BlackBoxFuzzable {
    public static func blackBoxFlows(_ map: DeviceMap) -> [[GATTOperation]] { [] }
    public static func blackBoxObserver() -> (any BlackBoxObserving)? { nil }
    public static func blackBoxStateKind(_ state: String) -> BlackBoxStateKind? { nil }
}

/// What a characteristic is for in a device protocol, as the protocol declares it. Two roles are
/// the same when their names are.
public struct BlackBoxRole: Sendable, Hashable {
    /// The name reports show ("speaker OTA status"); unique among all protocols' roles.
    public let name: String
    /// The protocol the role belongs to ("speaker OTA").
    public let protocolName: String
    /// The longest value the protocol documents for it, for boundary values.
    public let documentedMaximum: Int?
    /// Changes a value written there by the protocol's structure; `structured` is the mutator
    /// the protocol gives for the characteristic's values (`FuzzableProtocol.valueMutators`), if any.
    public let mutate: @Sendable (_ value: inout [UInt8], _ structured: GATTValueMutation?, _ r: inout FuzzRandom) -> Void
    /// A value at the protocol's limits that replaces a length at a limit (one field at its
    /// limit, the others as usual); nil: lengths at the limits of the whole value.
    public let boundary: (@Sendable (_ r: inout FuzzRandom) -> [UInt8])?
    /// The secret (a password) in a value written there, when the role carries one.
    public let secret: (@Sendable (_ value: [UInt8]) -> [UInt8]?)?

    public init(_ name: String, protocolName: String, documentedMaximum: Int? = nil,
                boundary: (@Sendable (_ r: inout FuzzRandom) -> [UInt8])? = nil,
                secret: (@Sendable (_ value: [UInt8]) -> [UInt8]?)? = nil,
                mutate: @escaping @Sendable (_ value: inout [UInt8], _ structured: GATTValueMutation?, _ r: inout FuzzRandom) -> Void) {
        self.name = name
        self.protocolName = protocolName
        self.documentedMaximum = documentedMaximum
        self.boundary = boundary
        self.secret = secret
        self.mutate = mutate
    }

    public static func == (a: BlackBoxRole, b: BlackBoxRole) -> Bool { a.name == b.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// A protocol's mutation of its values (`FuzzValueMutator.mutate`).
public typealias GATTValueMutation = @Sendable (inout [UInt8], inout FuzzRandom) -> Void

/// What a protocol state means for a wait.
public enum BlackBoxStateKind: Sendable, Hashable {
    /// The protocol stays there until told otherwise (a scan complete, a download ended): a
    /// wait can end there.
    case resting
    /// The protocol leaves it by itself, with more to say: a wait should hear it out.
    case inProgress
    /// In progress, and already talking (scan records that stream until stopped): a silence
    /// there is the protocol having no more, not a first word that takes long.
    case streaming
}

/// The state of the protocols through one input, shared by their observers: the state reached,
/// and the first complete answer that must not depend on the MTU.
public struct BlackBoxProgress: Sendable {
    /// The protocol state reached so far ("start" before the device said anything).
    public var state = "start"
    /// The items (network names) of the input's first complete answer whose items must not
    /// depend on the MTU (a scan), and the MTU it came at.
    public private(set) var answer: Set<String>?
    public private(set) var answerMTU = 23

    public init() {}

    /// A complete answer: kept when it is the input's first.
    public mutating func answered(_ items: Set<String>, mtu: Int) {
        if answer == nil {
            answer = items
            answerMTU = mtu
        }
    }
}

/// Follows one protocol through what the device says on its characteristics, for one input.
public protocol BlackBoxObserving: Sendable {
    /// A value the device sent (notified, indicated, or read when `notified` is false) on a
    /// characteristic of `role`: nil when the role is not the protocol's; a finding when the
    /// content breaks the protocol; else `.ok`, with `progress` moved on.
    mutating func saw(_ value: [UInt8], role: BlackBoxRole, mtu: Int, notified: Bool, progress: inout BlackBoxProgress) -> FuzzOutcome?
    /// A write the device accepted on a characteristic of `role` (the states a write alone reaches).
    mutating func accepted(_ value: [UInt8], role: BlackBoxRole, progress: inout BlackBoxProgress)
}

extension BlackBoxObserving {
    public mutating func accepted(_ value: [UInt8], role: BlackBoxRole, progress: inout BlackBoxProgress) {}
}

/// Seeds' building blocks for the protocols' flows.
extension GATTOperation {
    /// An Exchange MTU.
    public static func mtu(_ m: Int) -> GATTOperation { GATTOperation(.exchangeMTU, value: [UInt8(m & 0xFF), UInt8(m >> 8)]) }

    /// A wait of at least `ms` of device time (20 ms doubled `extra` times, at most 10.24 s); it
    /// ends early when the protocol comes to rest or the device goes quiet.
    public static func wait(ms: Int) -> GATTOperation {
        var extra = 0
        while extra < Int(GATTOperation.maxWaitExtra), 20 << extra < ms { extra += 1 }
        return GATTOperation(.wait, extra: UInt8(extra))
    }

    /// A Write Request of `value` to characteristic `index` of the map.
    public static func write(_ index: Int, _ value: [UInt8]) -> GATTOperation {
        GATTOperation(.write, target: UInt8(truncatingIfNeeded: index), value: value)
    }
}

/// What the protocols' flows write: a network and a password that is a canary (a secret to look
/// for in what the device says back), and a firmware URL.
public enum BlackBoxCanary {
    public static let password = "gattlab-canary-4Qz9"
    public static let ssid = "GattlabNet"
    public static let url = "https://fw.gattlab.example/ota/v2.5.0.bin"
}
