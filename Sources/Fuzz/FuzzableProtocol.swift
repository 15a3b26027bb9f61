import ATT
import HCI
import Profiles

/// A device protocol the fuzzer can aim at: its in-process targets (its codecs, with their
/// seeds, structure-aware mutators and oracles), the mutations of its values that device
/// sessions draw from, the exchange the capture targets' seeds carry, and which target's corpus a
/// captured value belongs to (`gattlab corpus import`). The fuzzer names no
/// protocol; it works with the types of the `ProtocolSet` it is given that conform to this, in
/// registration order.
public protocol FuzzableProtocol: DeviceProtocol {
    /// The protocol's in-process targets, in the order `gattlab fuzz list` shows them. Their
    /// names are global: `gattlab fuzz NAME`, `Corpus/NAME/`, the libFuzzer copies `fuzz-NAME`.
    static var fuzzTargets: [FuzzTarget] { get }
    /// Where its targets are listed among the others (see `FuzzTargetGroup`).
    static var fuzzTargetGroup: FuzzTargetGroup { get }
    /// A type of its codec's own module (its namespace, in <Name>Codec): a libFuzzer
    /// build of its `fuzzTargets` instruments that module alone (`FuzzTarget.instrumentedModules`).
    /// nil: every module, for targets whose code is not in one codec.
    static var codec: Any.Type? { get }
    /// Structure-aware mutations of values of its characteristics, in the order a device
    /// session's mutator draws from them (every protocol's, in registration order).
    static var valueMutators: [FuzzValueMutator] { get }
    /// ATT PDUs of one of its sessions, for the capture and timeline targets' seed capture
    /// (between the link's MTU exchange and its disconnection); none by default.
    static var captureSeedExchange: [CaptureSeedPDU] { get }
    /// A fresh router of captured values to its targets' corpora (one per capture imported).
    static func corpusRouter() -> any FuzzCorpusRouting
    /// Targets on its emulated devices' request handling (`device-speaker`), listed after every
    /// decoder target, in registration order; none by default.
    static var deviceFuzzTargets: [DeviceFuzzTarget] { get }
    /// An oracle on what a device notified, (handle, value) in order: a finding when a value
    /// breaks the protocol (a status in a state it does not have); `valueHandle` says where the
    /// device keeps a characteristic. Run for every device target, in-process and black-box.
    static func notificationFinding(_ notified: [(UInt16, [UInt8])], valueHandle: (BluetoothUUID) -> UInt16?) -> FuzzOutcome?
    /// Whether writing `value` to `characteristic` tells the device to reset (the speaker's
    /// REBOOT): the black-box fuzzer then takes the link dropping as the answer, not a fault.
    static func resetsDevice(writing value: [UInt8], to characteristic: BluetoothUUID) -> Bool
    /// The characteristic whose value tells the device's protocol state, read when the device
    /// comes back after a dropped link (a device that rebooted forgets what it was told).
    static var stateCharacteristic: BluetoothUUID? { get }
    /// The state a value read from `stateCharacteristic` tells, as people read it (`IDLE`).
    static func state(read value: [UInt8]) -> String?
}

extension FuzzableProtocol {
    public static var fuzzTargetGroup: FuzzTargetGroup { .values }
    public static var codec: Any.Type? { nil }
    public static var valueMutators: [FuzzValueMutator] { [] }
    public static var captureSeedExchange: [CaptureSeedPDU] { [] }
    public static var deviceFuzzTargets: [DeviceFuzzTarget] { [] }
    public static func notificationFinding(_ notified: [(UInt16, [UInt8])], valueHandle: (BluetoothUUID) -> UInt16?) -> FuzzOutcome? { nil }
    public static func resetsDevice(writing value: [UInt8], to characteristic: BluetoothUUID) -> Bool { false }
    public static var stateCharacteristic: BluetoothUUID? { nil }
    public static func state(read value: [UInt8]) -> String? { nil }
}

/// A target on an emulated device, made with the quirks to plant (`--quirk`).
public struct DeviceFuzzTarget: Sendable {
    /// The target's name (`device-speaker`).
    public let name: String
    /// The emulated device it runs (`gattlab emulate NAME`), whose table a black-box run of the
    /// target assumes.
    public let device: String
    public let make: @Sendable ([String], ProtocolSet) throws(FuzzError) -> FuzzTarget
    /// What a black-box run checks before each input, when the target has such an invariant.
    public let mtuInvariant: MTUInvariant?

