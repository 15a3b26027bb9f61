import Foundation
import XCTest

/// Issue 2, "It must show" 1: for every real capture, the (frame, ATT opcode) sequence of
/// `gattlab decode --format json` equals tshark's, and where tshark marks an ATT PDU malformed,
/// GATTLab does too; each ATT PDU's `relativeTime` is tshark's `frame.time_relative` (to the µs).
final class WiresharkConformanceTests: XCTestCase {
    struct PDU: Hashable, CustomStringConvertible {
        var frame: Int
        var opcode: Int
        var description: String { "(\(frame), 0x\(String(opcode, radix: 16)))" }
    }

    /// Frames tshark calls malformed because of a dissector *above* ATT that decodes a
    /// characteristic's value (Wireshark has value dissectors for SIG characteristics such as
    /// HID reports; GATTLab leaves those values to the profile layer). Their opcodes are still
    /// compared; only the malformed verdict is left out, and each is listed in the test log.
    static let valueDissectors = ["USBHID", "BT GATT", "BT Mesh", "BT Common"]

    struct TsharkView {
        var pdus: [PDU] = []
        var malformed: Set<PDU> = []
        var valueMalformed: Set<PDU> = []
        /// frame.time_relative of frames with ATT, in microseconds.
        var relative: [Int: Int64] = [:]
    }

    /// Frames of a classic microsecond pcap whose record header holds a microsecond count of a
    /// second or more (crackle's samples have them, some "negative"): such a time means nothing,
    /// and tshark and GATTLab each make a different number of it. They are not compared.
    static func framesWithInvalidTime(_ file: String) -> Set<Int> {
        guard let data = FileManager.default.contents(atPath: file), data.count >= 24 else { return [] }
        let bytes = [UInt8](data)
        func u32(_ o: Int, little: Bool) -> UInt32 {
            let b = bytes[o..<(o + 4)].map(UInt32.init)
            return little ? b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24 : b[3] | b[2] << 8 | b[1] << 16 | b[0] << 24
        }
        let little: Bool
        switch u32(0, little: true) {
        case 0xA1B2_C3D4: little = true
        case 0xD4C3_B2A1: little = false
        default: return []  // pcapng, nanosecond pcap, btsnoop, PacketLogger: no such field
        }
        var frames: Set<Int> = []
        var offset = 24, frame = 0
        while offset + 16 <= bytes.count {
            frame += 1
            if u32(offset + 4, little: little) >= 1_000_000 { frames.insert(frame) }
            offset += 16 + Int(u32(offset + 8, little: little))
        }
        return frames
    }

    /// "-0.000300000" or "12.345678901" as microseconds (truncated, as GATTLab keeps time).
    static func micros(_ text: Substring) -> Int64? {
        let negative = text.hasPrefix("-")
        let parts = text.drop { $0 == "-" }.split(separator: ".", omittingEmptySubsequences: false)
        guard let whole = Int64(parts.first ?? ""), parts.count <= 2 else { return nil }
        let fraction = parts.count == 2 ? String(parts[1].prefix(6)) : ""
        guard let f = Int64(fraction + String(repeating: "0", count: 6 - fraction.count)) else { return nil }
        return (negative ? -1 : 1) * (whole * 1_000_000 + f)
    }

    static func tsharkView(_ file: String) throws -> TsharkView {
        let r = try Harness.run(Harness.tshark, ["-r", file, "-o", Harness.tsharkUserDLT, "-T", "fields",
                                                 "-e", "frame.number", "-e", "btatt.opcode", "-e", "_ws.malformed",
                                                 "-e", "frame.time_relative"], timeout: 120)
        XCTAssertEqual(r.status, 0, "tshark failed on \(file): \(r.stderr)")
        var view = TsharkView()
        for line in r.stdout.split(separator: "\n", omittingEmptySubsequences: true) {
            let f = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard f.count >= 2, !f[1].isEmpty, let frame = Int(f[0]) else { continue }
            let malformed = f.count > 2 ? String(f[2]) : ""
            if f.count > 3 { view.relative[frame] = micros(f[3]) }
            for op in f[1].split(separator: ",") {
                guard let opcode = Int(op.dropFirst(2), radix: 16) else { continue }
                let pdu = PDU(frame: frame, opcode: opcode)
                view.pdus.append(pdu)
                guard !malformed.isEmpty else { continue }
                if Self.valueDissectors.contains(where: { malformed.contains("Malformed Packet: \($0)]") }) {
                    view.valueMalformed.insert(pdu)
                } else {
                    view.malformed.insert(pdu)
                }
            }
        }
        return view
    }

