import ATT

/// What one handle is, as far as the table knows.
public struct HandleInfo: Sendable, Hashable {
    public enum Role: String, Sendable, Hashable {
        case service, include, declaration, value, descriptor
    }
    public var role: Role
    /// The attribute's type: the characteristic's UUID for a value handle, the descriptor's UUID, 0x2803 for a declaration…
    public var uuid: BluetoothUUID
    /// The characteristic a value, declaration or descriptor belongs to, when known.
    public var characteristic: BluetoothUUID?
}

/// A GATT server's attribute table, rebuilt from discovery (or given by the user, or a built-in
/// device profile). Entries can arrive in any order, as captures that start late deliver them.
public struct AttributeTable: Sendable, Hashable {
    public struct Service: Sendable, Hashable, Codable {
        public var uuid: BluetoothUUID
        public var startHandle: UInt16
        public var endHandle: UInt16
        public var primary: Bool
    }

    public struct Characteristic: Sendable, Hashable, Codable {
        public var uuid: BluetoothUUID
        public var declarationHandle: UInt16
        public var valueHandle: UInt16
        public var properties: UInt8
    }

    /// The table's collections, in one shared box: decode copies tables out of the decoder for
    /// every PDU it prints, and a copy of eight collections retained and released each of them
    /// (a tenth of decode's time). Copy on write keeps value semantics: a mutation of a shared
    /// box copies it first.
    private struct Collections: Hashable {
        var services: [UInt16: Service] = [:]
        var characteristics: [UInt16: Characteristic] = [:]
        var descriptors: [UInt16: BluetoothUUID] = [:]
        var userDescriptions: [UInt16: String] = [:]
        var byHandle = HandleMap()
        var valueHandles: [UInt16] = []
        var valueHandleToDeclaration: [UInt16: UInt16] = [:]
        var serviceStarts: [UInt16] = []
    }

    private final class Storage: @unchecked Sendable {
        var c: Collections
        init(_ c: Collections) { self.c = c }
    }

    private var storage = Storage(Collections())

