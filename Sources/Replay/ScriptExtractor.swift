import ATT
import Capture
import GATT
import HCI
import Profiles

/// Which part of a capture to make a script of.
public struct ExtractOptions: Sendable {
    /// The device protocols extraction knows: the script describes their values and redacts
    /// their credentials, and those with a replay session of their own (`ReplaySessionDriving`)
    /// annotate it. The command line gives every registered one.
    public var protocols: ProtocolSet
    /// One connection (as `decode` names it: 0x0040, hci1/0x0040); nil: every connection to the
    /// device of the first connection that carries ATT traffic.
    public var connection: String?
    /// Every connection to this peer address.
    public var peer: String?
    /// Keep secrets as recorded instead of overwriting them with '*'.
    public var revealSecrets = false
    /// Keys that decrypt the session (`--esp-pop`, `--esp-client-key`: ESP-IDF security 1).
    public var keys: ProtocolKeys

    public init(protocols: ProtocolSet, connection: String? = nil, peer: String? = nil, revealSecrets: Bool = false, keys: ProtocolKeys = .init()) {
        self.protocols = protocols
        self.connection = connection
        self.peer = peer
        self.revealSecrets = revealSecrets
        self.keys = keys
    }
}

/// Makes a `SessionScript` from a capture: the central's requests become steps, the peripheral's
/// answers their expectations, notifications steps to wait for; discovery becomes one step.
public final class ScriptExtractor {
    /// A script longer than this is refused: no phone session has that many GATT operations,
    /// and a hostile capture must not grow memory without bound.
    public static let maxSteps = 200_000

    private let options: ExtractOptions
    private var builders: [ConnectionKey: ConnectionSteps] = [:]
    private var order: [ConnectionKey] = []
    private var records = 0

    public init(options: ExtractOptions) {
        self.options = options
    }

    /// The recorded device's table, as discovered on the connections `finish` chose (nil when
    /// the capture has no discovery of it).
    public private(set) var chosenTable: AttributeTable?

    /// Reads `path` and returns the script and the recorded device's table.
    public static func extractWithTable(path: String, options: ExtractOptions) throws -> (SessionScript, AttributeTable?) {
        let reader = try openCapture(path)
        let extractor = ScriptExtractor(options: options)
        let gatt = GATTDecoder()
        while let record = try reader.next() {
            gatt.consume(record)
            if gatt.events.isEmpty { continue }
            try extractor.consume(gatt, record: record)
        }
        let script = try extractor.finish(capture: path, gatt: gatt)
        return (script, extractor.chosenTable)
    }

    /// Reads `path` and returns the script. Capture errors come back as they are (file, record,
    /// offset); a capture with nothing to replay is a `ReplayError`.
    public static func extract(path: String, options: ExtractOptions) throws -> SessionScript {
        try extractWithTable(path: path, options: options).0
    }

    /// Takes the GATT events of one record.
    public func consume(_ gatt: GATTDecoder, record: CaptureRecord) throws(ReplayError) {
        // Held to ±2^61 µs as the timeline builder holds them: differences of hostile
        // timestamps (the extremes of Int64) must not overflow.
        let time = min(max(record.timestamp, -(1 << 61)), 1 << 61)
        for event in gatt.events {
            switch event {
            case .link(.connectionComplete(let info)):
                let b = builder(info.key, time)
                b.role = info.role
                b.peer = info.peerAddress?.description ?? b.peer
                b.connect(at: time)
            case .link(.disconnectCommand(let key, _)):
                builders[key]?.phoneHungUp = true
            case .link(.disconnection(let info, let reason)):
                builders[info.key]?.end(reason: reason, at: time)
            case .link(.encryptionChange(let key, let enabled, let status, _)) where enabled && status.rawValue == 0:
                builders[key]?.encrypted(at: time)
            case .att(let e):
                let b = builder(e.connection, time)
                let table = gatt.table(for: e.connection)?.0
                b.att(e, at: time, table: table, reveal: options.revealSecrets)
            case .operation(let op):
                switch op {
                case .mtuExchanged(let key, _, _, let mtu):
                    builders[key]?.mtuAgreed(mtu)
                case .longWrite(let key, let handle, let info, let value, _, _, _):
                    builders[key]?.longWriteJoined(handle: handle, info: info, value: value, table: gatt.table(for: key)?.0,
                                                   reveal: options.revealSecrets)
                case .longRead(let key, let handle, let info, let value, _, _, _):
                    builders[key]?.longReadJoined(handle: handle, info: info, value: value, table: gatt.table(for: key)?.0,
                                                  reveal: options.revealSecrets)
                default:
                    break
                }
            default:
                break
            }
        }
        // Counted every 1024 records: summing every builder on every record would make a capture
        // with thousands of connections quadratic.
        records += 1
        guard records & 0x3FF == 0 else { return }
        if builders.values.reduce(0, { $0 + $1.steps.count }) > Self.maxSteps {
            throw .nothingToReplay("", "more than \(Self.maxSteps) steps; pick one connection with --connection")
        }
    }

