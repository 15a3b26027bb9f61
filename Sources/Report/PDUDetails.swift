import ATT
import Capture
import GATT
import HCI
import Profiles

/// How an ATT PDU's fields read, shared by the text and JSON renderers. Whether a value is
/// secret is asked of the protocols given (the CLI gives all of them), so Report names none.
public enum PDUDetails {
    public static func uuidName(_ u: BluetoothUUID) -> String {
        if let n = KnownUUIDs.name(u) { return "\(n) (\(u))" }
        return u.description
    }

    static func write(uuidName u: BluetoothUUID, labels: AttributeLabels?, into out: BufferedOutput) {
        let (text, name) = labels?.uuid(u) ?? (u.description, KnownUUIDs.name(u))
        if let name {
            out.append(name)
            out.append(" (" as StaticString)
            out.append(text)
            out.byte(UInt8(ascii: ")"))
        } else {
            out.append(text)
        }
    }

    public static func handle(_ h: UInt16) -> String { "0x" + String(h, radix: 16).leftPad(4) }

    @inline(__always)
    static func write(handle h: UInt16, into out: BufferedOutput) {
        out.append("0x" as StaticString)
        out.hex(UInt64(h), digits: 4)
    }

    /// Whether a value must be redacted: it belongs to a characteristic that carries secrets, or
    /// its protocol finds credentials in it (a firmware URL with a password or token).
    /// A part of a long write (`partial`) of such a value cannot be told safe alone: it is redacted.
    public static func isSecret(_ info: HandleInfo?, protocols: ProtocolSet, name: String? = nil, value: [UInt8]? = nil, partial: Bool = false) -> Bool {
        guard let info, info.role == .value else { return false }
        if protocols.isSecretBearing(info.uuid, endpointName: name) { return true }
        guard let value, let layout = protocols.credentials(in: value, characteristic: info.uuid, endpoint: name) else { return false }
        return partial || !layout.secret.isEmpty
    }

    /// Whether an ATT event's value must be redacted: by UUID, or by the endpoint name the table read.
    public static func isSecret(_ e: ATTEvent, table: AttributeTable?, protocols: ProtocolSet) -> Bool {
        let partial = switch e.pdu {
        case .prepareWriteRequest?, .prepareWriteResponse?, .readBlobResponse?: true
        default: false
        }
        return isSecret(e.info, protocols: protocols, name: e.handle.flatMap { table?.userDescriptions[$0] }, value: e.pdu?.value, partial: partial)
    }

