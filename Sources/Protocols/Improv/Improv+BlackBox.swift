import ATT
import Fuzz
import Profiles

/// Improv's characteristics for the black-box fuzzer: RPC frames near their edges on the RPC
/// Command characteristic (WIFI_SETTINGS' password is the secret), the provisioning flow (state,
/// device info, scan, settings, in one write or in 20-byte pieces), and the state followed
/// through Current State and Error State.
extension ImprovProtocol: BlackBoxFuzzable {
    static let blackBoxProtocol = "Improv Wi-Fi"

    static let rpcRole = BlackBoxRole(
        "Improv RPC command", protocolName: blackBoxProtocol,
        boundary: { r in
            // One string at its limit (SSID 32, password 64), the other as usual.
            let ssid = ProtocolMutators.filler(r.chance(50) ? (r.pick([0, 1, 31, 32, 33, 64]) ?? 32) : 7, &r)
            let password = ProtocolMutators.filler(r.chance(50) ? (r.pick([0, 7, 8, 63, 64, 65]) ?? 64) : 12, &r)
            return settings(ssid, password)
        },
        secret: { value in Improv.Command.decode(value).0?.password?.unsafeBytes },
        mutate: { value, _, r in
            if r.chance(60) { value = frameVariant(&r) } else { GenericMutator.mutate(&value, &r, maxLength: 600) }
        })

    static let stateRole = BlackBoxRole("Improv current state", protocolName: blackBoxProtocol, documentedMaximum: 1) { value, _, r in
        GenericMutator.mutate(&value, &r, maxLength: 16)
    }
    static let errorRole = BlackBoxRole("Improv error state", protocolName: blackBoxProtocol, documentedMaximum: 1) { value, _, r in
        GenericMutator.mutate(&value, &r, maxLength: 16)
    }
    static let resultRole = BlackBoxRole("Improv RPC result", protocolName: blackBoxProtocol) { value, _, r in
        GenericMutator.mutate(&value, &r, maxLength: 600)
    }
    static let capabilitiesRole = BlackBoxRole("Improv capabilities", protocolName: blackBoxProtocol, documentedMaximum: 1) { value, _, r in
        GenericMutator.mutate(&value, &r, maxLength: 16)
    }

    public static func blackBoxRole(of uuid: BluetoothUUID, userDescription: String?) -> BlackBoxRole? {
        switch uuid {
        case Improv.rpcCommand: rpcRole
        case Improv.currentState: stateRole
        case Improv.errorState: errorRole
        case Improv.rpcResult: resultRole
        case Improv.capabilities: capabilitiesRole
        default: nil
        }
    }

    /// WIFI_SETTINGS with a valid checksum; nil strings over 255 bytes together never come here.
    static func settings(_ ssid: [UInt8], _ password: [UInt8]) -> [UInt8] {
        Improv.Command.wifiSettings(ssid: ssid, password: password).encode() ?? []
    }

    /// A frame as a checksum-checking parser gets it: a known command or none, strings about
    /// their limits, then one defect at most: the frame's length byte one off, a string's length
    /// byte running past the data or short of it (the checksum made right again, so the parser
    /// reads the strings), the checksum wrong or missing, or the frame cut as a 20-byte piece.
    static func frameVariant(_ r: inout FuzzRandom) -> [UInt8] {
        let command: UInt8 = r.chance(85) ? UInt8(r.pick([0x01, 0x01, 0x01, 0x02, 0x03, 0x04, 0x05]) ?? 1) : r.byte()
        var strings: [[UInt8]] = []
        let count = command == 0x01 && r.chance(70) ? 2 : r.below(4)
        for _ in 0..<count { strings.append(ProtocolMutators.filler(r.pick([0, 1, 7, 31, 32, 33, 63, 64, 65]) ?? 8, &r)) }
        var data: [UInt8] = []
        for s in strings { data += [UInt8(truncatingIfNeeded: s.count)] + s }
        var lengths = [Int]()
        var i = 0
        for s in strings {
            lengths.append(i)
            i += 1 + s.count
        }
        switch r.below(8) {
        case 0 where !lengths.isEmpty:
            // A string's length byte past the data, or short of it.
            let at = r.pick(lengths) ?? 0
            data[at] = r.chance(70) ? data[at] &+ UInt8(1 + r.below(40)) : data[at] &- 1
        default: break
        }
        var frame = [command, UInt8(truncatingIfNeeded: data.count)] + data
        switch r.below(8) {
        case 0: frame[1] = frame[1] &+ 1
        case 1: frame[1] = frame[1] &- 1
        default: break
        }
        switch r.below(6) {
        case 0: break  // no checksum byte
        case 1: frame.append(Improv.checksum(frame) &+ 1)
        default: frame.append(Improv.checksum(frame))
        }
        if r.chance(10) { frame = Array(frame.prefix(20 * (1 + r.below(3)))) }  // one piece of a split write
        return frame
    }

