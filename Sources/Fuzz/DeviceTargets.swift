import ATT
import Emulator
import Profiles

/// Emulated devices' request handling as fuzz targets. An input is a sequence of ATT PDUs, each
/// `[repeat][length][bytes]` (sent `repeat + 1` times, so a flood of Prepare Writes fits in a
/// small input), given to a device just powered on. Oracles: the firmware crashed (the device
/// reports it, as a watchdog reset would show), an answer longer than the MTU, a prepare queue
/// past 64 KiB (memory without bound), and for the sensor, scan results that depend on the MTU.
enum DeviceTargets {
    static let maxQueuedBytes = 65_536

    /// Splits an input into PDUs (with their repeat counts).
    static func pdus(_ input: [UInt8]) -> [(times: Int, pdu: [UInt8])] {
        var out: [(Int, [UInt8])] = []
        var i = 0
        while i + 1 < input.count {
            let times = Int(input[i]) + 1
            let n = Int(input[i + 1])
            i += 2
            let end = min(input.count, i + n)
            out.append((times, Array(input[i..<end])))
            i = end
        }
        return out
    }

    static func encode(_ pdus: [(times: Int, pdu: [UInt8])]) -> [UInt8] {
        pdus.flatMap { [UInt8(clamping: max(0, $0.times - 1)), UInt8(clamping: $0.pdu.count)] + $0.pdu.prefix(255) }
    }

    /// A device on its own clock, as the emulator runs it, for one input.
    final class Bench {
        let scheduler = VirtualScheduler(start: 1_748_772_000_000_000)
        let device: any DeviceModel
        var notified: [(UInt16, [UInt8])] = []

        init(_ spec: EmulatedDeviceSpec) {
            device = spec.factory(scheduler, 1)
            device.server.resetConnection()
            device.connected()
        }

        /// Sends one PDU and lets the device's timers run for `settle` µs; nil when an oracle fired.
        func send(_ pdu: [UInt8], f: Features, settle: Int64 = 50_000) -> FuzzOutcome {
            let answers = device.server.handle(pdu)
            let mtu = Int(device.server.mtu)
            for a in answers {
                guard a.count <= mtu else {
                    return .finding(kind: "answer-over-mtu", detail: "a \(a.count)-byte answer on MTU \(mtu) to opcode 0x\(String(pdu.first ?? 0, radix: 16))")
                }
                f.add(10, UInt64(a.first ?? 0) << 8 | UInt64(a.count > 4 ? a[4] : 0))
                if a.first == 0x1B || a.first == 0x1D { notified.append((UInt16(a[1]) | UInt16(a[2]) << 8, Array(a.dropFirst(3)))) }
            }
            return settleTimers(settle, f: f)
        }

        func settleTimers(_ time: Int64, f: Features) -> FuzzOutcome {
            let until = scheduler.now + time
            var fired = 0
            while let next = scheduler.nextTime, next <= until, fired < 10_000 {
                scheduler.runNext()
                fired += 1
                for n in device.server.takeOutgoing() where n.count >= 3 {
                    notified.append((UInt16(n[1]) | UInt16(n[2]) << 8, Array(n.dropFirst(3))))
                }
            }
            scheduler.advance(to: until)
            return check(f)
        }

        func check(_ f: Features) -> FuzzOutcome {
            if let crash = device.crash { return .finding(kind: "firmware-crash", detail: crash) }
            if let impossible = DeviceTargets.impossibleStatus(notified, statusHandle: device.server.valueHandle(of: SpeakerOTA.status)) {
                return impossible
            }
            if device.server.preparedBytes > DeviceTargets.maxQueuedBytes {
                return .finding(kind: "unbounded-prepare-queue", detail: "the device queued \(device.server.preparedBytes) bytes of Prepare Writes without Prepare Queue Full")
            }
            return .ok
        }
    }

    /// A protocol invariant: a speaker status that decodes names a state the protocol has.
    static func impossibleStatus(_ notified: [(UInt16, [UInt8])], statusHandle: UInt16?) -> FuzzOutcome? {
        guard let statusHandle else { return nil }
        for (handle, value) in notified where handle == statusHandle {
            if let s = SpeakerOTA.Status.decode(value).0, s.state == nil {
                return .finding(kind: "impossible-state", detail: "a status notification in state 0x\(String(s.rawState, radix: 16)), which the OTA protocol does not have")
            }
        }
        return nil
    }