    private func builder(_ key: ConnectionKey, _ time: Int64) -> ConnectionSteps {
        if let b = builders[key] { return b }
        let b = ConnectionSteps(key: key, firstTime: time, protocols: options.protocols)
        builders[key] = b
        order.append(key)
        return b
    }

    /// The script of the chosen connections.
    public func finish(capture: String, gatt: GATTDecoder) throws(ReplayError) -> SessionScript {
        if builders.values.reduce(0, { $0 + $1.steps.count }) > Self.maxSteps {
            throw .nothingToReplay(capture, "more than \(Self.maxSteps) steps; pick one connection with --connection")
        }
        let withTraffic = order.compactMap { builders[$0] }.filter { $0.hasGATT }
        var chosen: [ConnectionSteps]
        if let wanted = options.connection {
            chosen = withTraffic.filter { $0.key.description == wanted || $0.key.description == "hci0/" + wanted }
            guard !chosen.isEmpty else {
                let known = withTraffic.map(\.key.description).joined(separator: ", ")
                throw .nothingToReplay(capture, "no connection \(wanted) with ATT traffic; it has: \(known.isEmpty ? "none" : known)")
            }
        } else if let peer = options.peer?.uppercased() {
            chosen = withTraffic.filter { $0.peer?.uppercased() == peer }
            guard !chosen.isEmpty else {
                let known = Set(withTraffic.compactMap(\.peer)).sorted().joined(separator: ", ")
                throw .nothingToReplay(capture, "no connection to \(peer) with ATT traffic; peers: \(known.isEmpty ? "none known" : known)")
            }
        } else {
            guard let first = withTraffic.first else {
                throw .nothingToReplay(capture, "no ATT traffic between a central and a device: nothing to replay")
            }
            chosen = first.peer.map { p in withTraffic.filter { $0.peer == p } } ?? [first]
        }
        for b in chosen { b.finishDiscovery(table: gatt.table(for: b.key)?.0) }
        // A connection's session (and its table) may be gone once it ended; the table kept per
        // device (by address, else by connection) stays.
        let kept = gatt.deviceTables.filter { $0.source == .discovered }
        chosenTable = chosen.lazy.compactMap { gatt.table(for: $0.key).flatMap { $0.1 == .discovered ? $0.0 : nil } }.first
            ?? chosen.lazy.compactMap { b in kept.first { $0.device == b.peer || $0.device == b.key.description }?.table }.first
        let start = chosen.map(\.firstTime).min() ?? 0
        var steps: [ReplayStep] = []
        for b in chosen.sorted(by: { $0.firstTime < $1.firstTime }) {
            for var s in b.steps {
                s.at -= start
                steps.append(s)
            }
        }
        ConnectionSteps.setTimeouts(&steps)
        let device = Self.deviceKind(steps, protocols: options.protocols)
        var script = SessionScript(source: .init(capture: capture, peer: chosen.first?.peer, connections: chosen.map(\.key.description), start: start),
                                   device: device, redacted: !options.revealSecrets, steps: steps)
        for type in options.protocols.replaySessions {
            let names = chosen.reduce(into: [String: String]()) { $0.merge($1.discoveredNames[type.scriptKey] ?? [:]) { a, _ in a } }
            type.annotate(&script, discovered: names, options: options)
        }
        return script
    }

