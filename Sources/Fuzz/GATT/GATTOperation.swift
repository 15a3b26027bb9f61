/// One step of a black-box input. Operations aim at the target's discovered table by index
/// (its characteristics and descriptors in handle order), not by handle, so an input means the
/// same on every device whose table was discovered, and the protocol's structures are found by
/// UUID wherever that device put them.
///
/// An input is a sequence of `[kind | extra << 4][target][length][value...]`: the low nibble is
/// the kind, the high nibble a small count (repeats of a long write's value, the size of a
/// Prepare Write flood, a wait). Any byte string decodes (the generic mutators and the
/// minimiser cut bytes anywhere), and every decoded operation encodes back to the same bytes.
public struct GATTOperation: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: UInt8, CaseIterable, Sendable {
        /// Write Request to a characteristic's value.
        case write
        /// Write Command (no answer: pipelined).
        case writeCommand
        /// Read Request; with a 2-byte value, Read Blob at that offset.
        case read
        /// Prepare Writes of `value` repeated `extra + 1` times, cut at MTU-5, then Execute.
        case longWrite
        /// Write Request to a descriptor (a CCCD or any other).
        case writeDescriptor
        /// Exchange MTU with the MTU in `value` (little-endian; 23 when shorter).
        case exchangeMTU
        /// Disconnect and connect again (the device's state across a link loss).
        case reconnect
        /// Listen for 20 ms × 2^extra of device time (`extra` at most 9: 10.24 s), while a state
        /// machine's timers run; it ends early when the protocol comes to rest (a scan complete,
        /// a download ended, a join ended) or the device has been quiet for a tenth of it.
        case wait
        /// `value` sent as an ATT PDU as it is (malformed ones included).
        case raw
        /// `(extra + 1) × 32` Prepare Writes of `value` at rising offsets, no Execute.
        case prepareFlood
        /// Read Request to a descriptor.
        case readDescriptor
        /// The characteristic's CCCD set for notifications (or indications when it only indicates).
        case subscribe
    }

    public static let maxWaitExtra: UInt8 = 9

    public var kind: Kind
    public var extra: UInt8
    public var target: UInt8
    public var value: [UInt8]

    public init(_ kind: Kind, target: UInt8 = 0, value: [UInt8] = [], extra: UInt8 = 0) {
        self.kind = kind
        self.target = target
        self.value = Array(value.prefix(255))
        self.extra = extra & 0x0F
    }

    public var description: String {
        "\(kind)(#\(target)\(extra == 0 ? "" : " x\(extra)")\(value.isEmpty ? "" : ", \(value.count) bytes"))"
    }
}

public enum GATTInput {
    public static func decode(_ input: [UInt8]) -> [GATTOperation] {
        var out: [GATTOperation] = []
        var i = 0
        let kinds = GATTOperation.Kind.allCases
        while i + 2 < input.count {
            let head = input[i]
            let kind = kinds[Int(head & 0x0F) % kinds.count]
            let n = Int(input[i + 2])
            let start = i + 3
            let end = min(input.count, start + n)
            out.append(GATTOperation(kind, target: input[i + 1], value: Array(input[start..<end]), extra: head >> 4))
            i = end
        }
        return out
    }

    public static func encode(_ operations: [GATTOperation]) -> [UInt8] {
        var out: [UInt8] = []
        for op in operations {
            out.append(op.kind.rawValue | op.extra << 4)
            out.append(op.target)
            out.append(UInt8(clamping: op.value.count))
            out += op.value.prefix(255)
        }
        return out
    }

    /// The byte ranges of the operations: the units the minimiser removes first.
    public static func units(_ input: [UInt8]) -> [Range<Int>] {
        var out: [Range<Int>] = []
        var i = 0
        while i + 2 < input.count {
            let end = min(input.count, i + 3 + Int(input[i + 2]))
            out.append(i..<end)
            i = end
        }
        return out
    }
}
