import TestSupport
import CBlueZ
import XCTest

@testable import Capture
@testable import HCI

/// BDAddr against libbluetooth's own formatting and parsing (ba2str / str2ba).
final class BDAddrTests: XCTestCase {
    private func bluezString(_ littleEndian: [UInt8]) -> String {
        var ba = bdaddr_t()
        ba.b = (littleEndian[0], littleEndian[1], littleEndian[2], littleEndian[3], littleEndian[4], littleEndian[5])
        var out = [CChar](repeating: 0, count: 18)
        _ = ba2str(&ba, &out)
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// str2ba's bytes (little-endian, as bdaddr_t holds them), or nil when it rejects the text.
    private func bluezParse(_ text: String) -> [UInt8]? {
        var ba = bdaddr_t()
        let rc = str2ba(text, &ba)
        guard rc == 0 else { return nil }
        return [ba.b.0, ba.b.1, ba.b.2, ba.b.3, ba.b.4, ba.b.5]
    }

    func testKnownAnswer() {
        let le: [UInt8] = [0x66, 0x55, 0x44, 0x33, 0x22, 0x11]
        let a = le.withUnsafeBytes { BDAddr(littleEndian: $0, at: 0) }
        XCTAssertEqual(a.description, "11:22:33:44:55:66")
        XCTAssertEqual(a.array, [0x11, 0x22, 0x33, 0x44, 0x55, 0x66])
        XCTAssertEqual(bluezString(le), "11:22:33:44:55:66")
        XCTAssertEqual(BDAddr(string: "11:22:33:44:55:66"), a)
        XCTAssertEqual(BDAddr(string: "aa:bb:cc:dd:ee:ff")?.description, "AA:BB:CC:DD:EE:FF")
        // At an offset inside a larger buffer.
        let buffer: [UInt8] = [0xEE, 0xEE, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0xEE]
        XCTAssertEqual(buffer.withUnsafeBytes { BDAddr(littleEndian: $0, at: 2) }.description, "06:05:04:03:02:01")
    }

    func testFormattingMatchesBlueZ() {
        var rng = SplitMix(seed: 42)
        for i in 0..<2000 {
            var le = (0..<6).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if i < 2 { le = Array(repeating: i == 0 ? 0x00 : 0xFF, count: 6) }
            let ours = le.withUnsafeBytes { BDAddr(littleEndian: $0, at: 0) }
            let theirs = bluezString(le)
            XCTAssertEqual(ours.description, theirs)
            // Parsing back, either case, gives the same address, and the same bytes as str2ba.
            XCTAssertEqual(BDAddr(string: theirs), ours)
            XCTAssertEqual(BDAddr(string: theirs.lowercased()), ours)
            XCTAssertEqual(bluezParse(theirs), le)
            XCTAssertEqual(BDAddr(string: theirs)?.array.reversed(), bluezParse(theirs.lowercased()))
        }
    }

    func testEqualityAndHashing() {
        let a = BDAddr((1, 2, 3, 4, 5, 6)), b = BDAddr((1, 2, 3, 4, 5, 6)), c = BDAddr((1, 2, 3, 4, 5, 7))
        XCTAssertEqual(a, b)
        XCTAssertNotEqual(a, c)
        XCTAssertEqual(Set([a, b, c]).count, 2)
        // Compared and hashed as one number: addresses that differ in any one byte differ.
        var rng = SplitMix(seed: 6)
        for _ in 0..<2000 {
            let x = (0..<6).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var y = x
            let at = Int.random(in: 0..<6, using: &rng)
            y[at] ^= UInt8.random(in: 1...255, using: &rng)
            let ax = x.withUnsafeBytes { BDAddr(littleEndian: $0, at: 0) }
            let ay = y.withUnsafeBytes { BDAddr(littleEndian: $0, at: 0) }
            XCTAssertNotEqual(ax, ay)
            XCTAssertEqual(ax, x.withUnsafeBytes { BDAddr(littleEndian: $0, at: 0) })
            XCTAssertEqual(ax.hashValue, BDAddr(ax.bytes).hashValue)
            XCTAssertEqual(ax.isZero, x.allSatisfy { $0 == 0 })
        }
        XCTAssertTrue(BDAddr((0, 0, 0, 0, 0, 0)).isZero)
        XCTAssertFalse(BDAddr((0, 0, 0, 0, 0, 1)).isZero)
    }

    /// Texts both BlueZ and BDAddr reject.
    func testRejectsWhatBlueZRejects() {
        let bad = ["", "11:22:33:44:55", "11:22:33:44:55:66:77", "11-22-33-44-55-66", "112233445566",
                   "1:22:33:44:55:66", "111:22:33:44:55:66", "11:22:33:44:55:6G", "GG:22:33:44:55:66",
                   " 11:22:33:44:55:66", "11:22:33:44:55:66 ", "11:22:33:44:55: 6", "0x11:22:33:44:55"]
        for text in bad {
            XCTAssertNil(bluezParse(text), "BlueZ accepts \(text)")
            XCTAssertNil(BDAddr(string: text), "BDAddr accepts \(text)")
        }
    }

    func testRejectsNonCanonicalTexts() {
        for text in [":11:22:33:44:55:66", "11:22:33:44:55:66:", "11::22:33:44:55:66", "+1:22:33:44:55:66", "-0:22:33:44:55:66"] {
            XCTAssertNil(bluezParse(text), "BlueZ accepts \(text)")
            XCTAssertNil(BDAddr(string: text), "BDAddr accepts \(text)")
        }
    }
}
