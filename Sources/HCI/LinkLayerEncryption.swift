import _CryptoExtras
import Capture
import Crypto

/// LE link-layer encryption (Core Vol 6 Part B 5.1.3, Part E 1-2): the session key from the LTK
/// and the diversifiers of LL_ENC_REQ/LL_ENC_RSP, and AES-CCM as the link layer runs it: a
/// 13-byte nonce (39-bit packet counter, direction bit, IVm || IVs), one byte of additional data
/// (the header's first byte with NESN, SN and MD cleared) and a 4-byte MIC.
///
/// Byte orders: the LTK is written most significant octet first, as the specification's sample
/// data and most tools print it; SKDm, SKDs, IVm and IVs are taken as they travel on air (least
/// significant octet first), straight out of the LL control PDUs.
public struct LinkLayerCipher {
    private let key: SymmetricKey
    /// IVm || IVs as on air.
    private let iv: [UInt8]

    /// SK = e(LTK, SKD), SKD = SKDs || SKDm as a 128-bit number (SKDm the least significant half).
    /// Nil for inputs of the wrong size.
    public static func sessionKey(ltk: [UInt8], skdm: [UInt8], skds: [UInt8]) -> [UInt8]? {
        guard ltk.count == 16, skdm.count == 8, skds.count == 8 else { return nil }
        var block = Array((skdm + skds).reversed())
        guard (try? AES.permute(&block, key: SymmetricKey(data: ltk))) != nil else { return nil }
        return block
    }

    /// A cipher from a session key (most significant octet first, as `sessionKey` returns it)
    /// and IVm, IVs as on air.
    public init?(sessionKey: [UInt8], ivm: [UInt8], ivs: [UInt8]) {
        guard sessionKey.count == 16, ivm.count == 4, ivs.count == 4 else { return nil }
        key = SymmetricKey(data: sessionKey)
        iv = ivm + ivs
    }

    /// The LTK's session for one encryption start: nil for inputs of the wrong size.
    public init?(ltk: [UInt8], skdm: [UInt8], ivm: [UInt8], skds: [UInt8], ivs: [UInt8]) {
        guard let sk = Self.sessionKey(ltk: ltk, skdm: skdm, skds: skds) else { return nil }
        self.init(sessionKey: sk, ivm: ivm, ivs: ivs)
    }

    /// The MIC's size: what an encrypted PDU carries beyond its plaintext.
    public static let micSize = 4

    /// Encrypts a PDU's payload: the ciphertext followed by the MIC. `header` is the LL
    /// header's first byte (masked here); `counter` the packet counter of its direction.
    public func encrypt(_ plaintext: [UInt8], header: UInt8, counter: UInt64, centralToPeripheral: Bool) -> [UInt8] {
        let nonce = nonce(counter: counter, centralToPeripheral: centralToPeripheral)
        let mic = tag(plaintext, header: header, nonce: nonce)
        return crypt(plaintext, nonce: nonce) + mic
    }

    /// Decrypts a PDU's payload (ciphertext and MIC) into `out`: the plaintext's size when the
    /// MIC verifies, nil when it does not or the payload is too short to hold one.
    public func decrypt(_ payload: UnsafeRawBufferPointer, header: UInt8, counter: UInt64, centralToPeripheral: Bool,
                        into out: UnsafeMutableRawBufferPointer) -> Int? {
        let n = payload.count - Self.micSize
        guard n >= 0, n <= out.count else { return nil }
        let nonce = nonce(counter: counter, centralToPeripheral: centralToPeripheral)
        let plaintext = crypt(Array(payload[0..<n]), nonce: nonce)
        let mic = tag(plaintext, header: header, nonce: nonce)
        // Compared in full (no early exit): the MIC is all that tells a right key from a wrong one.
        var difference: UInt8 = 0
        for i in 0..<Self.micSize { difference |= mic[i] ^ payload[n + i] }
        guard difference == 0 else { return nil }
        for i in 0..<n { out[i] = plaintext[i] }
        return n
    }

    // MARK: CCM (RFC 3610 with M = 4, L = 2)

    private func nonce(counter: UInt64, centralToPeripheral: Bool) -> [UInt8] {
        var n = [UInt8](repeating: 0, count: 13)
        for i in 0..<5 { n[i] = UInt8(truncatingIfNeeded: counter >> (8 * UInt64(i))) }
        n[4] &= 0x7F
        if centralToPeripheral { n[4] |= 0x80 }
        n.replaceSubrange(5..<13, with: iv)
        return n
    }

