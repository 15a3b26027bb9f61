import ATT
import Foundation

/// The JSON form of an attribute table: what `--gatt-table FILE` reads and `gattlab info
/// --format json` writes, so a table discovered in one capture serves a later capture that
/// starts after discovery.
///
/// ```json
/// {"name": "ChaoticVolt speaker",
///  "services": [{"uuid": "00000001-1234-5678-9abc-def012345678", "startHandle": 16, "endHandle": 31,
///                "characteristics": [{"uuid": "00000008-1234-5678-9abc-def012345678",
///                                     "handle": 26, "valueHandle": 27, "properties": ["read", "notify"],
///                                     "descriptors": [{"uuid": "0x2902", "handle": 28}]}]}]}
/// ```
public struct GATTTableFile: Codable, Sendable {
    public struct Descriptor: Codable, Sendable {
        public var uuid: BluetoothUUID
        public var handle: UInt16
    }
    public struct Characteristic: Codable, Sendable {
        public var uuid: BluetoothUUID
        public var name: String?
        /// The characteristic's 0x2901 user description, when read (ESP-IDF endpoint names).
        public var description: String?
        public var handle: UInt16
        public var valueHandle: UInt16
        public var properties: [String]
        public var descriptors: [Descriptor]?
    }
    public struct Service: Codable, Sendable {
        public var uuid: BluetoothUUID
        public var name: String?
        public var startHandle: UInt16
        public var endHandle: UInt16
        public var primary: Bool?
        public var characteristics: [Characteristic]?
    }
    public var name: String?
    public var services: [Service]

    public init(name: String?, table: AttributeTable) {
        self.name = name
        var chars = table.characteristics.values.sorted { $0.declarationHandle < $1.declarationHandle }
        let descriptors = table.descriptors.sorted { $0.key < $1.key }
        services = table.services.values.sorted { $0.startHandle < $1.startHandle }.map { s in
            let mine = chars.filter { $0.declarationHandle >= s.startHandle && $0.declarationHandle <= s.endHandle }
            return Service(uuid: s.uuid, name: KnownUUIDs.name(s.uuid), startHandle: s.startHandle,
                           endHandle: s.endHandle, primary: s.primary, characteristics: mine.map { c in
                Self.characteristic(c, table: table, descriptors: descriptors)
            })
        }
        chars.removeAll { c in services.contains { $0.startHandle <= c.declarationHandle && c.declarationHandle <= $0.endHandle } }
        if !chars.isEmpty {
            // Characteristics discovered without their service go under a placeholder so they are not lost.
            services.append(Service(uuid: BluetoothUUID(uuid16: 0), name: "unknown service", startHandle: chars[0].declarationHandle,
                                    endHandle: chars.last!.valueHandle, primary: nil, characteristics: chars.map {
                Self.characteristic($0, table: table, descriptors: descriptors)
            }))
        }
    }

    private static func characteristic(_ c: AttributeTable.Characteristic, table: AttributeTable,
                                       descriptors: [(key: UInt16, value: BluetoothUUID)]) -> Characteristic {
        let ds = descriptors.filter { table.owner(ofDescriptor: $0.key)?.declarationHandle == c.declarationHandle }
        return Characteristic(uuid: c.uuid, name: KnownUUIDs.name(c.uuid), description: table.userDescriptions[c.valueHandle],
                              handle: c.declarationHandle, valueHandle: c.valueHandle,
                              properties: AttributeTable.propertyNames(c.properties),
                              descriptors: ds.map { Descriptor(uuid: $0.value, handle: $0.key) })
    }

    public var table: AttributeTable {
        get throws(GATTTableError) {
            var t = AttributeTable()
            for s in services {
                guard s.startHandle >= 1, s.startHandle <= s.endHandle else {
                    throw GATTTableError("service \(s.uuid): handles \(s.startHandle)-\(s.endHandle) are not a range")
                }
                if s.uuid != BluetoothUUID(uuid16: 0) {
                    t.addService(start: s.startHandle, end: s.endHandle, uuid: s.uuid, primary: s.primary ?? true)
                }
                for c in s.characteristics ?? [] {
                    guard let props = AttributeTable.properties(named: c.properties) else {
                        throw GATTTableError("characteristic \(c.uuid): unknown property in \(c.properties) (use \(AttributeTable.propertyNames(0xFF).joined(separator: ", ")))")
                    }
                    guard c.handle < c.valueHandle else {
                        throw GATTTableError("characteristic \(c.uuid): valueHandle \(c.valueHandle) must follow its declaration handle \(c.handle)")
                    }
                    t.addCharacteristic(declaration: c.handle, properties: props, valueHandle: c.valueHandle, uuid: c.uuid)
                    for d in c.descriptors ?? [] { t.addFoundInformation(handle: d.handle, uuid: d.uuid) }
                    if let d = c.description { t.setUserDescription(d, valueHandle: c.valueHandle) }
                }
            }
            return t
        }
    }

    public static func load(path: String) throws(GATTTableError) -> (name: String?, table: AttributeTable) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw GATTTableError("\(path): cannot read the file")
        }
        return try parse(data, source: path)
    }

    public static func parse(_ data: Data, source: String) throws(GATTTableError) -> (name: String?, table: AttributeTable) {
        let file: GATTTableFile
        do {
            file = try JSONDecoder().decode(GATTTableFile.self, from: data)
        } catch let error as DecodingError {
            throw GATTTableError("\(source): not a GATT table: \(Self.explain(error))")
        } catch {
            throw GATTTableError("\(source): not a GATT table: \(error)")
        }
        do {
            return (file.name, try file.table)
        } catch {
            throw GATTTableError("\(source): \(error.message)")
        }
    }

    static func explain(_ error: DecodingError) -> String {
        func path(_ c: DecodingError.Context) -> String {
            c.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        }
        switch error {
        case .keyNotFound(let key, let c): return "missing \"\(key.stringValue)\" at \(path(c).isEmpty ? "top level" : path(c))"
        case .typeMismatch(_, let c), .valueNotFound(_, let c): return "\(c.debugDescription) at \(path(c))"
        case .dataCorrupted(let c): return "\(c.debugDescription)\(path(c).isEmpty ? "" : " at " + path(c))"
        @unknown default: return "\(error)"
        }
    }

    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

public struct GATTTableError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
