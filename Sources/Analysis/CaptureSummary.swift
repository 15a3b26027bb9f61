import Capture
import GATT
import HCI

/// What `info` gathers while streaming: counts and per-connection facts, no per-record storage.
/// Report renders it (`text`, `json`).
public final class CaptureSummary {
    public let file: String
    public var format: String?
    public var linkType: String?
    public private(set) var records = 0
    public private(set) var firstTime: Int64?
    public private(set) var lastTime: Int64?
    public private(set) var attPDUs = 0
    public private(set) var malformed = 0
    public private(set) var firstMalformed: String?
    public var error: String?
    public private(set) var controllers: [UInt16: (name: String, address: String)] = [:]
    public private(set) var connections: [Connection] = []
    public private(set) var tables: [(device: String, table: AttributeTable, source: TableSource)] = []
    /// Index into `connections` of each open connection.
    private var open: [ConnectionKey: Int] = [:]
    /// Beyond this many connections only counts go on (hostile files cannot grow the summary).
    public static let maxConnections = 10_000

    public struct Connection {
        public var info: ConnectionInfo
        public var mtu = 23
        public var attPDUs = 0
        public var encryptedFrame: Int?
        public var pairing: String?
        public var lastFrame = 0
    }

    public init(file: String) { self.file = file }

    public func add(_ record: CaptureRecord, _ events: [GATTEvent]) {
        records += 1
        if firstTime == nil { firstTime = record.timestamp }
        lastTime = record.timestamp
        for event in events {
            switch event {
            case .att(let e):
                attPDUs += 1
                if let i = index(e.connection, record) {
                    connections[i].attPDUs += 1
                    connections[i].lastFrame = record.number
                }
                if let reason = e.malformed { noteMalformed("frame \(record.number): ATT \(reason)") }
            case .operation(.mtuExchanged(let key, _, _, let mtu)):
                if let i = index(key, record) { connections[i].mtu = mtu }
            case .link(.connectionComplete(let info)):
                open[info.key] = nil
                lastIndex = nil
                if connections.count < Self.maxConnections {
                    connections.append(Connection(info: info))
                    open[info.key] = connections.count - 1
                }
            case .link(.disconnection(let info, _)):
                lastIndex = nil
                if let i = open[info.key] {
                    let mtu = connections[i].mtu, count = connections[i].attPDUs
                    let enc = connections[i].encryptedFrame, pairing = connections[i].pairing
                    connections[i] = Connection(info: info, mtu: mtu, attPDUs: count, encryptedFrame: enc, pairing: pairing, lastFrame: record.number)
                    open[info.key] = nil
                } else if connections.count < Self.maxConnections {
                    connections.append(Connection(info: info))
                }
            case .link(.encryptionChange(let key, let enabled, _, _)):
                if enabled, let i = index(key, record), connections[i].encryptedFrame == nil { connections[i].encryptedFrame = record.number }
            case .link(.smp(let key, _, let pdu)):
                if let i = index(key, record) {
                    switch pdu {
                    case .pairingResponse(let f): connections[i].pairing = f.summary
                    case .pairingFailed(let r): connections[i].pairing = "failed: \(SMPPDU.failureReason(r))"
                    default: break
                    }
                }
            case .link(.controllerAdded(let index, let name, let address)):
                controllers[index] = (name, address?.description ?? "")
            case .link(.malformed(_, let layer, let reason)):
                noteMalformed("frame \(record.number): \(layer.rawValue) \(reason)")
            default:
                break
            }
        }
    }

    private func noteMalformed(_ s: String) {
        malformed += 1
        if firstMalformed == nil { firstMalformed = s }
    }

    /// The open connection for a key, adding one for a capture that began mid-connection.
    private var lastIndex: (key: ConnectionKey, index: Int)?

    private func index(_ key: ConnectionKey, _ record: CaptureRecord) -> Int? {
        if let last = lastIndex, last.key == key { return last.index }
        if let i = open[key] {
            lastIndex = (key, i)
            return i
        }
        guard connections.count < Self.maxConnections else { return nil }
        var info = ConnectionInfo(key: key, frame: record.number, time: record.timestamp)
        info.implicit = true
        connections.append(Connection(info: info))
        open[key] = connections.count - 1
        return connections.count - 1
    }

    public func finish(_ decoder: GATTDecoder) {
        for (key, i) in open {
            if let live = decoder.link.connections[key] {
                let c = connections[i]
                connections[i] = Connection(info: live, mtu: c.mtu, attPDUs: c.attPDUs, encryptedFrame: c.encryptedFrame ?? live.firstEncryptedFrame, pairing: c.pairing, lastFrame: c.lastFrame)
            }
        }
        tables = decoder.deviceTables.filter { !$0.table.isEmpty }
    }
}
