/// A small streaming JSON writer: objects and arrays with the commas handled, strings escaped
/// (all control characters, and `<` so the output can sit inside an HTML script element).
/// It writes UTF-8 bytes into one reusable buffer, numbers formatted by hand: built by string
/// interpolation and appends, writing was 37% of `timeline --format json` on a day's capture.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    /// Members written so far in each open object or array.
    private var counts: [Int] = []
    private var afterKey = false
    let pretty: Bool
    /// Where a streaming writer sends its bytes as it goes (about every 64 KB), so that a
    /// document of hundreds of megabytes (the timeline of a day of captures) never sits in memory
    /// whole; nil keeps it all in `bytes`.
    private let sink: (([UInt8]) -> Void)?

    init(pretty: Bool = false, sink: (([UInt8]) -> Void)? = nil) {
        self.pretty = pretty
        self.sink = sink
        if sink != nil { bytes.reserveCapacity(Self.chunk + 4096) }
    }

    private static let chunk = 1 << 16

    /// The document written so far (a writer without a sink: all of it).
    var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Sends what is left to the sink (a streaming writer's last step).
    mutating func finish() {
        guard let sink, !bytes.isEmpty else { return }
        sink(bytes)
        bytes.removeAll(keepingCapacity: true)
    }

    private mutating func indent() {
        bytes.append(0x0A)
        for _ in 0..<counts.count { bytes.append(0x20); bytes.append(0x20) }
    }

    private mutating func newItem() {
        if let sink, bytes.count >= Self.chunk {
            sink(bytes)
            bytes.removeAll(keepingCapacity: true)
        }
        guard !counts.isEmpty else { return }
        if counts[counts.count - 1] > 0 { bytes.append(UInt8(ascii: ",")) }
        counts[counts.count - 1] += 1
        if pretty { indent() }
    }

    mutating func key(_ k: String) {
        newItem()
        JSONString.append(k, forHTML: true, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        if pretty { bytes.append(0x20) }
        afterKey = true
    }

    private mutating func beforeValue() {
        if afterKey { afterKey = false } else { newItem() }
    }

    mutating func beginObject() { beforeValue(); bytes.append(UInt8(ascii: "{")); counts.append(0) }
    mutating func endObject() { close(UInt8(ascii: "}")) }
    mutating func beginArray() { beforeValue(); bytes.append(UInt8(ascii: "[")); counts.append(0) }
    mutating func endArray() { close(UInt8(ascii: "]")) }

    private mutating func close(_ c: UInt8) {
        let n = counts.removeLast()
        if pretty, n > 0 { indent() }
        bytes.append(c)
    }

    mutating func string(_ s: String) { beforeValue(); JSONString.append(s, forHTML: true, to: &bytes) }
    mutating func int(_ v: Int) { beforeValue(); Self.decimal(v, into: &bytes) }
    mutating func bool(_ v: Bool) { beforeValue(); literal(v ? "true" : "false") }
    mutating func null() { beforeValue(); literal("null") }
    /// Seconds with microsecond precision, without trailing zeros.
    mutating func seconds(_ micros: Int64) { beforeValue(); Self.seconds(micros, scale: 1_000_000, into: &bytes) }
    mutating func double(_ v: Double, places: Int = 3) {
        beforeValue()
        guard v.isFinite, abs(v) < 1e15 else { literal("null"); return }
        let scale = pow10(places)
        let scaled = (v * Double(scale)).rounded()
        Self.seconds(Int64(scaled), scale: scale, into: &bytes)
    }

    private mutating func literal(_ s: StaticString) { s.withUTF8Buffer { bytes.append(contentsOf: $0) } }

    private func pow10(_ n: Int) -> Int64 { (0..<n).reduce(1) { a, _ in a * 10 } }

    mutating func field(_ k: String, _ s: String?) { key(k); if let s { string(s) } else { null() } }
    mutating func field(_ k: String, _ v: Int?) { key(k); if let v { int(v) } else { null() } }
    mutating func field(_ k: String, _ v: Bool) { key(k); bool(v) }
    mutating func field(_ k: String, seconds v: Int64?) { key(k); if let v { seconds(v) } else { null() } }

    /// `v` in decimal, digit by digit (no String made).
    static func decimal(_ v: Int, into out: inout [UInt8]) {
        if v < 0 { out.append(UInt8(ascii: "-")) }
        unsignedDecimal(v.magnitude, into: &out)
    }

    static func unsignedDecimal(_ v: UInt, into out: inout [UInt8]) {
        if v < 10 { out.append(UInt8(48 + v)); return }
        var n = v
        var digits = 0
        var probe = v
        while probe > 0 { digits += 1; probe /= 10 }
        let end = out.count + digits
        out.append(contentsOf: repeatElement(0, count: digits))
        var i = end - 1
        while n > 0 {
            out[i] = UInt8(48 + n % 10)
            n /= 10
            i -= 1
        }
    }

    /// `micros / scale` as a decimal number: exact, no floating point, no trailing zeros.
    static func seconds(_ value: Int64, scale: Int64 = 1_000_000) -> String {
        var out: [UInt8] = []
        seconds(value, scale: scale, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static func seconds(_ value: Int64, scale: Int64, into out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        let m = value.magnitude
        let s = UInt64(scale)
        unsignedDecimal(UInt(m / s), into: &out)
        var frac = m % s
        guard frac != 0 else { return }
        out.append(UInt8(ascii: "."))
        // The fraction's digits, left-padded to the scale's width, trailing zeros dropped.
        var divisor = s / 10
        while frac != 0 {
            out.append(UInt8(48 + frac / divisor))
            frac %= divisor
            divisor /= 10
        }
    }

    static func quote(_ s: String) -> String { JSONString.quote(s, forHTML: true) }
}

/// A JSON string literal. `forHTML` also escapes `<`, DEL and U+2028/U+2029, so the JSON can sit
/// inside an HTML script element and be read as JavaScript source.
public enum JSONString {
    /// The string as a JSON string literal. Works on the UTF-8 bytes: most strings need no
    /// escape and are copied whole (walking Unicode scalars was a fifth of `timeline --format json`).
    /// `forHTML` also escapes `<`, DEL, U+2028 and U+2029, for JSON inside a <script>.
    public static func quote(_ s: String, forHTML: Bool = false) -> String {
        var out: [UInt8] = []
        append(s, forHTML: forHTML, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `quote` appended to `text`: a string that needs no escape is appended as it is, with no
    /// string made in between.
    public static func append(_ s: String, forHTML: Bool = false, to text: inout String) {
        var out: [UInt8] = []
        append(s, forHTML: forHTML, to: &out)
        text += String(decoding: out, as: UTF8.self)
    }

    /// `quote`'s bytes appended to `out` (the JSON writer's document).
    static func append(_ s: String, forHTML: Bool = false, to out: inout [UInt8]) {
        var s = s
        out.append(0x22)
        s.withUTF8 { bytes in
            if needsEscape(bytes, forHTML: forHTML) { escape(bytes, forHTML: forHTML, into: &out) } else { out.append(contentsOf: bytes) }
        }
        out.append(0x22)
    }

    /// Whether any byte needs an escape (most strings have none and are copied whole).
    @inline(__always)
    static func needsEscape(_ bytes: UnsafeBufferPointer<UInt8>, forHTML: Bool) -> Bool {
        if !forHTML { return needsPlainEscape(bytes) }
        return bytes.contains { b in b < 0x20 || b == 0x22 || b == 0x5C || b == 0x3C || b == 0x7F || b == 0xE2 }
    }

    /// Whether any byte is a control character, a quote or a backslash: eight bytes at a time
    /// (decode's JSON Lines check every string they write). A lane's high bit is set by
    /// `x - 0x01…` where x is below the bound; such a borrow can only flag lanes above a lane
    /// that truly matches, so "any lane" is exact.
    static func needsPlainEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let p = bytes.baseAddress else { return false }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var i = 0
        while i + 8 <= bytes.count {
            let x = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
            let control = (x &- ones &* 0x20) & ~x & highs
            let quote = ((x ^ (ones &* 0x22)) &- ones) & ~(x ^ (ones &* 0x22)) & highs
            let backslash = ((x ^ (ones &* 0x5C)) &- ones) & ~(x ^ (ones &* 0x5C)) & highs
            if control | quote | backslash != 0 { return true }
            i += 8
        }
        while i < bytes.count {
            let b = p[i]
            if b < 0x20 || b == 0x22 || b == 0x5C { return true }
            i += 1
        }
        return false
    }

    /// The bytes of a string literal's inside, escaped, appended to `out`: the one escaper of the
    /// JSON writer and of `BufferedOutput.jsonString` (JSON Lines).
    static func escape(_ bytes: UnsafeBufferPointer<UInt8>, forHTML: Bool, into out: inout [UInt8]) {
        func escape(_ text: StaticString) { text.withUTF8Buffer { out.append(contentsOf: $0) } }
        func unicode(_ value: UInt32) {
            escape("\\u")
            for shift in stride(from: 12, through: 0, by: -4) { out.append(BufferedOutput.hexDigits[Int((value >> UInt32(shift)) & 0xF)]) }
        }
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            switch b {
            case 0x22: escape("\\\"")
            case 0x5C: escape("\\\\")
            case 0x0A: escape("\\n")
            case 0x0D: escape("\\r")
            case 0x09: escape("\\t")
            case 0x3C where forHTML: escape("\\u003c")
            case 0xE2 where forHTML && i + 2 < bytes.count && bytes[i + 1] == 0x80 && (bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9):
                unicode(bytes[i + 2] == 0xA8 ? 0x2028 : 0x2029)
                i += 3
                continue
            default:
                if b < 0x20 || (forHTML && b == 0x7F) { unicode(UInt32(b)) } else { out.append(b) }
            }
            i += 1
        }
    }
}