    private mutating func unique() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.c) }
        return storage
    }

    public private(set) var services: [UInt16: Service] {
        get { storage.c.services }
        _modify { yield &unique().c.services }
    }
    public private(set) var characteristics: [UInt16: Characteristic] {
        get { storage.c.characteristics }
        _modify { yield &unique().c.characteristics }
    }
    public private(set) var descriptors: [UInt16: BluetoothUUID] {
        get { storage.c.descriptors }
        _modify { yield &unique().c.descriptors }
    }
    /// Names read from Characteristic User Description (0x2901) descriptors, by value handle.
    public private(set) var userDescriptions: [UInt16: String] {
        get { storage.c.userDescriptions }
        _modify { yield &unique().c.userDescriptions }
    }
    /// The lookup used on every PDU. Descriptors' owners are not stored here but found when
    /// asked, so entries may arrive in any order without recomputation.
    private var byHandle: HandleMap {
        get { storage.c.byHandle }
        _modify { yield &unique().c.byHandle }
    }
    /// Value handles of characteristics and service starts, sorted, for owner lookups by
    /// binary search (a hostile table of thousands of entries stays cheap).
    private var valueHandles: [UInt16] {
        get { storage.c.valueHandles }
        _modify { yield &unique().c.valueHandles }
    }
    private var valueHandleToDeclaration: [UInt16: UInt16] {
        get { storage.c.valueHandleToDeclaration }
        _modify { yield &unique().c.valueHandleToDeclaration }
    }
    private var serviceStarts: [UInt16] {
        get { storage.c.serviceStarts }
        _modify { yield &unique().c.serviceStarts }
    }

    public static func == (a: AttributeTable, b: AttributeTable) -> Bool { a.storage === b.storage || a.storage.c == b.storage.c }

    public func hash(into h: inout Hasher) { h.combine(storage.c) }

    /// Real devices have hundreds of attributes at most; a table beyond this takes no new
    /// handles, so hostile discovery cannot grow memory without bound.
    public static let maxEntries = 4096

    public init() {}

    public var isEmpty: Bool { services.isEmpty && characteristics.isEmpty && descriptors.isEmpty }

    @inline(__always)
    public func info(for handle: UInt16) -> HandleInfo? {
        guard var info = byHandle[handle] else { return nil }
        if info.role == .descriptor { info.characteristic = owner(ofDescriptor: handle)?.uuid }
        return info
    }

    private func hasRoom(for handles: UInt16...) -> Bool {
        byHandle.count + handles.count <= Self.maxEntries || handles.allSatisfy { byHandle[$0] != nil }
    }

    private static func insertSorted(_ v: UInt16, into array: inout [UInt16]) {
        var lo = 0, hi = array.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if array[mid] < v { lo = mid + 1 } else { hi = mid }
        }
        if lo == array.count || array[lo] != v { array.insert(v, at: lo) }
    }

    /// Index of the last element below `v` (or at most `v`, when `orEqual`) in a sorted array.
    private static func lastBelow(_ v: UInt16, in array: [UInt16], orEqual: Bool = false) -> Int? {
        var lo = 0, hi = array.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if array[mid] < v || (orEqual && array[mid] == v) { lo = mid + 1 } else { hi = mid }
        }
        return lo == 0 ? nil : lo - 1
    }

    public mutating func addService(start: UInt16, end: UInt16, uuid: BluetoothUUID, primary: Bool) {
        guard hasRoom(for: start) else { return }
        services[start] = Service(uuid: uuid, startHandle: start, endHandle: end, primary: primary)
        byHandle[start] = HandleInfo(role: .service, uuid: BluetoothUUID(uuid16: primary ? 0x2800 : 0x2801), characteristic: nil)
        Self.insertSorted(start, into: &serviceStarts)
    }

    public mutating func addCharacteristic(declaration: UInt16, properties: UInt8, valueHandle: UInt16, uuid: BluetoothUUID) {
        guard hasRoom(for: declaration, valueHandle) else { return }
        characteristics[declaration] = Characteristic(uuid: uuid, declarationHandle: declaration,
                                                      valueHandle: valueHandle, properties: properties)
        byHandle[declaration] = HandleInfo(role: .declaration, uuid: BluetoothUUID(uuid16: 0x2803), characteristic: uuid)
        byHandle[valueHandle] = HandleInfo(role: .value, uuid: uuid, characteristic: uuid)
        descriptors[valueHandle] = nil
        valueHandleToDeclaration[valueHandle] = declaration
        Self.insertSorted(valueHandle, into: &valueHandles)
    }

    public mutating func setUserDescription(_ name: String, valueHandle: UInt16) {
        guard userDescriptions.count < Self.maxEntries || userDescriptions[valueHandle] != nil else { return }
        userDescriptions[valueHandle] = String(name.prefix(256))
    }

    /// A value handle learned from Read By Type on a characteristic UUID, its declaration unseen.
    public mutating func addValueHandle(_ handle: UInt16, uuid: BluetoothUUID) {
        guard hasRoom(for: handle) else { return }
        byHandle[handle] = HandleInfo(role: .value, uuid: uuid, characteristic: uuid)
    }

    /// From Find Information: declarations and values are already known by their own procedures,
    /// so only the remaining handles become descriptors.
    public mutating func addFoundInformation(handle: UInt16, uuid: BluetoothUUID) {
        guard hasRoom(for: handle) else { return }
        if let short = uuid.uuid16, (0x2800...0x2803).contains(short) {
            if byHandle[handle] == nil {
                byHandle[handle] = HandleInfo(role: short == 0x2803 ? .declaration : short == 0x2802 ? .include : .service,
                                              uuid: uuid, characteristic: nil)
            }
            return
        }
        if let existing = byHandle[handle], existing.role == .value { return }
        descriptors[handle] = uuid
        byHandle[handle] = HandleInfo(role: .descriptor, uuid: uuid, characteristic: nil)
    }

    /// The characteristic whose value handle is the closest below `handle`, unless a service
    /// starts between them (the descriptor then belongs to nothing known).
    public func owner(ofDescriptor handle: UInt16) -> Characteristic? {
        guard let i = Self.lastBelow(handle, in: valueHandles),
              let declaration = valueHandleToDeclaration[valueHandles[i]],
              let c = characteristics[declaration] else { return nil }
        if let s = Self.lastBelow(handle, in: serviceStarts, orEqual: true), serviceStarts[s] > c.declarationHandle {
            return nil
        }
        return c
    }

    public func service(containing handle: UInt16) -> Service? {
        guard let i = Self.lastBelow(handle, in: serviceStarts, orEqual: true), let s = services[serviceStarts[i]],
              handle <= s.endHandle else { return nil }
        return s
    }

    /// Adds everything from another table (a later discovery refines an earlier one).
    public mutating func merge(_ other: AttributeTable) {
        for s in other.services.values { addService(start: s.startHandle, end: s.endHandle, uuid: s.uuid, primary: s.primary) }
        for c in other.characteristics.values {
            addCharacteristic(declaration: c.declarationHandle, properties: c.properties, valueHandle: c.valueHandle, uuid: c.uuid)
        }
        for (h, u) in other.descriptors { addFoundInformation(handle: h, uuid: u) }
        for (h, n) in other.userDescriptions { userDescriptions[h] = n }
    }

    /// A readable name for a handle: the characteristic's or descriptor's name, or its UUID.
    public func label(for handle: UInt16) -> String? {
        guard let info = info(for: handle) else { return nil }
        let name = KnownUUIDs.name(info.uuid) ?? info.uuid.description
        switch info.role {
        case .descriptor, .declaration:
            if let c = info.characteristic {
                return "\(name) of \(KnownUUIDs.name(c) ?? c.description)"
            }
            return name
        default:
            return name
        }
    }
}

