import ATT
import Capture
import GATT
import HCI
import Profiles

/// Renders pipeline events as text lines or JSON Lines: what `gattlab decode` and
/// `gattlab capture --live` print.
public final class EventRenderer {
    let out: BufferedOutput
    let json: Bool
    let style: Style
    let reveal: Bool
    let absoluteTime: Bool
    /// Set when several files are decoded at once: each line names its file.
    let file: String?
    /// The protocols asked which values are secret.
    let protocols: ProtocolSet
    public var connectionFilter: [ConnectionFilter] = []
    public var handleFilter: [UInt16] = []
    public var uuidFilter: [UUIDFilter] = []
    public var attOnly = false
    /// Lines written: with filters, none means the filters matched nothing.
    public private(set) var written = 0
    private var firstTime: Int64?
    private var announcedTables: Set<ConnectionKey> = []

    public init(out: BufferedOutput, json: Bool, style: Style, reveal: Bool, absoluteTime: Bool, file: String?, protocols: ProtocolSet) {
        self.out = out
        self.json = json
        self.style = style
        self.reveal = reveal
        self.absoluteTime = absoluteTime
        self.file = file
        self.protocols = protocols
    }

    /// The decoder of the events being rendered, for table lookups (endpoint names). Strong (it
    /// holds no renderer): a weak reference cost a weak-reference store per record.
    private var decoder: GATTDecoder?

    /// Every record, with events or not: times are relative to the file's first record (as in
    /// timelines and tshark's frame.time_relative), not to the first one that printed a line.
    @inline(__always)
    public func see(_ record: CaptureRecord) {
        if firstTime == nil { firstTime = record.timestamp }
    }

    public func render(_ events: [GATTEvent], record: CaptureRecord, decoder: GATTDecoder) {
        // The same decoder for a whole file: not stored again per record.
        if self.decoder !== decoder { self.decoder = decoder }
        see(record)
        // By index: `for event in events` copied each event (and retained all it holds).
        for i in events.indices {
            switch events[i] {
            case .att(let e):
                guard passes(e.connection), passes(handle: e.handle, info: e.info) else { continue }
                // Looked up once per PDU, for the announcement and the line.
                let found = decoder.table(for: e.connection)
                if !json, !announcedTables.contains(e.connection) {
                    announceTable(e, record, found)
                }
                json ? jsonATT(e, record, found?.0) : textATT(e, record, found?.0)
            case .operation(let op):
                guard !attOnly else { continue }
                operation(op, record)
            case .link(let l):
                guard !attOnly else { continue }
                linkEvent(l, record)
            }
        }
    }

    /// Says once per connection where handle names come from, when they do not come from
    /// discovery: a --gatt-table or --profile, or nothing (so the user knows to supply one).
    private func announceTable(_ e: ATTEvent, _ record: CaptureRecord, _ found: (AttributeTable, TableSource)?) {
        guard let (table, source) = found, source != .discovered else { return }
        if case .none = source {
            // Only a PDU that uses a characteristic shows the lack of a table; discovery requests carry handles too.
            guard let pdu = e.pdu, pdu.value != nil || pdu.opcode == 0x0A || pdu.opcode == 0x0C,
                  e.handle != nil, e.info == nil, table.isEmpty else { return }
        }
        announcedTables.insert(e.connection)
        line(record, e.connection, style.dim("GATT table: \(source)"))
    }

    // MARK: Filters

    func passesConnection(_ key: ConnectionKey?) -> Bool { passes(key) }

    private func passes(_ key: ConnectionKey?) -> Bool {
        guard !connectionFilter.isEmpty else { return true }
        guard let key else { return false }
        return connectionFilter.contains { $0.matches(key) }
    }

    private func passes(handle: UInt16?, info: HandleInfo?) -> Bool {
        if !handleFilter.isEmpty {
            guard let handle, handleFilter.contains(handle) else { return false }
        }
        if !uuidFilter.isEmpty {
            guard let info else { return false }
            return uuidFilter.contains { $0.matches(info.uuid) || $0.matches(info.characteristic) }
        }
        return true
    }

    /// Link lines only make sense unfiltered by handle or UUID.
    private var linkLinesWanted: Bool { handleFilter.isEmpty && uuidFilter.isEmpty }

    // MARK: Text

    private func line(_ record: CaptureRecord, _ key: ConnectionKey?, _ body: String, arrow: String = " ") {
        beginLine(record, key, arrow: arrow)
        out.append(body)
        endLine()
    }

