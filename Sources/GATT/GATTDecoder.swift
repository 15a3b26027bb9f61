import ATT
import Capture
import HCI

/// The whole decoding pipeline: records -> link events -> ATT PDUs -> GATT session state.
///
/// Per connection it tracks the MTU, outstanding requests (to interpret discovery responses),
/// prepare-write queues and long reads; per device (peer address) the attribute table, so a
/// reconnection keeps what an earlier discovery found.
public final class GATTDecoder {
    public let link = LinkDecoder()
    /// Events of the last record consumed.
    public private(set) var events: [GATTEvent] = []

    /// A table to start from when discovery is missing, and where it came from.
    public var defaultTable: AttributeTable?
    public var defaultTableSource: TableSource = .none

    private(set) var sessions: [ConnectionKey: Session] = [:]
    private(set) var tables: [DeviceID: DeviceTable] = [:]

    /// Long writes and reads are bounded: an attribute value is at most 512 bytes, but devices and
    /// fuzzers send more; past this the queue is abandoned and reported rather than grown.
    public static let maxQueuedBytes = 65_536

    public init() {}

    /// Whether ATT events of the PDUs that only carry values (Write Request and Command, Write
    /// Response, Handle Value Notification and Indication, Confirmation) hold their decoded PDU,
    /// handle and attribute. A consumer that only counts PDUs (`info`) turns it off: a well-formed
    /// one then arrives with `pdu`, `handle` and `info` nil (a malformed one is decoded as before,
    /// and says why), and a CCCD write makes no subscription operation. Every other PDU, and the
    /// sessions and tables, are as before. Decoding them was most of what `info` spent on ATT.
    public var reportsValues = true

    /// Whether events say where values lie in the records (`ATTEvent.valueOrigin`, origins of
    /// long writes and reads, located secrets): what redaction needs, off by default.
    public var tracksOrigins: Bool {
        get { link.tracksOrigins }
        set { link.tracksOrigins = newValue }
    }

    /// Device identity: the peer address when known, else the connection.
    enum DeviceID: Hashable {
        case address(BDAddr)
        case connection(ConnectionKey)
    }

    /// A device's table, shared by reference with the sessions of its connections.
    final class DeviceTable {
        var table: AttributeTable
        var discovered = false
        init(table: AttributeTable) { self.table = table }
    }

    struct Request {
        var opcode: UInt8
        var handle: UInt16
        var type: BluetoothUUID?
        var value: [UInt8]
        var frame: Int
    }

    struct LongRead {
        var handle: UInt16
        var bytes: [UInt8]
        var firstFrame: Int
        var parts: Int
        /// Nil when not tracked, or when a part's origin was unknown.
        var origin: ByteOrigin?
    }

    /// One Prepare Write Request waiting for its Execute Write.
    struct PreparedPart {
        var handle: UInt16
        var offset: UInt16
        var value: [UInt8]
        var frame: Int
        var origin: ByteOrigin?
    }

    /// Per-connection state; a class so the hot path updates it in place.
    final class Session {
        let device: DeviceID
        let table: DeviceTable
        var mtu = 23
        var clientMTU: UInt16?
        /// Outstanding request per requesting side (0: sent/central, 1: received/peripheral).
        var requests: [Request?] = [nil, nil]
        var prepared: [[PreparedPart]] = [[], []]
        var preparedBytes = [0, 0]
        var longReads: [LongRead?] = [nil, nil]

        init(device: DeviceID, table: DeviceTable) {
            self.device = device
            self.table = table
        }
    }

    /// The session of the previous ATT PDU: consecutive PDUs are mostly on one connection.
    private var lastSession: (key: ConnectionKey, session: Session)?

    /// The table in use for a connection and where it came from.
    public func table(for key: ConnectionKey) -> (AttributeTable, TableSource)? {
        guard let t = (lastSession?.key == key ? lastSession?.session : sessions[key])?.table else { return nil }
        return (t.table, t.discovered ? .discovered : defaultTableSource)
    }

    /// Every device table built so far (for reports at the end of a file).
    public var deviceTables: [(device: String, table: AttributeTable, source: TableSource)] {
        tables.map { id, t in
            let name: String = switch id {
            case .address(let a): a.description
            case .connection(let k): k.description
            }
            return (name, t.table, t.discovered ? .discovered : defaultTableSource)
        }.sorted { $0.device < $1.device }
    }

