import ATT
import Capture
import Foundation
import GATT
import HCI

/// How a value reached or left a characteristic.
public enum ValueOperation: String, Sendable {
    case write, notify, indicate, read
}

/// One value on a registered characteristic, as the protocol decoders receive it.
public struct ProfileValue: Sendable {
    public var connection: ConnectionKey
    public var characteristic: BluetoothUUID
    /// The characteristic's user description (0x2901), when the table knows it: how ESP-IDF
    /// names its endpoints.
    public var endpoint: String?
    public var handle: UInt16
    public var operation: ValueOperation
    public var bytes: [UInt8]
    /// The record it completed in, and the first record it was assembled from.
    public var frame: Int
    public var firstFrame: Int
    public var time: Int64
    /// Where `bytes` lie in the capture, when the pipeline tracks origins: decoders locate the
    /// secrets they find with it.
    public var origin: ByteOrigin?

    public init(connection: ConnectionKey, characteristic: BluetoothUUID, endpoint: String?, handle: UInt16,
                operation: ValueOperation, bytes: [UInt8], frame: Int, firstFrame: Int, time: Int64, origin: ByteOrigin? = nil) {
        self.connection = connection
        self.characteristic = characteristic
        self.endpoint = endpoint
        self.handle = handle
        self.operation = operation
        self.bytes = bytes
        self.frame = frame
        self.firstFrame = firstFrame
        self.time = time
        self.origin = origin
    }

    /// The origin of `bytes[range]`, nil when untracked.
    public func origin(of range: Range<Int>) -> ByteOrigin? { origin?.slice(range) }
}

/// A device-protocol message, decoded. Open on purpose (issue 19): each protocol's message
/// types conform in the protocol's own folder, so a new protocol adds messages without
/// touching Profiles. A protocol's own code finds its messages by casting
/// (`if let s = e.message(as: MyProtocol.Status.self)`, or `case let s as MyProtocol.Status:`).
public protocol ProfileMessage: Sendable {
    /// Equality across existentials: false when the types differ. `Equatable` conformers get it.
    func isEqual(_ other: any ProfileMessage) -> Bool
}

extension ProfileMessage where Self: Equatable {
    public func isEqual(_ other: any ProfileMessage) -> Bool { (other as? Self) == self }
}

/// What the protocol layer reports: a message (when it decoded) and its problems.
public struct ProfileEvent: Sendable {
    /// The message, if it is a `T`: the same question as a timeline event's `message(as:)`.
    @inlinable
    public func message<T: ProfileMessage>(as type: T.Type) -> T? { message as? T }

    public var connection: ConnectionKey
    public var protocolName: String
    /// Stable kind, such as `ota.status` or `scan.result`.
    public var kind: String
    public var message: (any ProfileMessage)?
    public var problems: [ProtocolProblem]
    public var frame: Int
    public var firstFrame: Int
    public var time: Int64
    public var handle: UInt16
    public var characteristic: BluetoothUUID
    /// Where the value it was decoded from lies in the capture (when origins are tracked).
    public var origin: ByteOrigin?
    public var operation: ValueOperation
    /// The value's bytes when no message decoded from them (the audit treats a credential
    /// characteristic's undecodable value as secret as a whole).
    public var undecodedValue: [UInt8]?

    public init(_ v: ProfileValue, protocolName: String, kind: String, message: (any ProfileMessage)?, problems: [ProtocolProblem]) {
        connection = v.connection
        self.protocolName = protocolName
        self.kind = kind
        self.message = message
        self.problems = problems
        frame = v.frame
        firstFrame = v.firstFrame
        time = v.time
        handle = v.handle
        characteristic = v.characteristic
        origin = v.origin
        operation = v.operation
        undecodedValue = message == nil ? v.bytes : nil
    }
}

