import Capture
import Profiles

/// Valid sequences of each protocol, by UUID on the discovered table (the stateful flows the
/// campaign starts from), and values for each characteristic by its role: the protocol's
/// structures through its codec, its documented limits one below and one above, bytes C
/// firmware treats specially, and for characteristics no protocol names, mutations of what a read
/// returned within what the properties allow.
enum GATTValues {
    /// The password of every flow: a secret to look for in what the device says back.
    static let canaryPassword = "gattlab-canary-4Qz9"
    static let ssid = "GattlabNet"
    static let url = "https://fw.gattlab.example/ota/v2.5.0.bin"

    /// The password in a value written to `role`, when the role carries one.
    static func secret(in value: [UInt8], role: DeviceMap.Role?) -> [UInt8]? {
        switch role {
        case .speakerCredentials:
            guard let nul = value.firstIndex(of: 0) else { return nil }
            return Array(value[(nul + 1)...].prefix { $0 != 0 })
        case .nrf7ControlPoint:
            for f in ProtoFields.split(value) where f.key == (11 << 3 | 2) {
                for g in ProtoFields.split(f.body) where g.key == (2 << 3 | 2) { return g.body }
            }
            return nil
        default:
            return nil
        }
    }

    // MARK: Flows

    typealias Op = GATTOperation

    static func mtu(_ m: Int) -> Op { Op(.exchangeMTU, value: [UInt8(m & 0xFF), UInt8(m >> 8)]) }
    /// A wait of at least `ms` of device time (20 ms doubled `extra` times, at most 10.24 s); it
    /// ends early when the protocol comes to rest or the device goes quiet.
    static func wait(ms: Int) -> Op {
        var extra = 0
        while extra < Int(GATTOperation.maxWaitExtra), 20 << extra < ms { extra += 1 }
        return Op(.wait, extra: UInt8(extra))
    }

    static func nrf7Request(_ opCode: Int, config: NRF7.WifiConfig? = nil) -> [UInt8] {
        NRF7.Request(opCode: NRF7.opCode(opCode), config: config).encode()
    }

    static var nrf7Config: NRF7.WifiConfig {
        NRF7.WifiConfig(wifi: NRF7.WifiInfo(ssid: ssid, band: 1, auth: 3), passphrase: canaryPassword)
    }