    private func block(_ b: inout [UInt8]) {
        // The key is 16 bytes and the block 16 bytes: permute cannot fail.
        try? AES.permute(&b, key: key)
    }

    /// Counter-mode keystream from A_1 on, XORed over `data`.
    private func crypt(_ data: [UInt8], nonce: [UInt8]) -> [UInt8] {
        var out = data
        var i = 0
        var counter: UInt16 = 1
        while i < data.count {
            var a = [0x01] + nonce + [UInt8(counter >> 8), UInt8(counter & 0xFF)]
            block(&a)
            for j in 0..<min(16, data.count - i) { out[i + j] ^= a[j] }
            i += 16
            counter &+= 1
        }
        return out
    }

    /// The 4-byte MIC: CBC-MAC over B_0, the additional data and the plaintext, XORed with S_0.
    private func tag(_ plaintext: [UInt8], header: UInt8, nonce: [UInt8]) -> [UInt8] {
        // Flags: Adata, M' = (4 - 2) / 2, L' = 2 - 1.
        var x = [0x49] + nonce + [UInt8(plaintext.count >> 8), UInt8(plaintext.count & 0xFF)]
        block(&x)
        var aad = [UInt8](repeating: 0, count: 16)
        aad[1] = 1
        aad[2] = header & 0xE3
        for j in 0..<16 { x[j] ^= aad[j] }
        block(&x)
        var i = 0
        while i < plaintext.count {
            for j in 0..<min(16, plaintext.count - i) { x[j] ^= plaintext[i + j] }
            block(&x)
            i += 16
        }
        var s0 = [0x01] + nonce + [0, 0]
        block(&s0)
        return (0..<Self.micSize).map { x[$0] ^ s0[$0] }
    }
}

/// A long-term key to decrypt sniffed links with: for the device of `address` (central or
/// peripheral), or for any link when nil.
public struct LinkLayerKey: Sendable, Hashable {
    public var address: BDAddr?
    public var ltk: Secret

    public init(address: BDAddr? = nil, ltk: Secret) {
        self.address = address
        self.ltk = ltk
    }

    /// 32 hex digits (colons, spaces and a 0x prefix allowed), most significant octet first.
    public static func parseLTK(_ text: Substring) -> Secret? {
        var t = text.lowercased().filter { !$0.isWhitespace && $0 != ":" && $0 != "-" }
        if t.hasPrefix("0x") { t.removeFirst(2) }
        guard t.count == 32 else { return nil }
        var bytes: [UInt8] = []
        var i = t.startIndex
        while i < t.endIndex {
            let j = t.index(i, offsetBy: 2)
            guard let b = UInt8(t[i..<j], radix: 16) else { return nil }
            bytes.append(b)
            i = j
        }
        return Secret(bytes, label: "LTK")
    }

    /// One line of an LTK file: `LTK` or `ADDRESS LTK`; `#` starts a comment. `.success(nil)`
    /// for a blank or comment line; the failure says what is wrong without repeating the key.
    public static func parse(line: Substring) -> Result<LinkLayerKey?, ParseError> {
        let content = line.prefix { $0 != "#" }
        let words = content.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," || $0 == "\r" })
        switch words.count {
        case 0:
            return .success(nil)
        case 1:
            guard let ltk = parseLTK(words[0]) else { return .failure(.badKey) }
            return .success(LinkLayerKey(ltk: ltk))
        case 2:
            guard let address = BDAddr(string: String(words[0])) else { return .failure(.badAddress) }
            guard let ltk = parseLTK(words[1]) else { return .failure(.badKey) }
            return .success(LinkLayerKey(address: address, ltk: ltk))
        default:
            return .failure(.tooManyWords)
        }
    }

    public enum ParseError: Error, Sendable, CustomStringConvertible {
        case badKey, badAddress, tooManyWords
        public var description: String {
            switch self {
            case .badKey: "an LTK is 32 hex digits (16 bytes, most significant first)"
            case .badAddress: "the address is six hex pairs with colons, like C0:FF:EE:00:11:22"
            case .tooManyWords: "a line is `LTK` or `ADDRESS LTK`"
            }
        }
    }
}
