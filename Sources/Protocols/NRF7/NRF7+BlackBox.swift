import ATT
import Capture
import Fuzz
import Profiles

/// nRF7 provisioning's characteristics for the black-box fuzzer: Requests near the edges on the
/// Control Point (the passphrase of a configuration is the secret), the provisioning flow
/// (status, scan, configuration, connection), and the state followed through the Control Point's
/// Responses and Data Out's Results.
extension NRF7Protocol: BlackBoxFuzzable {
    static let blackBoxProtocol = "nRF7 provisioning"

    static let infoRole = BlackBoxRole("nRF7 info", protocolName: blackBoxProtocol) { value, _, r in ProtocolMutators.protobuf(&value, &r) }

    static let controlPointRole = BlackBoxRole(
        "nRF7 control point", protocolName: blackBoxProtocol,
        secret: { value in
            // Request.config (11) . passphrase (2)
            ProtoFields.lengthDelimited(value, field: 11).lazy.compactMap { ProtoFields.lengthDelimited($0, field: 2).first }.first
        },
        mutate: { value, _, r in
            if r.chance(50) { value = requestVariant(&r) } else { ProtocolMutators.protobuf(&value, &r) }
        })

    static let dataOutRole = BlackBoxRole("nRF7 data out", protocolName: blackBoxProtocol) { value, _, r in ProtocolMutators.protobuf(&value, &r) }

    public static func blackBoxRole(of uuid: BluetoothUUID, userDescription: String?) -> BlackBoxRole? {
        switch uuid {
        case NRF7.info: infoRole
        case NRF7.controlPoint: controlPointRole
        case NRF7.dataOut: dataOutRole
        default: nil
        }
    }

    /// nRF7 Requests near the edges: every op code and unknown ones, configurations with SSIDs
    /// and passphrases at their limits and one over, BSSIDs of the wrong length.
    static func requestVariant(_ r: inout FuzzRandom) -> [UInt8] {
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

    static func request(_ opCode: Int, config: NRF7.WifiConfig? = nil) -> [UInt8] {
        NRF7.Request(opCode: NRF7.opCode(opCode), config: config).encode()
    }

    /// Every prefix of the provisioning flow that ends after a wait (status, scan, stop,
    /// configuration with the canary passphrase, status, forget), SET_CONFIG with the SSID and
    /// the passphrase at their limits, and a scan started again while one runs.
    public static func blackBoxFlows(_ map: DeviceMap) -> [[GATTOperation]] {
        guard let cp = map.index(of: controlPointRole) else { return [] }
        typealias Op = GATTOperation
        func t(_ i: Int) -> UInt8 { UInt8(truncatingIfNeeded: i) }
        var seeds: [[Op]] = []
        let out = map.index(of: dataOutRole)
        let canaryConfig = NRF7.WifiConfig(wifi: NRF7.WifiInfo(ssid: BlackBoxCanary.ssid, band: 1, auth: 3), passphrase: BlackBoxCanary.password)
        var flow: [Op] = [.mtu(247), Op(.subscribe, target: t(cp))]
        if let out { flow.append(Op(.subscribe, target: t(out))) }
        if let info = map.index(of: infoRole) { flow.append(Op(.read, target: t(info))) }
        flow += [.write(cp, request(1)), .wait(ms: 200), .write(cp, request(2)), .wait(ms: 6000), .write(cp, request(3)), .wait(ms: 100),
                 .write(cp, request(4, config: canaryConfig)), .wait(ms: 10_000), .write(cp, request(1)), .wait(ms: 200),
                 .write(cp, request(5)), .wait(ms: 200)]
        for k in 3...flow.count where k == flow.count || flow[k - 1].kind == .wait { seeds.append(Array(flow.prefix(k))) }
        let subscribed = Array(flow.prefix(out == nil ? 2 : 3))
        // SET_CONFIG with the SSID and the passphrase at their maxima, one below and one above.
        for (ssidLength, passLength) in [(31, 12), (32, 12), (33, 12), (8, 63), (8, 64), (8, 65), (8, 7), (8, 8)] {
            let ssid = String(repeating: "s", count: ssidLength)
            let pass = String((BlackBoxCanary.password + String(repeating: "p", count: 64)).prefix(passLength))
            let config = NRF7.WifiConfig(wifi: NRF7.WifiInfo(ssid: ssid, band: 1, auth: 3), passphrase: pass)
            seeds.append(subscribed + [.write(cp, request(4, config: config)), .wait(ms: 3000), .write(cp, request(1)), .wait(ms: 200)])
        }
        // A scan started again while one runs (a restart path), with each band and past them.
        for band in [0, 1, 2, 3, 4, 255] {
            let again = NRF7.Request(opCode: NRF7.opCode(2), scanParams: NRF7.ScanParams(band: NRF7.band(band))).encode()
            seeds.append(subscribed + [.write(cp, request(2)), .wait(ms: 100), .write(cp, again), .wait(ms: 1000), .write(cp, request(3))])
        }
        return seeds
    }

    public static func blackBoxObserver() -> (any BlackBoxObserving)? { ProvisioningObserver() }

    /// A connection that succeeded or failed stays; a scan, a configuration and a connection
    /// under way go on by themselves, scan records streaming until STOP_SCAN.
    public static func blackBoxStateKind(_ state: String) -> BlackBoxStateKind? {
        switch state {
        case "connection CONNECTED", "connection CONNECTION_FAILED": .resting
        case "START_SCAN done", "SET_CONFIG done", "connection AUTHENTICATION", "connection ASSOCIATION", "connection OBTAINING_IP": .inProgress
        case "scan results": .streaming
        default: nil
        }
    }

    /// The provisioning state from the Control Point's Responses and Data Out's Results; a
    /// message that is none of them is a finding.
    struct ProvisioningObserver: BlackBoxObserving {
        func saw(_ value: [UInt8], role: BlackBoxRole, mtu: Int, notified: Bool, progress: inout BlackBoxProgress) -> FuzzOutcome? {
            switch role {
            case dataOutRole:
                let (result, problems) = NRF7.Result.decode(value)
                guard let result else {
                    return .finding(kind: "undecodable-notification", detail: "nRF7 Data Out that is no Result: \(problems.first?.message ?? "")")
                }
                if let s = result.state { progress.state = "connection \(s)" } else if result.scanRecord != nil, !progress.state.hasPrefix("connection") { progress.state = "scan results" }
            case controlPointRole:
                guard notified else { return .ok }
                let (response, problems) = NRF7.Response.decode(value)
                guard let response else {
                    return .finding(kind: "undecodable-notification", detail: "an nRF7 Control Point indication that is no Response: \(problems.first?.message ?? "")")
                }
                if let op = response.requestOpCode, response.status?.raw == 0 { progress.state = "\(op) done" }
            case infoRole:
                if NRF7.Info.decode(value).0 == nil, !value.isEmpty {
                    return .finding(kind: "undecodable-notification", detail: "an nRF7 Info value that is no Info message")
                }
            default:
                return nil
            }
            return .ok
        }
    }
}