    /// Printable ASCII of a value, others as '.'.
    public static func printable(_ v: [UInt8]) -> String {
        String(decoding: v.map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: ".") }, as: UTF8.self)
    }

    public static func value(_ v: [UInt8], secret: Bool, reveal: Bool) -> String {
        let out = BufferedOutput.collecting()
        write(value: v, secret: secret, reveal: reveal, into: out)
        return out.text
    }

    /// A value as hex (the first 64 bytes) and, when any byte is printable, as text.
    static func write(value v: [UInt8], secret: Bool, reveal: Bool, into out: BufferedOutput) {
        if secret && !reveal {
            out.append("<redacted:" as StaticString)
            out.int(v.count)
            out.append(" bytes>" as StaticString)
            return
        }
        if v.isEmpty { out.append("(empty)" as StaticString); return }
        v.withUnsafeBufferPointer { all in
            let shown = UnsafeBufferPointer(rebasing: all.prefix(64))
            out.hex(shown, separator: 0x20)
            if v.count > 64 {
                out.append(" …(" as StaticString)
                out.int(v.count)
                out.append(" bytes)" as StaticString)
            }
            if shown.contains(where: { $0 >= 0x20 && $0 < 0x7F }) {
                out.append("  \"" as StaticString)
                out.printable(shown)
                out.byte(UInt8(ascii: "\""))
            }
        }
    }

    /// One line of detail after the opcode name.
    public static func text(_ e: ATTEvent, table: AttributeTable?, reveal: Bool, protocols: ProtocolSet) -> String {
        let out = BufferedOutput.collecting()
        write(e, table: table, reveal: reveal, protocols: protocols, labels: nil, into: out)
        return out.text
    }

    /// `text`, written into `out`; `labels` remembers handle labels across lines.
    static func write(_ e: ATTEvent, table: AttributeTable?, reveal: Bool, protocols: ProtocolSet,
                      labels: AttributeLabels?, into out: BufferedOutput) {
        guard let pdu = e.pdu else { return }
        func handle(_ h: UInt16) { write(handle: h, into: out) }
        func uuidName(_ u: BluetoothUUID) { write(uuidName: u, labels: labels, into: out) }
        func value(_ v: [UInt8], secret: Bool) { write(value: v, secret: secret, reveal: reveal, into: out) }
        func target(_ h: UInt16) {
            handle(h)
            if let label = labels == nil ? table?.label(for: h) : labels?.label(table, h) {
                out.byte(0x20)
                out.append(label)
            }
        }
        func text(_ s: StaticString) { out.append(s) }
        /// Entries with a separator between them.
        func list<C: Collection>(_ c: C, _ separator: StaticString, _ each: (C.Element) -> Void) {
            var first = true
            for x in c {
                if !first { out.append(separator) }
                first = false
                each(x)
            }
        }
        let secret = isSecret(e, table: table, protocols: protocols)
        switch pdu {
        case .errorResponse(let op, let h, let error):
            out.append(ATTOpcode.name(for: op)); text(" on "); target(h); text(": ")
            out.append(error.name); text(" (0x"); out.hexByte(error.rawValue); text(")")
        case .exchangeMTURequest(let m): text("client MTU "); out.int(Int(m))
        case .exchangeMTUResponse(let m): text("server MTU "); out.int(Int(m))
        case .findInformationRequest(let s, let end), .readByGroupTypeRequest(let s, let end, _), .readByTypeRequest(let s, let end, _), .findByTypeValueRequest(let s, let end, _, _):
            handle(s); text(".."); handle(end)
            switch pdu {
            case .readByGroupTypeRequest(_, _, let type), .readByTypeRequest(_, _, let type): text(" type "); uuidName(type)
            case .findByTypeValueRequest(_, _, let type, let v):
                text(" type "); uuidName(BluetoothUUID(uuid16: type)); text(" value "); out.hex(v)
            default: break
            }
        case .findInformationResponse(_, let entries):
            list(entries, ", ") { handle($0.handle); text(" "); uuidName($0.uuid) }
        case .findByTypeValueResponse(let entries):
            list(entries, ", ") { handle($0.foundHandle); text("-"); handle($0.groupEndHandle) }
        case .readByGroupTypeResponse(_, let entries):
            list(entries, ", ") { e in
                handle(e.handle); text("-"); handle(e.endGroupHandle); text(" ")
                if let u = BluetoothUUID(littleEndianBytes: e.value) { uuidName(u) } else { out.hex(e.value) }
            }
        case .readByTypeResponse(_, let entries):
            list(entries, ", ") { e in
                if e.value.count == 5 || e.value.count == 19, let u = BluetoothUUID(littleEndianBytes: e.value[3...]) {
                    let vh = UInt16(e.value[1]) | UInt16(e.value[2]) << 8
                    handle(e.handle); text(" char "); uuidName(u); text(" value "); handle(vh); text(" [")
                    list(AttributeTable.propertyNames(e.value[0]), ",") { out.append($0) }
                    text("]")
                    return
                }
                handle(e.handle); text(" ")
                value(e.value, secret: isSecret(table?.info(for: e.handle), protocols: protocols))
            }
        case .readRequest(let h): target(h)
        case .readBlobRequest(let h, let off): target(h); text(" offset "); out.int(Int(off))
        case .readMultipleRequest(let hs), .readMultipleVariableRequest(let hs):
            list(hs, ", ") { target($0) }
        case .readResponse(let v), .readBlobResponse(let v):
            if let h = e.handle { target(h); text("  ") }
            value(v, secret: secret)
        case .readMultipleResponse(let v):
            value(v, secret: false)
        case .readMultipleVariableResponse(let vs):
            list(vs, " | ") { value($0, secret: false) }
        case .writeRequest(let h, let v), .writeCommand(let h, let v), .handleValueNotification(let h, let v), .handleValueIndication(let h, let v):
            target(h); text("  "); value(v, secret: secret)
        case .signedWriteCommand(let h, let v, _):
            target(h); text("  "); value(v, secret: secret); text(" (signed)")
        case .prepareWriteRequest(let h, let off, let v), .prepareWriteResponse(let h, let off, let v):
            target(h); text(" offset "); out.int(Int(off)); text("  "); value(v, secret: secret)
        case .executeWriteRequest(let flags): text(flags & 1 == 1 ? "write" : "cancel")
        case .multipleHandleValueNotification(let entries):
            list(entries, "; ") { target($0.handle); text(" "); value($0.value, secret: isSecret(table?.info(for: $0.handle), protocols: protocols)) }
        case .unknown(_, let params):
            params.withUnsafeBufferPointer { out.hex($0, separator: 0x20) }
        default: break
        }
    }
}

/// Handle labels (`AttributeTable.label(for:)`) and UUID texts remembered: a capture's PDUs touch
/// a few characteristics over and over, and building a label (names, UUID text) cost more than the
/// rest of its line. A label depends only on the attribute's `HandleInfo` (and the UUID names,
/// registered before decoding starts).
final class AttributeLabels {
    private var labels = RecentValues<HandleInfo, String>()
    private var uuids = RecentValues<BluetoothUUID, (text: String, name: String?)>()

    /// A UUID's text and name (`description`, `KnownUUIDs.name`).
    func uuid(_ u: BluetoothUUID) -> (String, String?) {
        uuids.value(for: u) { (u.description, KnownUUIDs.name(u)) }
    }

    func label(_ table: AttributeTable?, _ h: UInt16) -> String? {
        guard let table, let info = table.info(for: h) else { return nil }
        return labels.valueIfAny(for: info) { table.label(for: h) }
    }
}

/// The last few values made for keys, replaced in turn once full. Keys and values sit in
/// separate arrays: the keys are plain values, scanned without copying (retaining) the values
/// beside them.
private struct RecentValues<Key: Equatable, Value> {
    private var keys: [Key] = []
    private var values: [Value] = []
    private var next = 0
    private static var size: Int { 16 }

    /// The value remembered for `key`, or `make()`'s (remembered unless nil).
    mutating func value(for key: Key, make: () -> Value) -> Value {
        if let i = keys.firstIndex(of: key) { return values[i] }
        let v = make()
        remember(key, v)
        return v
    }

    /// The same for a `make` that may have no value (nothing is remembered then).
    mutating func valueIfAny(for key: Key, make: () -> Value?) -> Value? {
        if let i = keys.firstIndex(of: key) { return values[i] }
        guard let v = make() else { return nil }
        remember(key, v)
        return v
    }

    private mutating func remember(_ key: Key, _ value: Value) {
        if keys.count < Self.size {
            keys.append(key)
            values.append(value)
        } else {
            keys[next] = key
            values[next] = value
            next = (next + 1) % Self.size
        }
    }
}

extension String {
    func leftPad(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
