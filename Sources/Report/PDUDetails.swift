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

    public static func handle(_ h: UInt16) -> String { "0x" + String(h, radix: 16).leftPad(4) }

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
        if secret && !reveal { return "<redacted:\(v.count) bytes>" }
        if v.isEmpty { return "(empty)" }
        let shown = v.count > 64 ? Array(v.prefix(64)) : v
        var s = Hex.string(shown, separator: " ")
        if v.count > 64 { s += " …(\(v.count) bytes)" }
        let text = printable(shown)
        if shown.contains(where: { $0 >= 0x20 && $0 < 0x7F }) { s += "  \"\(text)\"" }
        return s
    }

    /// One line of detail after the opcode name.
    public static func text(_ e: ATTEvent, table: AttributeTable?, reveal: Bool, protocols: ProtocolSet) -> String {
        guard let pdu = e.pdu else { return "" }
        func target(_ h: UInt16) -> String {
            if let label = table?.label(for: h) { return "\(handle(h)) \(label)" }
            return handle(h)
        }
        let secret = isSecret(e, table: table, protocols: protocols)
        switch pdu {
        case .errorResponse(let op, let h, let error):
            return "\(ATTOpcode.name(for: op)) on \(target(h)): \(error.name) (0x\(Hex.string([error.rawValue])))"
        case .exchangeMTURequest(let m): return "client MTU \(m)"
        case .exchangeMTUResponse(let m): return "server MTU \(m)"
        case .findInformationRequest(let s, let end), .readByGroupTypeRequest(let s, let end, _), .readByTypeRequest(let s, let end, _), .findByTypeValueRequest(let s, let end, _, _):
            var t = "\(handle(s))..\(handle(end))"
            switch pdu {
            case .readByGroupTypeRequest(_, _, let type), .readByTypeRequest(_, _, let type): t += " type \(uuidName(type))"
            case .findByTypeValueRequest(_, _, let type, let v): t += " type \(uuidName(BluetoothUUID(uuid16: type))) value \(Hex.string(v))"
            default: break
            }
            return t
        case .findInformationResponse(_, let entries):
            return entries.map { "\(handle($0.handle)) \(uuidName($0.uuid))" }.joined(separator: ", ")
        case .findByTypeValueResponse(let entries):
            return entries.map { "\(handle($0.foundHandle))-\(handle($0.groupEndHandle))" }.joined(separator: ", ")
        case .readByGroupTypeResponse(_, let entries):
            return entries.map { e -> String in
                let u = BluetoothUUID(littleEndianBytes: e.value).map(uuidName) ?? Hex.string(e.value)
                return "\(handle(e.handle))-\(handle(e.endGroupHandle)) \(u)"
            }.joined(separator: ", ")
        case .readByTypeResponse(_, let entries):
            return entries.map { e -> String in
                if e.value.count == 5 || e.value.count == 19, let u = BluetoothUUID(littleEndianBytes: e.value[3...]) {
                    let vh = UInt16(e.value[1]) | UInt16(e.value[2]) << 8
                    return "\(handle(e.handle)) char \(uuidName(u)) value \(handle(vh)) [\(AttributeTable.propertyNames(e.value[0]).joined(separator: ","))]"
                }
                return "\(handle(e.handle)) \(value(e.value, secret: isSecret(table?.info(for: e.handle), protocols: protocols), reveal: reveal))"
            }.joined(separator: ", ")
        case .readRequest(let h): return target(h)
        case .readBlobRequest(let h, let off): return "\(target(h)) offset \(off)"
        case .readMultipleRequest(let hs), .readMultipleVariableRequest(let hs):
            return hs.map { target($0) }.joined(separator: ", ")
        case .readResponse(let v), .readBlobResponse(let v):
            let answered = e.handle.map { "\(target($0))  " } ?? ""
            return answered + value(v, secret: secret, reveal: reveal)
        case .readMultipleResponse(let v):
            return value(v, secret: false, reveal: reveal)
        case .readMultipleVariableResponse(let vs):
            return vs.map { value($0, secret: false, reveal: reveal) }.joined(separator: " | ")
        case .writeRequest(let h, let v), .writeCommand(let h, let v), .handleValueNotification(let h, let v), .handleValueIndication(let h, let v):
            return "\(target(h))  \(value(v, secret: secret, reveal: reveal))"
        case .signedWriteCommand(let h, let v, _):
            return "\(target(h))  \(value(v, secret: secret, reveal: reveal)) (signed)"
        case .prepareWriteRequest(let h, let off, let v), .prepareWriteResponse(let h, let off, let v):
            return "\(target(h)) offset \(off)  \(value(v, secret: secret, reveal: reveal))"
        case .executeWriteRequest(let flags): return flags & 1 == 1 ? "write" : "cancel"
        case .multipleHandleValueNotification(let entries):
            return entries.map { "\(target($0.handle)) \(value($0.value, secret: isSecret(table?.info(for: $0.handle), protocols: protocols), reveal: reveal))" }.joined(separator: "; ")
        case .unknown(_, let params): return Hex.string(params, separator: " ")
        default: return ""
        }
    }
}

extension String {
    func leftPad(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