extension AttributeTable {
    public static func propertyNames(_ p: UInt8) -> [String] {
        let names = ["broadcast", "read", "write-without-response", "write", "notify", "indicate",
                     "authenticated-signed-writes", "extended-properties"]
        return (0..<8).filter { p & (1 << $0) != 0 }.map { names[$0] }
    }

    public static func properties(named names: [String]) -> UInt8? {
        var p: UInt8 = 0
        for n in names {
            guard let i = propertyNames(0xFF).firstIndex(of: n) else { return nil }
            p |= 1 << UInt8(i)
        }
        return p
    }
}

extension BluetoothUUID: Codable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let s = try c.decode(String.self)
        guard let u = BluetoothUUID(string: s) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "'\(s)' is not a UUID (expected 180a, 0x180a or 8-4-4-4-12 hex)")
        }
        self = u
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}

/// Attribute handles to what is known of them, in handle order. The lookup runs for every PDU
/// decoded; a binary search over a device's few dozen handles costs less than hashing the
/// handle (a Dictionary hashes with SipHash), and discovery adds handles mostly in order.
struct HandleMap: Hashable {
    private var handles: [UInt16] = []
    private var infos: [HandleInfo] = []

    var count: Int { handles.count }

    subscript(handle: UInt16) -> HandleInfo? {
        @inline(__always) get {
            let i = position(of: handle)
            return i < handles.count && handles[i] == handle ? infos[i] : nil
        }
        set {
            let i = position(of: handle)
            let present = i < handles.count && handles[i] == handle
            switch (present, newValue) {
            case (true, let info?): infos[i] = info
            case (true, nil):
                handles.remove(at: i)
                infos.remove(at: i)
            case (false, let info?):
                handles.insert(handle, at: i)
                infos.insert(info, at: i)
            case (false, nil): break
            }
        }
    }

    /// The first index whose handle is not below `handle`.
    @inline(__always)
    private func position(of handle: UInt16) -> Int {
        var lo = 0, hi = handles.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if handles[mid] < handle { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