    static func speaker(quirks: [String], protocols: ProtocolSet) throws(FuzzError) -> FuzzTarget {
        let spec = try device("speaker", quirks, protocols)
        let probe = Bench(spec)
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
            seeds: { [encode(session), encode(prepared)] },
            mutator: { data, r in mutateSession(&data, &r, handles: handles, values: values) }
        ) { input, f in
            let bench = Bench(spec)
            for (times, pdu) in pdus(input) {
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

    static func sensor(quirks: [String], protocols: ProtocolSet) throws(FuzzError) -> FuzzTarget {
        let spec = try device("sensor", quirks, protocols)
        let probe = Bench(spec)
        let scan = probe.device.server.valueHandle(of: SensorScan.characteristic) ?? 0
        let values = FuzzTargets.valueMutators(protocols).map(\.mutate)
        // What a SCAN returns at MTU 247 on a fresh device: every MTU must give the same networks.
        let reference = networks(spec, mtu: 247, scan: scan)
        let session: [(Int, [UInt8])] = [
            (1, ATTPDU.exchangeMTURequest(clientRxMTU: 247).encode()),
            (1, ATTPDU.writeRequest(handle: scan + 1, value: [1, 0]).encode()),
            (1, ATTPDU.writeRequest(handle: scan, value: SensorScan.request).encode()),
        ]
        return FuzzTarget(
            name: "device-sensor", summary: "the emulated sensor's SCAN handling and chunking at every MTU\(quirks.isEmpty ? "" : " (quirks: \(quirks.joined(separator: ", ")))")",
            maxLength: 4096,
            seeds: { [[0x00, 0xF7] + encode(session), [0x00, 0x17] + encode(session)] },
            mutator: { data, r in
                if data.count >= 2, r.chance(40) {
                    let m = UInt16(clamping: r.chance(50) ? (r.pick(ProtocolMutators.mtus) ?? 23) + r.below(7) - 3 : 23 + r.below(495))
                    data[0] = UInt8(m >> 8)
                    data[1] = UInt8(m & 0xFF)
                } else {
                    var rest = Array(data.dropFirst(2))
                    mutateSession(&rest, &r, handles: [scan], values: values)
                    data = Array(data.prefix(2)) + rest
                }
            }
        ) { input, f in
            guard input.count >= 2 else { return .ok }
            let mtu = max(23, min(517, Int(UInt16(input[0]) << 8 | UInt16(input[1]))))
            f.add(1, UInt64(mtu))
            // The invariant: SCAN at this MTU returns what it returns at 247.
            if let reference, let got = networks(spec, mtu: UInt16(mtu), scan: scan), got != reference {
                let missing = reference.subtracting(got).sorted().prefix(3).joined(separator: ", ")
                return .finding(kind: "scan-depends-on-mtu", detail: "SCAN at MTU \(mtu) returned \(got.count) networks, at 247 \(reference.count); missing: \(missing)")
            }
            let bench = Bench(spec)
            for (times, pdu) in pdus(Array(input.dropFirst(2))) {
                f.add(2, UInt64(pdu.first ?? 0) << 8 | Features.lengthClass(pdu.count))
                for _ in 0..<min(times, 64) {
                    let outcome = bench.send(pdu, f: f)
                    if outcome.isFinding { return outcome }
                }
            }
            return bench.settleTimers(20_000_000, f: f)
        }
    }

    /// The SSIDs a SCAN returns at `mtu` on a fresh device, joined as a phone joins them.
    static func networks(_ spec: EmulatedDeviceSpec, mtu: UInt16, scan: UInt16) -> Set<String>? {
        let bench = Bench(spec)
        let f = Features()
        _ = bench.send(ATTPDU.exchangeMTURequest(clientRxMTU: mtu).encode(), f: f)
        _ = bench.send(ATTPDU.writeRequest(handle: scan + 1, value: [1, 0]).encode(), f: f)
        _ = bench.send(ATTPDU.writeRequest(handle: scan, value: SensorScan.request).encode(), f: f, settle: 15_000_000)
        var joiner = SensorScan.Joiner()
        for (handle, value) in bench.notified where handle == scan {
            if joiner.add(value) { break }
        }
        guard joiner.complete else { return nil }
        return Set(joiner.response().networks.map(\.ssidText))
    }

    /// Mutates one PDU of a session: its value by a protocol's structure (one of `values`, the
    /// protocols' value mutators) or generic, its repeat count, or a Prepare Write flood.
    static func mutateSession(_ data: inout [UInt8], _ r: inout FuzzRandom, handles: [UInt16],
                              values: [@Sendable (inout [UInt8], inout FuzzRandom) -> Void]) {
        var list = pdus(data)
        if list.isEmpty { list = [(1, ATTPDU.exchangeMTURequest(clientRxMTU: 23).encode())] }
        let i = r.below(list.count)
        var (times, pdu) = list[i]
        var double = false
        switch r.below(6) {
        case 0:  // a structure-aware value for a write
            let handle = r.pick(handles) ?? 1
            var value = pdu.count > 3 ? Array(pdu.dropFirst(3)) : []
            let which = r.below(values.count + 1)
            if which < values.count { values[which](&value, &r) } else { GenericMutator.mutate(&value, &r, maxLength: 252) }
            pdu = ATTPDU.writeRequest(handle: handle, value: Array(value.prefix(252))).encode()
        case 1:  // a Prepare Write flood (twice, when it is to be larger than one entry carries)
            times = r.pick([32, 33, 64, 255]) ?? 255
            pdu = ATTPDU.prepareWriteRequest(handle: r.pick(handles) ?? 1, offset: UInt16(r.below(600)),
                                             value: [UInt8](repeating: 0x41, count: 1 + r.below(240))).encode()
            double = times == 255
        case 2:  // an MTU at a boundary
            pdu = ATTPDU.exchangeMTURequest(clientRxMTU: UInt16(clamping: (r.pick(ProtocolMutators.mtus) ?? 23) + r.below(5) - 2)).encode()
        case 3:
            times = 1 + r.below(4)
        case 4:  // a short write to one of the device's characteristics
            pdu = ATTPDU.writeRequest(handle: r.pick(handles) ?? 1, value: (0..<r.below(8)).map { _ in r.byte() }).encode()
        default:
            GenericMutator.mutate(&pdu, &r, maxLength: 255)
        }
        list[i] = (times, pdu)
        if double { list.insert((times, pdu), at: i) }
        if r.chance(20) { list.insert((1, pdu), at: r.below(list.count + 1)) }
        data = encode(Array(list.prefix(64)))
    }

    static func device(_ kind: String, _ quirks: [String], _ protocols: ProtocolSet) throws(FuzzError) -> EmulatedDeviceSpec {
        do {
            return try EmulatedDeviceSpec.named(kind, quirks: quirks, protocols: protocols)
        } catch {
            throw .usage("\(error)")
        }
    }
}

