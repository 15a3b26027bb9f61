import Capture
import HCI
#if canImport(Glibc)
import Glibc
#endif

/// Buffered writes to a file descriptor (stdout), cheap enough for millions of lines.
/// A closed pipe (`gattlab decode f | head`) ends the program quietly, as Unix tools do.
/// (Not `OutputStream`: that name is Foundation's, and would be ambiguous wherever both are imported.)
///
/// Decode writes tens of millions of small pieces, so the buffer is raw memory written through
/// a pointer (no Array uniqueness and bounds checks per byte), and text lines are formatted into
/// it in place rather than built as `String`s first.
public final class BufferedOutput {
    private let fd: Int32
    /// Set for an in-memory buffer (`collecting()`): nothing is written out, `text` reads it.
    private let collects: Bool
    private var base: UnsafeMutablePointer<UInt8>
    private var count = 0
    private var capacity: Int
    private let limit = 1 << 16
    /// Scratch for JSON escapes, reused.
    private var escaped: [UInt8] = []

    public init(fd: Int32 = 1) {
        self.fd = fd
        collects = false
        capacity = limit + 4096
        base = .allocate(capacity: capacity)
    }

    private init(collecting: Void) {
        fd = -1
        collects = true
        capacity = 256
        base = .allocate(capacity: capacity)
    }

    /// A buffer that keeps what is written, for the `String` forms of the writers below.
    static func collecting() -> BufferedOutput { BufferedOutput(collecting: ()) }

