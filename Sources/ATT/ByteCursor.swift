/// A bounds-checked little-endian reader over borrowed bytes. Every read checks the length first and
/// throws an `ATTDecodeError` naming the field and its offset, so the decoder itself never indexes
/// out of range and never copies what it does not keep.
struct ByteCursor {
    let bytes: UnsafeRawBufferPointer
    /// Reported in errors; nil only while reading the opcode of an empty PDU.
    let opcode: UInt8?
    private(set) var position: Int
    /// Bytes at the end that were read but that the decoded value cannot reproduce (a length field
    /// promising more than came); counted as trailing.
    private(set) var truncatedTail = 0

    init(_ bytes: UnsafeRawBufferPointer, opcode: UInt8?, position: Int = 0) {
        self.bytes = bytes
        self.opcode = opcode
        self.position = max(0, min(position, bytes.count))
    }

    var remaining: Int { bytes.count - position }
    var isAtEnd: Bool { position >= bytes.count }

    /// An error at `offset` (the current position unless told otherwise).
    func error(_ reason: String, at offset: Int? = nil) -> ATTDecodeError {
        ATTDecodeError(opcode: opcode, offset: offset ?? position, reason: reason)
    }

    /// Throws unless `count` more bytes are there for `field`.
    func require(_ count: Int, for field: String) throws(ATTDecodeError) {
        guard count >= 0, remaining >= count else {
            throw error("\(field) needs \(count) byte\(count == 1 ? "" : "s"), \(remaining) left")
        }
    }

    mutating func readU8(_ field: String) throws(ATTDecodeError) -> UInt8 {
        try require(1, for: field)
        let value = bytes[position]
        position += 1
        return value
    }

    mutating func readU16(_ field: String) throws(ATTDecodeError) -> UInt16 {
        try require(2, for: field)
        let value = UInt16(bytes[position]) | UInt16(bytes[position + 1]) << 8
        position += 2
        return value
    }

    /// A 128-bit little-endian value as (high, low) halves; no `UInt128` so older Apple OSes still build.
    mutating func readU128(_ field: String) throws(ATTDecodeError) -> (high: UInt64, low: UInt64) {
        try require(16, for: field)
        var low: UInt64 = 0
        var high: UInt64 = 0
        for index in 0..<8 {
            low |= UInt64(bytes[position + index]) << (8 * index)
            high |= UInt64(bytes[position + 8 + index]) << (8 * index)
        }
        position += 16
        return (high, low)
    }

    /// The next `count` bytes, still borrowed: the caller copies them only if it keeps them.
    mutating func readBytes(_ count: Int, _ field: String) throws(ATTDecodeError) -> UnsafeRawBufferPointer {
        try require(count, for: field)
        let slice = UnsafeRawBufferPointer(rebasing: bytes[position..<(position + count)])
        position += count
        return slice
    }

    /// Records that everything from `offset` on is a cut-short tuple.
    mutating func markTruncatedTail(from offset: Int) {
        truncatedTail = max(0, bytes.count - offset)
    }

    /// Everything left, borrowed; the cursor ends at the end.
    mutating func rest() -> UnsafeRawBufferPointer {
        let slice = UnsafeRawBufferPointer(rebasing: bytes[position..<bytes.count])
        position = bytes.count
        return slice
    }

    /// Everything left, copied: for values the decoded PDU keeps.
    mutating func restArray() -> [UInt8] {
        [UInt8](rest())
    }

    mutating func readArray(_ count: Int, _ field: String) throws(ATTDecodeError) -> [UInt8] {
        [UInt8](try readBytes(count, field))
    }
}

/// Little-endian appends for the encoders.
extension Array where Element == UInt8 {
    mutating func appendLittleEndian(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value))
        append(UInt8(truncatingIfNeeded: value >> 8))
    }

    /// A length field: values longer than 65535 bytes cannot be described, and are clamped rather than trapped on.
    mutating func appendLength16(_ count: Int) {
        appendLittleEndian(UInt16(clamping: count))
    }
}
