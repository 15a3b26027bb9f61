import Capture

/// The few protobuf wire-format operations the generated code does not offer: walking fields
/// to locate a structural error and to list or edit unknown fields, and writing a varint field.
/// Shared by the nRF7 and ESP-IDF decoders. Never traps: every length is checked.
public enum ProtoWire {
    public struct Field {
        public var number: Int
        public var wireType: Int
        /// The value of a varint field.
        public var varint: UInt64?
        /// Where the whole field (tag included) lies in the bytes.
        public var range: Range<Int>
    }

    /// Reads a varint at `i`, advancing it; nil if it runs off the end or exceeds 10 bytes.
    public static func readVarint(_ b: [UInt8], _ i: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while i < b.count, shift < 70 {
            let byte = b[i]
            i += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }

    /// The top-level fields of a message, or where and why its structure is broken.
    public static func fields(_ b: [UInt8]) -> Swift.Result<[Field], WireError> {
        var out: [Field] = []
        var i = 0
        while i < b.count {
            let start = i
            guard let tag = readVarint(b, &i) else { return .failure(.init(offset: start, reason: "truncated tag")) }
            let number = Int(truncatingIfNeeded: tag >> 3), wire = Int(tag & 7)
            guard number > 0, number <= 0x1FFF_FFFF else { return .failure(.init(offset: start, reason: "field number \(tag >> 3)")) }
            var varint: UInt64?
            switch wire {
            case 0:
                guard let v = readVarint(b, &i) else { return .failure(.init(offset: start, reason: "truncated varint in field \(number)")) }
                varint = v
            case 1, 5:
                let n = wire == 1 ? 8 : 4
                guard b.count - i >= n else { return .failure(.init(offset: start, reason: "truncated fixed\(n * 8) in field \(number)")) }
                i += n
            case 2:
                let lengthAt = i
                guard let len = readVarint(b, &i) else { return .failure(.init(offset: lengthAt, reason: "truncated length of field \(number)")) }
                guard len <= UInt64(b.count - i) else {
                    return .failure(.init(offset: lengthAt, reason: "field \(number) claims \(len) bytes, \(b.count - i) remain"))
                }
                i += Int(len)
            default:
                // Groups (3, 4) are not used by these protocols; 6 and 7 do not exist.
                return .failure(.init(offset: start, reason: "wire type \(wire) in field \(number)"))
            }
            out.append(Field(number: number, wireType: wire, varint: varint, range: start..<i))
        }
        return .success(out)
    }

    /// Where the content of the length-delimited field at `path` lies (field numbers from the
    /// outer message in), the last occurrence at each level as protobuf merges them; nil when
    /// absent or when the structure is broken. Redaction locates passphrases with it.
    public static func bytesField(_ path: [Int], in b: [UInt8]) -> Range<Int>? {
        var window = 0..<b.count
        for number in path {
            guard let list = try? fields(Array(b[window])).get(),
                  let f = list.last(where: { $0.number == number && $0.wireType == 2 }) else { return nil }
            var i = window.lowerBound + f.range.lowerBound
            guard readVarint(b, &i) != nil, readVarint(b, &i) != nil else { return nil }
            window = i..<(window.lowerBound + f.range.upperBound)
        }
        return window
    }

    public struct WireError: Error, CustomStringConvertible {
        public var offset: Int
        public var reason: String
        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// The field numbers in a block of unknown fields (from a generated message's `unknownFields`).
    public static func numbers(_ unknown: [UInt8]) -> [Int] {
        (try? fields(unknown).get())?.map(\.number) ?? []
    }

    /// Removes every varint occurrence of field `number` from `unknown` and returns the last
    /// one's value as an enum number (how proto2 parsers keep unknown values of closed enums).
    public static func takeEnum(_ number: Int, from unknown: inout [UInt8]) -> Int? {
        guard let list = try? fields(unknown).get() else { return nil }
        var value: Int?
        var kept: [UInt8] = []
        for f in list {
            if f.number == number, f.wireType == 0, let v = f.varint {
                value = Int(Int32(truncatingIfNeeded: v))
            } else {
                kept += unknown[f.range]
            }
        }
        if value != nil { unknown = kept }
        return value
    }

    public static func varint(_ v: UInt64) -> [UInt8] {
        var v = v
        var out: [UInt8] = []
        while v >= 0x80 {
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
        return out
    }

    /// An enum field as bytes (negative numbers sign-extended to ten bytes, as protobuf does).
    public static func enumField(_ number: Int, _ raw: Int) -> [UInt8] {
        varint(UInt64(number << 3)) + varint(UInt64(bitPattern: Int64(raw)))
    }
}

extension Array where Element == UInt8 {
    /// `AA:BB:CC:DD:EE:FF`.
    public var macText: String { map { Hex.string([$0]).uppercased() }.joined(separator: ":") }
}

