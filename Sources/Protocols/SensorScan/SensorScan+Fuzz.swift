import ATT
import Emulator
import Fuzz
import HCI
import Profiles

/// The sensor's MORE/END joiner and line parser as the `scan` fuzz target, with its scan-response
/// mutator, its emulated device's SCAN handling at every MTU (device-sensor), and the routing of
/// its notifications (joined per response) to the scan corpus.
extension SensorScanProtocol: FuzzableProtocol {
    public static var fuzzTargets: [FuzzTarget] { [scanTarget] }
    /// Its parsers live in SensorScanCodec: a libFuzzer build of its targets instruments that alone.
    public static var codec: Any.Type? { SensorScan.self }

    public static func corpusRouter() -> any FuzzCorpusRouting { ScanCorpusRouter() }

    public static var deviceFuzzTargets: [DeviceFuzzTarget] {
        [DeviceFuzzTarget(name: "device-sensor", device: "sensor",
                          mtuInvariant: MTUInvariant(characteristic: SensorScan.characteristic, request: SensorScan.request) { ScanAnswerJoiner() }) { quirks, protocols throws(FuzzError) in
            try deviceTarget(quirks: quirks, protocols: protocols)
        }]
    }

    /// Byte 0: the chunk size (MTU-3); the rest: the response stream, cut into chunks.
    static let scanTarget = FuzzTarget(
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
        // The response's markers and line syntax (SSID,RSSI with a negative RSSI).
        dictionary: ["MORE\n", "END\n", "MORE", "END", "\r\n", ",-", "SCAN"].map { Array($0.utf8) },
        mutator: mutateScan
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
            if joiner.add(stream[i..<end]) { break }
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
        f.add(4, problems: response.problems)
        for n in response.networks.prefix(16) {
            f.add(5, UInt64(bitPattern: Int64(n.rssi.signum())) << 8 | Features.lengthClass(n.ssid.count))
        }
        return .ok
    }

    /// Scan responses, as the scan target reads them: byte 0 is the chunk size (MTU-3), the rest
    /// the stream. Splits at every position, MORE/END missing, repeated, misplaced, in another
    /// case or split across chunks, CR LF, commas and non-ASCII in SSIDs, RSSI out of range,
    /// more than 10 networks, empty notifications, a new SCAN in the middle.
    public static func mutateScan(_ data: inout [UInt8], _ r: inout FuzzRandom) {
        // In place: byte 0 is the chunk size, the rest the text (the mutator runs between most
        // executions, and building the input anew, with arrays of words, was a tenth of them).
        var chunk = data.first.map(Int.init) ?? 20
        if data.count <= 1 { data = [0] + Self.defaultText }
        switch r.below(10) {
        case 0: chunk = 1 + r.below(data.count)  // every split position
        case 1: removeLast(Self.endWord, from: &data)
        case 2: data += r.pick(Self.endings) ?? Self.endWord
        case 3: data.insert(contentsOf: r.pick(Self.insertions) ?? Self.endWord, at: 1 + r.below(data.count))
        case 4: data = Self.crlfLines(data)
        case 5: data.insert(contentsOf: r.pick(Self.oddNetworks) ?? [], at: 1)
        case 6: data.insert(contentsOf: r.pick(Self.oddRSSIs) ?? [], at: 1)
        case 7: data = Self.manyNetworks(11 + r.below(30))
        case 8: data.insert(contentsOf: Self.scanWord, at: 1 + r.below(data.count))
        default: chunk = r.pick(Self.chunkSizes) ?? 20
        }
        data[0] = UInt8(clamping: chunk)
        if data.count > 2048 { data.removeLast(data.count - 2048) }
    }

    static let defaultText = Array("HomeNet,-41\nCafe,-70\nEND".utf8), endWord = Array("END".utf8), scanWord = Array("SCAN".utf8)
    /// Chunk sizes worth trying: none, the smallest, the MTUs' (23, 185 and 247 less 3), the largest.
    static let chunkSizes = [0, 1, 2, 3, 4, 20, 182, 244, 255]
    static let endings = ["END", "MORE", "\nEND", "END\nEND"].map { Array($0.utf8) }
    static let insertions = ["END\n", "MORE\n", "end", "More"].map { Array($0.utf8) }
    static let oddNetworks = ["a,b,c,-40\n", "Caf\u{e9},-60\n", "\u{202e}evil,-1\n", ",-50\n", "x,\n"].map { Array($0.utf8) }
    static let oddRSSIs = ["N,-200\n", "N,40\n", "N,-2147483649\n", "N,99999999999999999999\n", "N,-\n"].map { Array($0.utf8) }

    /// The text with every LF made CR LF (byte 0 kept). Built in one array: a two-byte array per
    /// byte, as this was written before, made this case a third of the mutator's time.
    static func crlfLines(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(2 * data.count)
        out.append(data[0])
        for b in data.dropFirst() {
            if b == 0x0A { out.append(0x0D) }
            out.append(b)
        }
        return out
    }

