import Analysis
import ATT
import Capture
import Emulator
import GATT
import HCI
import Profiles

/// Every in-process target: each decoder of the project and the emulated devices' request
/// handling. Oracles beyond "does not trap": decode-encode-decode round trips agree, buffers stay
/// within their stated bounds, devices do not crash or grow without bound.
public enum FuzzTargets {
    /// The names `gattlab fuzz` takes, with what each exercises.
    public static let names = ["status", "credentials", "url", "control", "scan", "att", "nrf7", "esp", "capture", "timeline",
                               "device-speaker", "device-sensor"]

    /// A target by name; `quirks` plant bugs in the emulated devices (device-speaker, device-sensor).
    public static func named(_ name: String, quirks: [String] = [], protocols: ProtocolSet) throws(FuzzError) -> FuzzTarget {
        switch name {
        case "status": return status
        case "credentials": return credentials
        case "url": return url
        case "control": return control
        case "scan": return scan
        case "att": return att
        case "nrf7": return nrf7
        case "esp": return esp
        case "capture": return capture(timeline: false, protocols: protocols)
        case "timeline": return capture(timeline: true, protocols: protocols)
        case "device-speaker": return try DeviceTargets.speaker(quirks: quirks, protocols: protocols)
        case "device-sensor": return try DeviceTargets.sensor(quirks: quirks, protocols: protocols)
        case "selftest-crash": return selftestCrash
        default: throw .usage("no fuzz target '\(name)'; known: \(names.joined(separator: ", "))")
        }
    }

    /// Not listed: a target with a planted trap (on inputs holding FF FE), so tests can prove
    /// that a crash in a campaign leaves its input on disk.
    static let selftestCrash = FuzzTarget(name: "selftest-crash", summary: "traps on FF FE (tests the crash guard)", maxLength: 64,
                                          seeds: { [[0x00, 0xFF]] }) { input, f in
        f.add(1, Features.lengthClass(input.count))
        for i in input.indices.dropLast() where input[i] == 0xFF && input[i + 1] == 0xFE {
            fatalError("selftest-crash: the planted trap")
        }
        return .ok
    }

    static func problems(_ f: Features, _ tag: UInt64, _ list: [ProtocolProblem]) {
        for p in list { f.add(tag, p.id) }
    }

