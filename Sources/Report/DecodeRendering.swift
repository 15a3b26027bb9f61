import Capture
import Profiles

/// A protocol message `gattlab decode` can show: a protocol conforms its message types in its
/// own folder, so the decode output names no protocol. Secrets (Wi-Fi passwords) appear only
/// with `reveal` (--reveal-secrets), as in every other output.
public protocol DecodeRendering: ProfileMessage {
    /// The message as one line of text, after the `protocol` line's frame, time and connection.
    func decodeSummary(reveal: Bool) -> String
    /// The message's fields on its JSON line, after `protocol`, `kind`, `handle` and `firstFrame`.
    func decodeJSON(reveal: Bool, into json: inout JSONBuild)
}

extension ProfileEvent {
    /// The text of this event's message on a decode line.
    public func decodeSummary(reveal: Bool) -> String {
        // No message (a value the protocol could not decode), or one that does not render.
        (message as? any DecodeRendering)?.decodeSummary(reveal: reveal) ?? "(not decoded)"
    }

    /// The fields of this event's `protocol` JSON line, in their order.
    public func decodeJSON(reveal: Bool) -> JSONBuild {
        var b = JSONBuild()
        b.string("protocol", protocolName)
        b.string("kind", kind)
        b.int("handle", Int(handle))
        if firstFrame != frame { b.int("firstFrame", firstFrame) }
        (message as? any DecodeRendering)?.decodeJSON(reveal: reveal, into: &b)
        if !problems.isEmpty {
            b.raw("problems", "[" + problems.map { "{\"id\":\(JSONString.quote($0.id)),\"message\":\(JSONString.quote($0.message))}" }.joined(separator: ",") + "]")
        }
        return b
    }
}

extension Secret {
    /// A secret on a decode text line: quoted when revealed, else its redaction note.
    public func decodeText(reveal: Bool) -> String {
        reveal ? "\"\(ProtocolText.display(unsafeBytes))\"" : redacted
    }

    /// A secret as a JSON string value: the text when revealed, else its redaction note.
    public func decodeJSONText(reveal: Bool) -> String {
        reveal ? ProtocolText.display(unsafeBytes) : redacted
    }
}

/// A JSON object built as text, for the fields of a protocol message and their nested values.
/// Fields are written in the order they are added; a nil value adds nothing.
public struct JSONBuild {
    /// The fields so far, `"key":value` joined by commas, as UTF-8. Formatted as they are added
    /// and copied out whole: a list of key and value strings joined at the end cost ~17k
    /// instructions per message on a decode line.
    private(set) var fields: [UInt8] = []

    public init() {}

    private mutating func key(_ k: String) {
        if fields.isEmpty {
            fields.reserveCapacity(256)  // one allocation for a message's fields, not several
        } else {
            fields.append(UInt8(ascii: ","))
        }
        JSONString.append(k, to: &fields)
        fields.append(UInt8(ascii: ":"))
    }

    public mutating func string(_ k: String, _ v: String?) { if let v { key(k); JSONString.append(v, to: &fields) } }
    public mutating func int(_ k: String, _ v: Int?) {
        guard let v else { return }
        key(k)
        JSONWriter.decimal(v, into: &fields)
    }
    public mutating func bool(_ k: String, _ v: Bool?) { if let v { key(k); fields.append(contentsOf: (v ? "true" : "false").utf8) } }
    /// A value that is already JSON.
    public mutating func raw(_ k: String, _ json: String?) { if let json { key(k); fields.append(contentsOf: json.utf8) } }
    /// An enum as its number and, when known, `<key>Name`.
    public mutating func enumValue(_ k: String, _ v: ProtoEnumValue?) {
        guard let v else { return }
        int(k, v.raw)
        string(k + "Name", v.name)
    }
    /// Strings as a JSON array.
    public mutating func strings(_ k: String, _ list: [String]) {
        raw(k, "[" + list.map { JSONString.quote($0) }.joined(separator: ",") + "]")
    }

    public var text: String { "{" + String(decoding: fields, as: UTF8.self) + "}" }
}

/// Scan results in the shape every protocol shares: an array of objects with `ssid`, `bssid`,
/// `channel`, `rssi`, `authMode` (named) and `band`, each present when the protocol reports it.
public enum NetworkJSON {
    public static func object(_ n: WiFiNetwork) -> String {
        var b = JSONBuild()
        b.string("ssid", n.ssidText)
        b.string("bssid", n.bssidText)
        b.int("channel", n.channel)
        b.int("rssi", n.rssi)
        b.string("authMode", n.authMode)
        b.string("band", n.band)
        return b.text
    }

    public static func array(_ list: [WiFiNetwork]) -> String { "[" + list.map(object).joined(separator: ",") + "]" }
}