    /// Writes a text line's start into the output: `[file: ]frame  time  connection  arrow  `,
    /// the frame right-aligned in 7, the connection padded to 8 and the arrow to 4 (at least one
    /// space after each). The caller writes the body, then `endLine()`. Written in place rather
    /// than built as a String: decode writes a million of these.
    func beginLine(_ record: CaptureRecord, _ key: ConnectionKey?, arrow: String = " ") {
        if let file { out.append(file); out.append(": " as StaticString) }
        out.int(record.number, width: 7)
        out.append("  " as StaticString)
        if absoluteTime {
            out.append(TimeFormat.iso8601(record.timestamp))
        } else {
            // TimeFormat.relative's text.
            let t = record.timestamp
            out.seconds(t &- (firstTime ?? t))
        }
        out.append("  " as StaticString)
        let connection = out.mark
        if let key { out.connection(key) } else { out.byte(UInt8(ascii: "-")) }
        out.pad(from: connection, width: 8, minimum: 1)
        out.byte(0x20)
        let a = out.mark
        out.append(arrow)
        out.pad(from: a, width: 4, minimum: 1)
    }

    func endLine() {
        out.endLine()
        written += 1
    }

    private func textATT(_ e: ATTEvent, _ record: CaptureRecord, _ table: AttributeTable?) {
        beginLine(record, e.connection, arrow: e.direction.arrow)
        style.open(Style.boldCode, out)
        out.append(ATTOpcode.name(for: e.opcode))
        style.close(out)
        if let reason = e.malformed {
            out.append(" " + style.red("[malformed: \(reason)]"))
        } else {
            // "  " and the detail, unless there is none.
            let before = out.mark
            out.append("  " as StaticString)
            PDUDetails.write(e, table: table, reveal: reveal, protocols: protocols, labels: labels, into: out)
            if out.mark == before + 2 { out.truncate(to: before) }
        }
        endLine()
    }

    /// Handle labels of the tables, built once per attribute.
    private let labels = AttributeLabels()

    private func operation(_ op: GATTOperation, _ record: CaptureRecord) {
        switch op {
        case .mtuExchanged(let key, let client, let server, let mtu):
            guard passes(key), linkLinesWanted else { return }
            if json {
                jsonLine(record, type: "gatt", key) { self.field("operation", "mtu"); self.field("clientMTU", Int(client)); self.field("serverMTU", Int(server)); self.field("mtu", mtu) }
            } else {
                line(record, key, style.cyan("GATT MTU \(mtu)") + " (client \(client), server \(server))")
            }
        case .longWrite(let key, let h, let info, let value, let first, let parts, _), .longRead(let key, let h, let info, let value, let first, let parts, _):
            guard passes(key), passes(handle: h, info: info) else { return }
            let isWrite = if case .longWrite = op { true } else { false }
            let secret = PDUDetails.isSecret(info, protocols: protocols, name: decoder?.table(for: key)?.0.userDescriptions[h], value: value)
            if json {
                jsonLine(record, type: "gatt", key) {
                    self.field("operation", isWrite ? "long-write" : "long-read")
                    self.field("handle", Int(h))
                    if let info { self.field("uuid", info.uuid.description); if let n = KnownUUIDs.name(info.uuid) { self.field("name", n) } }
                    self.valueField(value, secret: secret)
                    self.field("length", value.count)
                    self.field("parts", parts)
                    self.field("firstFrame", first)
                }
            } else {
                let label = info.map { KnownUUIDs.name($0.uuid) ?? $0.uuid.description }.map { " " + $0 } ?? ""
                line(record, key, style.cyan("GATT \(isWrite ? "long write" : "long read")") +
                     " \(PDUDetails.handle(h))\(label), \(value.count) bytes in \(parts) parts from frame \(first)  " +
                     PDUDetails.value(value, secret: secret, reveal: reveal))
            }
        case .longWriteCancelled(let key, let parts):
            guard passes(key), linkLinesWanted else { return }
            json ? jsonLine(record, type: "gatt", key) { self.field("operation", "long-write-cancelled"); self.field("parts", parts) }
                : line(record, key, style.cyan("GATT long write cancelled") + " (\(parts) prepared parts dropped)")
        case .subscription(let key, let cccd, let characteristic, let notify, let indicate):
            guard passes(key), passes(handle: cccd, info: nil) || uuidFilter.contains(where: { $0.matches(characteristic) }) else { return }
            let what = notify && indicate ? "notifications+indications" : notify ? "notifications" : indicate ? "indications" : "off"
            if json {
                jsonLine(record, type: "gatt", key) {
                    self.field("operation", "subscribe")
                    self.field("handle", Int(cccd))
                    if let characteristic { self.field("characteristic", characteristic.description) }
                    self.field("notify", notify)
                    self.field("indicate", indicate)
                }
            } else {
                let name = characteristic.map { KnownUUIDs.name($0) ?? $0.description } ?? "unknown characteristic"
                line(record, key, style.cyan("GATT subscribe") + " \(name) via CCCD \(PDUDetails.handle(cccd)): \(what)")
            }
        case .tableUpdated:
            break
        }
    }