    static let status = FuzzTarget(
        name: "status", summary: "the speaker's OTA_STATUS parser", maxLength: 517,
        seeds: { SpeakerOTA.State.allCases.map { SpeakerOTA.Status(state: $0, progress: 40, downloadedKB: 600, totalKB: 1480).encode() } + [[], [0x05]] },
        mutator: ProtocolMutators.status
    ) { input, f in
        let (status, problems) = SpeakerOTA.Status.decode(input)
        f.add(1, Features.lengthClass(input.count))
        Self.problems(f, 2, problems)
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

    static let credentials = FuzzTarget(
        name: "credentials", summary: "the speaker's OTA_CREDENTIALS parser (SSID, NUL, password)", maxLength: 600,
        seeds: { [SpeakerOTA.Credentials(ssid: "HomeNet", password: "correct horse battery staple").encode(), Array("x\0".utf8), []] },
        mutator: ProtocolMutators.credentials
    ) { input, f in
        let (c, problems) = SpeakerOTA.Credentials.decode(input)
        f.add(1, Features.lengthClass(input.count))
        Self.problems(f, 2, problems)
        guard let c else { return .ok }
        f.add(3, Features.lengthClass(c.ssid.count) << 8 | Features.lengthClass(c.password.unsafeBytes.count))
        _ = c.ssidText
        if SpeakerOTA.Credentials.decode(c.encode()).0 != c {
            return .finding(kind: "credentials-round-trip", detail: "decode(encode(credentials)) differs")
        }
        return .ok
    }

    static let url = FuzzTarget(
        name: "url", summary: "the speaker's OTA_URL parser and its secret finder (user:password, tokens)", maxLength: 600,
        seeds: { [Array("https://fw.chaoticvolt.example/speaker/v2.4.1.bin".utf8),
                  Array("http://admin:hunter2@updates.example.com/fw/speaker.bin?token=8c1f4e2ad9b7".utf8), Array("ftp://".utf8)] }
    ) { input, f in
        let (u, problems) = SpeakerOTA.FirmwareURL.decode(input)
        f.add(1, Features.lengthClass(input.count))
        Self.problems(f, 2, problems)
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

    static let control = FuzzTarget(
        name: "control", summary: "the speaker's OTA_CONTROL parser", maxLength: 64,
        seeds: { SpeakerOTA.Command.allCases.map { SpeakerOTA.ControlCommand($0).encode() } }
    ) { input, f in
        let (c, problems) = SpeakerOTA.ControlCommand.decode(input)
        f.add(1, Features.lengthClass(input.count))
        Self.problems(f, 2, problems)
        if let c { f.add(3, UInt64(c.rawCommand)) }
        return .ok
    }

    /// Byte 0: the chunk size (MTU-3); the rest: the response stream, cut into chunks.
    static let scan = FuzzTarget(
        // Responses of up to 2 KiB: ten networks take about 200 bytes; longer inputs only slow the
        // campaign (the joiner's 16 KiB cap has its own tests).
        name: "scan", summary: "the sensor's MORE/END joiner and SSID,RSSI line parser", maxLength: 2048,
        seeds: {
            let nets = [SensorScan.Network("HomeNet", rssi: -41), SensorScan.Network("Caf\u{e9} Ol\u{e9}", rssi: -70),
                        SensorScan.Network("a,b", rssi: -90)]
            return [20, 182, 244].flatMap { size in
                [false, true].map { separate in [UInt8(size)] + SensorScan.encode(nets, chunkSize: size, separateMarkers: separate).flatMap { $0 } }
            }
        },
        mutator: ProtocolMutators.scan
    ) { input, f in
        guard let first = input.first else { return .ok }
        let size = max(1, Int(first))
        let stream = input.dropFirst()
        var joiner = SensorScan.Joiner()
        var chunks = 0
        var i = stream.startIndex
        while i < stream.endIndex {
            let end = min(stream.endIndex, i + size)
            chunks += 1
            if joiner.add(Array(stream[i..<end])) { break }
            i = end
        }
        // The joiner's buffer is bounded whatever arrives.
        if joiner.bytes.count > SensorScan.maxResponseBytes + 512 {
            return .finding(kind: "scan-unbounded", detail: "the joiner holds \(joiner.bytes.count) bytes")
        }
        let response = joiner.response(truncatedBecause: joiner.complete ? nil : "fuzz input ended")
        f.add(1, Features.lengthClass(chunks))
        f.add(2, (joiner.complete ? 1 : 0) | (joiner.overflow ? 2 : 0))
        f.add(3, Features.lengthClass(response.networks.count))
        Self.problems(f, 4, response.problems)
        for n in response.networks.prefix(16) {
            f.add(5, UInt64(bitPattern: Int64(n.rssi.signum())) << 8 | Features.lengthClass(n.ssid.count))
        }
        return .ok
    }

    static let att = FuzzTarget(
        name: "att", summary: "every ATT PDU decoder (Core 5.4), with encode round trips", maxLength: 600,
        seeds: { [[0x02, 0xF7, 0x00], [0x0A, 0x03, 0x00], [0x12, 0x0E, 0x00, 0x41], [0x16, 0x0E, 0x00, 0x00, 0x00, 0x41],
                  [0x1B, 0x14, 0x00, 1, 2], [0x10, 1, 0, 0xFF, 0xFF, 0x00, 0x28], [0x01, 0x12, 0x0E, 0x00, 0x0F]] }
    ) { input, f in
        f.add(1, UInt64(input.first ?? 0))
        do {
            let pdu = try ATTPDU.decode(input)
            f.add(2, UInt64(pdu.opcode))
            let again = try ATTPDU.decode(pdu.encode())
            if again != pdu { return .finding(kind: "att-round-trip", detail: "opcode 0x\(String(pdu.opcode, radix: 16)): decode(encode(pdu)) differs") }
        } catch {
            f.add(3, "\(error)".prefix(40).description)
        }
        return .ok
    }

    static let nrf7 = FuzzTarget(
        name: "nrf7", summary: "Nordic nRF7 provisioning messages (protobuf): Request, Response, Result, Info", maxLength: 1024,
        seeds: {
            [NRF7.Request(opCode: NRF7.opCode(1)).encode(),
             NRF7.Request(opCode: NRF7.opCode(4), config: NRF7.WifiConfig(wifi: NRF7.WifiInfo(ssid: "HomeNet", channel: 6, auth: 3),
                                                                         passphrase: "correct horse")).encode(),
             NRF7.Response(requestOpCode: NRF7.opCode(1), status: NRF7.status(0)).encode()]
        },
        mutator: ProtocolMutators.protobuf
    ) { input, f in
        f.add(1, Features.lengthClass(input.count))
        let (request, p1) = NRF7.Request.decode(input)
        let (response, p2) = NRF7.Response.decode(input)
        let (result, p3) = NRF7.Result.decode(input)
        let (info, p4) = NRF7.Info.decode(input)
        Self.problems(f, 2, p1 + p2 + p3 + p4)
        if let request { f.add(3, UInt64(truncatingIfNeeded: request.opCode?.raw ?? -1)); if NRF7.Request.decode(request.encode()).0 != request { return .finding(kind: "nrf7-round-trip", detail: "Request") } }
        if let response, NRF7.Response.decode(response.encode()).0 != response { return .finding(kind: "nrf7-round-trip", detail: "Response") }
        if let result, NRF7.Result.decode(result.encode()).0 != result { return .finding(kind: "nrf7-round-trip", detail: "Result") }
        if let info, NRF7.Info.decode(info.encode()).0 != info { return .finding(kind: "nrf7-round-trip", detail: "Info") }
        return .ok
    }

    static let esp = FuzzTarget(
        name: "esp", summary: "ESP-IDF provisioning messages (protobuf): session, config, scan, version", maxLength: 1024,
        seeds: {
            [ESPProvisioning.ConfigMessage(.setConfig(.init(ssid: "HomeNet", passphrase: "correct horse"))).encode(),
             ESPProvisioning.ConfigMessage(.getStatus).encode(), ESPProvisioning.ConfigMessage(.applyConfig).encode(),
             Array(#"{"prov":{"ver":"v1.1","sec_ver":1,"cap":["wifi_scan"]}}"#.utf8)]
        },
        mutator: ProtocolMutators.protobuf
    ) { input, f in
        f.add(1, Features.lengthClass(input.count))
        let (session, p1) = ESPProvisioning.SessionMessage.decode(input)
        let (config, p2) = ESPProvisioning.ConfigMessage.decode(input)
        let (scan, p3) = ESPProvisioning.ScanMessage.decode(input)
        let (version, p4) = ESPProvisioning.Version.decode(input)
        Self.problems(f, 2, p1 + p2 + p3 + p4)
        if let session, ESPProvisioning.SessionMessage.decode(session.encode()).0 != session { return .finding(kind: "esp-round-trip", detail: "SessionData") }
        if let config, ESPProvisioning.ConfigMessage.decode(config.encode()).0 != config { return .finding(kind: "esp-round-trip", detail: "WiFiConfigPayload") }
        if let scan, ESPProvisioning.ScanMessage.decode(scan.encode()).0 != scan { return .finding(kind: "esp-round-trip", detail: "WiFiScanPayload") }
        if version != nil { f.add(3, 1) }
        return .ok
    }

    /// A btsnoop or PacketLogger file through the whole pipeline: reader, HCI, ATT, GATT, the
    /// device protocols (and the timeline builder).
    static func capture(timeline: Bool, protocols: ProtocolSet) -> FuzzTarget {
        FuzzTarget(
            name: timeline ? "timeline" : "capture",
            summary: timeline ? "the timeline builder over a whole decoded capture" : "capture readers and the decoding pipeline to the device protocols",
            maxLength: 1 << 16,
            seeds: { CaptureSeeds.small() }
        ) { input, f in
            let reader: any CaptureReader
            do throws(CaptureError) { reader = try openCapture(bytes: input) } catch {
                f.add(1, "\(error.kind)")
                return .ok
            }
            let gatt = GATTDecoder()
            let profiles = ProfileDecoder(protocols: protocols)
            let builder = timeline ? TimelineBuilder(source: "fuzz", format: reader.format.description, protocols: protocols) : nil
            var records = 0
            do throws(CaptureError) {
                while let record = try reader.next(), records < 20_000 {
                    records += 1
                    gatt.consume(record)
                    profiles.consume(gatt, record: record)
                    for e in gatt.events.prefix(8) { f.add(2, Self.eventTag(e)) }
                    for e in profiles.events.prefix(4) { f.add(3, e.kind) }
                    builder?.consume(record, gatt: gatt.events, profile: profiles.events)
                }
            } catch {
                f.add(4, "\(error.kind)")
            }
            if let builder {
                let t = builder.finish()
                f.add(5, Features.lengthClass(t.devices.count))
                for finding in t.findings.prefix(16) { f.add(6, finding.id) }
                f.add(7, Features.lengthClass(t.events.count))
            }
            return .ok
        }
    }

    static func eventTag(_ e: GATTEvent) -> UInt64 {
        switch e {
        case .att(let a): 0x100 | UInt64(a.opcode) | (a.malformed == nil ? 0 : 0x200)
        case .link(let l): 0x1000 | Features.hash(String(describing: l).prefix(24).description) & 0xFFF
        case .operation(let o): 0x4000 | Features.hash(String(describing: o).prefix(16).description) & 0xFF
        }
    }
}

/// Why the fuzzer could not start.
public enum FuzzError: Error, Sendable, CustomStringConvertible {
    case usage(String)
    case io(String)

    public var description: String {
        switch self {
        case .usage(let s), .io(let s): s
        }
    }
}
