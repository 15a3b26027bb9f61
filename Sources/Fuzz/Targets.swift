import Analysis
import ATT
import Capture
import Emulator
import GATT
import HCI
import Profiles

/// Every in-process target: each decoder of the project and the emulated devices' request
/// handling. Oracles beyond "does not trap": decode-encode-decode round trips agree, buffers stay
/// within their stated bounds, devices do not crash or grow without bound. The device protocols'
/// own targets come from their `FuzzableProtocol` conformances; the ones here are generic.
public enum FuzzTargets {
    /// The names `gattlab fuzz` takes, in the order `gattlab fuzz list` shows them.
    public static func names(protocols: ProtocolSet) -> [String] {
        decoders(protocols).map(\.name) + devices(protocols).map(\.name)
    }

    /// The protocols' emulated-device targets, listed last.
    static func devices(_ protocols: ProtocolSet) -> [DeviceFuzzTarget] {
        protocols.conforming(to: (any FuzzableProtocol.Type).self).flatMap { $0.deviceFuzzTargets }
    }

    /// The decoder targets in list order: the protocols' value parsers, the ATT PDUs, the
    /// protocols' message codecs, then the whole-capture targets.
    static func decoders(_ protocols: ProtocolSet) -> [FuzzTarget] {
        let fuzzable = protocols.conforming(to: (any FuzzableProtocol.Type).self)
        func group(_ g: FuzzTargetGroup) -> [FuzzTarget] {
            fuzzable.filter { $0.fuzzTargetGroup == g }.flatMap { p in
                p.codec.map { codec in p.fuzzTargets.map { $0.instrumenting(moduleOf: codec) } } ?? p.fuzzTargets
            }
        }
        return group(.values) + [att.instrumenting(moduleOf: ATTPDU.self)] + group(.messages) + [capture(timeline: false, protocols: protocols), capture(timeline: true, protocols: protocols)]
    }

    /// The value mutators of every protocol in the set, in registration order.
    public static func valueMutators(_ protocols: ProtocolSet) -> [FuzzValueMutator] {
        protocols.conforming(to: (any FuzzableProtocol.Type).self).flatMap { $0.valueMutators }
    }

    /// A target by name; `quirks` plant bugs in the emulated devices (device-speaker, device-sensor).
    public static func named(_ name: String, quirks: [String] = [], protocols: ProtocolSet) throws(FuzzError) -> FuzzTarget {
        if let target = decoders(protocols).first(where: { $0.name == name }) { return target }
        if let device = devices(protocols).first(where: { $0.name == name }) { return try device.make(quirks, protocols) }
        switch name {
        case "selftest-crash": return selftestCrash
        default: throw .usage("no fuzz target '\(name)'; known: \(names(protocols: protocols).joined(separator: ", "))")
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

    /// A btsnoop or PacketLogger file through the whole pipeline: reader, HCI, ATT, GATT, the
    /// device protocols (and the timeline builder).
    static func capture(timeline: Bool, protocols: ProtocolSet) -> FuzzTarget {
        FuzzTarget(
            name: timeline ? "timeline" : "capture",
            summary: timeline ? "the timeline builder over a whole decoded capture" : "capture readers and the decoding pipeline to the device protocols",
            maxLength: 1 << 16,
            seeds: { CaptureSeeds.small(protocols) },
            dictionary: captureDictionary
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

    /// The btsnoop header's words: the magic, version 1 and the datalinks the reader takes
    /// (1001, 1002, 2001), big-endian as in the file.
    static let captureDictionary: [[UInt8]] = [
        Array("btsnoop\0".utf8), [0, 0, 0, 1], [0x00, 0x00, 0x03, 0xE9], [0x00, 0x00, 0x03, 0xEA], [0x00, 0x00, 0x07, 0xD1],
    ]

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