    /// The seeds: every prefix of each protocol's valid flow (so each state it reaches is a
    /// starting point), each command in the state that accepts it, and a read and a subscription
    /// of every characteristic that allows them.
    static func flows(_ map: DeviceMap) -> [[Op]] {
        var seeds: [[Op]] = []
        func t(_ i: Int) -> UInt8 { UInt8(truncatingIfNeeded: i) }
        let write = { (i: Int, v: [UInt8]) in Op(.write, target: t(i), value: v) }
        if let status = map.index(of: .speakerStatus), let credentials = map.index(of: .speakerCredentials),
           let url = map.index(of: .speakerURL), let control = map.index(of: .speakerControl) {
            let creds = SpeakerOTA.Credentials(ssid: ssid, password: canaryPassword).encode()
            let flow: [Op] = [mtu(247), Op(.subscribe, target: t(status)), Op(.read, target: t(status)),
                              write(credentials, creds), write(url, Array(Self.url.utf8)),
                              write(control, SpeakerOTA.ControlCommand(.start).encode()), wait(ms: 12_000), Op(.read, target: t(status))]
            for k in 3...flow.count { seeds.append(Array(flow.prefix(k))) }
            // Every command, with its parameter at the edges, in the state after the URL.
            for command in SpeakerOTA.Command.allCases {
                for parameter: UInt8 in [0, 1, 2, 3, 0x7F, 0x80, 0xFF] {
                    seeds.append(Array(flow.prefix(5)) + [write(control, SpeakerOTA.ControlCommand(command, parameter: parameter).encode()), wait(ms: 300)])
                }
            }
            // Each documented maximum, one below and one above: SSID 32, password 64.
            let letters = { (n: Int, c: Character) in String(repeating: c, count: n) }
            for (ssidLength, passwordLength) in [(31, 12), (32, 12), (33, 12), (1, 0), (8, 63), (8, 64), (8, 65)] {
                let value = Array(letters(ssidLength, "s").utf8) + [0] + Array((canaryPassword + letters(max(0, passwordLength - canaryPassword.count), "p")).utf8.prefix(passwordLength))
                seeds.append([mtu(247), Op(.subscribe, target: t(status)), write(credentials, value), Op(.read, target: t(status))])
            }
            // At MTU 23 the credentials and the URL need long writes.
            seeds.append([Op(.subscribe, target: t(status)), Op(.longWrite, target: t(credentials), value: creds),
                          Op(.longWrite, target: t(url), value: Array(Self.url.utf8)), Op(.read, target: t(status))])
        }
        if let scan = map.index(of: .sensorScan) {
            // MTU 247 first: the first complete scan is the reference the others must equal.
            // Then a sweep: chunk boundaries fall on every byte of a line at MTUs 23 to 64, and
            // at the sizes stacks use.
            for m in [247, 23, 185] + Array(24...64) + [100, 128, 158, 200, 244, 251, 255, 256, 512, 517] {
                seeds.append([mtu(m), Op(.subscribe, target: t(scan)), write(scan, SensorScan.request), wait(ms: 8000)])
            }
        }
        if let cp = map.index(of: .nrf7ControlPoint) {
            let out = map.index(of: .nrf7DataOut)
            var flow: [Op] = [mtu(247), Op(.subscribe, target: t(cp))]
            if let out { flow.append(Op(.subscribe, target: t(out))) }
            if let info = map.index(of: .nrf7Info) { flow.append(Op(.read, target: t(info))) }
            flow += [write(cp, nrf7Request(1)), wait(ms: 200), write(cp, nrf7Request(2)), wait(ms: 6000), write(cp, nrf7Request(3)), wait(ms: 100),
                     write(cp, nrf7Request(4, config: nrf7Config)), wait(ms: 10_000), write(cp, nrf7Request(1)), wait(ms: 200),
                     write(cp, nrf7Request(5)), wait(ms: 200)]
            for k in 3...flow.count where k == flow.count || flow[k - 1].kind == .wait { seeds.append(Array(flow.prefix(k))) }
            let subscribed = Array(flow.prefix(out == nil ? 2 : 3))
            // SET_CONFIG with the SSID and the passphrase at their maxima, one below and one above.
            for (ssidLength, passLength) in [(31, 12), (32, 12), (33, 12), (8, 63), (8, 64), (8, 65), (8, 7), (8, 8)] {
                let ssid = String(repeating: "s", count: ssidLength)
                let pass = String((canaryPassword + String(repeating: "p", count: 64)).prefix(passLength))
                let config = NRF7.WifiConfig(wifi: NRF7.WifiInfo(ssid: ssid, band: 1, auth: 3), passphrase: pass)
                seeds.append(subscribed + [write(cp, nrf7Request(4, config: config)), wait(ms: 3000), write(cp, nrf7Request(1)), wait(ms: 200)])
            }
            // A scan started again while one runs (a restart path), with each band and past them.
            for band in [0, 1, 2, 3, 4, 255] {
                let again = NRF7.Request(opCode: NRF7.opCode(2), scanParams: NRF7.ScanParams(band: NRF7.band(band))).encode()
                seeds.append(subscribed + [write(cp, nrf7Request(2)), wait(ms: 100), write(cp, again), wait(ms: 1000), write(cp, nrf7Request(3))])
            }
        }
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
    typealias Mutate = @Sendable (inout [UInt8], inout FuzzRandom) -> Void

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
        switch role {
        case .speakerCredentials: ProtocolMutators.credentials(&value, &r)
        case .speakerStatus:
            if let structured { structured(&value, &r) } else { GenericMutator.mutate(&value, &r, maxLength: 600) }
        case .speakerURL:
            switch r.below(4) {
            case 0: value = Array((r.pick(["http://fw.example/a.bin", "ftp://x", "https://", "", "https://fw.example/%s%s%n",
                                            "HTTPS://FW.EXAMPLE/A.BIN", "https://user:pass@fw.example/a.bin"]) ?? "").utf8)
            case 1: value = Array("https://fw.example/".utf8) + ProtocolMutators.filler(r.pick([230, 236, 237, 238, 239, 240, 300]) ?? 237, &r)
            default: GenericMutator.mutate(&value, &r, maxLength: 600)
            }
        case .speakerControl:
            let commands: [UInt8] = [0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x00, 0x0F, 0x16, 0x20, 0x7F, 0x80, 0xFF]
            let parameters: [UInt8] = [0, 1, 2, 3, 4, 0x0F, 0x10, 0x7F, 0x80, 0xFE, 0xFF]
            // The command kept and its parameter changed half the time: every parameter of it.
            let command = value.first.flatMap { r.chance(50) ? $0 : nil } ?? (r.chance(80) ? (r.pick(commands) ?? 0x10) : r.byte())
            value = [command, r.chance(70) ? (r.pick(parameters) ?? 0) : r.byte()]
            if r.chance(15) { value = Array(value.prefix(r.below(2))) } else if r.chance(15) { value.append(r.byte()) }
        case .sensorScan:
            let variants = ["SCAN", "scan", "SCAN\n", "SCAN\r\n", "SCAN\u{0}", "SCA", "SCANSCAN", "SCAN,", " SCAN", "END", "MORE", "SCAN\u{0}junk"]
            if r.chance(60) { value = Array((r.pick(variants) ?? "SCAN").utf8) } else { GenericMutator.mutate(&value, &r, maxLength: 600) }
        case .nrf7ControlPoint:
            if r.chance(50) { value = nrf7Variant(&r) } else { ProtocolMutators.protobuf(&value, &r) }
        case .espEndpoint, .nrf7Info, .nrf7DataOut:
            ProtocolMutators.protobuf(&value, &r)
        case nil:
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
        if role == .speakerCredentials {
            // One field at its limit, the other as usual.
            let ssidLength = r.pick([31, 32, 33, 64]) ?? 32
            let passwordLength = r.pick([0, 7, 8, 63, 64, 65]) ?? 64
            value = ProtocolMutators.filler(r.chance(50) ? ssidLength : 7, &r) + [0] + ProtocolMutators.filler(r.chance(50) ? passwordLength : 12, &r)
            return
        }
        if let baseline { lengths += [baseline.count - 1, baseline.count, baseline.count + 1].filter { $0 >= 0 } }
        let n = r.pick(lengths) ?? 1
        let fill = r.pick([0x41, 0x00, 0xFF, r.byte()] as [UInt8]) ?? 0x41
        value = Array(value.prefix(n)) + [UInt8](repeating: fill, count: max(0, n - value.count))
    }

    /// nRF7 Requests near the edges: every op code and unknown ones, configurations with SSIDs
    /// and passphrases at their limits and one over, BSSIDs of the wrong length.
    static func nrf7Variant(_ r: inout FuzzRandom) -> [UInt8] {
        let op = r.chance(70) ? r.below(6) : (r.pick([6, 7, 15, 16, 127, 128, 255, 256, 65_535, 0x7FFF_FFFF]) ?? 6)
        var config: NRF7.WifiConfig?
        if r.chance(50) {
            let ssid = ProtocolMutators.filler(r.pick([0, 1, 31, 32, 33, 64]) ?? 32, &r)
            let pass = ProtocolMutators.filler(r.pick([0, 7, 8, 63, 64, 65, 128]) ?? 64, &r)
            let bssid: [UInt8]? = r.chance(30) ? [UInt8](repeating: 0xAA, count: r.pick([0, 5, 6, 7, 16]) ?? 7) : nil
            config = NRF7.WifiConfig(wifi: NRF7.WifiInfo(ssid: ssid, bssid: bssid, band: NRF7.band(r.below(4)), channel: r.chance(30) ? UInt32(r.pick([0, 1, 14, 165, 255, 70_000]) ?? 0) : nil,
                                                         auth: NRF7.auth(r.chance(80) ? r.below(7) : r.below(256))),
                                     passphrase: Secret(pass, label: "Wi-Fi password"), volatileMemory: r.chance(50) ? r.chance(50) : nil)
        }
        var scan: NRF7.ScanParams?
        if r.chance(20) { scan = NRF7.ScanParams(band: NRF7.band(r.below(5)), passive: r.chance(50), periodMs: UInt32(r.pick([0, 1, 100, 65_535, 0xFFFF_FFFF]) ?? 0)) }
        return NRF7.Request(opCode: NRF7.opCode(op), scanParams: scan, config: config).encode()
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
