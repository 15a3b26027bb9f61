/// The LE link layer's 24-bit CRC (Core 5.4 Vol 6 Part B 3.1.1): polynomial
/// x^24 + x^10 + x^9 + x^6 + x^4 + x^3 + x + 1, bits fed least significant first.
///
/// Redaction changes bytes of sniffed packets; their CRC must change with them or every reader
/// would call them damaged. The CRC is linear, so the new one is the old one XOR the CRC (from a
/// zero preset) of the change: the connection's CRCInit is never needed.
enum LinkLayerCRC {
    /// The CRC register after `bytes`, from `preset`, as the spec's LFSR computes it.
    static func compute(_ bytes: some Sequence<UInt8>, preset: UInt32) -> UInt32 {
        var state = preset & 0xFF_FFFF
        for byte in bytes {
            var b = byte
            for _ in 0..<8 {
                let feedback = (state >> 23 ^ UInt32(b)) & 1
                state = (state << 1) & 0xFF_FFFF
                if feedback == 1 { state ^= 0x00_065B }
                b >>= 1
            }
        }
        return state
    }

    /// How a capture stores the 3 CRC bytes. Sniffers mostly write the register little end
    /// first; some write each byte bit-reversed (the order bits go on the air). Measured on the
    /// real captures: nRF Sniffer files hold both, depending on who transmitted the packet.
    enum Layout: CaseIterable {
        case littleEndian, bitReversed

        func bytes(_ crc: UInt32) -> [UInt8] {
            let le = [UInt8(crc & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8((crc >> 16) & 0xFF)]
            switch self {
            case .littleEndian: return le
            case .bitReversed: return le.reversed().map(Self.reverseBits)
            }
        }

        static func reverseBits(_ b: UInt8) -> UInt8 {
            var v: UInt8 = 0
            for i in 0..<8 where b & (1 << i) != 0 { v |= 0x80 >> i }
            return v
        }
    }

    /// The layout in which `stored` is the CRC of `pdu` from `preset`, nil when neither is (a bad
    /// CRC, or an unknown preset).
    static func layout(of stored: [UInt8], pdu: [UInt8], preset: UInt32) -> Layout? {
        let crc = compute(pdu, preset: preset)
        return Layout.allCases.first { $0.bytes(crc) == stored }
    }

    /// The CRC bytes of a packet whose PDU changed from `old` to `new` (same length): the stored
    /// CRC with the change's CRC folded in, in the stored layout. A CRC that was wrong stays
    /// wrong the same way.
    static func updated(stored: [UInt8], old: [UInt8], new: [UInt8], layout: Layout) -> [UInt8] {
        let delta = zip(old, new).map { $0 ^ $1 }
        let change = layout.bytes(compute(delta, preset: 0))
        return zip(stored, change).map { $0 ^ $1 }
    }
}