    /// Every prefix of provisioning that ends after a wait (device info, scan, WIFI_SETTINGS with
    /// the canary password, the state read back), WIFI_SETTINGS with the SSID and password at
    /// their limits and one over, the command in 20-byte pieces as a phone writes it at MTU 23,
    /// and string lengths that run past the frame.
    public static func blackBoxFlows(_ map: DeviceMap) -> [[GATTOperation]] {
        guard let rpc = map.index(of: rpcRole) else { return [] }
        typealias Op = GATTOperation
        func t(_ i: Int) -> UInt8 { UInt8(truncatingIfNeeded: i) }
        var subscribed: [Op] = [.mtu(247)]
        for role in [stateRole, errorRole, resultRole] {
            if let i = map.index(of: role) { subscribed.append(Op(.subscribe, target: t(i))) }
        }
        if let caps = map.index(of: capabilitiesRole) { subscribed.append(Op(.read, target: t(caps))) }
        if let state = map.index(of: stateRole) { subscribed.append(Op(.read, target: t(state))) }
        let canary = settings(Array(BlackBoxCanary.ssid.utf8), Array(BlackBoxCanary.password.utf8))
        var flow = subscribed + [.wait(ms: 2000)]
        flow += [.write(rpc, Improv.Command(command: 0x03).encode() ?? []), .wait(ms: 300),
                 .write(rpc, Improv.Command(command: 0x04).encode() ?? []), .wait(ms: 3000),
                 .write(rpc, canary), .wait(ms: 6000)]
        if let state = map.index(of: stateRole) { flow.append(Op(.read, target: t(state))) }
        var seeds: [[Op]] = []
        for k in (subscribed.count + 1)...flow.count where k == flow.count || flow[k - 1].kind == .wait { seeds.append(Array(flow.prefix(k))) }
        let ready = subscribed + [.wait(ms: 2000)]
        // SSID and password at their maxima, one below and one above.
        let password = BlackBoxCanary.password
        for (ssidLength, passwordLength) in [(31, 12), (32, 12), (33, 12), (0, 12), (8, 63), (8, 64), (8, 65), (8, 0)] {
            let ssid = Array(String(repeating: "s", count: ssidLength).utf8)
            let pass = Array((password + String(repeating: "p", count: 64)).utf8.prefix(passwordLength))
            seeds.append(ready + [.write(rpc, settings(ssid, pass)), .wait(ms: 6000)])
        }
        // At MTU 23 a phone writes the command in 20-byte pieces.
        let pieces = stride(from: 0, to: canary.count, by: 20).map { Op.write(rpc, Array(canary[$0..<min(canary.count, $0 + 20)])) }
        seeds.append(Array(subscribed.dropFirst()) + [.wait(ms: 2000)] + pieces + [.wait(ms: 6000)])
        // A string's length running past the data (checksum right), and short of it.
        for delta in [1, 2, 32, -1] {
            var data = [UInt8(truncatingIfNeeded: 8 + delta)] + Array("GattlabN".utf8) + [UInt8(12)] + Array("canary-pass!".utf8)
            if delta == 32 { data = [UInt8(4)] + Array("ssid".utf8) + [UInt8(40)] + Array("short".utf8) }
            var frame = [UInt8(0x01), UInt8(data.count)] + data
            frame.append(Improv.checksum(frame))
            seeds.append(ready + [.write(rpc, frame), .wait(ms: 300)])
        }
        return seeds
    }

    public static func blackBoxObserver() -> (any BlackBoxObserving)? { StateObserver() }

    /// PROVISIONED and a failed join rest; PROVISIONING goes on by itself; a scan streams its
    /// networks until the empty result ends it.
    public static func blackBoxStateKind(_ state: String) -> BlackBoxStateKind? {
        switch state {
        case "PROVISIONED", "UNABLE_TO_CONNECT", "scan complete": .resting
        case "PROVISIONING": .inProgress
        case "scanning": .streaming
        default: nil
        }
    }

    /// The provisioning state from Current State and Error State; a state or error the spec does
    /// not have is a finding.
    struct StateObserver: BlackBoxObserving {
        func saw(_ value: [UInt8], role: BlackBoxRole, mtu: Int, notified: Bool, progress: inout BlackBoxProgress) -> FuzzOutcome? {
            switch role {
            case stateRole:
                guard let b = value.first else { return .ok }
                guard let name = Improv.state(Int(b)).name else {
                    return .finding(kind: "impossible-state", detail: "Improv Current State 0x\(String(b, radix: 16)), which the spec does not have")
                }
                progress.state = name
            case errorRole:
                guard let b = value.first, b != 0 else { return .ok }
                guard let name = Improv.error(Int(b)).name else {
                    return .finding(kind: "impossible-state", detail: "Improv Error State 0x\(String(b, radix: 16)), which the spec does not have")
                }
                if notified, b == 0x03 { progress.state = name }
            case resultRole:
                guard notified, value.first == 0x04 else { return .ok }
                progress.state = Improv.Result.decode(value).0?.endsScan == true ? "scan complete" : "scanning"
            case rpcRole, capabilitiesRole:
                return .ok
            default:
                return nil
            }
            return .ok
        }
    }
}
