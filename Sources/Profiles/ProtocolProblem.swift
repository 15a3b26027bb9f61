/// Something a protocol message does that its specification does not allow, with a stable id
/// (for diagnoses and fuzz oracles) and a sentence for people.
public struct ProtocolProblem: Sendable, Hashable, CustomStringConvertible {
    /// Stable identifier, such as `status.short` or `credentials.missing-nul`.
    public var id: String
    public var message: String

    public init(_ id: String, _ message: String) {
        self.id = id
        self.message = message
    }

    public var description: String { "\(id): \(message)" }
}

/// Text from bytes the way the device protocols need it: UTF-8 when valid, and whether it was.
enum ProtocolText {
    static func decode(_ bytes: some Collection<UInt8>) -> (text: String, valid: Bool) {
        let text = String(decoding: bytes, as: UTF8.self)
        // String(decoding:) replaces invalid sequences with U+FFFD; a round trip tells.
        return (text, Array(text.utf8).elementsEqual(bytes))
    }
}
