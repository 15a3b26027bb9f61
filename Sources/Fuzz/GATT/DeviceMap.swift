import ATT
import Emulator
import GATT
import Transport

/// What a black-box campaign learned of its target before the first input: the GATT table
/// discovered over the link (services, characteristics with their properties, descriptors), the
/// values its readable characteristics had, the MTU its server offers, whether it asks for an
/// encrypted link, and each characteristic's role in a device protocol, found by UUID.
public struct DeviceMap: Sendable {
    /// What a characteristic is for, as far as the protocols known to gattlab say.
    public typealias Role = BlackBoxRole

    public struct Characteristic: Sendable, Hashable {
        public var uuid: BluetoothUUID
        public var valueHandle: UInt16
        public var properties: UInt8
        public var role: Role?
        /// Its CCCD, when it has one.
        public var cccd: UInt16?
        /// What a read returned at discovery (nil: not readable, or the read failed).
        public var baseline: [UInt8]?
        public var userDescription: String?
        /// The name people read: the role, the SIG name, the user description or the UUID.
        public var label: String

        public var canRead: Bool { properties & 0x02 != 0 }
        public var canWrite: Bool { properties & 0x08 != 0 }
        public var canWriteWithoutResponse: Bool { properties & 0x04 != 0 }
        public var canNotify: Bool { properties & 0x10 != 0 }
        public var canIndicate: Bool { properties & 0x20 != 0 }
        /// Data that should not change under a client's writes: readable, neither writable nor
        /// notified (a name, a firmware revision).
        public var looksStatic: Bool { canRead && !canWrite && !canWriteWithoutResponse && !canNotify && !canIndicate }
    }

    public struct Descriptor: Sendable, Hashable {
        public var handle: UInt16
        public var uuid: BluetoothUUID
        /// Index of the characteristic it belongs to.
        public var owner: Int?
        public var label: String
    }

    public var services: [AttributeTable.Service]
    public var characteristics: [Characteristic]
    public var descriptors: [Descriptor]
    /// The server's Rx MTU from its Exchange MTU Response (23 when it gave none).
    public var serverMTU: Int
    /// The device refused a request until the link was encrypted, so every input's link is.
    public var needsEncryption: Bool

    /// The device protocols whose characteristics the table has, by name.
    public var protocols: [String] {
        var seen: [String] = []
        for c in characteristics { if let p = c.role?.protocolName, !seen.contains(p) { seen.append(p) } }
        return seen
    }

    public func index(of role: Role) -> Int? { characteristics.firstIndex { $0.role == role } }

    public func characteristic(_ target: UInt8) -> Characteristic? {
        characteristics.isEmpty ? nil : characteristics[Int(target) % characteristics.count]
    }

    public func descriptor(_ target: UInt8) -> Descriptor? {
        descriptors.isEmpty ? nil : descriptors[Int(target) % descriptors.count]
    }

    /// The characteristic a handle is the value of, for notifications.
    public func characteristic(valueHandle: UInt16) -> Characteristic? {
        characteristics.first { $0.valueHandle == valueHandle }
    }

    /// Builds the map from a discovered table and the values read.
    /// `protocols` give the characteristics' roles (the first that knows one, in their order).
    init(table: AttributeTable, values: [UInt16: [UInt8]], userDescriptions: [UInt16: String], serverMTU: Int, needsEncryption: Bool,
         protocols: [any BlackBoxFuzzable.Type]) {
        services = table.services.values.sorted { $0.startHandle < $1.startHandle }
        let declared = table.characteristics.values.sorted { $0.valueHandle < $1.valueHandle }
        var characteristics: [Characteristic] = []
        for c in declared {
            let description = userDescriptions[c.valueHandle]
            let role = protocols.lazy.compactMap { $0.blackBoxRole(of: c.uuid, userDescription: description) }.first
            let label = role?.name.appending(description.map { " \($0)" } ?? "")
                ?? description ?? KnownUUIDs.name(c.uuid) ?? c.uuid.description
            characteristics.append(Characteristic(uuid: c.uuid, valueHandle: c.valueHandle, properties: c.properties, role: role,
                                                  cccd: nil, baseline: values[c.valueHandle], userDescription: description, label: label))
        }
        var descriptors: [Descriptor] = []
        for (handle, uuid) in table.descriptors.sorted(by: { $0.key < $1.key }) {
            let owner = table.owner(ofDescriptor: handle).flatMap { o in characteristics.firstIndex { $0.valueHandle == o.valueHandle } }
            if let owner, uuid.uuid16 == 0x2902, characteristics[owner].cccd == nil { characteristics[owner].cccd = handle }
            let name = KnownUUIDs.name(uuid) ?? uuid.description
            descriptors.append(Descriptor(handle: handle, uuid: uuid, owner: owner,
                                          label: owner.map { "\(characteristics[$0].label) / \(name)" } ?? name))
        }
        self.characteristics = characteristics
        self.descriptors = descriptors
        self.serverMTU = serverMTU
        self.needsEncryption = needsEncryption
    }