    /// The device protocol the steps speak, by the characteristics they use: the short name of
    /// the first registered protocol that owns one of them.
    static func deviceKind(_ steps: [ReplayStep], protocols: ProtocolSet) -> String? {
        let used = Set(steps.compactMap { $0.characteristic.flatMap(BluetoothUUID.init(string:)) })
        return protocols.types.first { !$0.shortName.isEmpty && !used.isDisjoint(with: $0.characteristics) }?.shortName
    }
}

/// The steps of one connection as they are built.
final class ConnectionSteps {
    let key: ConnectionKey
    let firstTime: Int64
    var role: Role = .unknown
    var peer: String?
    var phoneHungUp = false
    /// The protocol sessions of the extraction (`ReplaySessionDriving`), and what this
    /// connection's discovery told each, by its script key.
    private let sessions: [any ReplaySessionDriving.Type]
    private(set) var discoveredNames: [String: [String: String]] = [:]
    private(set) var steps: [ReplayStep] = []
    private var connected = false
    /// The step waiting for the peripheral's answer.
    private var pending: Int?
    private var discoverStep: Int?
    private var openLongWrite: Int?
    /// Prepare Writes of the open long write the device queued (answered with a Prepare Write
    /// Response): at a Prepare Queue Full, the recorded device's queue size.
    private var queuedParts = 0
    /// The parts the phone sent of the open long write, joined (at most 64 KiB): the value a
    /// refused long write tried, which no Execute Write joins.
    private var longParts: (handle: UInt16, info: HandleInfo?, value: [UInt8])?
    private var openRead: Int?
    private(set) var hasGATT = false

    /// The protocols that describe values and find credentials in them.
    let protocols: ProtocolSet

    init(key: ConnectionKey, firstTime: Int64, protocols: ProtocolSet) {
        self.key = key
        self.firstTime = firstTime
        self.protocols = protocols
        sessions = protocols.replaySessions
    }

    func connect(at time: Int64) {
        guard !connected else { return }
        connected = true
        pending = nil
        discoverStep = nil
        steps.append(ReplayStep(.connect, at: time))
    }

    func end(reason: HCIStatus, at time: Int64) {
        guard connected else { return }
        connected = false
        // 0x16: the local host (the phone) ended it.
        if phoneHungUp || reason.rawValue == 0x16 {
            steps.append(ReplayStep(.disconnect, at: time))
        } else {
            var s = ReplayStep(.linkLost, at: time)
            var e = ReplayStep.Expectation()
            e.reason = "0x" + Hex.string([reason.rawValue]) + " " + reason.name
            s.expect = e
            steps.append(s)
        }
        phoneHungUp = false
        pending = nil
    }

    func encrypted(at time: Int64) {
        if steps.last?.action == .encrypt { return }
        steps.append(ReplayStep(.encrypt, at: time))
    }

    func mtuAgreed(_ mtu: Int) {
        guard let i = steps.lastIndex(where: { $0.action == .exchangeMTU }) else { return }
        steps[i].expect = steps[i].expect ?? .init()
        steps[i].expect?.result = "ok"
        steps[i].expect?.mtu = UInt16(clamping: mtu)
    }

    /// Whether a PDU in this direction comes from the central (the phone in a phone's log).
    private func fromCentral(_ d: PacketDirection) -> Bool {
        switch d {
        case .sent: role != .peripheral
        case .received: role == .peripheral
        case .centralToPeripheral: true
        case .peripheralToCentral, .unknown: false
        }
    }

    func att(_ e: ATTEvent, at time: Int64, table: AttributeTable?, reveal: Bool) {
        guard let pdu = e.pdu else { return }
        if !connected { connect(at: time) }
        hasGATT = true
        if fromCentral(e.direction) {
            central(pdu, e, at: time, table: table, reveal: reveal)
        } else {
            peripheral(pdu, e, at: time, table: table, reveal: reveal)
        }
    }

