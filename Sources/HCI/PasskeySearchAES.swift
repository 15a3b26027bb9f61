/// AES-128 encryption of one block at a time, for the legacy-pairing passkey search only
/// (`LegacyPairing.findPasskey`). That search tries up to a million keys, two blocks each, and
/// swift-crypto's `AES.permute` expands the key and allocates on every call: 400-500 ns a
/// candidate (measured), half a second for a pairing whose passkey is not found (an out-of-band
/// TK), four for a capture of eight such pairings. Here a candidate's key is expanded once, into
/// a buffer the search reuses, for both blocks, with the usual 32-bit round tables (FIPS-197 5.1
/// and 5.2, the tables computed here from the S-box, which is computed from its definition in
/// 5.1.1).
///
/// It protects nothing (the search only compares the result with a value from the capture), so
/// its table lookups' timing does not matter; the passkey it finds is checked once more with
/// swift-crypto. A test holds it to swift-crypto on random keys and blocks and to FIPS-197's
/// vector.
struct PasskeySearchAES: ~Copyable {
    /// 44 round-key words, then four tables of 256 words, then the S-box widened to words.
    private let words: UnsafeMutablePointer<UInt32>
    private var roundKeys: UnsafeMutablePointer<UInt32> { words }
    private var tables: UnsafeMutablePointer<UInt32> { words + 44 }
    private var sbox: UnsafeMutablePointer<UInt32> { words + 44 + 4 * 256 }

    init() {
        words = .allocate(capacity: 44 + 5 * 256)
        words.initialize(repeating: 0, count: 44 + 5 * 256)
        // The S-box (5.1.1): the multiplicative inverse in GF(2^8), then the affine map. p runs
        // over the field's non-zero elements as powers of the generator 3 and q over their
        // inverses (powers of 3's inverse), so each step pairs an element with its inverse.
        var s = [UInt8](repeating: 0, count: 256)
        var p: UInt8 = 1, q: UInt8 = 1
        repeat {
            p ^= p << 1 ^ (p & 0x80 != 0 ? 0x1B : 0)
            q ^= q << 1
            q ^= q << 2
            q ^= q << 4
            if q & 0x80 != 0 { q ^= 0x09 }
            let rotations = q ^ (q << 1 | q >> 7) ^ (q << 2 | q >> 6) ^ (q << 3 | q >> 5) ^ (q << 4 | q >> 4)
            s[Int(p)] = rotations ^ 0x63
        } while p != 1
        s[0] = 0x63
        for x in 0..<256 {
            let v = UInt32(s[x])
            let twice = UInt32(Self.times2(s[x]))
            // SubBytes then MixColumns of one byte in the column's first row: (2s, s, s, 3s).
            let t0 = twice << 24 | v << 16 | v << 8 | (twice ^ v)
            tables[x] = t0
            tables[256 + x] = t0 >> 8 | t0 << 24
            tables[512 + x] = t0 >> 16 | t0 << 16
            tables[768 + x] = t0 >> 24 | t0 << 8
            sbox[x] = v
        }
    }

    deinit { words.deallocate() }

    @inline(__always)
    private static func times2(_ b: UInt8) -> UInt8 { b << 1 ^ (b & 0x80 != 0 ? 0x1B : 0) }

    /// Expands a key given as four big-endian words (its 16 bytes in order) (5.2).
    @inline(__always)
    func setKey(_ k0: UInt32, _ k1: UInt32, _ k2: UInt32, _ k3: UInt32) {
        let w = roundKeys, s = sbox
        w[0] = k0; w[1] = k1; w[2] = k2; w[3] = k3
        var rcon: UInt32 = 0x01
        var i = 4
        while i < 44 {
            let t = w[i - 1]
            // RotWord, SubWord, Rcon.
            let sub = s[Int(t >> 16 & 0xFF)] << 24 | s[Int(t >> 8 & 0xFF)] << 16 | s[Int(t & 0xFF)] << 8 | s[Int(t >> 24)]
            w[i] = w[i - 4] ^ sub ^ rcon << 24
            w[i + 1] = w[i - 3] ^ w[i]
            w[i + 2] = w[i - 2] ^ w[i + 1]
            w[i + 3] = w[i - 1] ^ w[i + 2]
            rcon = UInt32(Self.times2(UInt8(rcon)))
            i += 4
        }
    }

    /// Encrypts a block given as four big-endian words under the key last set.
    @inline(__always)
    func encrypt(_ b0: UInt32, _ b1: UInt32, _ b2: UInt32, _ b3: UInt32) -> (UInt32, UInt32, UInt32, UInt32) {
        let w = roundKeys, t = tables, s = sbox
        var s0 = b0 ^ w[0], s1 = b1 ^ w[1], s2 = b2 ^ w[2], s3 = b3 ^ w[3]
        @inline(__always) func column(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ k: UInt32) -> UInt32 {
            t[Int(a >> 24)] ^ t[256 + Int(b >> 16 & 0xFF)] ^ t[512 + Int(c >> 8 & 0xFF)] ^ t[768 + Int(d & 0xFF)] ^ k
        }
        var r = 4
        while r < 40 {
            let n0 = column(s0, s1, s2, s3, w[r])
            let n1 = column(s1, s2, s3, s0, w[r + 1])
            let n2 = column(s2, s3, s0, s1, w[r + 2])
            let n3 = column(s3, s0, s1, s2, w[r + 3])
            s0 = n0; s1 = n1; s2 = n2; s3 = n3
            r += 4
        }
        // The last round has no MixColumns.
        @inline(__always) func last(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ k: UInt32) -> UInt32 {
            (s[Int(a >> 24)] << 24 | s[Int(b >> 16 & 0xFF)] << 16 | s[Int(c >> 8 & 0xFF)] << 8 | s[Int(d & 0xFF)]) ^ k
        }
        return (last(s0, s1, s2, s3, w[40]), last(s1, s2, s3, s0, w[41]), last(s2, s3, s0, s1, w[42]), last(s3, s0, s1, s2, w[43]))
    }

    /// `encrypt` on 16 bytes in order (for tests and the one-off check).
    func encrypt(block: [UInt8], key: [UInt8]) -> [UInt8] {
        precondition(block.count == 16 && key.count == 16)
        let k = Self.words(key), b = Self.words(block)
        setKey(k.0, k.1, k.2, k.3)
        let c = encrypt(b.0, b.1, b.2, b.3)
        var out: [UInt8] = []
        for w in [c.0, c.1, c.2, c.3] {
            for shift: UInt32 in [24, 16, 8, 0] { out.append(UInt8(truncatingIfNeeded: w >> shift)) }
        }
        return out
    }

    /// 16 bytes as four big-endian words.
    static func words(_ bytes: [UInt8]) -> (UInt32, UInt32, UInt32, UInt32) {
        func word(_ i: Int) -> UInt32 {
            UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3])
        }
        return (word(0), word(4), word(8), word(12))
    }
}