    public func consume(_ record: CaptureRecord) {
        events.removeAll(keepingCapacity: true)
        link.consume(record)
        // A lower layer that was malformed in this record (an LL or ACL length beyond the bytes
        // present) makes the ATT PDU it carried malformed too, as Wireshark marks the frame.
        var lowerMalformed: String?
        for event in link.events {
            switch event {
            case .l2cap(let key, let cid, let direction) where link.carriesATT(key, cid: cid):
                consumeATT(key, cid: cid, direction: direction, bytes: link.payload, record: record)
                if let lowerMalformed, case .att(var e)? = events.last, e.malformed == nil {
                    e.malformed = lowerMalformed
                    events[events.count - 1] = .att(e)
                }
            case .malformed(_, let layer, let reason):
                if layer == .linkLayer || layer == .acl { lowerMalformed = "\(layer.rawValue): \(reason)" }
                events.append(.link(event))
            case .connectionComplete(let info):
                sessions[info.key] = nil
                lastSession = nil
                events.append(.link(event))
            case .disconnection(let info, _):
                sessions[info.key] = nil
                lastSession = nil
                events.append(.link(event))
            default:
                events.append(.link(event))
            }
        }
    }

    /// Most device tables kept; beyond this, tables no live connection uses are let go.
    public static let maxDeviceTables = 512
    /// Sweeps are amortised: the next one waits until the state doubles again.
    private var tableSweepThreshold = maxDeviceTables

    /// Drops sessions of connections the link layer no longer follows (it caps them), and tables
    /// nobody uses once there are too many: hostile captures cannot grow this state forever.
    private func sweep() {
        sessions = sessions.filter { link.connections[$0.key] != nil }
        lastSession = nil
        if tables.count > Self.maxDeviceTables {
            let used = Set(sessions.values.map { ObjectIdentifier($0.table) })
            tables = tables.filter { used.contains(ObjectIdentifier($0.value)) }
        }
        tableSweepThreshold = max(Self.maxDeviceTables, 2 * tables.count)
    }

    private func makeSession(_ key: ConnectionKey) -> Session {
        let info = link.connections[key]
        let device: DeviceID
        if let a = info?.peerAddress ?? info?.peripheralAddress { device = .address(a) } else { device = .connection(key) }
        let table: DeviceTable
        if let existing = tables[device] {
            table = existing
        } else {
            table = DeviceTable(table: defaultTable ?? AttributeTable())
            tables[device] = table
            if tables.count > tableSweepThreshold { sweep() }
        }
        return Session(device: device, table: table)
    }

    @inline(__always)
    private static func slot(_ d: PacketDirection) -> Int {
        d == .received || d == .peripheralToCentral ? 1 : 0
    }

    private func consumeATT(_ key: ConnectionKey, cid: UInt16, direction: PacketDirection,
                            bytes: UnsafeRawBufferPointer, record: CaptureRecord) {
        guard let opcode = bytes.first else {
            events.append(.link(.malformed(key, .att, reason: "empty ATT PDU")))
            return
        }
        let session: Session
        if let last = lastSession, last.key == key {
            session = last.session
        } else if let existing = sessions[key] {
            session = existing
        } else {
            session = makeSession(key)
            sessions[key] = session
            if sessions.count > 2 * LinkDecoder.maxConnections { sweep() }
        }
        lastSession = (key, session)
        var event = ATTEvent(connection: key, direction: direction, cid: cid, opcode: opcode, pdu: nil,
                             malformed: nil, handle: nil, info: nil, mtu: session.mtu, length: bytes.count - 1)
        if !reportsValues, let minimum = Self.valueOnlyParameters(opcode), bytes.count - 1 >= minimum {
            events.append(.att(event))
            return
        }
        let pdu: ATTPDU
        do {
            pdu = try ATTPDU.decode(bytes)
        } catch {
            event.malformed = error.reason
            events.append(.att(event))
            return
        }
        // An opcode Core 5.4 does not define is shown as unknown, not malformed: Wireshark
        // marks it the same way, and fuzzers and future specifications send them.
        event.pdu = pdu
        event.handle = pdu.handle ?? Self.requestedHandle(pdu, session, answering: direction)
        if let h = event.handle { event.info = session.table.table.info(for: h) }
        if let origin = link.payloadOrigin, let at = pdu.valueOffset, let value = pdu.value {
            event.valueOrigin = origin.slice(at..<(at + value.count))
        }
        events.append(.att(event))
        track(pdu, session, key: key, direction: direction, record: record, valueOrigin: event.valueOrigin)
    }

