import Crypto
import TestSupport
import XCTest
import _CryptoExtras

@testable import HCI

/// LE legacy pairing's c1 and s1 against the specification's sample data (Core Vol 3 Part H
/// 2.2.3, 2.2.4; numbers there are most significant octet first, on air least significant first),
/// and the passkey search on a confirm value made with a known passkey.
final class LegacyPairingTests: XCTestCase {
    /// A number written most significant octet first, as on air (least significant first).
    func onAir(_ hex: String) -> [UInt8] {
        Array(stride(from: 0, to: hex.count, by: 2).map { i -> UInt8 in
            let a = hex.index(hex.startIndex, offsetBy: i)
            return UInt8(hex[a..<hex.index(a, offsetBy: 2)], radix: 16) ?? 0
        }.reversed())
    }

    let r = "5783D52156AD6F0E6388274EC6702EE0"
    var preq: [UInt8] { onAir("07071000000101") }
    var pres: [UInt8] { onAir("05000800000302") }
    var ia: [UInt8] { onAir("A1A2A3A4A5A6") }
    var ra: [UInt8] { onAir("B1B2B3B4B5B6") }

    func testC1SampleData() {
        let c1 = LegacyPairing.c1(tk: LegacyPairing.tk(passkey: 0), r: onAir(r), preq: preq, pres: pres, iat: 1, rat: 0, ia: ia, ra: ra)
        XCTAssertEqual(c1, onAir("1E1E3FEF878988EAD2A74DC5BEF13B86"))
        XCTAssertNil(LegacyPairing.c1(tk: [0], r: onAir(r), preq: preq, pres: pres, iat: 1, rat: 0, ia: ia, ra: ra), "wrong sizes")
    }

    func testS1SampleData() {
        let stk = LegacyPairing.s1(tk: LegacyPairing.tk(passkey: 0), r1: onAir("000F0E0D0C0B0A091122334455667788"),
                                   r2: onAir("010203040506070899AABBCCDDEEFF00"))
        XCTAssertEqual(stk, onAir("9A1FE1F0E8B0F49B5B4216AE796DA062"))
    }

    func testPasskeyIsFoundFromItsConfirmValue() throws {
        XCTAssertEqual(LegacyPairing.tk(passkey: 461_140).prefix(3), [0x54, 0x09, 0x07])
        for passkey: UInt32 in [0, 1234] {
            let confirm = try XCTUnwrap(LegacyPairing.c1(tk: LegacyPairing.tk(passkey: passkey), r: onAir(r), preq: preq, pres: pres,
                                                         iat: 1, rat: 0, ia: ia, ra: ra))
            XCTAssertEqual(LegacyPairing.findPasskey(confirm: confirm, r: onAir(r), preq: preq, pres: pres, iat: 1, rat: 0, ia: ia, ra: ra), passkey)
        }
    }

    /// The search's own AES-128 against FIPS-197's example (C.1) and swift-crypto on random keys
    /// and blocks; the passkey search on the largest passkey.
    func testSearchAESIsAES() throws {
        let aes = PasskeySearchAES()
        // FIPS-197 writes bytes in order: onAir reverses, so reverse back.
        func inOrder(_ hex: String) -> [UInt8] { onAir(hex).reversed() }
        XCTAssertEqual(aes.encrypt(block: inOrder("00112233445566778899aabbccddeeff"), key: inOrder("000102030405060708090a0b0c0d0e0f")),
                       inOrder("69c4e0d86a7b0430d8cdb78070b4c55a"))
        var rng = SplitMix(seed: 197)
        for _ in 0..<2_000 {
            let key = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var block = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let mine = aes.encrypt(block: block, key: key)
            try AES.permute(&block, key: SymmetricKey(data: key))
            XCTAssertEqual(mine, block, "key \(key)")
        }
        for passkey: UInt32 in [999_999, 65_793] {
            let confirm = try XCTUnwrap(LegacyPairing.c1(tk: LegacyPairing.tk(passkey: passkey), r: onAir(r), preq: preq, pres: pres,
                                                         iat: 1, rat: 0, ia: ia, ra: ra))
            XCTAssertEqual(LegacyPairing.findPasskey(confirm: confirm, r: onAir(r), preq: preq, pres: pres, iat: 1, rat: 0, ia: ia, ra: ra), passkey)
        }
    }
}
