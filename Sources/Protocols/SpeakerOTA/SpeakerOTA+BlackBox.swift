import ATT
import Fuzz
import Profiles

/// The speaker's OTA characteristics for the black-box fuzzer: their roles and values (the
/// credentials with their canary password, URLs, every command, statuses), the update's valid
/// flow, and its state followed through the status characteristic.
extension SpeakerOTAProtocol: BlackBoxFuzzable {
    static let blackBoxProtocol = "speaker OTA"

    static let credentialsRole = BlackBoxRole(
        "speaker OTA credentials", protocolName: blackBoxProtocol, documentedMaximum: SpeakerOTA.maxCredentialsLength,
        boundary: { r in
            // One field at its limit, the other as usual.
            let ssidLength = r.pick([31, 32, 33, 64]) ?? 32
            let passwordLength = r.pick([0, 7, 8, 63, 64, 65]) ?? 64
            return ProtocolMutators.filler(r.chance(50) ? ssidLength : 7, &r) + [0] + ProtocolMutators.filler(r.chance(50) ? passwordLength : 12, &r)
        },
        secret: { value in
            guard let nul = value.firstIndex(of: 0) else { return nil }
            return Array(value[(nul + 1)...].prefix { $0 != 0 })
        },
        mutate: { value, _, r in ProtocolMutators.credentials(&value, &r) })

    static let urlRole = BlackBoxRole("speaker OTA URL", protocolName: blackBoxProtocol, documentedMaximum: SpeakerOTA.maxURLLength + 2) { value, _, r in
        switch r.below(4) {
        case 0: value = Array((r.pick(["http://fw.example/a.bin", "ftp://x", "https://", "", "https://fw.example/%s%s%n",
                                        "HTTPS://FW.EXAMPLE/A.BIN", "https://user:pass@fw.example/a.bin"]) ?? "").utf8)
        case 1: value = Array("https://fw.example/".utf8) + ProtocolMutators.filler(r.pick([230, 236, 237, 238, 239, 240, 300]) ?? 237, &r)
        default: GenericMutator.mutate(&value, &r, maxLength: 600)
        }
    }

    static let controlRole = BlackBoxRole("speaker OTA control", protocolName: blackBoxProtocol, documentedMaximum: 2) { value, _, r in
        let commands: [UInt8] = [0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x00, 0x0F, 0x16, 0x20, 0x7F, 0x80, 0xFF]
        let parameters: [UInt8] = [0, 1, 2, 3, 4, 0x0F, 0x10, 0x7F, 0x80, 0xFE, 0xFF]
        // The command kept and its parameter changed half the time: every parameter of it.
        let command = value.first.flatMap { r.chance(50) ? $0 : nil } ?? (r.chance(80) ? (r.pick(commands) ?? 0x10) : r.byte())
        value = [command, r.chance(70) ? (r.pick(parameters) ?? 0) : r.byte()]
        if r.chance(15) { value = Array(value.prefix(r.below(2))) } else if r.chance(15) { value.append(r.byte()) }
    }

    static let statusRole = BlackBoxRole("speaker OTA status", protocolName: blackBoxProtocol, documentedMaximum: SpeakerOTA.statusLength) { value, structured, r in
        if let structured { structured(&value, &r) } else { GenericMutator.mutate(&value, &r, maxLength: 600) }
    }

    public static func blackBoxRole(of uuid: BluetoothUUID, userDescription: String?) -> BlackBoxRole? {
        switch uuid {
        case SpeakerOTA.credentials: credentialsRole
        case SpeakerOTA.url: urlRole
        case SpeakerOTA.control: controlRole
        case SpeakerOTA.status: statusRole
        default: nil
        }
    }

