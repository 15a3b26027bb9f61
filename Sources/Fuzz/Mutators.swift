import Profiles

/// Generic mutations, as every byte-level fuzzer has them: bit and byte flips, inserts, deletes,
/// splices with another input, interesting integers, and length fields pushed to their
/// boundaries.
public enum GenericMutator {
    static let interesting8: [UInt8] = [0, 1, 2, 3, 7, 8, 9, 16, 20, 22, 23, 31, 32, 33, 63, 64, 65, 100, 101, 127, 128, 255]
    static let interesting16: [UInt16] = [0, 1, 22, 23, 24, 185, 244, 247, 251, 255, 256, 512, 513, 514, 517, 1024, 0x7FFF, 0x8000, 0xFFFF]

    public static func mutate(_ data: inout [UInt8], _ r: inout FuzzRandom, maxLength: Int, other: [UInt8]? = nil) {
        let rounds = 1 + r.below(4)
        for _ in 0..<rounds {
            switch r.below(10) {
            case 0 where !data.isEmpty:  // bit flip
                let i = r.below(data.count)
                data[i] ^= 1 << UInt8(r.below(8))
            case 1 where !data.isEmpty:  // byte set
                data[r.below(data.count)] = r.byte()
            case 2 where data.count < maxLength:  // insert bytes
                let n = 1 + r.below(min(8, maxLength - data.count))
                let at = r.below(data.count + 1)
                data.insert(contentsOf: (0..<n).map { _ in r.byte() }, at: at)
            case 3 where !data.isEmpty:  // delete a run
                let at = r.below(data.count)
                data.removeSubrange(at..<min(data.count, at + 1 + r.below(8)))
            case 4 where !data.isEmpty:  // interesting 8-bit
                data[r.below(data.count)] = r.pick(interesting8) ?? 0
            case 5 where data.count >= 2:  // interesting 16-bit, either byte order
                let v = r.pick(interesting16) ?? 0
                let at = r.below(data.count - 1)
                let little = r.chance(50)
                data[at] = UInt8(truncatingIfNeeded: little ? v : v >> 8)
                data[at + 1] = UInt8(truncatingIfNeeded: little ? v >> 8 : v)
            case 6 where !data.isEmpty:  // a length byte set to the bytes that follow it, +-1
                let at = r.below(data.count)
                let rest = data.count - at - 1
                data[at] = UInt8(clamping: max(0, rest + r.below(3) - 1))
            case 7:  // splice with another input
                if let other, !other.isEmpty {
                    let cut = r.below(data.count + 1)
                    let from = r.below(other.count)
                    data = Array(data.prefix(cut)) + other[from...]
                }
            case 8 where data.count > 1:  // duplicate a run
                let at = r.below(data.count)
                let run = data[at..<min(data.count, at + 1 + r.below(16))]
                data.insert(contentsOf: run, at: r.below(data.count + 1))
            default:  // truncate
                if !data.isEmpty { data.removeLast(r.below(min(4, data.count)) + 1) }
            }
        }
        if data.count > maxLength { data.removeLast(data.count - maxLength) }
    }
}

/// Mutations that know structures several protocols share: Wi-Fi credentials (SSID, NUL,
/// password), protobuf fields, lengths at the MTU boundaries. Each protocol's own mutators are
/// in its `FuzzableProtocol` conformance (Sources/Protocols/<Name>/<Name>+Fuzz.swift).
public enum ProtocolMutators {
    /// MTU boundaries: MTU-3 (a full write), MTU-5 (a full Prepare Write part) for the MTUs
    /// phones and stacks use.
    public static let mtus = [23, 185, 247, 517]
    public static var boundaryLengths: [Int] {
        mtus.flatMap { m in [m - 6, m - 5, m - 4, m - 3, m - 2] }
    }

    /// Credentials: SSIDs of 0, 1, 31, 32, 33 and 255 bytes; passwords of 0, 7, 8, 63, 64, 65
    /// bytes; missing and repeated NUL; invalid UTF-8; totals around 98, 512 and each MTU
    /// boundary.
    public static func credentials(_ data: inout [UInt8], _ r: inout FuzzRandom) {
        let nul = data.firstIndex(of: 0)
        var ssid = nul.map { Array(data[..<$0]) } ?? Array("HomeNet".utf8)
        var password = nul.map { Array(data[($0 + 1)...]) } ?? Array("correct horse".utf8)
        var separator: [UInt8] = [0]
        switch r.below(7) {
        case 0: ssid = filler(r.pick([0, 1, 31, 32, 33, 255]) ?? 32, &r)
        case 1: password = filler(r.pick([0, 7, 8, 63, 64, 65]) ?? 64, &r)
        case 2: separator = r.chance(50) ? [] : [0, 0]  // missing or repeated NUL
        case 3: ssid += r.pick([[0xC3], [0xFF, 0xFE], [0xED, 0xA0, 0x80], [0xE2, 0x80, 0xAE]]) ?? [0xFF]  // invalid UTF-8, bidi
        case 4:
            let total = (r.pick([97, 98, 99, 511, 512, 513] + boundaryLengths) ?? 98) - ssid.count - separator.count
            password = filler(max(0, total), &r)
        case 5: ssid = Array(data.prefix(r.below(40)))
        default: password.append(0)
        }
        data = ssid + separator + password
    }