    public init(name: String, device: String, mtuInvariant: MTUInvariant? = nil,
                make: @escaping @Sendable ([String], ProtocolSet) throws(FuzzError) -> FuzzTarget) {
        self.name = name
        self.device = device
        self.mtuInvariant = mtuInvariant
        self.make = make
    }
}

/// An answer that must not depend on the MTU (the sensor's SCAN results): a black-box run of the
/// target takes the MTU from an input's first two bytes, exchanges it, subscribes to
/// `characteristic` (its CCCD follows its value), writes `request` and joins the notifications;
/// the items must be those of the first complete answer at MTU 247.
public struct MTUInvariant: Sendable {
    public let characteristic: BluetoothUUID
    public let request: [UInt8]
    /// A joiner for one answer.
    public let joiner: @Sendable () -> any FuzzAnswerJoining

    public init(characteristic: BluetoothUUID, request: [UInt8], joiner: @escaping @Sendable () -> any FuzzAnswerJoining) {
        self.characteristic = characteristic
        self.request = request
        self.joiner = joiner
    }
}

/// Joins the notifications of one answer, as a phone does.
public protocol FuzzAnswerJoining {
    /// Adds one notification's value; true when the answer is complete.
    mutating func add(_ value: [UInt8]) -> Bool
    /// The answer's items (network names), nil while it is incomplete.
    var items: Set<String>? { get }
}

/// Where a protocol's targets stand in `gattlab fuzz list`: parsers of characteristic values
/// first, then the ATT PDU target, then codecs of messages carried inside values (protobuf),
/// then the whole-capture targets and the emulated devices.
public enum FuzzTargetGroup: Sendable, Hashable {
    /// Parsers of the bytes a characteristic carries (a status, a credentials value, a joined
    /// scan response).
    case values
    /// Codecs of messages carried in values (protobuf).
    case messages
}

/// A mutation of the values of one characteristic, by the protocol's structure.
public struct FuzzValueMutator: Sendable {
    public let characteristic: BluetoothUUID
    public let mutate: @Sendable (inout [UInt8], inout FuzzRandom) -> Void

    public init(characteristic: BluetoothUUID, mutate: @escaping @Sendable (inout [UInt8], inout FuzzRandom) -> Void) {
        self.characteristic = characteristic
        self.mutate = mutate
    }
}

/// One ATT PDU of a seed capture: the direction, and its time in µs after the link came up.
public struct CaptureSeedPDU: Sendable {
    public var pdu: ATTPDU
    public var received: Bool
    public var time: Int64

    public init(_ pdu: ATTPDU, received: Bool, time: Int64) {
        self.pdu = pdu
        self.received = received
        self.time = time
    }
}

/// Sends the values of a capture to the protocol's targets' corpora (`gattlab corpus import`),
/// keeping what it needs across values (a scan response's chunks, per connection).
public protocol FuzzCorpusRouting {
    /// The corpus inputs (target name, bytes) a value on a characteristic gives; nil when the
    /// characteristic is not the protocol's, empty when it is but gives nothing yet (a chunk
    /// of a response still open). `endpoint` is its 0x2901 name; `notified` tells a
    /// notification or indication from a write or a read. The value's credentials are already
    /// overwritten.
    mutating func route(_ value: [UInt8], characteristic: BluetoothUUID, endpoint: String?,
                        connection: ConnectionKey, notified: Bool) -> [(target: String, input: [UInt8])]?
}

/// A router for protocols whose values go whole to one corpus by characteristic (or 0x2901
/// endpoint name).
public struct FuzzCorpusTable: FuzzCorpusRouting, Sendable {
    let targets: [BluetoothUUID: String]
    let endpoints: [String: String]

    public init(_ targets: [BluetoothUUID: String], endpoints: [String: String] = [:]) {
        self.targets = targets
        self.endpoints = endpoints
    }

    public mutating func route(_ value: [UInt8], characteristic: BluetoothUUID, endpoint: String?,
                               connection: ConnectionKey, notified: Bool) -> [(target: String, input: [UInt8])]? {
        guard let target = targets[characteristic] ?? endpoint.flatMap({ endpoints[$0] }) else { return nil }
        return [(target, value)]
    }
}

extension Features {
    /// A feature per problem a decoder reported (by its id), under `tag`.
    public func add(_ tag: UInt64, problems: [ProtocolProblem]) {
        for p in problems { add(tag, p.id) }
    }
}
