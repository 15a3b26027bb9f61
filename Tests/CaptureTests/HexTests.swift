import TestSupport
import XCTest

@testable import Capture

/// `Hex.string` against the plain way of writing it (a scalar at a time, as it was written before
/// it wrote into the string's storage), for every kind of sequence it is given.
final class HexTests: XCTestCase {
    private func reference(_ bytes: [UInt8], _ separator: String) -> String {
        var out = ""
        for (i, b) in bytes.enumerated() {
            if i > 0 { out += separator }
            out += String(b >> 4, radix: 16) + String(b & 0xF, radix: 16)
        }
        return out
    }

    func testEverySequenceAndSeparator() {
        var rng = SplitMix(seed: 16)
        for separator in ["", ":", " ", ", ", "é"] {
            for n in [0, 1, 2, 7, 15, 16, 17, 100, 600] {
                let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let expected = reference(bytes, separator)
                XCTAssertEqual(Hex.string(bytes, separator: separator), expected)
                XCTAssertEqual(Hex.string(bytes.dropFirst(0), separator: separator), expected, "a slice")
                XCTAssertEqual(bytes.withUnsafeBytes { Hex.string($0, separator: separator) }, expected, "raw bytes")
                XCTAssertEqual(Hex.string(bytes.lazy.map { $0 }, separator: separator), expected, "no contiguous storage")
            }
        }
        XCTAssertEqual(Hex.string([0x00, 0xAB, 0xFF]), "00abff")
        XCTAssertEqual(Hex.string([0x0A, 0x1B], separator: ":"), "0a:1b")
    }
}