    /// Byte 0 (chunk size 0) and `count` networks "net<i>,-<40+i>" then END: more than the ten
    /// the firmware means to send.
    static func manyNetworks(_ count: Int) -> [UInt8] {
        func decimal(_ v: Int, into out: inout [UInt8]) {
            if v >= 10 { decimal(v / 10, into: &out) }
            out.append(0x30 + UInt8(v % 10))
        }
        var out: [UInt8] = [0]
        out.reserveCapacity(1 + 12 * count + endWord.count)
        for i in 0..<count {
            out.append(0x6E); out.append(0x65); out.append(0x74)  // net
            decimal(i, into: &out)
            out.append(0x2C); out.append(0x2D)  // ,-
            decimal(40 + i, into: &out)
            out.append(0x0A)
        }
        out += endWord
        return out
    }

    /// Removes the last occurrence of `what` in the text (after byte 0).
    static func removeLast(_ what: [UInt8], from data: inout [UInt8]) {
        guard data.count - 1 >= what.count,
              let i = (1...(data.count - what.count)).reversed().first(where: { data[$0..<($0 + what.count)].elementsEqual(what) }) else { return }
        data.removeSubrange(i..<(i + what.count))
    }

    /// The emulated sensor's SCAN handling: the input's first two bytes are the MTU it is scanned
    /// at, the rest ATT PDUs as for the speaker; SCAN must return the same networks at every MTU.
    static func deviceTarget(quirks: [String], protocols: ProtocolSet) throws(FuzzError) -> FuzzTarget {
        let spec = try DeviceTargets.device("sensor", quirks, protocols)
        let probe = DeviceTargets.Bench(spec, protocols: protocols)
        let scan = probe.device.server.valueHandle(of: SensorScan.characteristic) ?? 0
        let values = FuzzTargets.valueMutators(protocols).map(\.mutate)
        // What a SCAN returns at MTU 247 on a fresh device: every MTU must give the same networks.
        let reference = networks(spec, mtu: 247, scan: scan, protocols: protocols)
        let session: [(Int, [UInt8])] = [
            (1, ATTPDU.exchangeMTURequest(clientRxMTU: 247).encode()),
            (1, ATTPDU.writeRequest(handle: scan + 1, value: [1, 0]).encode()),
            (1, ATTPDU.writeRequest(handle: scan, value: SensorScan.request).encode()),
        ]
        return FuzzTarget(
            name: "device-sensor", summary: "the emulated sensor's SCAN handling and chunking at every MTU\(quirks.isEmpty ? "" : " (quirks: \(quirks.joined(separator: ", ")))")",
            maxLength: 4096,
            seeds: { [[0x00, 0xF7] + DeviceTargets.encode(session), [0x00, 0x17] + DeviceTargets.encode(session)] },
            mutator: { data, r in
                if data.count >= 2, r.chance(40) {
                    let m = UInt16(clamping: r.chance(50) ? (r.pick(ProtocolMutators.mtus) ?? 23) + r.below(7) - 3 : 23 + r.below(495))
                    data[0] = UInt8(m >> 8)
                    data[1] = UInt8(m & 0xFF)
                } else {
                    var rest = Array(data.dropFirst(2))
                    DeviceTargets.mutateSession(&rest, &r, handles: [scan], values: values)
                    data = Array(data.prefix(2)) + rest
                }
            }
        ) { input, f in
            guard input.count >= 2 else { return .ok }
            let mtu = max(23, min(517, Int(UInt16(input[0]) << 8 | UInt16(input[1]))))
            f.add(1, UInt64(mtu))
            // The invariant: SCAN at this MTU returns what it returns at 247.
            if let reference, let got = networks(spec, mtu: UInt16(mtu), scan: scan, protocols: protocols), got != reference {
                let missing = reference.subtracting(got).sorted().prefix(3).joined(separator: ", ")
                return .finding(kind: "scan-depends-on-mtu", detail: "SCAN at MTU \(mtu) returned \(got.count) networks, at 247 \(reference.count); missing: \(missing)")
            }
            let bench = DeviceTargets.Bench(spec, protocols: protocols)
            for (times, pdu) in DeviceTargets.pdus(Array(input.dropFirst(2))) {
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
    static func networks(_ spec: EmulatedDeviceSpec, mtu: UInt16, scan: UInt16, protocols: ProtocolSet) -> Set<String>? {
        let bench = DeviceTargets.Bench(spec, protocols: protocols)
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
}

/// The networks of one SCAN answer, joined as a phone joins them.
struct ScanAnswerJoiner: FuzzAnswerJoining {
    var joiner = SensorScan.Joiner()
    mutating func add(_ value: [UInt8]) -> Bool { joiner.add(value) }
    var items: Set<String>? { joiner.complete ? Set(joiner.response().networks.map(\.ssidText)) : nil }
}

/// One scan response per corpus input: its notifications joined per connection, behind the
/// chunk size the scan target cuts at (the largest notification's length).
struct ScanCorpusRouter: FuzzCorpusRouting {
    var open: [ConnectionKey: (joiner: SensorScan.Joiner, chunks: [[UInt8]])] = [:]

    mutating func route(_ value: [UInt8], characteristic: BluetoothUUID, endpoint: String?,
                        connection: ConnectionKey, notified: Bool) -> [(target: String, input: [UInt8])]? {
        guard characteristic == SensorScan.characteristic, notified else { return nil }
        var s = open[connection] ?? (SensorScan.Joiner(), [])
        s.chunks.append(value)
        guard s.joiner.add(value) else {
            open[connection] = s
            return []
        }
        open[connection] = nil
        let size = UInt8(clamping: max(1, s.chunks.map(\.count).max() ?? 1))
        return [("scan", [size] + s.chunks.joined())]
    }
}