    /// Discovers the target over `link` (connected here, and hung up at the end): Exchange MTU,
    /// primary services, characteristics, descriptors, user descriptions and a read of every
    /// readable value. A read refused for want of encryption makes the link encrypted (as a
    /// phone pairs when asked) and marks the map so. With `tableOnly`, only the table and the
    /// user descriptions: what a reproducer's capture needs to replay by UUID, without reads of
    /// values that earlier inputs changed (a replay on a fresh device would differ there first).
    /// `protocols` give the characteristics' roles.
    public static func discover(_ link: any TimedATTBearer & LinkControl, timeout: Int64, tableOnly: Bool = false,
                                protocols: [any BlackBoxFuzzable.Type]) async throws(CentralError) -> DeviceMap {
        let central = ScriptedCentral(bearer: link, transactionTimeout: timeout)
        await central.connect()
        guard await central.isConnected() else { throw .bearer(.closed) }
        var serverMTU = 23
        let answer = try await central.request(.exchangeMTURequest(clientRxMTU: 517))
        if case .exchangeMTUResponse(let server) = answer { serverMTU = Int(server) }
        let table = try await central.discover()
        var encrypted = false
        var values: [UInt16: [UInt8]] = [:]
        var names: [UInt16: String] = [:]
        for (handle, uuid) in table.descriptors.sorted(by: { $0.key < $1.key }) where uuid.uuid16 == 0x2901 {
            if let owner = table.owner(ofDescriptor: handle), let value = try await central.read(handle: handle) {
                names[owner.valueHandle] = String(decoding: value.prefix(64), as: UTF8.self)
            }
        }
        for c in table.characteristics.values.sorted(by: { $0.valueHandle < $1.valueHandle }) where c.properties & 0x02 != 0 && !tableOnly {
            var answer = try await central.request(.readRequest(handle: c.valueHandle))
            if case .errorResponse(_, _, let e) = answer, !encrypted,
               DeviceMap.asksForEncryption(e) {
                await central.encrypt()
                encrypted = true
                answer = try await central.request(.readRequest(handle: c.valueHandle))
            }
            if case .readResponse(let v) = answer { values[c.valueHandle] = v }
        }
        // Disabling a CCCD changes nothing on the device and shows whether it needs encryption
        // (the nRF7 provisioning service's do).
        for (handle, uuid) in table.descriptors.sorted(by: { $0.key < $1.key }) where uuid.uuid16 == 0x2902 && !encrypted && !tableOnly {
            let answer = try await central.request(.writeRequest(handle: handle, value: [0, 0]))
            if case .errorResponse(_, _, let e) = answer, DeviceMap.asksForEncryption(e) {
                await central.encrypt()
                encrypted = true
            }
        }
        await central.disconnect()
        return DeviceMap(table: table, values: values, userDescriptions: names, serverMTU: serverMTU, needsEncryption: encrypted,
                         protocols: protocols)
    }

    /// A refusal that a phone answers by pairing (Insufficient Authentication, Encryption or
    /// Key Size); Insufficient Authorization is the application's own refusal.
    static func asksForEncryption(_ e: ATTErrorCode) -> Bool {
        e == .insufficientEncryption || e == .insufficientAuthentication || e == .insufficientEncryptionKeySize
    }

    /// The table as people read it: one line per characteristic.
    public var summaryLines: [String] {
        characteristics.map { c in
            var props: [String] = []
            if c.canRead { props.append("read") }
            if c.canWrite { props.append("write") }
            if c.canWriteWithoutResponse { props.append("write-cmd") }
            if c.canNotify { props.append("notify") }
            if c.canIndicate { props.append("indicate") }
            return "0x\(String(c.valueHandle, radix: 16, uppercase: true)) \(c.label) [\(props.joined(separator: ","))]"
        }
    }
}
