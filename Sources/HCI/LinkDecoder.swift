import Capture

/// Turns capture records into link events: HCI commands and events, ACL reassembled into L2CAP
/// SDUs, SMP, and (for sniffer captures) the LE link layer.
///
/// One record at a time; memory follows live state (open connections, pending reassembly), never
/// the file's size, and both are capped so hostile input cannot grow them without bound.
public final class LinkDecoder {
    /// Events of the last record consumed, in order.
    public internal(set) var events: [LinkEvent] = []
    /// The bytes of the `.l2cap` event of the last record (at most one per record). Valid until the next `consume`.
    public private(set) var payload = UnsafeRawBufferPointer(start: nil, count: 0)
    /// Where `payload`'s bytes lie in the records, when `tracksOrigins` is on (redaction needs it;
    /// decoding does not pay for it otherwise).
    public private(set) var payloadOrigin: ByteOrigin?
    public var tracksOrigins = false
    /// Live connections.
    public internal(set) var connections: [ConnectionKey: ConnectionInfo] = [:]
    /// Controllers seen (monitor captures), by index.
    public private(set) var controllers: [UInt16: (name: String, address: BDAddr?)] = [:]

    /// Caps on live state: beyond them the oldest partial state is dropped (and reported).
    public static let maxConnections = 4096
    public static let maxPendingReassemblies = 256

    struct FragmentKey: Hashable {
        var controller: UInt16
        var id: UInt32
        var direction: UInt8
    }

    /// A partially reassembled L2CAP PDU.
    struct Pending {
        var bytes: [UInt8]
        /// Size of the whole L2CAP PDU, header included; nil while the bytes so far hold less
        /// than its length field (a link-layer start of one byte).
        var total: Int?
        var firstFrame: Int
        /// The records the bytes came from, when tracking origins.
        var origin = ByteOrigin()
    }

    var pending: [FragmentKey: Pending] = [:]
    /// BR/EDR channels that carry ATT (opened with PSM 0x001F), per connection: both ends' CIDs.
    var attChannels: [ConnectionKey: Set<UInt16>] = [:]
    /// Connection Requests for PSM 0x001F awaiting their Response: (connection, identifier) -> the requester's CID.
    var attChannelRequests: [ConnectionKey: [UInt8: UInt16]] = [:]
    static let maxChannelsPerConnection = 64
    private var completed = UnsafeMutableRawPointer.allocate(byteCount: 65_540, alignment: 16)
    /// HCI_Disconnect commands waiting for their Command Status, per controller, oldest first
    /// (Command Status does not name the handle; a controller answers commands in order).
    var disconnectsAwaitingStatus: [UInt16: [(key: ConnectionKey, reason: HCIStatus)]] = [:]
    /// Links this host asked to end and whose controller accepted: the reason the host gave.
    var hostDisconnects: [ConnectionKey: HCIStatus] = [:]
    static let maxAwaitingDisconnects = 16