    private func linkEvent(_ l: LinkEvent, _ record: CaptureRecord) {
        guard linkLinesWanted else { return }
        if case .advertising(let r) = l {
            guard connectionFilter.isEmpty else { return }
            if json {
                jsonAdvertising(r, record)
            } else {
                beginLine(record, nil, arrow: " ")
                style.open(Style.dimCode, out)
                AdvertisingText.write(r, to: out)
                style.close(out)
                endLine()
            }
            return
        }
        let (key, kind, text, extra) = LinkEventText.describe(l, reveal: reveal)
        guard let kind, passes(key) || (key == nil && connectionFilter.isEmpty) else { return }
        if json {
            let type = kind == "smp" ? "smp" : kind == "malformed" ? "malformed" : kind == "note" ? "note" : "link"
            jsonLine(record, type: type, key) {
                self.field("event", text.event)
                for (k, v) in extra {
                    switch v {
                    case let i as Int: self.field(key: k, i)
                    case let b as Bool: self.field(key: k, b)
                    default: self.field(key: k, "\(v)")
                    }
                }
            }
        } else {
            let body = kind == "malformed" ? style.red(text.line) : kind == "smp" ? style.yellow(text.line) : style.green(text.line)
            line(record, key, body, arrow: text.arrow)
        }
    }

    // MARK: JSON Lines

    /// UUID text and name, remembered for the few UUIDs a capture's PDUs use.
    private func uuidStrings(_ uuid: BluetoothUUID) -> (String, String?) { labels.uuid(uuid) }

    private var firstField = true

    private func jsonLine(_ record: CaptureRecord, type: String, _ key: ConnectionKey?, _ body: () -> Void) {
        out.write("{\"type\":\"")
        out.write(type)
        out.write("\",\"frame\":")
        out.int(record.number)
        out.write(",\"time\":")
        out.int(Int(record.timestamp))
        // Seconds since the file's first record, as text output and tshark's frame.time_relative.
        out.write(",\"relativeTime\":")
        out.seconds(record.timestamp &- (firstTime ?? record.timestamp))
        if let file { out.write(",\"file\":"); out.jsonString(file) }
        if let key {
            out.write(",\"connection\":")
            out.int(Int(key.id))
            if !key.isLinkLayer { out.write(",\"controller\":"); out.int(Int(key.controller)) }
        }
        firstField = false
        body()
        out.write("}\n")
        written += 1
    }

    /// Fields of a `protocol` line, for the protocol renderer.
    struct JSONFields {
        let renderer: EventRenderer
        func string(_ k: String, _ v: String) { renderer.field(key: k, v) }
        func int(_ k: String, _ v: Int) { renderer.field(key: k, v) }
        func bool(_ k: String, _ v: Bool) { renderer.field(key: k, v) }
        /// A value that is already JSON.
        func raw(_ k: String, _ json: String) {
            renderer.out.write(",\""); renderer.out.write(k); renderer.out.write("\":"); renderer.out.write(json)
        }
    }

    func jsonLineForProfile(_ record: CaptureRecord, _ key: ConnectionKey, _ body: (JSONFields) -> Void) {
        jsonLine(record, type: "protocol", key) { body(JSONFields(renderer: self)) }
    }

    // Fields named by literals (nearly all) write their key in one piece; `key:` takes any name.

    fileprivate func field(_ name: StaticString, _ v: Int) {
        out.key(name); out.int(v)
    }

    fileprivate func field(_ name: StaticString, _ v: String) {
        out.key(name); out.jsonString(v)
    }

    fileprivate func field(_ name: StaticString, _ v: Bool) {
        out.key(name); out.append(v ? "true" as StaticString : "false")
    }

    fileprivate func field(key name: String, _ v: Int) {
        out.write(",\""); out.write(name); out.write("\":"); out.int(v)
    }

    fileprivate func field(key name: String, _ v: String) {
        out.write(",\""); out.write(name); out.write("\":"); out.jsonString(v)
    }

    fileprivate func field(key name: String, _ v: Bool) {
        out.write(",\""); out.write(name); out.write(v ? "\":true" : "\":false")
    }