    /// The parameter bytes a PDU that only carries a value needs to be well formed (its handle;
    /// what follows is the value, of any length), or nil for the other opcodes. Such a PDU this
    /// long always decodes, and its session bookkeeping (`track`) is a subscription at most.
    @inline(__always)
    static func valueOnlyParameters(_ opcode: UInt8) -> Int? {
        switch opcode {
        case 0x12, 0x1B, 0x1D, 0x52: 2  // Write Request, Notification, Indication, Write Command
        case 0x13, 0x1E: 0  // Write Response, Confirmation
        default: nil
        }
    }

    /// The handle a Read (Blob) Response answers, from its request, as Wireshark shows it: so the
    /// value is named, and redacted when it belongs to a secret-bearing characteristic.
    private static func requestedHandle(_ pdu: ATTPDU, _ s: Session, answering direction: PacketDirection) -> UInt16? {
        let requester = 1 - slot(direction)
        switch pdu {
        case .readResponse:
            return s.requests[requester].flatMap { $0.opcode == 0x0A ? $0.handle : nil }
        case .readBlobResponse:
            return s.requests[requester].flatMap { $0.opcode == 0x0C ? $0.handle : nil }
        default:
            return nil
        }
    }

    /// Session bookkeeping: MTU, discovery into the table, long operations, subscriptions.
    private func track(_ pdu: ATTPDU, _ s: Session, key: ConnectionKey, direction: PacketDirection,
                       record: CaptureRecord, valueOrigin: ByteOrigin?) {
        let mine = Self.slot(direction)
        let other = 1 - mine
        switch pdu {
        case .exchangeMTURequest(let client):
            s.clientMTU = client
        case .exchangeMTUResponse(let server):
            let client = s.clientMTU ?? 23
            s.mtu = max(23, Int(min(client, server)))
            events.append(.operation(.mtuExchanged(key, clientMTU: client, serverMTU: server, mtu: s.mtu)))
        case .readByGroupTypeRequest(let start, _, let type):
            s.requests[mine] = Request(opcode: pdu.opcode, handle: start, type: type, value: [], frame: record.number)
        case .readByTypeRequest(let start, _, let type):
            s.requests[mine] = Request(opcode: pdu.opcode, handle: start, type: type, value: [], frame: record.number)
        case .findByTypeValueRequest(let start, _, let type, let value):
            s.requests[mine] = Request(opcode: pdu.opcode, handle: start, type: BluetoothUUID(uuid16: type), value: value, frame: record.number)
        case .findInformationRequest(let start, _):
            s.requests[mine] = Request(opcode: pdu.opcode, handle: start, type: nil, value: [], frame: record.number)
        case .readRequest(let handle):
            s.requests[mine] = Request(opcode: pdu.opcode, handle: handle, type: nil, value: [], frame: record.number)
        case .readBlobRequest(let handle, _):
            s.requests[mine] = Request(opcode: pdu.opcode, handle: handle, type: nil, value: [], frame: record.number)
        case .readByGroupTypeResponse(_, let entries):
            guard let req = s.requests[other], req.opcode == 0x10, let type = req.type?.uuid16,
                  type == 0x2800 || type == 0x2801 else { break }
            s.requests[other] = nil
            update(s.table, key) { t in
                for e in entries {
                    if let uuid = BluetoothUUID(littleEndianBytes: e.value) {
                        t.addService(start: e.handle, end: e.endGroupHandle, uuid: uuid, primary: type == 0x2800)
                    }
                }
            }
        case .readByTypeResponse(_, let entries):
            guard let req = s.requests[other], req.opcode == 0x08, let type = req.type else { break }
            s.requests[other] = nil
            if type.uuid16 == 0x2803 {
                update(s.table, key) { t in
                    for e in entries where e.value.count == 5 || e.value.count == 19 {
                        let valueHandle = UInt16(e.value[1]) | UInt16(e.value[2]) << 8
                        if let uuid = BluetoothUUID(littleEndianBytes: e.value[3...]) {
                            t.addCharacteristic(declaration: e.handle, properties: e.value[0], valueHandle: valueHandle, uuid: uuid)
                        }
                    }
                }
            } else if type.uuid16 != 0x2802 {
                // Reading by characteristic UUID names the handles that carry it: a read, not a
                // discovery, so it adds to the table in use instead of replacing it.
                update(s.table, key, discovery: false) { t in
                    for e in entries where t.info(for: e.handle) == nil {
                        t.addValueHandle(e.handle, uuid: type)
                    }
                }
            }
        case .findInformationResponse(_, let entries):
            guard let req = s.requests[other], req.opcode == 0x04 else { break }
            s.requests[other] = nil
            update(s.table, key, discovery: false) { t in
                for e in entries { t.addFoundInformation(handle: e.handle, uuid: e.uuid) }
            }
        case .findByTypeValueResponse(let entries):
            guard let req = s.requests[other], req.opcode == 0x06, req.type?.uuid16 == 0x2800,
                  let uuid = BluetoothUUID(littleEndianBytes: req.value) else { break }
            s.requests[other] = nil
            update(s.table, key) { t in
                for e in entries { t.addService(start: e.foundHandle, end: e.groupEndHandle, uuid: uuid, primary: true) }
            }
        case .readResponse(let value):
            guard let req = s.requests[other], req.opcode == 0x0A else { break }
            s.requests[other] = nil
            if value.count >= s.mtu - 1 {
                s.longReads[other] = LongRead(handle: req.handle, bytes: value, firstFrame: req.frame, parts: 1, origin: valueOrigin)
            } else {
                s.longReads[other] = nil
                learnUserDescription(s, key, handle: req.handle, value: value)
            }
        case .readBlobResponse(let part):
            guard let req = s.requests[other], req.opcode == 0x0C else { break }
            s.requests[other] = nil
            var read = s.longReads[other].flatMap { $0.handle == req.handle ? $0 : nil }
                ?? LongRead(handle: req.handle, bytes: [], firstFrame: req.frame, parts: 0, origin: tracksOrigins ? ByteOrigin() : nil)
            if read.bytes.count + part.count > Self.maxQueuedBytes {
                s.longReads[other] = nil
                events.append(.link(.malformed(key, .att, reason: "long read of handle 0x\(String(read.handle, radix: 16)) exceeds \(Self.maxQueuedBytes) bytes; abandoned")))
                break
            }
            read.bytes += part
            read.parts += 1
            if let o = valueOrigin { read.origin?.append(o) } else { read.origin = nil }
            if part.count < s.mtu - 1 {
                finishLongRead(read, s, key)
                s.longReads[other] = nil
            } else {
                s.longReads[other] = read
            }
        case .errorResponse(let requestOpcode, _, _):
            if let read = s.longReads[other], requestOpcode == 0x0C {
                finishLongRead(read, s, key)
                s.longReads[other] = nil
            }
            s.requests[other] = nil
        case .prepareWriteRequest(let handle, let offset, let value):
            // Each part costs its bytes plus bookkeeping, so even empty parts cannot grow the queue forever.
            let cost = value.count + 16
            if s.preparedBytes[mine] + cost > Self.maxQueuedBytes {
                events.append(.link(.malformed(key, .att, reason: "prepare-write queue exceeds \(Self.maxQueuedBytes) bytes; abandoned")))
                s.prepared[mine] = []
                s.preparedBytes[mine] = 0
                break
            }
            s.prepared[mine].append(PreparedPart(handle: handle, offset: offset, value: value, frame: record.number, origin: valueOrigin))
            s.preparedBytes[mine] += cost
        case .executeWriteRequest(let flags):
            let queue = s.prepared[mine]
            s.prepared[mine] = []
            s.preparedBytes[mine] = 0
            guard !queue.isEmpty else { break }
            if flags & 1 == 0 {
                events.append(.operation(.longWriteCancelled(key, parts: queue.count)))
                break
            }
            let joined = Self.joinPreparedWrites(queue, key: key, table: s.table.table)
            if joined.isEmpty {
                events.append(.link(.malformed(key, .att, reason: "prepared writes would join to more than \(Self.maxQueuedBytes) bytes (offsets up to \(queue.map(\.offset).max() ?? 0)); not joined")))
            }
            events.append(contentsOf: joined.map { .operation($0) })
        case .writeRequest(let handle, let value), .writeCommand(let handle, let value):
            guard let info = s.table.table.info(for: handle), info.role == .descriptor,
                  info.uuid.uuid16 == 0x2902, value.count >= 2 else { break }
            events.append(.operation(.subscription(key, cccdHandle: handle, characteristic: info.characteristic,
                                                   notify: value[0] & 1 != 0, indicate: value[0] & 2 != 0)))
        default:
            break
        }
    }

