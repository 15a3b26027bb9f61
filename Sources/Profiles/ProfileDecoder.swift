import ATT
import Capture
import GATT
import HCI

/// The protocol stage of the pipeline: picks the values on registered characteristics out of
/// the GATT events (joined long writes and reads included) and hands them to their protocol.
public final class ProfileDecoder {
    /// Every device protocol GATTLab decodes: one line each, like a dissector table.
    public static let registry: [any DeviceProtocol.Type] = [
        SpeakerOTAProtocol.self,
        SensorScanProtocol.self,
    ]

    private let owners: [BluetoothUUID: Int]
    private var states: [ConnectionKey: [Int: any DeviceProtocol]] = [:]
    public private(set) var events: [ProfileEvent] = []

    public init() {
        var owners: [BluetoothUUID: Int] = [:]
        for (i, p) in Self.registry.enumerated() {
            for c in p.characteristics { owners[c] = i }
        }
        self.owners = owners
    }

    /// Whether a characteristic belongs to a registered protocol.
    public func isRegistered(_ uuid: BluetoothUUID) -> Bool { owners[uuid] != nil }

    /// Consumes the GATT events of one record; read `events` afterwards.
    public func consume(_ gatt: [GATTEvent], record: CaptureRecord) {
        events.removeAll(keepingCapacity: true)
        for event in gatt {
            switch event {
            case .att(let e):
                guard let info = e.info, info.role == .value, owners[info.uuid] != nil, let pdu = e.pdu,
                      let handle = e.handle else { continue }
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
                dispatch(ProfileValue(connection: e.connection, characteristic: info.uuid, handle: handle, operation: operation,
                                      bytes: bytes, frame: record.number, firstFrame: record.number, time: record.timestamp))
            case .operation(.longWrite(let key, let handle, let info, let value, let first, _)),
                 .operation(.longRead(let key, let handle, let info, let value, let first, _)):
                guard let info, info.role == .value, owners[info.uuid] != nil else { continue }
                let isWrite = if case .operation(.longWrite) = event { true } else { false }
                dispatch(ProfileValue(connection: key, characteristic: info.uuid, handle: handle, operation: isWrite ? .write : .read,
                                      bytes: value, frame: record.number, firstFrame: first, time: record.timestamp))
            case .link(.disconnection(let info, let reason)):
                guard var protocols = states.removeValue(forKey: info.key) else { continue }
                for i in protocols.keys.sorted() {
                    events += protocols[i]!.connectionEnded(info.key, frame: record.number, time: record.timestamp,
                                                            reason: "the link ended (\(reason.name))")
                }
            default:
                continue
            }
        }
    }

    private func dispatch(_ v: ProfileValue) {
        guard let index = owners[v.characteristic] else { return }
        var state = states[v.connection]?[index] ?? Self.registry[index].init()
        events += state.decode(v)
        states[v.connection, default: [:]][index] = state
    }
}
