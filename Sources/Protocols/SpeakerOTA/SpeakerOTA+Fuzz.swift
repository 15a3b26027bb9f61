import ATT
import Emulator
import Fuzz
import Profiles

/// The speaker's parsers as fuzz targets (status, credentials, url, control), its emulated
/// device's request handling (device-speaker) with the impossible-status oracle, its status
/// mutator, and what it gives the capture seeds and the corpora.
extension SpeakerOTAProtocol: FuzzableProtocol {
    public static var fuzzTargets: [FuzzTarget] { [statusTarget, credentialsTarget, urlTarget, controlTarget] }
    /// Its parsers live in SpeakerOTACodec: a libFuzzer build of its targets instruments that alone.
    public static var codec: Any.Type? { SpeakerOTA.self }

    public static var deviceFuzzTargets: [DeviceFuzzTarget] {
        [DeviceFuzzTarget(name: "device-speaker", device: "speaker") { quirks, protocols throws(FuzzError) in
            try deviceTarget(quirks: quirks, protocols: protocols)
        }]
    }

    /// REBOOT on OTA_CONTROL resets the speaker.
    public static func resetsDevice(writing value: [UInt8], to characteristic: BluetoothUUID) -> Bool {
        characteristic == SpeakerOTA.control && value.first == SpeakerOTA.Command.reboot.rawValue
    }

    /// OTA_STATUS tells the update's state.
    public static var stateCharacteristic: BluetoothUUID? { SpeakerOTA.status }

    public static func state(read value: [UInt8]) -> String? {
        SpeakerOTA.Status.decode(value).0.flatMap(\.state).map { "\($0)" }
    }

    public static var valueMutators: [FuzzValueMutator] {
        [FuzzValueMutator(characteristic: SpeakerOTA.credentials, mutate: ProtocolMutators.credentials),
         FuzzValueMutator(characteristic: SpeakerOTA.status, mutate: mutateStatus)]
    }

    public static func corpusRouter() -> any FuzzCorpusRouting {
        FuzzCorpusTable([SpeakerOTA.status: "status", SpeakerOTA.credentials: "credentials", SpeakerOTA.url: "url", SpeakerOTA.control: "control"])
    }

    /// Discovery answers for the status and credentials characteristics, a credentials write
    /// and its response, and three status notifications ending in a download error.
    public static var captureSeedExchange: [CaptureSeedPDU] {
        let discovery = CaptureSeedPDU(.readByTypeResponse(length: 21, entries: [ATTHandleValue(handle: 0x0013, value: [0x12, 0x14, 0x00] + SpeakerOTA.status.littleEndianBytes)]),
                                       received: true, time: 10_000)
        let credentialsDeclaration = CaptureSeedPDU(.readByTypeResponse(length: 21, entries: [ATTHandleValue(handle: 0x000D, value: [0x08, 0x0E, 0x00] + SpeakerOTA.credentials.littleEndianBytes)]),
                                                    received: true, time: 11_000)
        let write = [CaptureSeedPDU(.writeRequest(handle: 0x000E, value: SpeakerOTA.Credentials(ssid: "HomeNet", password: "correct horse").encode()), received: false, time: 20_000),
                     CaptureSeedPDU(.writeResponse, received: true, time: 30_000)]
        let notes = [SpeakerOTA.State.credentialsReceived, .downloading, .error].enumerated().map { i, s in
            CaptureSeedPDU(.handleValueNotification(handle: 0x0014, value: SpeakerOTA.Status(state: s, error: s == .error ? .download : .none, progress: 63).encode()),
                           received: true, time: 40_000 + Int64(i) * 1000)
        }
        return [discovery, credentialsDeclaration] + write + notes
    }