    /// Joins a prepare-write queue into one value per handle, each part at its offset, in the
    /// order the handles were first written. Offsets come from the air: the joined size is
    /// checked before anything is allocated, so a hostile offset cannot inflate memory.
    static func joinPreparedWrites(_ queue: [PreparedPart], key: ConnectionKey, table: AttributeTable) -> [GATTOperation] {
        var order: [UInt16] = []
        var sizes: [UInt16: Int] = [:]
        for part in queue {
            if sizes[part.handle] == nil { order.append(part.handle) }
            sizes[part.handle] = max(sizes[part.handle] ?? 0, Int(part.offset) + part.value.count)
        }
        let total = sizes.values.reduce(0, +)
        guard total <= maxQueuedBytes else {
            return []
        }
        var joined: [GATTOperation] = []
        for handle in order {
            var bytes = [UInt8](repeating: 0, count: sizes[handle] ?? 0)
            var first = 0
            var parts = 0
            // Where each joined byte came from, when origins are tracked: parts may overlap or
            // come out of order, and a later part wins, as the server applies them.
            var byteOrigins: [ByteOrigin.Piece?]? = queue.first?.origin == nil ? nil : Array(repeating: nil, count: bytes.count)
            for part in queue where part.handle == handle {
                if parts == 0 { first = part.frame }
                let offset = Int(part.offset)
                bytes.replaceSubrange(offset..<(offset + part.value.count), with: part.value)
                if byteOrigins != nil, let o = part.origin {
                    for i in 0..<part.value.count {
                        guard let piece = o.slice(i..<(i + 1))?.pieces.first else { continue }
                        byteOrigins?[offset + i] = piece
                    }
                } else {
                    byteOrigins = nil
                }
                parts += 1
            }
            var origin: ByteOrigin?
            if let byteOrigins, !byteOrigins.contains(where: { $0 == nil }) {
                var o = ByteOrigin()
                for piece in byteOrigins { if let piece { o.append(ByteOrigin([piece])) } }
                origin = o
            }
            joined.append(.longWrite(key, handle: handle, info: table.info(for: handle), value: bytes, firstFrame: first,
                                     parts: parts, origin: origin))
        }
        return joined
    }

