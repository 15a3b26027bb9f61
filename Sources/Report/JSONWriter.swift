/// A small streaming JSON writer: objects and arrays with the commas handled, strings escaped
/// (all control characters, and `<` so the output can sit inside an HTML script element).
struct JSONWriter {
    private(set) var text = ""
    /// Members written so far in each open object or array.
    private var counts: [Int] = []
    private var afterKey = false
    let pretty: Bool

    init(pretty: Bool = false) { self.pretty = pretty }

    private mutating func newItem() {
        guard !counts.isEmpty else { return }
        if counts[counts.count - 1] > 0 { text += "," }
        counts[counts.count - 1] += 1
        if pretty { text += "\n" + String(repeating: "  ", count: counts.count) }
    }

    mutating func key(_ k: String) {
        newItem()
        text += Self.quote(k) + (pretty ? ": " : ":")
        afterKey = true
    }

    private mutating func beforeValue() {
        if afterKey { afterKey = false } else { newItem() }
    }

    mutating func beginObject() { beforeValue(); text += "{"; counts.append(0) }
    mutating func endObject() { close("}") }
    mutating func beginArray() { beforeValue(); text += "["; counts.append(0) }
    mutating func endArray() { close("]") }

    private mutating func close(_ c: String) {
        let n = counts.removeLast()
        if pretty, n > 0 { text += "\n" + String(repeating: "  ", count: counts.count) }
        text += c
    }

    mutating func string(_ s: String) { beforeValue(); text += Self.quote(s) }
    mutating func int(_ v: Int) { beforeValue(); text += String(v) }
    mutating func bool(_ v: Bool) { beforeValue(); text += v ? "true" : "false" }
    mutating func null() { beforeValue(); text += "null" }
    /// Seconds with microsecond precision, without trailing zeros.
    mutating func seconds(_ micros: Int64) { beforeValue(); text += Self.seconds(micros) }
    mutating func double(_ v: Double, places: Int = 3) {
        beforeValue()
        guard v.isFinite, abs(v) < 1e15 else { text += "null"; return }
        let scale = pow10(places)
        let scaled = (v * Double(scale)).rounded()
        text += Self.seconds(Int64(scaled), scale: scale)
    }

    private func pow10(_ n: Int) -> Int64 { (0..<n).reduce(1) { a, _ in a * 10 } }

    mutating func field(_ k: String, _ s: String?) { key(k); if let s { string(s) } else { null() } }
    mutating func field(_ k: String, _ v: Int?) { key(k); if let v { int(v) } else { null() } }
    mutating func field(_ k: String, _ v: Bool) { key(k); bool(v) }
    mutating func field(_ k: String, seconds v: Int64?) { key(k); if let v { seconds(v) } else { null() } }

    /// `micros / scale` as a decimal number: exact, no floating point.
    static func seconds(_ value: Int64, scale: Int64 = 1_000_000) -> String {
        let negative = value < 0
        let m = value.magnitude
        let s = UInt64(scale)
        var out = String(m / s)
        var frac = m % s
        if frac != 0 {
            var digits = String(frac)
            let width = String(s).count - 1
            digits = String(repeating: "0", count: width - digits.count) + digits
            while digits.hasSuffix("0") { digits.removeLast() }
            out += "." + digits
            frac = 0
        }
        return negative ? "-" + out : out
    }

    static func quote(_ s: String) -> String { JSONString.quote(s, forHTML: true) }
}

/// A JSON string literal. `forHTML` also escapes `<`, DEL and U+2028/U+2029, so the JSON can sit
/// inside an HTML script element and be read as JavaScript source.
public enum JSONString {
    public static func quote(_ s: String, forHTML: Bool = false) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "<" where forHTML: out += "\\u003c"
            default:
                if u.value < 0x20 || (forHTML && (u.value == 0x7F || u.value == 0x2028 || u.value == 0x2029)) {
                    let hex = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}