    /// Status: every state and error code (unknown ones too), progress above 100, KB at their
    /// limits, lengths 0 to 7 and 9 up to MTU-3.
    public static func mutateStatus(_ data: inout [UInt8], _ r: inout FuzzRandom) {
        var s = data.count >= 8 ? data : SpeakerOTA.Status(state: .downloading, progress: 50, downloadedKB: 700, totalKB: 1480).encode()
        switch r.below(6) {
        case 0: s[0] = r.chance(70) ? (r.pick(SpeakerOTA.State.allCases.map(\.rawValue)) ?? 0) : r.byte()
        case 1: s[1] = r.chance(70) ? (r.pick(SpeakerOTA.ErrorCode.allCases.map(\.rawValue)) ?? 0) : r.byte()
        case 2: s[2] = r.pick([0, 1, 99, 100, 101, 200, 255]) ?? 101
        case 3:
            let kb = r.pick([0, 1, 0x7FFF, 0x8000, 0xFFFE, 0xFFFF] as [UInt16]) ?? 0xFFFF
            let at = r.chance(50) ? 3 : 5
            s[at] = UInt8(kb & 0xFF)
            s[at + 1] = UInt8(kb >> 8)
        case 4: s = Array(s.prefix(r.below(8)))  // 0 to 7 bytes
        default:
            let n = r.pick([9, 10, 19, 20, 21, 182, 244, 514]) ?? 9
            s += (0..<max(0, n - s.count)).map { _ in r.byte() }
        }
        data = s
    }

    static let statusTarget = FuzzTarget(
        name: "status", summary: "the speaker's OTA_STATUS parser", maxLength: 517,
        seeds: { SpeakerOTA.State.allCases.map { SpeakerOTA.Status(state: $0, progress: 40, downloadedKB: 600, totalKB: 1480).encode() } + [[], [0x05]] },
        mutator: mutateStatus
    ) { input, f in
        let (status, problems) = SpeakerOTA.Status.decode(input)
        f.add(1, Features.lengthClass(input.count))
        f.add(2, problems: problems)
        guard let status else { return .ok }
        // Known states and errors by value, unknown ones as one class each: the corpus keeps
        // one input per behaviour, not one per byte value.
        f.add(3, UInt64(status.state?.rawValue ?? 0xEE) << 8 | UInt64(status.error?.rawValue ?? 0xEE))
        f.add(4, status.progress > 100 ? 2 : status.progress == 100 ? 1 : 0)
        if SpeakerOTA.Status.decode(status.encode()).0 != status {
            return .finding(kind: "status-round-trip", detail: "decode(encode(status)) differs for \(input.count) bytes")
        }
        return .ok
    }

    static let credentialsTarget = FuzzTarget(
        name: "credentials", summary: "the speaker's OTA_CREDENTIALS parser (SSID, NUL, password)", maxLength: 600,
        seeds: { [SpeakerOTA.Credentials(ssid: "HomeNet", password: "correct horse battery staple").encode(), Array("x\0".utf8), []] },
        mutator: ProtocolMutators.credentials
    ) { input, f in
        let (c, problems) = SpeakerOTA.Credentials.decode(input)
        f.add(1, Features.lengthClass(input.count))
        f.add(2, problems: problems)
        guard let c else { return .ok }
        f.add(3, Features.lengthClass(c.ssid.count) << 8 | Features.lengthClass(c.password.unsafeBytes.count))
        _ = c.ssidText
        if SpeakerOTA.Credentials.decode(c.encode()).0 != c {
            return .finding(kind: "credentials-round-trip", detail: "decode(encode(credentials)) differs")
        }
        return .ok
    }

    static let urlTarget = FuzzTarget(
        name: "url", summary: "the speaker's OTA_URL parser and its secret finder (user:password, tokens)", maxLength: 600,
        seeds: { [Array("https://fw.chaoticvolt.example/speaker/v2.4.1.bin".utf8),
                  Array("http://admin:hunter2@updates.example.com/fw/speaker.bin?token=8c1f4e2ad9b7".utf8), Array("ftp://".utf8)] },
        // Schemes, the user:password and query syntax, and the words that make a query value secret.
        dictionary: ["http://", "https://", "@", "?", "&", "=", "%", "token=", "password=", "sig="].map { Array($0.utf8) }
    ) { input, f in
        let (u, problems) = SpeakerOTA.FirmwareURL.decode(input)
        f.add(1, Features.lengthClass(input.count))
        f.add(2, problems: problems)
        guard let u else { return .ok }
        f.add(3, ["http", "https", nil].contains(u.scheme) ? (u.scheme ?? "-") : "other")
        f.add(5, Features.lengthClass(u.host?.count ?? 0))
        for part in u.secretParts {
            if case .queryValue = part.part { f.add(4, 1) } else { f.add(4, 2) }
            guard part.range.lowerBound >= 0, part.range.upperBound <= input.count, !part.range.isEmpty else {
                return .finding(kind: "url-secret-range", detail: "a secret range \(part.range) outside the \(input.count)-byte URL")
            }
        }
        _ = u.display(reveal: false)
        return .ok
    }