    /// Names `handle` on the step: characteristic (and descriptor) by UUID, else the handle.
    private func name(_ s: inout ReplayStep, _ handle: UInt16, _ info: HandleInfo?) {
        guard let info else {
            s.handle = handle
            return
        }
        switch info.role {
        case .value:
            s.characteristic = info.uuid.canonicalString
        case .descriptor:
            if let c = info.characteristic {
                s.characteristic = c.canonicalString
                s.descriptor = info.uuid.canonicalString
            } else {
                s.handle = handle
            }
        default:
            s.handle = handle
        }
    }

    private func append(_ s: ReplayStep, waiting: Bool, table: AttributeTable?) {
        if let d = discoverStep, steps[d].expect == nil, let table { expectDiscovered(d, table) }
        steps.append(s)
        pending = waiting ? steps.count - 1 : nil
    }

    private func central(_ pdu: ATTPDU, _ e: ATTEvent, at time: Int64, table: AttributeTable?, reveal: Bool) {
        switch pdu {
        case .exchangeMTURequest(let mtu):
            var s = ReplayStep(.exchangeMTU, at: time)
            s.mtu = mtu
            append(s, waiting: true, table: table)
        case .readByGroupTypeRequest, .findInformationRequest, .findByTypeValueRequest:
            discovery(at: time)
        case .readByTypeRequest(_, _, let type) where type.uuid16 == 0x2803 || type.uuid16 == 0x2802:
            discovery(at: time)
        case .readRequest where e.info?.uuid.uuid16 == 0x2901 && e.info?.role == .descriptor:
            // The app reads user descriptions to find endpoints by name (ESP-IDF): part of discovery.
            if discoverStep == nil { discovery(at: time) }
            if let d = discoverStep { steps[d].readsDescriptions = true }
            pending = nil
        case .readRequest(let handle):
            var s = ReplayStep(.read, at: time)
            name(&s, handle, e.info)
            append(s, waiting: true, table: table)
            openRead = steps.count - 1
        case .readBlobRequest(let handle, let offset):
            var s = ReplayStep(.read, at: time)
            name(&s, handle, e.info)
            if let open = openRead, open == steps.count - 1, steps[open].characteristic == s.characteristic,
               steps[open].descriptor == s.descriptor, steps[open].handle == s.handle {
                // Continues the open read; its joined value arrives as a long read.
                pending = openRead
            } else {
                // Part of a value read on its own (a fuzzing reproducer's Read Blob at an
                // offset, a firmware bug past a value's end): a step that reads that part.
                s.offset = offset
                append(s, waiting: true, table: table)
                openRead = nil
            }
        case .writeRequest(let handle, let value) where e.info?.uuid.uuid16 == 0x2902 && e.info?.role == .descriptor:
            var s = ReplayStep(.subscribe, at: time)
            name(&s, handle, e.info)
            s.descriptor = nil
            s.value = Hex.string(value)
            s.meaning = value.first.map { $0 & 0x02 != 0 ? "indications" : $0 & 0x01 != 0 ? "notifications" : "off" } ?? "off"
            append(s, waiting: true, table: table)
        case .writeRequest(let handle, let value), .writeCommand(let handle, let value):
            var s = ReplayStep(.write, at: time)
            name(&s, handle, e.info)
            s.method = if case .writeCommand = pdu { .command } else { .request }
            setValue(&s, value, info: e.info, handle: handle, table: table, reveal: reveal)
            append(s, waiting: s.method == .request, table: table)
        case .prepareWriteRequest(let handle, _, let part):
            if let open = openLongWrite, steps[open].handle == nil || steps[open].handle == handle {
                pending = open
                if var parts = longParts, parts.value.count + part.count <= 65_536 {
                    parts.value += part
                    longParts = parts
                }
                return
            }
            var s = ReplayStep(.write, at: time)
            name(&s, handle, e.info)
            s.method = .long
            append(s, waiting: true, table: table)
            openLongWrite = steps.count - 1
            queuedParts = 0
            longParts = (handle, e.info, part)
        case .executeWriteRequest(let flags):
            if let open = openLongWrite {
                pending = open
                if flags == 0 { steps[open].meaning = "cancelled by the phone (Execute Write, flags 0)" }
            }
            openLongWrite = flags == 0 ? nil : openLongWrite
        case .handleValueConfirmation:
            break
        default:
            // Responses the phone's own GATT server gave are not part of the central's script.
            guard let op = ATTOpcode(rawValue: pdu.opcode), op.isRequest || op.isCommand else { return }
            var s = ReplayStep(.pdu, at: time)
            s.value = Hex.string(pdu.encode())
            s.meaning = op.name
            append(s, waiting: op.isRequest, table: table)
        }
    }

