import Capture

/// Valid sequences of each protocol, by UUID on the discovered table (the stateful flows the
/// campaign starts from), and values for each characteristic by its role: the protocol's
/// structures through its codec, its documented limits one below and one above, bytes C
/// firmware treats specially, and for characteristics no protocol names, mutations of what a read
/// returned within what the properties allow.
enum GATTValues {
    /// The password of every flow: a secret to look for in what the device says back.
    static let canaryPassword = BlackBoxCanary.password

    /// The password in a value written to `role`, when the role carries one.
    static func secret(in value: [UInt8], role: DeviceMap.Role?) -> [UInt8]? {
        role?.secret?(value)
    }

    // MARK: Flows

    typealias Op = GATTOperation

    static func mtu(_ m: Int) -> Op { Op.mtu(m) }
    /// A wait of at least `ms` of device time (see `GATTOperation.wait(ms:)`).
    static func wait(ms: Int) -> Op { Op.wait(ms: ms) }

    /// The seeds: each protocol's valid flows on the map (`BlackBoxFuzzable.blackBoxFlows`, in
    /// the protocols' order), then a read and a subscription of every characteristic that
    /// allows them.
    static func flows(_ map: DeviceMap, protocols: [any BlackBoxFuzzable.Type]) -> [[Op]] {
        var seeds: [[Op]] = protocols.flatMap { $0.blackBoxFlows(map) }
        func t(_ i: Int) -> UInt8 { UInt8(truncatingIfNeeded: i) }
        let write = { (i: Int, v: [UInt8]) in Op(.write, target: t(i), value: v) }
        // Every characteristic: read (and read past its end with Read Blob), subscribe, and its
        // own value written back; on a fresh link, and again in the state each protocol's
        // writes left (a value read there may show what was written).
        var generic: [Op] = []
        for (i, c) in map.characteristics.enumerated() {
            if c.canRead {
                let length = c.baseline?.count ?? 0
                generic += [Op(.read, target: t(i)), Op(.read, target: t(i), value: [UInt8(length & 0xFF), UInt8(length >> 8)]),
                            Op(.read, target: t(i), value: [UInt8((length + 1) & 0xFF), UInt8((length + 1) >> 8)])]
            }
            if c.cccd != nil { generic.append(Op(.subscribe, target: t(i))) }
            if c.role == nil, c.canWrite { generic.append(write(i, c.baseline ?? [0])) }
        }
        let configured = seeds.compactMap { seed in seed.lastIndex { $0.kind == .write }.map { Array(seed.prefix($0 + 1)) } }
        seeds.append([mtu(247)] + generic.prefix(40) + [wait(ms: 40)])
        for prefix in Set(configured.map(GATTInput.encode)).sorted(by: { $0.count < $1.count }).prefix(4).map(GATTInput.decode) {
            seeds.append(Array((prefix + generic).prefix(48)))
        }
        return seeds
    }

    // MARK: Values

    /// Bytes C firmware treats specially: terminators, format specifiers, sign and high bits.
    static let special: [[UInt8]] = [[0x00], [0xFF], [0x7F], [0x80], Array("%s%n%x".utf8), [0x0A], [0x0D, 0x0A], Array("\"';".utf8),
                                     [0xC3], [0xED, 0xA0, 0x80], Array("../".utf8), [0x25, 0x00]]

    /// A protocol's mutation of its values (`FuzzableProtocol.valueMutators`).
    typealias Mutate = GATTValueMutation

    /// A value for characteristic `c` (or a descriptor, when `descriptor`), from `current`;
    /// `structured` is the mutator its protocol gives for its values, if any.
    static func mutate(_ value: inout [UInt8], role: DeviceMap.Role?, structured: Mutate? = nil, baseline: [UInt8]?, mtu: Int, _ r: inout FuzzRandom) {
        switch r.below(10) {
        case 0, 1:
            boundary(&value, role: role, baseline: baseline, r: &r)
            return
        case 2:
            value.insert(contentsOf: r.pick(special) ?? [0], at: r.below(value.count + 1))
            return
        default:
            break
        }
        if let role {
            role.mutate(&value, structured, &r)
        } else {
            if r.chance(30), let baseline { value = baseline }
            GenericMutator.mutate(&value, &r, maxLength: 600)
        }
    }

    /// A length at a limit: the protocol's documented maximum and one either side, a full write
    /// (MTU-3) and a full Prepare Write part (MTU-5) around each common MTU, the longest
    /// attribute (512) and one over, empty, one byte, and for an unknown characteristic the
    /// length its read returned, one either side.
    static func boundary(_ value: inout [UInt8], role: DeviceMap.Role?, baseline: [UInt8]?, r: inout FuzzRandom) {
        var lengths = [0, 1, 2, 511, 512, 513] + ProtocolMutators.boundaryLengths
        if let max = role?.documentedMaximum { lengths += [max - 1, max, max + 1] }
        if let limits = role?.boundary {
            value = limits(&r)
            return
        }
        if let baseline { lengths += [baseline.count - 1, baseline.count, baseline.count + 1].filter { $0 >= 0 } }
        let n = r.pick(lengths) ?? 1
        let fill = r.pick([0x41, 0x00, 0xFF, r.byte()] as [UInt8]) ?? 0x41
        value = Array(value.prefix(n)) + [UInt8](repeating: fill, count: max(0, n - value.count))
    }

    /// CCCD values: off, notify, indicate, both, and the reserved bits; other lengths.
    static let cccdValues: [[UInt8]] = [[0, 0], [1, 0], [2, 0], [3, 0], [4, 0], [0xFF, 0xFF], [0, 1], [1], [], [1, 0, 0], [0x80, 0]]

    /// A malformed or unusual ATT request: a known opcode with parameters cut short or too long,
    /// handles at 0 and 0xFFFF, ranges backwards, unknown opcodes.
    static func rawPDU(_ map: DeviceMap, _ r: inout FuzzRandom) -> [UInt8] {
        let handle: UInt16 = r.chance(50) ? (map.characteristic(r.byte())?.valueHandle ?? 1) : (r.pick([0, 1, 0xFFFF, 0x7FFF] as [UInt16]) ?? 0)
        let h = [UInt8(handle & 0xFF), UInt8(handle >> 8)]
        let opcodes: [UInt8] = [0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20, 0x52, 0x1E, 0x3F, 0x14, 0xD2]
        let opcode = r.chance(85) ? (r.pick(opcodes) ?? 0x0A) : r.byte()
        var pdu = [opcode] + h
        switch opcode {
        case 0x04, 0x06, 0x08, 0x10: pdu += r.chance(50) ? [0x01, 0x00] : h  // ranges, backwards too
            if opcode != 0x04 { pdu += [0x00, 0x28] }
        case 0x0C: pdu += [UInt8(r.below(256)), UInt8(r.below(3))]
        case 0x18: pdu = [0x18, r.pick([0, 1, 2, 0xFF]) ?? 2]
        case 0x16: pdu += [UInt8(r.below(256)), UInt8(r.below(3))] + ProtocolMutators.filler(r.below(30), &r)
        default: break
        }
        switch r.below(3) {
        case 0: pdu = Array(pdu.prefix(r.below(pdu.count) + 1))
        case 1: pdu += (0..<(1 + r.below(8))).map { _ in r.byte() }
        default: break
        }
        return pdu
    }
}