    /// An address as `BDAddr.description` writes it, quoted (it needs no escapes).
    private func addressField(_ name: StaticString, _ a: BDAddr) {
        out.key(name)
        out.byte(UInt8(ascii: "\""))
        out.address(a)
        out.byte(UInt8(ascii: "\""))
    }

    private func valueField(_ v: [UInt8], secret: Bool, name: String = "value") {
        out.write(",\""); out.write(name); out.write("\":\"")
        if secret && !reveal { out.write("<redacted:\(v.count) bytes>") } else { out.hex(v) }
        out.write("\"")
    }

    /// One `adv` object: the report and its AD structures.
    private func jsonAdvertising(_ r: AdvertisingReport, _ record: CaptureRecord) {
        jsonLine(record, type: "adv", nil) {
            self.field("source", r.origin.rawValue)
            if let a = r.address { self.addressField("address", a) }
            if let t = r.addressType { self.field("addressType", t.description) }
            self.field("eventType", r.eventName)
            self.field("eventTypeCode", Int(r.eventType))
            self.field("connectable", r.connectable)
            self.field("scannable", r.scannable)
            self.field("directed", r.directed)
            self.field("scanResponse", r.scanResponse)
            self.field("legacy", r.legacy)
            if let s = r.dataStatus { self.field("dataStatus", s) }
            if let n = r.fragments { self.field("fragments", n) }
            if let v = r.rssi { self.field("rssi", Int(v)) }
            if let p = r.primaryPHY { self.field("phy", p.description) }
            if let p = r.secondaryPHY { self.field("secondaryPhy", p.description) }
            if let c = r.channel { self.field("channel", Int(c)) }
            if let t = r.txPower { self.field("txPower", Int(t)) }
            if let s = r.sid { self.field("sid", Int(s)) }
            if let a = r.targetAddress { self.addressField("targetAddress", a) }
            if let t = r.targetAddressType { self.field("targetAddressType", t.description) }
            self.out.write(",\"ad\":[")
            for (i, s) in r.data.structures.enumerated() {
                if i > 0 { self.out.byte(0x2C) }
                self.out.write("{\"type\":")
                self.out.jsonString(ADStructure.typeName(s.type))
                self.out.write(",\"code\":")
                self.out.int(Int(s.type))
                switch s {
                case .flags(let f):
                    self.field("value", Int(f))
                    self.out.write(",\"flags\":[")
                    AdvertisingText.writeFlagNames(f, quoted: true, to: self.out)
                    self.out.write("]")
                case .localName(let n, _):
                    self.field("name", n)
                case .serviceUUIDs(let us, _):
                    self.out.write(",\"uuids\":[")
                    for (j, u) in us.enumerated() {
                        if j > 0 { self.out.byte(0x2C) }
                        self.out.jsonString(u.description)
                    }
                    self.out.write("]")
                    let names = us.compactMap { KnownUUIDs.name($0) }
                    if !names.isEmpty {
                        self.out.write(",\"names\":[")
                        for (j, n) in names.enumerated() {
                            if j > 0 { self.out.byte(0x2C) }
                            self.out.jsonString(n)
                        }
                        self.out.write("]")
                    }
                case .serviceData(let u, let data):
                    self.field("uuid", u.description)
                    if let n = KnownUUIDs.name(u) { self.field("name", n) }
                    self.valueField(data, secret: false, name: "data")
                case .manufacturerData(let company, let data):
                    self.field("company", Int(company))
                    if let n = AdvertisingNames.company(company) { self.field("companyName", n) }
                    self.valueField(data, secret: false, name: "data")
                case .txPowerLevel(let p):
                    self.field("dBm", Int(p))
                case .appearance(let a):
                    self.field("value", Int(a))
                    if let n = AdvertisingNames.appearance(a) { self.field("appearanceName", n) }
                case .other(_, let data):
                    self.valueField(data, secret: false, name: "data")
                }
                self.out.write("}")
            }
            self.out.write("]")
            if let p = r.problem { self.field("problem", p) }
        }
    }

