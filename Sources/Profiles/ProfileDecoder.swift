import ATT
import Capture
import GATT
import HCI

/// The protocol stage of the pipeline: picks the values on registered characteristics out of
/// the GATT events (joined long writes and reads included) and hands them to their protocol.
public final class ProfileDecoder {
    /// The protocols it decodes, in registration order (like a dissector table).
    public let protocols: ProtocolSet
    private let owners: [BluetoothUUID: Int]
    private let namedOwners: [String: Int]
    private var states: [ConnectionKey: [Int: any DeviceProtocol]] = [:]
    public private(set) var events: [ProfileEvent] = []
    /// The keys the user gave (`--esp-pop`...), handed to each protocol as it starts on a connection.
    public let keys: ProtocolKeys

    public init(protocols: ProtocolSet, keys: ProtocolKeys = .init()) {
        self.protocols = protocols
        self.keys = keys
        var owners: [BluetoothUUID: Int] = [:]
        var named: [String: Int] = [:]
        for (i, p) in protocols.types.enumerated() {
            for c in p.characteristics { owners[c] = i }
            for n in p.endpointNames { named[n] = i }
        }
        self.owners = owners
        namedOwners = named
    }

    /// Whether a characteristic belongs to a registered protocol.
    public func isRegistered(_ uuid: BluetoothUUID) -> Bool { owners[uuid] != nil }

    /// The protocol that owns a value handle: by its characteristic's UUID, else by the name
    /// its user description gave it.
    private func owner(_ info: HandleInfo?, handle: UInt16, table: AttributeTable?) -> (Int, String?)? {
        guard let info, info.role == .value else { return nil }
        let name = table?.userDescriptions[handle]
        if let i = owners[info.uuid] { return (i, name) }
        if let name, let i = namedOwners[name] { return (i, name) }
        return nil
    }

    /// Consumes the GATT events of the record `gatt` last decoded; read `events` afterwards.
    public func consume(_ gatt: GATTDecoder, record: CaptureRecord) {
        events.removeAll(keepingCapacity: true)
        for event in gatt.events {
            switch event {
            case .att(let e):
                guard let pdu = e.pdu, let handle = e.handle, let info = e.info, info.role == .value else { continue }
                let table = namedOwners.isEmpty ? nil : gatt.table(for: e.connection)?.0
                guard let (index, name) = owner(info, handle: handle, table: table) else { continue }
                let operation: ValueOperation
                switch pdu {
                case .writeRequest, .writeCommand, .signedWriteCommand: operation = .write
                case .handleValueNotification: operation = .notify
                case .handleValueIndication: operation = .indicate
                // A full read response continues with Read Blob: the joined long read is decoded instead.
                case .readResponse(let v) where v.count < e.mtu - 1: operation = .read
                default: continue
                }
                guard let bytes = pdu.value else { continue }
                dispatch(index, ProfileValue(connection: e.connection, characteristic: info.uuid, endpoint: name, handle: handle,
                                             operation: operation, bytes: bytes, frame: record.number,
                                             firstFrame: record.number, time: record.timestamp, origin: e.valueOrigin))
            case .operation(.longWrite(let key, let handle, let info, let value, let first, _, let origin)),
                 .operation(.longRead(let key, let handle, let info, let value, let first, _, let origin)):
                guard let info, let (index, name) = owner(info, handle: handle, table: gatt.table(for: key)?.0) else { continue }
                let isWrite = if case .operation(.longWrite) = event { true } else { false }
                dispatch(index, ProfileValue(connection: key, characteristic: info.uuid, endpoint: name, handle: handle,
                                             operation: isWrite ? .write : .read, bytes: value, frame: record.number,
                                             firstFrame: first, time: record.timestamp, origin: origin))
            case .link(.disconnection(let info, let reason)):
                guard let protocols = states.removeValue(forKey: info.key) else { continue }
                for i in protocols.keys.sorted() {
                    guard var state = protocols[i] else { continue }
                    events += state.connectionEnded(info.key, frame: record.number, time: record.timestamp,
                                                    reason: "the link ended (\(reason.name))")
                }
            default:
                continue
            }
        }
    }

    private func dispatch(_ index: Int, _ v: ProfileValue) {
        var state = states[v.connection]?[index] ?? protocols.types[index].init(keys: keys)
        events += state.decode(v)
        states[v.connection, default: [:]][index] = state
    }
}