    /// Every prefix of the update (subscribe, credentials, URL, START, the download heard out),
    /// every command with its parameter at the edges after the URL, the credentials' fields at
    /// their limits, and long writes at MTU 23.
    public static func blackBoxFlows(_ map: DeviceMap) -> [[GATTOperation]] {
        guard let status = map.index(of: statusRole), let credentials = map.index(of: credentialsRole),
              let url = map.index(of: urlRole), let control = map.index(of: controlRole) else { return [] }
        typealias Op = GATTOperation
        var seeds: [[Op]] = []
        func t(_ i: Int) -> UInt8 { UInt8(truncatingIfNeeded: i) }
        let creds = SpeakerOTA.Credentials(ssid: BlackBoxCanary.ssid, password: BlackBoxCanary.password).encode()
        let flow: [Op] = [.mtu(247), Op(.subscribe, target: t(status)), Op(.read, target: t(status)),
                          .write(credentials, creds), .write(url, Array(BlackBoxCanary.url.utf8)),
                          .write(control, SpeakerOTA.ControlCommand(.start).encode()), .wait(ms: 12_000), Op(.read, target: t(status))]
        for k in 3...flow.count { seeds.append(Array(flow.prefix(k))) }
        // Every command, with its parameter at the edges, in the state after the URL.
        for command in SpeakerOTA.Command.allCases {
            for parameter: UInt8 in [0, 1, 2, 3, 0x7F, 0x80, 0xFF] {
                seeds.append(Array(flow.prefix(5)) + [.write(control, SpeakerOTA.ControlCommand(command, parameter: parameter).encode()), .wait(ms: 300)])
            }
        }
        // Each documented maximum, one below and one above: SSID 32, password 64.
        let letters = { (n: Int, c: Character) in String(repeating: c, count: n) }
        let password = BlackBoxCanary.password
        for (ssidLength, passwordLength) in [(31, 12), (32, 12), (33, 12), (1, 0), (8, 63), (8, 64), (8, 65)] {
            let value = Array(letters(ssidLength, "s").utf8) + [0] + Array((password + letters(max(0, passwordLength - password.count), "p")).utf8.prefix(passwordLength))
            seeds.append([.mtu(247), Op(.subscribe, target: t(status)), .write(credentials, value), Op(.read, target: t(status))])
        }
        // At MTU 23 the credentials and the URL need long writes.
        seeds.append([Op(.subscribe, target: t(status)), Op(.longWrite, target: t(credentials), value: creds),
                      Op(.longWrite, target: t(url), value: Array(BlackBoxCanary.url.utf8)), Op(.read, target: t(status))])
        return seeds
    }

    public static func blackBoxObserver() -> (any BlackBoxObserving)? { StatusObserver() }

    /// SUCCESS and the errors end an update; connecting, downloading and verifying go on by themselves.
    public static func blackBoxStateKind(_ state: String) -> BlackBoxStateKind? {
        if state == "SUCCESS" || state.hasPrefix("ERROR") { return .resting }
        if ["WIFI_CONNECTING", "WIFI_CONNECTED", "DOWNLOADING", "VERIFYING"].contains(state) { return .inProgress }
        return nil
    }

    /// The update's state from each status; a status that does not decode, or names a state
    /// the protocol does not have, is a finding.
    struct StatusObserver: BlackBoxObserving {
        func saw(_ value: [UInt8], role: BlackBoxRole, mtu: Int, notified: Bool, progress: inout BlackBoxProgress) -> FuzzOutcome? {
            guard role == statusRole else { return nil }
            let (status, _) = SpeakerOTA.Status.decode(value)
            guard let status else {
                return .finding(kind: "undecodable-notification",
                                detail: "a \(value.count)-byte OTA status (a status is \(SpeakerOTA.statusLength) bytes)")
            }
            guard let s = status.state else {
                return .finding(kind: "impossible-state", detail: "a status in state 0x\(String(status.rawState, radix: 16)), which the OTA protocol does not have")
            }
            progress.state = s == .error ? "ERROR \(status.error.map { "\($0)" } ?? "0x\(String(status.rawError, radix: 16))")" : "\(s)"
            return .ok
        }
    }
}