    /// What a collecting buffer holds.
    var text: String { String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self) }

    deinit {
        flush()
        base.deallocate()
    }

    // MARK: Raw appends: no flush, so a line's bytes can be measured (`mark`) for padding.

    @inline(__always)
    private func reserve(_ n: Int) {
        if count &+ n > capacity { grow(count + n) }
    }

    @inline(never)
    private func grow(_ needed: Int) {
        let newCapacity = max(needed, capacity * 2)
        let new = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        new.update(from: base, count: count)
        base.deallocate()
        base = new
        capacity = newCapacity
    }

    @inline(__always)
    func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let from = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count)
        (base + count).update(from: from, count: bytes.count)
        count += bytes.count
    }

    @inline(__always)
    func append(_ s: String) {
        var s = s
        s.withUTF8 { append($0) }
    }

    @inline(__always)
    func append(_ s: StaticString) {
        s.withUTF8Buffer { append($0) }
    }

    /// `,"name":` of a JSON field, in one piece.
    @inline(__always)
    func key(_ name: StaticString) {
        name.withUTF8Buffer { n in
            reserve(n.count + 4)
            base[count] = UInt8(ascii: ",")
            base[count + 1] = UInt8(ascii: "\"")
            count += 2
            append(n)
            base[count] = UInt8(ascii: "\"")
            base[count + 1] = UInt8(ascii: ":")
            count += 2
        }
    }

    /// Where the buffer ends now: with `pad(from:width:minimum:)` and `truncate(to:)`.
    var mark: Int { count }

    /// Spaces after what was written since `start`, so it fills `width` bytes, and at least `minimum`.
    @inline(__always)
    func pad(from start: Int, width: Int, minimum: Int) {
        spaces(max(minimum, width - (count - start)))
    }

    @inline(__always)
    func spaces(_ n: Int) {
        guard n > 0 else { return }
        reserve(n)
        (base + count).initialize(repeating: 0x20, count: n)
        count += n
    }

    /// Drops what was written after `mark` (of this line: nothing was flushed since).
    func truncate(to mark: Int) { count = min(count, mark) }

    /// Ends a line, and writes out the buffer when it is full.
    @inline(__always)
    func endLine() {
        byte(0x0A)
        if count >= limit { flush() }
    }

    // MARK: Writes

    @inline(__always)
    public func write(_ s: String) {
        append(s)
        if count >= limit { flush() }
    }

    @inline(__always)
    public func write(bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { append($0) }
        if done == nil { for b in bytes { byte(b) } }
        if count >= limit { flush() }
    }

    @inline(__always)
    public func byte(_ b: UInt8) {
        reserve(1)
        base[count] = b
        count += 1
    }

    public func line(_ s: String) {
        append(s)
        endLine()
    }

    /// The first error a write met (an errno; 0 for none): a full disk under `-o FILE` must
    /// fail the command, not leave a short file behind. A closed pipe ends the program instead.
    public private(set) var failure: Int32 = 0

    /// What to do when standard output cannot be written (a full disk under `> file`): the
    /// command line reports it and exits with its own status, so that a short output never passes
    /// for a whole one. Unset (the library alone), the failure is only kept in `failure`.
    nonisolated(unsafe) public static var standardOutputFailed: ((Int32) -> Never)?

    public func flush() {
        guard count > 0, !collects else { return }
        let failed = writeAll(fd, UnsafeRawBufferPointer(start: base, count: count))
        count = 0
        if failed == EPIPE { exit(0) }
        if failure == 0 { failure = failed }
        if failed != 0, fd == 1, let stop = Self.standardOutputFailed { stop(failed) }
    }

    // MARK: Fast formatting of the pieces JSON Lines and text output are made of.

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    @inline(__always)
    private static func hexDigit(_ n: UInt8) -> UInt8 { n < 10 ? 0x30 &+ n : 0x57 &+ n }

    /// Bytes as lowercase hex, two digits each. (No flush: it is a piece of a line.)
    @inline(__always)
    public func hex(_ bytes: some Collection<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { hex($0, separator: nil) }
        if done == nil { for b in bytes { hexByte(b) } }
    }

    /// Bytes as lowercase hex, with a separator byte between them (`68 69 00`).
    func hex(_ bytes: UnsafeBufferPointer<UInt8>, separator: UInt8?) {
        guard !bytes.isEmpty else { return }
        reserve(bytes.count * 3)
        var p = base + count
        for (i, b) in bytes.enumerated() {
            if i > 0, let separator { p.pointee = separator; p += 1 }
            p[0] = Self.hexDigit(b >> 4)
            p[1] = Self.hexDigit(b & 0xF)
            p += 2
        }
        count = p - base
    }

    @inline(__always)
    func hexByte(_ b: UInt8) {
        reserve(2)
        base[count] = Self.hexDigit(b >> 4)
        base[count + 1] = Self.hexDigit(b & 0xF)
        count += 2
    }

    /// A number in lowercase hex with at least `digits` digits (`String(v, radix: 16)` zero-padded).
    func hex(_ v: UInt64, digits: Int) {
        var n = 1
        while n < 16, v >> (4 * UInt64(n)) != 0 { n += 1 }
        n = max(n, digits)
        reserve(n)
        var rest = v
        for i in stride(from: n - 1, through: 0, by: -1) {
            base[count + i] = Self.hexDigit(UInt8(truncatingIfNeeded: rest & 0xF))
            rest >>= 4
        }
        count += n
    }

    @inline(__always)
    public func int(_ v: Int) {
        if v < 0 {
            byte(UInt8(ascii: "-"))
            if v == Int.min { append("9223372036854775808" as StaticString); return }
            unsigned(UInt64(-v), width: 0)
            return
        }
        unsigned(UInt64(v), width: 0)
    }

    /// A number right-aligned in `width` with spaces (`String(v)` left-padded): frame numbers.
    func int(_ v: Int, width: Int) {
        if v < 0 {
            let start = mark
            int(v)
            // Rare (never in captures): move the text right of its padding.
            let n = count - start
            if n < width {
                let text = Array(UnsafeBufferPointer(start: base + start, count: n))
                count = start
                spaces(width - n)
                text.withUnsafeBufferPointer { append($0) }
            }
            return
        }
        unsigned(UInt64(v), width: width)
    }

    /// Decimal digits, written from the last two at a time (timestamps have 16).
    @inline(__always)
    private func unsigned(_ v: UInt64, width: Int) {
        if v < 10, width <= 1 { byte(0x30 &+ UInt8(truncatingIfNeeded: v)); return }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch on the stack
        withUnsafeMutableBytes(of: &digits) { d in
            var i = 24
            var n = v
            Self.pairs.withUTF8Buffer { pairs in
                while n >= 10 {
                    let p = Int(n % 100) * 2
                    n /= 100
                    i -= 2
                    d[i] = pairs[p]
                    d[i + 1] = pairs[p + 1]
                }
            }
            // A last single digit (or the only one).
            if n > 0 || i == 24 { i -= 1; d[i] = 0x30 &+ UInt8(truncatingIfNeeded: n) }
            let len = 24 - i
            if width > len { spaces(width - len) }
            append(UnsafeBufferPointer(start: d.baseAddress!.assumingMemoryBound(to: UInt8.self) + i, count: len))
        }
    }

    private static let pairs: StaticString = """
        00010203040506070809101112131415161718192021222324252627282930313233343536373839\
        40414243444546474849505152535455565758596061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899
        """

    /// Microseconds as seconds with six decimals (`1.250000`, `-0.000300`), without floating point.
    public func seconds(_ micros: Int64) {
        if micros < 0 { byte(UInt8(ascii: "-")) }
        let m = micros.magnitude
        unsigned(m / 1_000_000, width: 0)
        reserve(7)
        base[count] = UInt8(ascii: ".")
        var frac = m % 1_000_000
        for i in stride(from: 6, through: 1, by: -1) {
            base[count + i] = 0x30 &+ UInt8(truncatingIfNeeded: frac % 10)
            frac /= 10
        }
        count += 7
    }

    /// Printable ASCII of bytes, others as '.' (`PDUDetails.printable`).
    func printable(_ bytes: UnsafeBufferPointer<UInt8>) {
        reserve(bytes.count)
        for (i, b) in bytes.enumerated() { base[count + i] = b >= 0x20 && b < 0x7F ? b : UInt8(ascii: ".") }
        count += bytes.count
    }

    /// A JSON string literal with escapes (`JSONString`'s escaper, without the HTML ones).
    public func jsonString(_ s: String) {
        byte(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            // Most strings need no escaping: copied whole.
            if JSONString.needsEscape(bytes, forHTML: false) {
                escaped.removeAll(keepingCapacity: true)
                JSONString.escape(bytes, forHTML: false, into: &escaped)
                escaped.withUnsafeBufferPointer { append($0) }
            } else {
                append(bytes)
            }
        }
        byte(UInt8(ascii: "\""))
    }

    /// An address as `BDAddr.description` writes it: `AA:BB:CC:DD:EE:FF`.
    func address(_ a: BDAddr) {
        reserve(17)
        var p = base + count
        withUnsafeBytes(of: a.bytes) { bytes in
            for (i, x) in bytes.enumerated() {
                if i > 0 { p.pointee = UInt8(ascii: ":"); p += 1 }
                p[0] = Self.upperHexDigit(x >> 4)
                p[1] = Self.upperHexDigit(x & 0xF)
                p += 2
            }
        }
        count = p - base
    }

    @inline(__always)
    private static func upperHexDigit(_ n: UInt8) -> UInt8 { n < 10 ? 0x30 &+ n : 0x37 &+ n }

    /// A connection as `ConnectionKey.description` writes it: `0x0040`, `hci1/0x0040`, `aa:0x50654b2a`.
    func connection(_ key: ConnectionKey) {
        if key.isLinkLayer {
            append("aa:0x" as StaticString)
            hex(UInt64(key.id), digits: 8)
            return
        }
        if key.controller != 0 {
            append("hci" as StaticString)
            unsigned(UInt64(key.controller), width: 0)
            byte(UInt8(ascii: "/"))
        }
        append("0x" as StaticString)
        hex(UInt64(key.id), digits: 4)
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

    /// The codes of the colours above, for text written in pieces (`open`, then `close`).
    static let boldCode: StaticString = "\u{1B}[1m"
    static let dimCode: StaticString = "\u{1B}[2m"
    static let redCode: StaticString = "\u{1B}[31m"
    static let cyanCode: StaticString = "\u{1B}[36m"
    static let resetCode: StaticString = "\u{1B}[0m"

    /// Starts a colour in `out` (nothing without colour).
    @inline(__always)
    func open(_ code: StaticString, _ out: BufferedOutput) { if enabled { out.append(code) } }
    /// Ends the colour `open` started.
    @inline(__always)
    func close(_ out: BufferedOutput) { if enabled { out.append(Self.resetCode) } }
}
