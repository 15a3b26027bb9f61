import _CryptoExtras
import Capture
import Crypto

/// LE legacy pairing's key functions (Core Vol 3 Part H 2.2.3-2.2.4) and the recovery of its
/// temporary key from a sniffed pairing, as crackle does: the TK is 0 (Just Works) or a passkey
/// of at most 999999, so trying each against the central's confirm value finds it, and with it
/// the STK that encrypts the rest of the pairing (where the LTK is distributed).
///
/// Byte order: every value here is as SMP carries it on air, least significant octet first
/// (the TK too); the specification's numbers are most significant first, hence the reversals.
public enum LegacyPairing {
    /// The largest passkey: the TK of passkey entry is a number of 6 decimal digits.
    public static let maxPasskey: UInt32 = 999_999

    /// The TK of a passkey (Just Works: 0), least significant octet first.
    public static func tk(passkey: UInt32) -> [UInt8] {
        [UInt8(passkey & 0xFF), UInt8(passkey >> 8 & 0xFF), UInt8(passkey >> 16 & 0xFF)] + [UInt8](repeating: 0, count: 13)
    }

    /// The security function e: AES-128 of `block` under `key`, both least significant octet first.
    static func e(_ key: [UInt8], _ block: [UInt8]) -> [UInt8] {
        var b = Array(block.reversed())
        // 16-byte key and block: permute cannot fail.
        try? AES.permute(&b, key: SymmetricKey(data: key.reversed()))
        return b.reversed()
    }

    /// c1 (2.2.3): the confirm value of random `r`. `preq`/`pres` are the 7 bytes of the Pairing
    /// Request/Response PDUs (code first); `iat`/`rat` the address types (0 public, 1 random) of the
    /// initiator and responder, `ia`/`ra` their addresses as on air.
    public static func c1(tk: [UInt8], r: [UInt8], preq: [UInt8], pres: [UInt8], iat: UInt8, rat: UInt8,
                          ia: [UInt8], ra: [UInt8]) -> [UInt8]? {
        guard tk.count == 16, r.count == 16, preq.count == 7, pres.count == 7, ia.count == 6, ra.count == 6 else { return nil }
        // p1 = pres || preq || rat' || iat' and p2 = padding || ia || ra, least significant octet first.
        let p1 = [iat & 1, rat & 1] + preq + pres
        let p2 = ra + ia + [0, 0, 0, 0]
        let first = e(tk, zip(r, p1).map { $0 ^ $1 })
        return e(tk, zip(first, p2).map { $0 ^ $1 })
    }

    /// s1 (2.2.4): the STK from the responder's random `r1` (Srand) and the initiator's `r2`
    /// (Mrand): e(TK, r1' || r2'), the less significant halves.
    public static func s1(tk: [UInt8], r1: [UInt8], r2: [UInt8]) -> [UInt8]? {
        guard tk.count == 16, r1.count == 16, r2.count == 16 else { return nil }
        return e(tk, Array(r2[0..<8]) + Array(r1[0..<8]))
    }

    /// The passkey whose TK makes `confirm` the confirm value of `r`, trying 0 (Just Works)
    /// first, then every passkey up to `maxPasskey`: at most 1,000,000 c1 evaluations.
    public static func findPasskey(confirm: [UInt8], r: [UInt8], preq: [UInt8], pres: [UInt8], iat: UInt8, rat: UInt8,
                                   ia: [UInt8], ra: [UInt8]) -> UInt32? {
        guard confirm.count == 16, r.count == 16, preq.count == 7, pres.count == 7, ia.count == 6, ra.count == 6 else { return nil }
        let p1 = [iat & 1, rat & 1] + preq + pres
        let p2 = ra + ia + [0, 0, 0, 0]
        // The same block for every candidate key: computed once, most significant octet first.
        let firstBlock = PasskeySearchAES.words(Array(zip(r, p1).map { $0 ^ $1 }.reversed()))
        let want = PasskeySearchAES.words(Array(confirm.reversed()))
        let p2be = PasskeySearchAES.words(Array(p2.reversed()))
        let aes = PasskeySearchAES()
        for passkey in 0...maxPasskey {
            // The TK, most significant octet first, is twelve zeros and the passkey's three octets.
            aes.setKey(0, 0, 0, passkey)
            let first = aes.encrypt(firstBlock.0, firstBlock.1, firstBlock.2, firstBlock.3)
            let confirmed = aes.encrypt(first.0 ^ p2be.0, first.1 ^ p2be.1, first.2 ^ p2be.2, first.3 ^ p2be.3)
            // Found: checked once more with swift-crypto (c1), which the rest of the pairing uses.
            if confirmed == want, c1(tk: tk(passkey: passkey), r: r, preq: preq, pres: pres, iat: iat, rat: rat, ia: ia, ra: ra) == confirm {
                return passkey
            }
        }
        return nil
    }
}