    /// A Characteristic User Description (0x2901) read names its characteristic: ESP-IDF
    /// provisioning finds its endpoints ("prov-session", "prov-config"...) this way.
    private func learnUserDescription(_ s: Session, _ key: ConnectionKey, handle: UInt16, value: [UInt8]) {
        guard let info = s.table.table.info(for: handle), info.role == .descriptor, info.uuid.uuid16 == 0x2901,
              let owner = s.table.table.owner(ofDescriptor: handle) else { return }
        let name = String(decoding: value.prefix { $0 != 0 }, as: UTF8.self)
        guard s.table.table.userDescriptions[owner.valueHandle] != name else { return }
        update(s.table, key, discovery: false) { t in t.setUserDescription(name, valueHandle: owner.valueHandle) }
    }

    private func finishLongRead(_ read: LongRead, _ s: Session, _ key: ConnectionKey) {
        guard read.parts > 1 || read.firstFrame > 0 else { return }
        learnUserDescription(s, key, handle: read.handle, value: read.bytes)
        let info = s.table.table.info(for: read.handle)
        events.append(.operation(.longRead(key, handle: read.handle, info: info, value: read.bytes,
                                           firstFrame: read.firstFrame, parts: read.parts, origin: read.origin)))
    }

    /// Applies what a response taught. Service and characteristic discovery replaces a table
    /// that came from --gatt-table or --profile (the device says what it has, rather than mixing
    /// with a guess); descriptor discovery and reads by UUID only add to the table in use.
    private func update(_ t: DeviceTable, _ key: ConnectionKey, discovery: Bool = true,
                        _ change: (inout AttributeTable) -> Void) {
        if discovery, !t.discovered {
            if defaultTable != nil { t.table = AttributeTable() }
            t.discovered = true
        }
        change(&t.table)
        events.append(.operation(.tableUpdated(key)))
    }
}
