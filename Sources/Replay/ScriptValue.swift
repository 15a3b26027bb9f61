import Foundation

/// A JSON value as a script carries it, uninterpreted: a protocol's session data
/// (`SessionScript.sessions`), which only the protocol's own replay session decodes. Kept as
/// JSON so the engine can read, compare and write a script without knowing the protocol, and
/// a script written before the protocol moved stays byte for byte the same.
public enum ScriptValue: Codable, Sendable, Hashable {
    case null
    case bool(Bool)
    /// Integers stay integers (a JSON number that fits), so they are written back as read.
    case int(Int64)
    case double(Double)
    case string(String)
    case array([ScriptValue])
    case object([String: ScriptValue])

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? c.decode(Double.self) {
            self = .double(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([ScriptValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: ScriptValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    /// A Codable value as JSON: what its own encoding writes, members it leaves out (nil) absent.
    public init(encoding value: some Encodable) throws {
        self = try JSONDecoder().decode(ScriptValue.self, from: JSONEncoder().encode(value))
    }

    /// The value decoded as `type`; throws the decoding error (its coding path within the value).
    public func decoded<T: Decodable>(as type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder().encode(self))
    }
}