    static let controlTarget = FuzzTarget(
        name: "control", summary: "the speaker's OTA_CONTROL parser", maxLength: 64,
        seeds: { SpeakerOTA.Command.allCases.map { SpeakerOTA.ControlCommand($0).encode() } }
    ) { input, f in
        let (c, problems) = SpeakerOTA.ControlCommand.decode(input)
        f.add(1, Features.lengthClass(input.count))
        f.add(2, problems: problems)
        if let c { f.add(3, UInt64(c.rawCommand)) }
        return .ok
    }

    /// A protocol invariant: a status notification that decodes names a state the protocol has.
    public static func notificationFinding(_ notified: [(UInt16, [UInt8])], valueHandle: (BluetoothUUID) -> UInt16?) -> FuzzOutcome? {
        guard let statusHandle = valueHandle(SpeakerOTA.status) else { return nil }
        for (handle, value) in notified where handle == statusHandle {
            if let s = SpeakerOTA.Status.decode(value).0, s.state == nil {
                return .finding(kind: "impossible-state", detail: "a status notification in state 0x\(String(s.rawState, radix: 16)), which the OTA protocol does not have")
            }
        }
        return nil
    }

    /// The emulated speaker's request handling: an input is ATT PDUs `[repeat][length][bytes]...`
    /// given to a speaker just powered on, the quirks planted.
    static func deviceTarget(quirks: [String], protocols: ProtocolSet) throws(FuzzError) -> FuzzTarget {
        let spec = try DeviceTargets.device("speaker", quirks, protocols)
        let probe = DeviceTargets.Bench(spec, protocols: protocols)
        let h = { (uuid: BluetoothUUID) in probe.device.server.valueHandle(of: uuid) ?? 0 }
        let (status, credentials, url, control) = (h(SpeakerOTA.status), h(SpeakerOTA.credentials), h(SpeakerOTA.url), h(SpeakerOTA.control))
        func write(_ handle: UInt16, _ value: [UInt8]) -> [UInt8] { ATTPDU.writeRequest(handle: handle, value: value).encode() }
        let session: [(Int, [UInt8])] = [
            (1, ATTPDU.exchangeMTURequest(clientRxMTU: 247).encode()),
            (1, write(status + 1, [1, 0])),
            (1, ATTPDU.readRequest(handle: status).encode()),
            (1, write(credentials, SpeakerOTA.Credentials(ssid: "HomeNet", password: "correct horse battery staple").encode())),
            (1, write(url, Array("https://fw.chaoticvolt.example/speaker/v2.4.1.bin".utf8))),
            (1, write(control, SpeakerOTA.ControlCommand(.start).encode())),
        ]
        let prepared: [(Int, [UInt8])] = [
            (1, ATTPDU.exchangeMTURequest(clientRxMTU: 247).encode()),
            (2, ATTPDU.prepareWriteRequest(handle: url, offset: 0, value: Array("https://fw.example/".utf8)).encode()),
            (1, ATTPDU.executeWriteRequest(flags: 1).encode()),
        ]
        let handles = [status, credentials, url, control]
        let values = FuzzTargets.valueMutators(protocols).map(\.mutate)
        return FuzzTarget(
            name: "device-speaker", summary: "the emulated speaker's ATT and OTA request handling\(quirks.isEmpty ? "" : " (quirks: \(quirks.joined(separator: ", ")))")",
            maxLength: 8192,
            seeds: { [DeviceTargets.encode(session), DeviceTargets.encode(prepared)] },
            mutator: { data, r in DeviceTargets.mutateSession(&data, &r, handles: handles, values: values) }
        ) { input, f in
            let bench = DeviceTargets.Bench(spec, protocols: protocols)
            for (times, pdu) in DeviceTargets.pdus(input) {
                f.add(1, UInt64(pdu.first ?? 0) << 16 | Features.lengthClass(pdu.count) << 8 | Features.lengthClass(times))
                for _ in 0..<times {
                    let outcome = bench.send(pdu, f: f)
                    if outcome.isFinding { return outcome }
                }
                if bench.device.requestedDisconnect != nil { break }
            }
            let end = bench.settleTimers(120_000_000, f: f)
            for (_, value) in bench.notified.suffix(4) { f.add(2, UInt64(value.first ?? 0) << 8 | UInt64(value.count > 1 ? value[1] : 0)) }
            return end
        }
    }
}