    private func discovery(at time: Int64) {
        if let d = discoverStep, d == steps.count - 1 {
            pending = d
            return
        }
        steps.append(ReplayStep(.discover, at: time))
        discoverStep = steps.count - 1
        pending = discoverStep
    }

    /// What discovery found, as the runner will check it: taken when the next step starts, so a
    /// table swept with its connection at the end is not needed.
    private func expectDiscovered(_ d: Int, _ table: AttributeTable) {
        var e = ReplayStep.Expectation()
        e.result = "ok"
        e.characteristics = Set(table.characteristics.values.map(\.uuid.canonicalString)).sorted()
        steps[d].expect = e
        for type in sessions { discoveredNames[type.scriptKey] = type.discoveredNames(table) }
    }

    /// At the end: a discovery that was the connection's last step.
    func finishDiscovery(table: AttributeTable?) {
        if let d = discoverStep, steps[d].expect == nil, let table { expectDiscovered(d, table) }
    }

    private func setValue(_ s: inout ReplayStep, _ value: [UInt8], info: HandleInfo?, handle: UInt16, table: AttributeTable?, reveal: Bool) {
        let (shown, field) = credentials(value, info: info, handle: handle, table: table, reveal: reveal)
        s.value = Hex.string(shown)
        s.credentials = field
        s.meaning = ValueMeaning.describe(shown, characteristic: info?.role == .value ? info?.uuid : nil, written: true, protocols: protocols)
    }

    private func credentials(_ value: [UInt8], info: HandleInfo?, handle: UInt16, table: AttributeTable?,
                             reveal: Bool) -> ([UInt8], ReplayStep.CredentialField?) {
        guard let info, info.role == .value,
              let c = protocols.credentials(in: value, characteristic: info.uuid, endpoint: table?.userDescriptions[handle]) else {
            return (value, nil)
        }
        let redact = !reveal && !c.secret.isEmpty
        let field = ReplayStep.CredentialField(format: c.format, fields: c.fields,
                                               ssid: c.ssid.map { String(decoding: $0, as: UTF8.self) }, redacted: redact)
        return (redact ? c.redacting(value) : value, field)
    }