    /// `n` letters, digits and separators, drawn at random.
    public static func filler(_ n: Int, _ r: inout FuzzRandom) -> [UInt8] {
        let letters = Array("abcdefghijklmnopqrstuvwxyz0123456789 -_".utf8)
        return (0..<n).map { _ in letters[r.below(letters.count)] }
    }

    /// Protobuf messages (nRF7, ESP-IDF), field-aware: wrong wire types, over-long length
    /// prefixes, unknown fields, repeated fields.
    public static func protobuf(_ data: inout [UInt8], _ r: inout FuzzRandom) {
        let fields = ProtoFields.split(data)
        guard !fields.isEmpty else {
            data = [0x08, r.byte()] + data
            return
        }
        var out = fields
        let i = r.below(fields.count)
        switch r.below(6) {
        case 0:  // wrong wire type
            out[i].key = (out[i].key & ~7) | UInt64(r.pick([0, 1, 2, 5, 3, 7]) ?? 2)
        case 1:  // over-long length prefix
            if out[i].key & 7 == 2 { out[i].lengthOverride = UInt64(out[i].body.count + 1 + r.below(1 << 20)) }
        case 2:  // unknown field
            out.insert(ProtoFields.Field(key: UInt64(100 + r.below(1000)) << 3 | 2, body: GenericMutator.interesting8.prefix(r.below(6)).map { $0 }), at: r.below(out.count + 1))
        case 3:  // repeated field
            out.insert(out[i], at: r.below(out.count + 1))
        case 4 where out[i].key & 7 == 2:  // mutate inside a nested message
            var inner = out[i].body
            protobuf(&inner, &r)
            out[i].body = inner
        default:
            out.remove(at: i)
        }
        data = ProtoFields.join(out)
    }
}

/// A flat view of protobuf fields, enough to mutate them (the codecs check the rest).
public enum ProtoFields {
    struct Field {
        var key: UInt64
        var body: [UInt8]
        var lengthOverride: UInt64? = nil
    }

    static func varint(_ b: [UInt8], _ i: inout Int) -> UInt64? { ProtoWire.readVarint(b, &i) }

    static func encodeVarint(_ v: UInt64) -> [UInt8] {
        var v = v, out: [UInt8] = []
        repeat {
            out.append(UInt8(v & 0x7F) | (v > 0x7F ? 0x80 : 0))
            v >>= 7
        } while v > 0
        return out
    }

    /// The fields of a message; empty when it does not split cleanly.
    static func split(_ b: [UInt8]) -> [Field] {
        var i = 0, out: [Field] = []
        while i < b.count {
            guard let key = varint(b, &i) else { return [] }
            let start = i
            switch key & 7 {
            case 0: guard varint(b, &i) != nil else { return [] }
            case 1: i += 8
            case 5: i += 4
            case 2:
                guard let n = varint(b, &i), n <= UInt64(b.count - i) else { return [] }
                out.append(Field(key: key, body: Array(b[i..<(i + Int(n))])))
                i += Int(n)
                continue
            default: return []
            }
            guard i <= b.count else { return [] }
            out.append(Field(key: key, body: Array(b[start..<i])))
        }
        return out
    }

    /// The bodies of the length-delimited fields numbered `field` of a message, in order; none
    /// when it does not split cleanly.
    public static func lengthDelimited(_ b: [UInt8], field: UInt64) -> [[UInt8]] {
        split(b).filter { $0.key == field << 3 | 2 }.map(\.body)
    }

    static func join(_ fields: [Field]) -> [UInt8] {
        var out: [UInt8] = []
        for f in fields {
            out += encodeVarint(f.key)
            if f.key & 7 == 2 { out += encodeVarint(f.lengthOverride ?? UInt64(f.body.count)) }
            out += f.body
        }
        return out
    }
}
