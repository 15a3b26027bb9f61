#if canImport(Glibc)
import Glibc
#endif

// Fixed-width integer loads on borrowed bytes. Callers check lengths first; these helpers only
// remove the byte-order noise from the readers and decoders that follow.

extension UnsafeRawBufferPointer {
    @inlinable @inline(__always)
    public func u8(_ offset: Int) -> UInt8 { self[offset] }

    @inlinable @inline(__always)
    public func u16le(_ offset: Int) -> UInt16 {
        UInt16(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    @inlinable @inline(__always)
    public func u16be(_ offset: Int) -> UInt16 {
        UInt16(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    @inlinable @inline(__always)
    public func u32le(_ offset: Int) -> UInt32 {
        UInt32(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inlinable @inline(__always)
    public func u32be(_ offset: Int) -> UInt32 {
        UInt32(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inlinable @inline(__always)
    public func i64be(_ offset: Int) -> Int64 {
        Int64(bigEndian: loadUnaligned(fromByteOffset: offset, as: Int64.self))
    }

    /// A sub-range as its own buffer (offsets restart at 0). Callers check the bounds.
    @inlinable @inline(__always)
    public func slice(_ start: Int, _ count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[start..<(start + count)])
    }

    /// Everything from `start` on, as its own buffer; empty when `start` is past the end.
    @inlinable @inline(__always)
    public func dropping(_ start: Int) -> UnsafeRawBufferPointer {
        start >= count ? UnsafeRawBufferPointer(start: nil, count: 0)
            : UnsafeRawBufferPointer(rebasing: self[start...])
    }
}

extension Array where Element == UInt8 {
    @inlinable mutating func appendBE(_ v: UInt32) {
        append(UInt8(truncatingIfNeeded: v >> 24)); append(UInt8(truncatingIfNeeded: v >> 16))
        append(UInt8(truncatingIfNeeded: v >> 8)); append(UInt8(truncatingIfNeeded: v))
    }
    @inlinable mutating func appendBE(_ v: UInt16) {
        append(UInt8(truncatingIfNeeded: v >> 8)); append(UInt8(truncatingIfNeeded: v))
    }
    @inlinable mutating func appendBE(_ v: Int64) {
        appendBE(UInt32(truncatingIfNeeded: UInt64(bitPattern: v) >> 32))
        appendBE(UInt32(truncatingIfNeeded: UInt64(bitPattern: v)))
    }
}

/// Hex rendering shared by errors and output ("0a 1b" or "0a1b").
public enum Hex {
    @usableFromInline static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    public static func string(_ bytes: some Sequence<UInt8>, separator: String = "") -> String {
        if let s = bytes.withContiguousStorageIfAvailable({ string($0, separator: separator) }) { return s }
        return Array(bytes).withUnsafeBufferPointer { string($0, separator: separator) }
    }

    /// Written straight into the string's storage (it was built a Unicode scalar at a time, a
    /// fifth of text `decode` on a sniffer's advertising).
    static func string(_ bytes: UnsafeBufferPointer<UInt8>, separator: String) -> String {
        guard !bytes.isEmpty else { return "" }
        var separator = separator
        return separator.withUTF8 { sep in
            String(unsafeUninitializedCapacity: bytes.count * 2 + (bytes.count - 1) * sep.count) { out in
                var i = 0
                for (k, b) in bytes.enumerated() {
                    if k > 0 { for c in sep { out[i] = c; i += 1 } }
                    out[i] = digits[Int(b >> 4)]
                    out[i + 1] = digits[Int(b & 0x0F)]
                    i += 2
                }
                return i
            }
        }
    }
}

/// Writes every byte to a file descriptor, going on after short writes and EINTR.
/// Returns 0, or the errno that stopped it.
public func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
    guard var next = bytes.baseAddress else { return 0 }
    var left = bytes.count
    while left > 0 {
        let n = write(fd, next, left)
        if n < 0 {
            if errno == EINTR { continue }
            return errno
        }
        next += n
        left -= n
    }
    return 0
}
