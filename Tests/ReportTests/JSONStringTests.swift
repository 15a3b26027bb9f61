import Report
import XCTest

/// JSON string literals, byte for byte what the scalar-by-scalar quoting gave before it moved
/// to UTF-8 bytes (issue 20): every escape, plain text copied whole, multi-byte characters kept.
final class JSONStringTests: XCTestCase {
    /// The former implementation, kept here as the reference.
    static func reference(_ s: String, forHTML: Bool) -> String {
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

    func testEveryEscapeAsBefore() {
        let samples = ["", "plain", "Café Olé", "quote \" and \\ back", "line\nfeed\r\ttab", "\u{0}\u{1}\u{1F}\u{7F}",
                       "<script>", "\u{2028}\u{2029}", "e2 alone: \u{2030}\u{20AC}", "emoji 🛜 and 中文", "FRITZ!Box 7590 XY"]
        for s in samples {
            for html in [false, true] {
                XCTAssertEqual(JSONString.quote(s, forHTML: html), Self.reference(s, forHTML: html), "\(s.debugDescription) html \(html)")
            }
        }
        var rng = SeededGenerator(seed: 20)  // fixed: a failure names a string that comes back
        for _ in 0..<2000 {
            let scalars = (0..<Int.random(in: 0...12, using: &rng)).map { _ -> Character in
                let pick = [UInt32.random(in: 0...0x7F, using: &rng), UInt32.random(in: 0x80...0x3000, using: &rng), 0x2028, 0x2029, 0x1F6DC][Int.random(in: 0...4, using: &rng)]
                return Character(Unicode.Scalar(pick) ?? "?")
            }
            let s = String(scalars)
            for html in [false, true] { XCTAssertEqual(JSONString.quote(s, forHTML: html), Self.reference(s, forHTML: html), s.debugDescription) }
        }
    }
}

/// SplitMix64: random strings that are the same on every run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