    static func gattlabView(_ file: String) throws -> (pdus: [PDU], malformed: Set<PDU>, relative: [Int: Int64], status: Int32, stderr: String) {
        // tshark does not decrypt: neither does gattlab here (the keys of sniffed legacy pairings
        // are compared with crackle's decrypted output in LinkDecryptionTests).
        let r = try Harness.gattlab(["decode", "--format", "json", "--att-only", "--no-pairing-keys", file], timeout: 120)
        XCTAssertFalse(r.signalled, "gattlab crashed on \(file)")
        var pdus: [PDU] = []
        var malformed: Set<PDU> = []
        var relative: [Int: Int64] = [:]
        for o in Harness.jsonLines(r.stdout, type: "att") {
            if let frame = o["frame"] as? Int, let seconds = o["relativeTime"] as? Double {
                relative[frame] = Int64((seconds * 1_000_000).rounded())
            }
            guard let frame = o["frame"] as? Int, let opcode = o["opcode"] as? Int else {
                XCTFail("ATT line without frame/opcode in \(file): \(o)")
                continue
            }
            let pdu = PDU(frame: frame, opcode: opcode)
            pdus.append(pdu)
            if o["malformed"] != nil { malformed.insert(pdu) }
        }
        return (pdus, malformed, relative, r.status, r.stderr)
    }

    func testEveryRealCaptureMatchesTshark() throws {
        _ = try Harness.gattlab
        _ = try Harness.tshark
        let files = try Harness.manifest()
        XCTAssertGreaterThan(files.count, 60, "MANIFEST.tsv lists the real captures")
        final class Total: @unchecked Sendable {
            let lock = NSLock()
            var pdus = 0
        }
        let total = Total()
        let agreed = try EveryRealCapture.check(files) { name, path in
            let t = try Self.tsharkView(path)
            let g = try Self.gattlabView(path)
            var problems: [String] = []
            if g.status != 0 { problems.append("exit \(g.status): \(g.stderr)") }
            if t.pdus != g.pdus {
                let onlyT = Set(t.pdus).subtracting(g.pdus).sorted { $0.frame < $1.frame }.prefix(10)
                let onlyG = Set(g.pdus).subtracting(t.pdus).sorted { $0.frame < $1.frame }.prefix(10)
                problems.append("opcodes differ (tshark \(t.pdus.count), gattlab \(g.pdus.count)); only tshark: \(Array(onlyT)), only gattlab: \(Array(onlyG))")
            }
            let invalidTimes = Self.framesWithInvalidTime(path)
            let timesDiffer = g.relative.filter { frame, ours in
                guard !invalidTimes.contains(frame) else { return false }
                guard let theirs = t.relative[frame] else { return true }
                return abs(theirs - ours) > 1
            }.keys.sorted()
            if !timesDiffer.isEmpty {
                let shown = timesDiffer.prefix(5).map { "frame \($0): gattlab \(g.relative[$0]!) µs, tshark \(t.relative[$0].map(String.init) ?? "none")" }
                problems.append("relativeTime differs from frame.time_relative on \(timesDiffer.count) frames: \(shown)")
            }
            let gMalformed = g.malformed.subtracting(t.valueMalformed)
            if t.malformed != gMalformed {
                problems.append("malformed differ; only tshark: \(t.malformed.subtracting(gMalformed).sorted { $0.frame < $1.frame }), only gattlab: \(gMalformed.subtracting(t.malformed).sorted { $0.frame < $1.frame })")
            }
            total.lock.lock()
            total.pdus += t.pdus.count
            total.lock.unlock()
            var line = "\(t.pdus.count) ATT PDUs, \(t.malformed.count) malformed"
            if !invalidTimes.isEmpty { line += "; \(invalidTimes.count) records with a microsecond field of a second or more: times not compared" }
            if !t.valueMalformed.isEmpty {
                line += "; left out, malformed in a value dissector above ATT: \(t.valueMalformed.sorted { $0.frame < $1.frame })"
            }
            return .init(line: line, problems: problems)
        }
        print("conformance: \(agreed) of \(files.count) captures agree with tshark on \(total.pdus) ATT PDUs")
    }
}
