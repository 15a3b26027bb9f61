import Capture
#if canImport(Glibc)
import Glibc
#endif

/// Buffered writes to a file descriptor (stdout), cheap enough for millions of lines.
/// A closed pipe (`gattlab decode f | head`) ends the program quietly, as Unix tools do.
/// (Not `OutputStream`: that name is Foundation's, and would be ambiguous wherever both are imported.)
public final class BufferedOutput {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private let limit = 1 << 16

    public init(fd: Int32 = 1) {
        self.fd = fd
        buffer.reserveCapacity(limit + 4096)
    }

    deinit { flush() }

    @inline(__always)
    public func write(_ s: String) {
        var s = s
        s.withUTF8 { buffer.append(contentsOf: $0) }
        if buffer.count >= limit { flush() }
    }

    @inline(__always)
    public func write(bytes: some Sequence<UInt8>) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= limit { flush() }
    }

    @inline(__always)
    public func byte(_ b: UInt8) { buffer.append(b) }

    public func line(_ s: String) {
        write(s)
        buffer.append(0x0A)
    }

    public func flush() {
        guard !buffer.isEmpty else { return }
        let failure = buffer.withUnsafeBytes { writeAll(fd, $0) }
        buffer.removeAll(keepingCapacity: true)
        if failure == EPIPE { exit(0) }
    }

    // MARK: Fast formatting of the pieces JSON Lines and text output are made of.

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    @inline(__always)
    public func hex(_ bytes: some Collection<UInt8>) {
        for b in bytes {
            buffer.append(Self.hexDigits[Int(b >> 4)])
            buffer.append(Self.hexDigits[Int(b & 0xF)])
        }
        if buffer.count >= limit { flush() }
    }

    @inline(__always)
    public func int(_ v: Int) {
        if v < 0 {
            buffer.append(UInt8(ascii: "-"))
            if v == Int.min { write("9223372036854775808"); return }
            int(-v)
            return
        }
        if v < 10 { buffer.append(UInt8(48 + v)); return }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = v
        var count = 0
        withUnsafeMutableBytes(of: &digits) { d in
            while n > 0 {
                d[count] = UInt8(48 + n % 10)
                n /= 10
                count += 1
            }
            for i in stride(from: count - 1, through: 0, by: -1) { buffer.append(d[i]) }
        }
    }

    /// Microseconds as seconds with six decimals (`1.250000`, `-0.000300`), without floating point.
    public func seconds(_ micros: Int64) {
        if micros < 0 { buffer.append(UInt8(ascii: "-")) }
        let m = micros.magnitude
        int(Int(m / 1_000_000))
        buffer.append(UInt8(ascii: "."))
        var frac = Int(m % 1_000_000)
        var divisor = 100_000
        for _ in 0..<6 {
            buffer.append(UInt8(48 + frac / divisor))
            frac %= divisor
            divisor /= 10
        }
    }

    /// A JSON string literal with escapes (`JSONString`'s escaper, without the HTML ones).
    public func jsonString(_ s: String) {
        buffer.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            // Most strings need no escaping: copied whole.
            if JSONString.needsEscape(bytes, forHTML: false) {
                JSONString.escape(bytes, forHTML: false, into: &buffer)
            } else {
                buffer.append(contentsOf: bytes)
            }
        }
        buffer.append(UInt8(ascii: "\""))
    }
}

/// Colour for terminals: only on a TTY, never with NO_COLOR set (https://no-color.org).
public struct Style: Sendable {
    public let enabled: Bool

    public init(enabled: Bool) { self.enabled = enabled }

    public static func forStdout(disabled: Bool) -> Style {
        let noColor = getenv("NO_COLOR").map { $0.pointee != 0 } ?? false
        return Style(enabled: !disabled && !noColor && isatty(1) == 1)
    }

    public func dim(_ s: String) -> String { enabled ? "\u{1B}[2m\(s)\u{1B}[0m" : s }
    public func bold(_ s: String) -> String { enabled ? "\u{1B}[1m\(s)\u{1B}[0m" : s }
    public func red(_ s: String) -> String { enabled ? "\u{1B}[31m\(s)\u{1B}[0m" : s }
    public func yellow(_ s: String) -> String { enabled ? "\u{1B}[33m\(s)\u{1B}[0m" : s }
    public func cyan(_ s: String) -> String { enabled ? "\u{1B}[36m\(s)\u{1B}[0m" : s }
    public func green(_ s: String) -> String { enabled ? "\u{1B}[32m\(s)\u{1B}[0m" : s }
}