    /// Extended advertising reports waiting for the rest of their data.
    var advertisingChains = AdvertisingChains()
    /// Link-layer state for sniffer captures (see LinkLayerDecoder.swift).
    var linkLayer = LinkLayerState()
    /// Long-term keys to decrypt sniffed encrypted links with (secrets: never printed).
    public var linkLayerKeys: [LinkLayerKey]
    /// Whether advertising reports become `.advertising` events. A consumer that has no use for
    /// them (`info`) turns this off: the reports are still checked, and a malformed one is still
    /// reported, but their AD structures are not read and no event is made. On a sniffer's
    /// capture, which is mostly advertising, that was three fifths of `info`'s time.
    public var reportsAdvertising = true
    /// Recover the keys of sniffed legacy pairings (TK, STK, distributed LTKs) and decrypt with
    /// them, as crackle does (see LinkLayerPairing.swift).
    public var recoversPairingKeys = true
    /// Say a recovered passkey's digits (`--reveal-secrets`): a device with a static passkey
    /// keeps it for every pairing, so it is a secret like a password. Just Works' 000000 is not.
    public var revealsPasskeys = false
    /// The plaintext of the last decrypted link-layer PDU: `payload` may point into it.
    let decrypted = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 16)

    public init(linkLayerKeys: [LinkLayerKey] = []) {
        self.linkLayerKeys = linkLayerKeys
    }

    deinit {
        completed.deallocate()
        decrypted.deallocate()
    }

    /// Decodes one record; read `events` (and `payload` for `.l2cap`) afterwards.
    public func consume(_ record: CaptureRecord) {
        events.removeAll(keepingCapacity: true)
        payload = UnsafeRawBufferPointer(start: nil, count: 0)
        payloadOrigin = nil
        switch record.kind {
        case .acl: consumeACL(record)
        case .event: consumeEvent(record)
        case .command: consumeCommand(record)
        case .linkLayer: consumeLinkLayer(record)
        case .newIndex: consumeNewIndex(record)
        case .deleteIndex:
            controllers[record.controller] = nil
            events.append(.controllerRemoved(index: record.controller))
        case .text: consumeText(record)
        case .other where record.rawType == 0 && record.data.isEmpty:
            events.append(.malformed(nil, .record, reason: "empty record"))
        default: break
        }
    }

    // MARK: Connections

    /// The key `touch` saw last: most records belong to the connection of the record before,
    /// so this skips the hash lookup on the hot path. Cleared whenever a connection goes away.
    private var lastTouched: ConnectionKey?

    /// Makes sure a live connection exists for a key, created as "implicit" when the capture
    /// began mid-connection.
    @inline(__always)
    func touch(_ key: ConnectionKey, _ record: CaptureRecord) {
        if key == lastTouched { return }
        if connections[key] == nil {
            var info = ConnectionInfo(key: key, frame: record.number, time: record.timestamp)
            info.implicit = true
            insert(info)
        }
        lastTouched = key
    }

    /// Keys in the order their connections arrived, for evicting the oldest when hostile input
    /// opens more than `maxConnections`. A key comes back with each new connection on its handle,
    /// so an entry counts only while it is its key's latest (`latestArrival`); the others, and
    /// those of connections gone, are skipped, and dropped when the list is compacted (kept, a
    /// day of reconnections on one handle made every compaction keep them all and run again on
    /// the next connection: quadratic, seconds per million records).
    private(set) var arrivals: [(key: ConnectionKey, generation: Int)] = []
    private var arrivalsHead = 0
    private var latestArrival: [ConnectionKey: Int] = [:]
    private var arrivalCount = 0
    /// How often the list was compacted (each costs its length: it must stay rare).
    private(set) var compactions = 0

    /// Adds or replaces a live connection, keeping at most `maxConnections`.
    func insert(_ info: ConnectionInfo) {
        let key = info.key
        if connections[key] == nil {
            while connections.count >= Self.maxConnections, arrivalsHead < arrivals.count {
                let victim = arrivals[arrivalsHead]
                arrivalsHead += 1
                guard latestArrival[victim.key] == victim.generation, victim.key != key else { continue }
                if forget(victim.key) != nil {
                    events.append(.malformed(victim.key, .record, reason: "more than \(Self.maxConnections) live connections; the oldest is no longer followed"))
                }
            }
            arrivalCount += 1
            arrivals.append((key, arrivalCount))
            latestArrival[key] = arrivalCount
            if arrivals.count > 2 * Self.maxConnections {
                arrivals = arrivals[arrivalsHead...].filter { latestArrival[$0.key] == $0.generation && (connections[$0.key] != nil || $0.key == key) }
                arrivalsHead = 0
                compactions += 1
                latestArrival = Dictionary(arrivals.map { ($0.key, $0.generation) }) { _, latest in latest }
            }
        }
        connections[key] = info
    }

    /// Removes a connection and what is pending on it; returns what was known.
    @discardableResult
    func forget(_ key: ConnectionKey) -> ConnectionInfo? {
        lastTouched = nil
        dropPending(controller: key.controller, id: key.id)
        attChannels[key] = nil
        attChannelRequests[key] = nil
        if !hostDisconnects.isEmpty { hostDisconnects[key] = nil }
        if key.isLinkLayer {
            linkLayer.sequence[key.id] = nil
            linkLayer.encryption[key.id] = nil
            linkLayer.pairing[key.id] = nil
            linkLayer.addresses[key.id] = nil
        }
        return connections.removeValue(forKey: key)
    }

    // MARK: ACL and L2CAP

    private func consumeACL(_ record: CaptureRecord) {
        let d = record.data
        guard d.count >= 4 else {
            events.append(.malformed(nil, .acl, reason: "ACL packet of \(d.count) bytes is shorter than its 4-byte header"))
            return
        }
        let handleFlags = d.u16le(0)
        let key = ConnectionKey(controller: record.controller, handle: handleFlags & 0x0FFF)
        let boundary = (handleFlags >> 12) & 0x3
        let declared = Int(d.u16le(2))
        var length = declared
        touch(key, record)
        if length > d.count - 4 {
            if !record.isCut {
                events.append(.malformed(key, .acl, reason: "ACL length \(length) exceeds the \(d.count - 4) bytes present"))
            }
            length = d.count - 4
        }
        let fragment = d.slice(4, length)
        let direction = PacketDirection(record.direction)
        let fragmentKey = FragmentKey(controller: key.controller, id: key.id, direction: direction.rawValue)
        if boundary == 0x1 {
            continueFragment(fragmentKey, key: key, direction: direction, fragment: fragment, record: record, abandonOnOverflow: false)
            return
        }
        guard fragment.count >= 2 else {
            events.append(.malformed(key, .acl, reason: "first ACL fragment of \(fragment.count) bytes has no L2CAP length"))
            return
        }
        // As Wireshark: a start whose L2CAP length matches the ACL length is whole; anything
        // else waits for continuations.
        let total = 4 + Int(fragment.u16le(0))
        if boundary == 0x3 || total == declared {
            deliverL2CAP(key, direction: direction, sdu: fragment, record: record)
        } else if fragment.count > total {
            events.append(.malformed(key, .l2cap, reason: "first fragment of \(fragment.count) bytes is longer than its L2CAP PDU (\(total)); not decoded"))
        } else {
            startFragment(fragmentKey, key: key, total: total, fragment: fragment, record: record)
        }
    }

    /// The first fragment of a PDU that continues: it replaces any unfinished one on the same key.
    func startFragment(_ fk: FragmentKey, key: ConnectionKey, total: Int?, fragment: UnsafeRawBufferPointer,
                       record: CaptureRecord) {
        if !pending.isEmpty, let old = pending.removeValue(forKey: fk) {
            let of = old.total.map { "of \($0) bytes" } ?? "bytes, its length never known"
            events.append(.malformed(key, .l2cap, reason: "L2CAP PDU started at frame \(old.firstFrame) was never completed (\(old.bytes.count) \(of))"))
        }
        if pending.count >= Self.maxPendingReassemblies {
            // Only hostile input leaves this many PDUs unfinished at once: start afresh.
            events.append(.malformed(key, .l2cap, reason: "more than \(Self.maxPendingReassemblies) unfinished L2CAP PDUs; all dropped"))
            pending.removeAll()
        }
        var bytes = [UInt8]()
        bytes.reserveCapacity(total ?? 4)
        bytes.append(contentsOf: fragment)
        var p = Pending(bytes: bytes, total: total, firstFrame: record.number)
        if tracksOrigins, let o = ByteOrigin(record: record.number, data: record.data, bytes: fragment) { p.origin = o }
        pending[fk] = p
    }

    /// A continuation: appended if it fits, and the PDU delivered when complete. One that would
    /// overflow is dropped (HCI, as Wireshark does) or abandons the PDU (link layer).
    func continueFragment(_ fk: FragmentKey, key: ConnectionKey, direction: PacketDirection,
                          fragment: UnsafeRawBufferPointer, record: CaptureRecord, abandonOnOverflow: Bool) {
        guard var p = pending.removeValue(forKey: fk) else {
            events.append(.malformed(key, .l2cap, reason: "continuation fragment with no start"))
            return
        }
        // A start too short for the L2CAP length field: the length's second byte is this
        // fragment's first.
        let total: Int
        if let known = p.total {
            total = known
        } else if p.bytes.count + fragment.count >= 2, let low = p.bytes.first ?? fragment.first {
            let high = p.bytes.count >= 2 ? p.bytes[1] : fragment[1 - p.bytes.count]
            total = 4 + (Int(high) << 8 | Int(low))
        } else {
            total = Int.max
        }
        if p.bytes.count + fragment.count > total {
            events.append(.malformed(key, .l2cap, reason: "continuation of \(fragment.count) bytes overflows the L2CAP PDU started at frame \(p.firstFrame) (\(total - p.bytes.count) bytes missing)\(abandonOnOverflow ? "; PDU abandoned" : "; fragment dropped")"))
            if !abandonOnOverflow { pending[fk] = p }
            return
        }
        p.bytes.append(contentsOf: fragment)
        if tracksOrigins, let o = ByteOrigin(record: record.number, data: record.data, bytes: fragment) { p.origin.append(o) }
        if total != Int.max { p.total = total }
        if p.bytes.count < total {
            pending[fk] = p
            return
        }
        p.bytes.withUnsafeBytes { bytes in
            completed.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        }
        deliverL2CAP(key, direction: direction,
                     sdu: UnsafeRawBufferPointer(start: completed, count: total), record: record, origin: tracksOrigins ? p.origin : nil)
    }

    /// One whole L2CAP PDU (basic header included). `origin` says where a reassembled PDU's
    /// bytes came from; a PDU inside one record finds its own.
    func deliverL2CAP(_ key: ConnectionKey, direction: PacketDirection, sdu: UnsafeRawBufferPointer,
                      record: CaptureRecord, origin: ByteOrigin? = nil) {
        func bodyOrigin(_ body: UnsafeRawBufferPointer) -> ByteOrigin? {
            if let origin { return origin.slice(4..<(4 + body.count)) }
            return ByteOrigin(record: record.number, data: record.data, bytes: body)
        }
        guard sdu.count >= 4 else {
            events.append(.malformed(key, .l2cap, reason: "L2CAP PDU of \(sdu.count) bytes is shorter than its 4-byte header"))
            return
        }
        let length = Int(sdu.u16le(0))
        let cid = sdu.u16le(2)
        var body = sdu.dropping(4)
        if length > body.count {
            if !record.isCut {
                events.append(.malformed(key, .l2cap, reason: "L2CAP length \(length) exceeds the \(body.count) bytes present"))
            }
        } else {
            body = body.slice(0, length)
        }
        switch cid {
        case 0x0006:
            switch SMPPDU.decode(body) {
            case .success(let pdu):
                events.append(.smp(key, direction, tracksOrigins ? pdu.located(bodyOrigin(body)) : pdu))
                followPairing(key, direction: direction, body, pdu: pdu, frame: record.number)
            case .failure(let reason):
                events.append(.malformed(key, .smp, reason: reason.text))
            }
        case 0x0001 where !key.isVendorDiagnostics || connections[key]?.classic == true:
            // BR/EDR signalling: several commands per PDU (vendor diagnostics use CID 1 too).
            consumeClassicSignalling(key, direction: direction, body)
        case 0x0005:
            if body.count >= 4 {
                events.append(.signalling(key, direction, code: body[0], identifier: body[1]))
            } else {
                events.append(.malformed(key, .signalling, reason: "signalling command of \(body.count) bytes is shorter than its 4-byte header"))
            }
        default:
            payload = body
            if tracksOrigins { payloadOrigin = bodyOrigin(body) }
            events.append(.l2cap(key, cid: cid, direction: direction))
        }
    }

    /// Whether an L2CAP channel carries ATT: the fixed channel 0x0004 (LE, and BR/EDR's fixed ATT
    /// channel), or a BR/EDR dynamic channel opened for PSM 0x001F.
    @inline(__always)
    public func carriesATT(_ key: ConnectionKey, cid: UInt16) -> Bool {
        cid == 0x0004 || (cid >= 0x0040 && attChannels[key]?.contains(cid) == true)
    }

    /// BR/EDR signalling (CID 0x0001): one event per command; Connection Request and Response
    /// for PSM 0x001F (ATT) open a channel `carriesATT` recognises, Disconnection closes it.
    private func consumeClassicSignalling(_ key: ConnectionKey, direction: PacketDirection, _ body: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < body.count {
            guard body.count - offset >= 4 else {
                events.append(.malformed(key, .signalling, reason: "signalling command of \(body.count - offset) bytes is shorter than its 4-byte header"))
                return
            }
            let code = body[offset], identifier = body[offset + 1]
            let length = Int(body.u16le(offset + 2))
            guard length <= body.count - offset - 4 else {
                events.append(.malformed(key, .signalling, reason: "signalling command length \(length) exceeds the \(body.count - offset - 4) bytes present"))
                return
            }
            let p = body.slice(offset + 4, length)
            events.append(.signalling(key, direction, code: code, identifier: identifier))
            switch code {
            case 0x02 where p.count >= 4 && p.u16le(0) == 0x001F:  // Connection Request: PSM, source CID
                if attChannelRequests[key, default: [:]].count < Self.maxChannelsPerConnection {
                    attChannelRequests[key, default: [:]][identifier] = p.u16le(2)
                }
            case 0x03 where p.count >= 8:  // Connection Response: destination CID, source CID, result
                guard let requester = attChannelRequests[key]?.removeValue(forKey: identifier), p.u16le(4) == 0x0000 else { break }
                if attChannels[key, default: []].count < 2 * Self.maxChannelsPerConnection {
                    attChannels[key, default: []].formUnion([requester, p.u16le(0)])
                }
            case 0x06 where p.count >= 4:  // Disconnection Request: destination CID, source CID
                if var channels = attChannels[key], channels.contains(p.u16le(0)) || channels.contains(p.u16le(2)) {
                    channels.remove(p.u16le(0))
                    channels.remove(p.u16le(2))
                    attChannels[key] = channels
                }
            default:
                break
            }
            offset += 4 + length
        }
    }

    // MARK: Events

    private func consumeEvent(_ record: CaptureRecord) {
        let d = record.data
        guard d.count >= 2 else {
            events.append(.malformed(nil, .hci, reason: "HCI event of \(d.count) bytes is shorter than its 2-byte header"))
            return
        }
        let code = d[0]
        let p = d.dropping(2)
        if Int(d[1]) > p.count && !record.isCut {
            events.append(.malformed(nil, .hci, reason: "\(HCINames.event(code)) parameter length \(d[1]) exceeds the \(p.count) bytes present"))
        }
        func short(_ need: Int, _ name: String) -> Bool {
            if p.count >= need { return false }
            events.append(.malformed(nil, .hci, reason: "\(name) needs \(need) parameter bytes, has \(p.count)"))
            return true
        }
        switch code {
        case 0x05:  // Disconnection Complete
            guard !short(4, "Disconnection Complete"), p[0] == 0 else { return }
            let key = ConnectionKey(controller: record.controller, handle: p.u16le(1) & 0x0FFF)
            let byHost = hostDisconnects.removeValue(forKey: key)
            var info = forget(key) ?? ConnectionInfo(key: key, frame: record.number, time: record.timestamp)
            info.hostDisconnectReason = byHost
            info.disconnectedAt = record.timestamp
            info.disconnectedFrame = record.number
            info.disconnectReason = HCIStatus(p[3])
            events.append(.disconnection(info, reason: HCIStatus(p[3])))
        case 0x03:  // Connection Complete (BR/EDR): classic links share captures with LE ones
            guard !short(11, "Connection Complete") else { return }
            let peer = BDAddr(littleEndian: p, at: 3)
            guard p[0] == 0 else {
                events.append(.connectionFailed(status: HCIStatus(p[0]), peer: peer))
                return
            }
            let key = ConnectionKey(controller: record.controller, handle: p.u16le(1) & 0x0FFF)
            forget(key)
            var info = ConnectionInfo(key: key, frame: record.number, time: record.timestamp)
            info.peerAddress = peer
            info.classic = true
            info.connectedAt = record.timestamp
            info.connectedFrame = record.number
            insert(info)
            events.append(.connectionComplete(info))
        case 0x08, 0x59:  // Encryption Change v1, v2
            guard !short(code == 0x08 ? 4 : 5, HCINames.event(code)) else { return }
            let key = ConnectionKey(controller: record.controller, handle: p.u16le(1) & 0x0FFF)
            let enabled = p[0] == 0 && p[3] != 0
            let keySize: UInt8? = code == 0x59 ? p[4] : nil
            touch(key, record)
            if p[0] == 0 {
                setEncrypted(key, enabled, frame: record.number, keySize: keySize)
            }
            events.append(.encryptionChange(key, enabled: enabled, status: HCIStatus(p[0]), keySize: keySize))
        case 0x30:  // Encryption Key Refresh Complete
            guard !short(3, "Encryption Key Refresh Complete") else { return }
            let key = ConnectionKey(controller: record.controller, handle: p.u16le(1) & 0x0FFF)
            events.append(.encryptionKeyRefresh(key, status: HCIStatus(p[0])))
        case 0x18:  // Link Key Notification (BR/EDR): the controller hands the host a new link key
            guard !short(23, "Link Key Notification") else { return }
            let linkKey = Secret(Array(p[6..<22]), label: "link key").located(ByteOrigin(record: record.number, offset: 2 + 6, count: 16))
            events.append(.linkKey(peer: BDAddr(littleEndian: p, at: 0), key: linkKey, fromController: true))
        case 0x0E:  // Command Complete: report failures of the commands that matter
            guard p.count >= 4 else { return }
            let opcode = p.u16le(1)
            if opcode == 0x1408, p[3] == 0, p.count >= 7 {  // Read Encryption Key Size
                let key = ConnectionKey(controller: record.controller, handle: p.u16le(4) & 0x0FFF)
                connections[key]?.encryptionKeySize = p[6]
                events.append(.encryptionKeySize(key, size: p[6]))
            }
            if p[3] != 0, HCINames.commands[opcode] != nil {
                events.append(.commandFailed(opcode: opcode, status: HCIStatus(p[3])))
            }
        case 0x0F:  // Command Status
            guard p.count >= 4 else { return }
            let opcode = p.u16le(2)
            if opcode == 0x0406, var waiting = disconnectsAwaitingStatus[record.controller], !waiting.isEmpty {
                let asked = waiting.removeFirst()
                disconnectsAwaitingStatus[record.controller] = waiting.isEmpty ? nil : waiting
                if p[0] == 0 {
                    if hostDisconnects.count >= Self.maxConnections { hostDisconnects.removeAll() }
                    hostDisconnects[asked.key] = asked.reason
                }
            }
            if p[0] != 0, HCINames.commands[opcode] != nil {
                events.append(.commandFailed(opcode: opcode, status: HCIStatus(p[0])))
            }
        case 0x3E:
            guard !short(1, "LE Meta event") else { return }
            consumeLEMeta(record, p)
        default:
            break
        }
    }

    private func consumeLEMeta(_ record: CaptureRecord, _ p: UnsafeRawBufferPointer) {
        let sub = p[0]
        let q = p.dropping(1)
        func short(_ need: Int) -> Bool {
            if q.count >= need { return false }
            events.append(.malformed(nil, .hci, reason: "\(HCINames.leSubevent(sub)) needs \(need) parameter bytes, has \(q.count)"))
            return true
        }
        switch sub {
        case 0x01, 0x0A, 0x29:  // LE (Enhanced) Connection Complete
            let enhanced = sub != 0x01
            guard !short(enhanced ? 30 : 18) else { return }
            let status = HCIStatus(q[0])
            let peer = BDAddr(littleEndian: q, at: 5)
            guard status.rawValue == 0 else {
                events.append(.connectionFailed(status: status, peer: peer))
                return
            }
            let key = ConnectionKey(controller: record.controller, handle: q.u16le(1) & 0x0FFF)
            forget(key)
            var info = ConnectionInfo(key: key, frame: record.number, time: record.timestamp)
            info.role = q[3] == 0 ? .central : q[3] == 1 ? .peripheral : .unknown
            info.peerAddressType = AddressType(rawValue: q[4])
            info.peerAddress = peer
            let at = enhanced ? 23 : 11
            info.interval = q.u16le(at)
            info.latency = q.u16le(at + 2)
            info.supervisionTimeout = q.u16le(at + 4)
            info.connectedAt = record.timestamp
            info.connectedFrame = record.number
            insert(info)
            events.append(.connectionComplete(info))
        case 0x03:  // Connection Update Complete
            guard !short(9), q[0] == 0 else { return }
            let key = ConnectionKey(controller: record.controller, handle: q.u16le(1) & 0x0FFF)
            touch(key, record)
            connections[key]?.interval = q.u16le(3)
            connections[key]?.latency = q.u16le(5)
            connections[key]?.supervisionTimeout = q.u16le(7)
            events.append(.connectionUpdate(key, interval: q.u16le(3), latency: q.u16le(5), timeout: q.u16le(7)))
        case 0x05:  // LTK Request
            guard !short(12) else { return }
            let key = ConnectionKey(controller: record.controller, handle: q.u16le(0) & 0x0FFF)
            let rand = UInt64(q.u32le(2)) | UInt64(q.u32le(6)) << 32
            events.append(.ltkRequest(key, rand: rand, ediv: q.u16le(10)))
        case 0x02, 0x0B, 0x0D:  // LE Advertising Report, Directed, Extended: every report inside
            let (reports, problem) = AdvertisingReport.decodeHCI(subevent: sub, q, controller: record.controller,
                                                                 chains: &advertisingChains, withData: reportsAdvertising)
            if reportsAdvertising { for r in reports { events.append(.advertising(r)) } }
            if let problem, !record.isCut {
                events.append(.malformed(nil, .hci, reason: "\(HCINames.leSubevent(sub)): \(problem)"))
            }
        case 0x07:  // Data Length Change
            guard !short(10) else { return }
            let key = ConnectionKey(controller: record.controller, handle: q.u16le(0) & 0x0FFF)
            events.append(.dataLengthChange(key, maxTxOctets: q.u16le(2), maxRxOctets: q.u16le(6)))
        default:
            break
        }
    }

    func setEncrypted(_ key: ConnectionKey, _ enabled: Bool, frame: Int, keySize: UInt8?) {
        guard var info = connections[key] else { return }
        info.encrypted = enabled
        if enabled && info.firstEncryptedFrame == nil { info.firstEncryptedFrame = frame }
        if let keySize { info.encryptionKeySize = keySize }
        connections[key] = info
    }

    func dropPending(controller: UInt16, id: UInt32) {
        guard !pending.isEmpty else { return }
        for direction in [PacketDirection.sent, .received, .unknown, .centralToPeripheral, .peripheralToCentral] {
            pending[FragmentKey(controller: controller, id: id, direction: direction.rawValue)] = nil
        }
    }

    // MARK: Commands

    private func consumeCommand(_ record: CaptureRecord) {
        let d = record.data
        guard d.count >= 3 else {
            events.append(.malformed(nil, .hci, reason: "HCI command of \(d.count) bytes is shorter than its 3-byte header"))
            return
        }
        let opcode = d.u16le(0)
        let p = d.dropping(3)
        switch opcode {
        case 0x0406 where p.count >= 3:  // Disconnect
            let key = ConnectionKey(controller: record.controller, handle: p.u16le(0) & 0x0FFF)
            var waiting = disconnectsAwaitingStatus[record.controller, default: []]
            if waiting.count >= Self.maxAwaitingDisconnects { waiting.removeFirst() }
            waiting.append((key, HCIStatus(p[2])))
            disconnectsAwaitingStatus[record.controller] = waiting
            events.append(.disconnectCommand(key, reason: HCIStatus(p[2])))
        case 0x200D where p.count >= 12:  // LE Create Connection
            events.append(.createConnection(peer: BDAddr(littleEndian: p, at: 6), peerType: p[5]))
        case 0x2043 where p.count >= 10:  // LE Extended Create Connection
            events.append(.createConnection(peer: BDAddr(littleEndian: p, at: 3), peerType: p[2]))
        case 0x2019 where p.count >= 28:  // LE Start Encryption: carries the LTK
            let key = ConnectionKey(controller: record.controller, handle: p.u16le(0) & 0x0FFF)
            let rand = UInt64(p.u32le(2)) | UInt64(p.u32le(6)) << 32
            let ltk = Secret(Array(p[12..<28]), label: "LTK").located(ByteOrigin(record: record.number, offset: 3 + 12, count: 16))
            events.append(.startEncryption(key, ltk: ltk, rand: rand, ediv: p.u16le(10)))
        case 0x201A where p.count >= 18:  // LE LTK Request Reply: carries the LTK
            let key = ConnectionKey(controller: record.controller, handle: p.u16le(0) & 0x0FFF)
            let ltk = Secret(Array(p[2..<18]), label: "LTK").located(ByteOrigin(record: record.number, offset: 3 + 2, count: 16))
            events.append(.ltkReply(key, ltk: ltk))
        case 0x040B where p.count >= 22:  // Link Key Request Reply (BR/EDR): carries the link key
            let linkKey = Secret(Array(p[6..<22]), label: "link key").located(ByteOrigin(record: record.number, offset: 3 + 6, count: 16))
            events.append(.linkKey(peer: BDAddr(littleEndian: p, at: 0), key: linkKey, fromController: false))
        case 0x2027 where p.count >= 39:  // LE Add Device To Resolving List: peer IRK, local IRK
            func irk(_ at: Int, _ label: String) -> Secret? {
                let bytes = Array(p[at..<(at + 16)])
                guard bytes.contains(where: { $0 != 0 }) else { return nil }
                return Secret(bytes, label: label).located(ByteOrigin(record: record.number, offset: 3 + at, count: 16))
            }
            events.append(.resolvingListAdd(peer: BDAddr(littleEndian: p, at: 1), peerIRK: irk(7, "peer IRK"), localIRK: irk(23, "local IRK")))
        case 0x2017 where p.count >= 32:  // LE Encrypt: key, then plaintext
            events.append(.leEncrypt(key: Secret(Array(p[0..<16]), label: "LE Encrypt key").located(ByteOrigin(record: record.number, offset: 3, count: 16))))
        case 0x201B where p.count >= 2:
            events.append(.ltkNegativeReply(ConnectionKey(controller: record.controller, handle: p.u16le(0) & 0x0FFF)))
        default:
            break
        }
    }

    // MARK: Monitor bookkeeping and text

    private func consumeNewIndex(_ record: CaptureRecord) {
        let d = record.data
        guard d.count >= 16 else {
            events.append(.malformed(nil, .record, reason: "monitor New Index of \(d.count) bytes is shorter than 16"))
            return
        }
        let address = BDAddr(littleEndian: d, at: 2)
        let name = String(decoding: d[8..<16].prefix { $0 != 0 }, as: UTF8.self)
        controllers[record.controller] = (name, address)
        events.append(.controllerAdded(index: record.controller, name: name, address: address))
    }

    private func consumeText(_ record: CaptureRecord) {
        var d = record.data
        if record.rawType == MonitorOpcode.userLogging.rawValue, record.linkLayer == nil, d.count >= 2 {
            // priority u8, ident length u8, ident, message
            let identLength = Int(d[1])
            d = d.dropping(2 + identLength)
        }
        let text = String(decoding: d.prefix { $0 != 0 }, as: UTF8.self)
        events.append(.text(text.trimmingNewlines()))
    }
}

extension String {
    func trimmingNewlines() -> String {
        var s = Substring(self)
        while let last = s.last, last == "\n" || last == "\r" { s = s.dropLast() }
        return String(s)
    }
}