    private func peripheral(_ pdu: ATTPDU, _ e: ATTEvent, at time: Int64, table: AttributeTable?, reveal: Bool) {
        switch pdu {
        case .handleValueNotification(let handle, let value), .handleValueIndication(let handle, let value):
            var s = ReplayStep(.notification, at: time)
            name(&s, handle, e.info)
            if case .handleValueIndication = pdu { s.indication = true }
            var x = ReplayStep.Expectation()
            let (shown, _) = credentials(value, info: e.info, handle: handle, table: table, reveal: reveal)
            x.value = Hex.string(shown)
            x.meaning = ValueMeaning.describe(shown, characteristic: e.info?.role == .value ? e.info?.uuid : nil, written: false, protocols: protocols)
            s.expect = x
            if let d = discoverStep, steps[d].expect == nil, let table { expectDiscovered(d, table) }
            steps.append(s)
        case .errorResponse(_, _, let code):
            guard let p = pending, steps[p].action != .discover else { return }  // Attribute Not Found ends each discovery round
            steps[p].expect = steps[p].expect ?? .init()
            steps[p].expect?.result = "error"
            steps[p].expect?.error = "0x" + Hex.string([code.rawValue])
            steps[p].expect?.meaning = code.name
            // A clone answers a recorded PDU as the device did: the answer's bytes (kept only with secrets revealed).
            if steps[p].action == .pdu, reveal { steps[p].expect?.value = Hex.string(pdu.encode()) }
            if steps[p].action == .write, steps[p].method == .long {
                if code == .prepareQueueFull {
                    steps[p].expect?.queued = queuedParts
                    // The value as far as the phone sent it: a replay sends as many parts.
                    if steps[p].value == nil, let parts = longParts {
                        setValue(&steps[p], parts.value, info: parts.info, handle: parts.handle, table: table, reveal: reveal)
                    }
                }
                return  // the cancelling Execute Write follows
            }
            pending = nil
        case .readResponse(let value), .readBlobResponse(let value):
            guard let p = pending, steps[p].action == .read else { return }
            if case .readResponse = pdu { setRead(p, value, table: table, reveal: reveal) }
            if steps[p].offset != nil { setRead(p, value, table: table, reveal: reveal) }
        case .exchangeMTUResponse, .writeResponse, .executeWriteResponse:
            guard let p = pending else { return }
            if steps[p].expect?.result == nil {
                steps[p].expect = steps[p].expect ?? .init()
                steps[p].expect?.result = "ok"
            }
            if case .executeWriteResponse = pdu { openLongWrite = nil }
            pending = nil
        case .prepareWriteResponse:
            if let p = pending, steps[p].action == .write, steps[p].method == .long { queuedParts += 1 }
        default:
            guard let p = pending, steps[p].action == .pdu || steps[p].action == .discover else { return }
            // The device's own requests (its Exchange MTU Request) answer nothing of the phone's.
            guard ATTOpcode(rawValue: pdu.opcode)?.kind == .response else { return }
            if steps[p].action == .pdu {
                steps[p].expect = steps[p].expect ?? .init()
                steps[p].expect?.result = "ok"
                steps[p].expect?.opcode = "0x" + Hex.string([pdu.opcode])
                if reveal { steps[p].expect?.value = Hex.string(pdu.encode()) }
                pending = nil
            }
        }
    }

    private func setRead(_ p: Int, _ value: [UInt8], table: AttributeTable?, reveal: Bool) {
        let uuid = steps[p].descriptor == nil ? steps[p].characteristic.flatMap(BluetoothUUID.init(string:)) : nil
        setReadValue(p, value, uuid: uuid, endpoint: nil, reveal: reveal)
    }

    func longReadJoined(handle: UInt16, info: HandleInfo?, value: [UInt8], table: AttributeTable?, reveal: Bool) {
        guard let i = steps.lastIndex(where: { $0.action == .read }), steps[i].offset == nil else { return }
        let uuid = info?.role == .value ? info?.uuid : nil
        setReadValue(i, value, uuid: uuid, endpoint: table?.userDescriptions[handle], reveal: reveal)
    }

    /// A read's expected value, its secrets overwritten unless revealed (a firmware that hands the
    /// password back must not put it in the script).
    private func setReadValue(_ i: Int, _ value: [UInt8], uuid: BluetoothUUID?, endpoint: String?, reveal: Bool) {
        var x = steps[i].expect ?? .init()
        x.result = "ok"
        var shown = value
        if !reveal, let uuid {
            shown = protocols.redactingCredentials(value, characteristic: uuid, endpoint: endpoint)
        }
        x.value = Hex.string(shown)
        x.meaning = ValueMeaning.describe(shown, characteristic: uuid, written: false, protocols: protocols)
        steps[i].expect = x
    }

    func longWriteJoined(handle: UInt16, info: HandleInfo?, value: [UInt8], table: AttributeTable?, reveal: Bool) {
        guard let i = steps.lastIndex(where: { $0.action == .write && $0.method == .long }) else { return }
        setValue(&steps[i], value, info: info, handle: handle, table: table, reveal: reveal)
    }

    /// How long the runner waits for each notification and link loss: twice the recorded wait,
    /// and at least 5 s, so a slower device passes and a silent one ends the step.
    static func setTimeouts(_ steps: inout [ReplayStep]) {
        var previous: Int64 = 0
        for i in steps.indices {
            if steps[i].action == .notification || steps[i].action == .linkLost {
                steps[i].timeout = max(5_000_000, 2 * min(300_000_000, steps[i].at - previous))
            }
            previous = steps[i].at
        }
    }
}
