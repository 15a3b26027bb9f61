/// A value of an enumeration as it came off the wire (a protobuf enum, a protocol's command or
/// state byte): its number, and its name when the protocol defines that number. Unknown numbers
/// are kept (newer firmware adds values). Decode output renders it (`DecodeRendering`).
public struct ProtoEnumValue: Sendable, Hashable, CustomStringConvertible {
    public var raw: Int
    public var name: String?

    public init(raw: Int, name: String?) {
        self.raw = raw
        self.name = name
    }

    public var isKnown: Bool { name != nil }
    public var description: String { name ?? "unknown(\(raw))" }
}
