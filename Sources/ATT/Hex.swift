// Hex formatting without Foundation, in the styles Wireshark prints, for names and error messages.

private let lowercaseHex: [UInt8] = Array("0123456789abcdef".utf8)
private let uppercaseHex: [UInt8] = Array("0123456789ABCDEF".utf8)

/// ASCII hex digits of the low `count` nibbles of `value`, most significant first.
func hexDigits(_ value: UInt64, count: Int, uppercase: Bool = false) -> [UInt8] {
    let table = uppercase ? uppercaseHex : lowercaseHex
    return (0..<max(0, min(count, 16))).reversed().map { nibble in
        table[Int(truncatingIfNeeded: (value >> (4 * UInt64(nibble))) & 0xF)]
    }
}

/// "0x0a": a byte.
func hexByte(_ value: UInt8, uppercase: Bool = false) -> String {
    "0x" + String(decoding: hexDigits(UInt64(value), count: 2, uppercase: uppercase), as: UTF8.self)
}

/// "0x002a": a handle.
func hexHandle(_ handle: UInt16) -> String {
    "0x" + String(decoding: hexDigits(UInt64(handle), count: 4), as: UTF8.self)
}