    private func jsonATT(_ e: ATTEvent, _ record: CaptureRecord, _ table: AttributeTable?) {
        jsonLine(record, type: "att", e.connection) {
            self.field("direction", e.direction.description)
            self.field("cid", Int(e.cid))
            self.field("opcode", Int(e.opcode))
            self.field("opcodeName", ATTOpcode.name(for: e.opcode))
            self.field("mtu", e.mtu)
            if let h = e.handle { self.field("handle", Int(h)) }
            if let info = e.info {
                let (uuid, name) = self.uuidStrings(info.uuid)
                self.field("uuid", uuid)
                if let name { self.field("name", name) }
                if info.role != .value { self.field("role", info.role.rawValue) }
            }
            if let reason = e.malformed {
                self.field("malformed", reason)
                return
            }
            guard let pdu = e.pdu else { return }
            let secret = PDUDetails.isSecret(e, table: table, protocols: self.protocols)
            switch pdu {
            case .errorResponse(let op, _, let error):
                self.field("requestOpcode", Int(op))
                self.field("requestOpcodeName", ATTOpcode.name(for: op))
                self.field("error", Int(error.rawValue))
                self.field("errorName", error.name)
            case .exchangeMTURequest(let m), .exchangeMTUResponse(let m):
                self.field("rxMTU", Int(m))
            case .readBlobRequest(_, let off):
                self.field("offset", Int(off))
            case .prepareWriteRequest(_, let off, let v), .prepareWriteResponse(_, let off, let v):
                self.field("offset", Int(off))
                self.valueField(v, secret: secret)
            case .executeWriteRequest(let flags):
                self.field("flags", Int(flags))
            case .findInformationRequest(let s, let end):
                self.field("startHandle", Int(s)); self.field("endHandle", Int(end))
            case .readByGroupTypeRequest(let s, let end, let type), .readByTypeRequest(let s, let end, let type):
                self.field("startHandle", Int(s)); self.field("endHandle", Int(end)); self.field("attributeType", type.description)
            case .findByTypeValueRequest(let s, let end, let type, let v):
                self.field("startHandle", Int(s)); self.field("endHandle", Int(end))
                self.field("attributeType", BluetoothUUID(uuid16: type).description)
                self.valueField(v, secret: false)
            case .readMultipleRequest(let hs), .readMultipleVariableRequest(let hs):
                self.out.write(",\"handles\":[")
                for (i, h) in hs.enumerated() { if i > 0 { self.out.byte(0x2C) }; self.out.int(Int(h)) }
                self.out.write("]")
            case .findInformationResponse(_, let entries):
                self.out.write(",\"entries\":[")
                for (i, en) in entries.enumerated() {
                    if i > 0 { self.out.byte(0x2C) }
                    self.out.write("{\"handle\":"); self.out.int(Int(en.handle))
                    self.out.write(",\"uuid\":"); self.out.jsonString(en.uuid.description); self.out.write("}")
                }
                self.out.write("]")
            case .readByGroupTypeResponse(_, let entries):
                self.out.write(",\"entries\":[")
                for (i, en) in entries.enumerated() {
                    if i > 0 { self.out.byte(0x2C) }
                    self.out.write("{\"handle\":"); self.out.int(Int(en.handle))
                    self.out.write(",\"endHandle\":"); self.out.int(Int(en.endGroupHandle))
                    self.out.write(",\"value\":\""); self.out.hex(en.value); self.out.write("\"}")
                }
                self.out.write("]")
            case .readByTypeResponse(_, let entries), .multipleHandleValueNotification(let entries):
                self.out.write(",\"entries\":[")
                for (i, en) in entries.enumerated() {
                    if i > 0 { self.out.byte(0x2C) }
                    self.out.write("{\"handle\":"); self.out.int(Int(en.handle))
                    let s = PDUDetails.isSecret(table?.info(for: en.handle), protocols: self.protocols)
                    self.out.write(",\"value\":\"")
                    if s && !self.reveal { self.out.write("<redacted:\(en.value.count) bytes>") } else { self.out.hex(en.value) }
                    self.out.write("\"}")
                }
                self.out.write("]")
            case .findByTypeValueResponse(let entries):
                self.out.write(",\"entries\":[")
                for (i, en) in entries.enumerated() {
                    if i > 0 { self.out.byte(0x2C) }
                    self.out.write("{\"handle\":"); self.out.int(Int(en.foundHandle))
                    self.out.write(",\"endHandle\":"); self.out.int(Int(en.groupEndHandle)); self.out.write("}")
                }
                self.out.write("]")
            case .readMultipleVariableResponse(let values):
                self.out.write(",\"values\":[")
                for (i, v) in values.enumerated() { if i > 0 { self.out.byte(0x2C) }; self.out.write("\""); self.out.hex(v); self.out.write("\"") }
                self.out.write("]")
            case .signedWriteCommand(_, let v, let sig):
                self.valueField(v, secret: secret)
                self.valueField(sig, secret: false, name: "signature")
            case .unknown(_, let params):
                self.valueField(params, secret: false, name: "parameters")
            default:
                if let v = pdu.value { self.valueField(v, secret: secret) }
            }
        }
    }
}
