/// Why a PDU could not be decoded, and where: a malformed PDU is an event to report, never a crash.
public struct ATTDecodeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The PDU's first byte; nil when the PDU was empty.
    public var opcode: UInt8?
    /// Byte offset in the PDU (the opcode is byte 0) of the field that could not be read.
    public var offset: Int
    /// What was wrong, for people: "attribute handle needs 2 bytes, 1 left".
    public var reason: String

    public init(opcode: UInt8?, offset: Int, reason: String) {
        self.opcode = opcode
        self.offset = offset
        self.reason = reason
    }

    /// "Read By Type Response: attribute data list of 7 bytes is not a multiple of the entry length 4".
    /// The offset is a separate field, so callers can put it next to their own record position.
    public var description: String {
        guard let opcode else { return "ATT: \(reason)" }
        return "\(ATTOpcode.name(for: opcode)): \(reason)"
    }
}