/// One device protocol: the characteristics it owns and its per-connection decoding state.
/// Adding a protocol is a type conforming to this and one line in `GATTLabProtocols.all`
/// (Sources/Protocols/Registry.swift).
public protocol DeviceProtocol: Sendable {
    static var name: String { get }
    static var characteristics: Set<BluetoothUUID> { get }
    /// Endpoints recognised by their 0x2901 user description instead of (or as well as) UUID.
    static var endpointNames: Set<String> { get }
    /// Service UUIDs a device running this protocol advertises, to recognise it before any
    /// connection (none by default).
    static var advertisedServices: Set<BluetoothUUID> { get }
    /// What the protocol reads in an advertisement's service data under one of its
    /// `advertisedServices` (a provisioning device's state and capabilities), so a timeline can say
    /// what a device announced before, between and after its connections; nil when it reads
    /// nothing there (the default).
    static func advertisedState(serviceData: [UInt8], uuid: BluetoothUUID) -> AdvertisedState?
    /// Keys the user may give to read encrypted sessions (`--esp-pop`); none by default.
    static var keys: [ProtocolKeyOption] { get }
    /// Names of its 128-bit UUIDs (its service, its characteristics), as every output shows
    /// them (`OTA_STATUS`); registered with the registration list (`KnownUUIDs.register`).
    static var uuidNames: [BluetoothUUID: String] { get }
    /// The short name users type for its device: `--profile NAME`, `emu:NAME` (`speaker`);
    /// empty when it has none.
    static var shortName: String { get }
    /// Its reference device's attribute table as a GATT table file (JSON): what `--profile
    /// NAME` gives a capture that starts after discovery, and what its emulated device serves.
    static var builtInTable: String? { get }
    /// Characteristics whose values carry secrets (Wi-Fi passwords) as a whole: where no
    /// decoder picks the secret field out, the whole value is treated as one.
    static var secretCharacteristics: Set<BluetoothUUID> { get }
    /// The same, for endpoints known by their 0x2901 name.
    static var secretEndpointNames: Set<String> { get }
    /// Where the credentials lie in a value on one of its characteristics (`endpoint`: its
    /// 0x2901 name), so that a value can be shown, stored or shared with them overwritten; nil
    /// when the value carries none. Decode output, fuzz corpora and replay scripts use it.
    static func credentials(in bytes: [UInt8], characteristic: BluetoothUUID, endpoint: String?) -> CredentialLayout?
    init()
    /// Starts on a connection with the keys the user gave; protocols without keys ignore them.
    init(keys: ProtocolKeys)
    /// Decodes a value written to, notified or read from one of its characteristics.
    mutating func decode(_ value: ProfileValue) -> [ProfileEvent]
    /// The connection ended: report anything left unfinished.
    mutating func connectionEnded(_ connection: ConnectionKey, frame: Int, time: Int64, reason: String) -> [ProfileEvent]
}

extension DeviceProtocol {
    public static var endpointNames: Set<String> { [] }
    public static var advertisedServices: Set<BluetoothUUID> { [] }
    public static func advertisedState(serviceData: [UInt8], uuid: BluetoothUUID) -> AdvertisedState? { nil }
    public static var keys: [ProtocolKeyOption] { [] }
    public static var uuidNames: [BluetoothUUID: String] { [:] }
    public static var shortName: String { "" }
    public static var builtInTable: String? { nil }
    public static var secretCharacteristics: Set<BluetoothUUID> { [] }
    public static var secretEndpointNames: Set<String> { [] }
    public static func credentials(in bytes: [UInt8], characteristic: BluetoothUUID, endpoint: String?) -> CredentialLayout? { nil }
    public init(keys: ProtocolKeys) { self.init() }

    /// `builtInTable` parsed, with the table's name; nil when there is none (or it does not parse,
    /// which GATTTests rule out for every registered protocol).
    public static var builtInAttributeTable: (name: String?, table: AttributeTable)? {
        guard let json = builtInTable else { return nil }
        return try? GATTTableFile.parse(Data(json.utf8), source: "built-in profile \(shortName)")
    }
}

/// What a protocol read in one advertisement's service data: one line for people, named values
/// for JSON, and what was wrong with the bytes.
public struct AdvertisedState: Sendable, Hashable {
    public enum Value: Sendable, Hashable {
        case text(String)
        case int(Int)
        case list([String])
    }

    /// `state AUTHORIZATION_REQUIRED, capabilities IDENTIFY, DEVICE_INFO`.
    public var summary: String
    /// In the order the protocol gives them (`state`, `capabilities`).
    public var fields: [(name: String, value: Value)]
    public var problems: [ProtocolProblem]

    public init(summary: String, fields: [(name: String, value: Value)] = [], problems: [ProtocolProblem] = []) {
        self.summary = summary
        self.fields = fields
        self.problems = problems
    }

    public static func == (a: AdvertisedState, b: AdvertisedState) -> Bool {
        a.summary == b.summary && a.problems == b.problems && a.fields.elementsEqual(b.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into h: inout Hasher) {
        h.combine(summary)
        h.combine(problems)
    }
}
