import Analysis
import Capture
import Foundation
import GATT

extension Redactor {
    /// Fragments of a secret searched for in the output: long enough not to occur by chance.
    static let fragmentLength = 8

    /// The checks a redacted copy must pass before it is kept.
    static func verify(_ path: String, input: String, before: Analysis, options: RedactionOptions,
                       makeDecoder: () -> GATTDecoder, outcome: RedactionOutcome) throws(RedactionError) -> [RedactionCheck] {
        var checks: [RedactionCheck] = []

        // 1. No byte sequence of a secret (or of a replaced address or name) is left anywhere.
        // Each value is searched for once, with the first description given for it: a test rack's
        // day sends the same password in every session, and a copy of each value and fragment per
        // sighting was most of the command's memory, growing with the capture. The count reported
        // is of every value and fragment of every sighting, as it has always been.
        var patterns: [(what: String, bytes: [UInt8])] = []
        var seen = Set<[UInt8]>()
        var searched = 0
        func add(_ what: @autoclosure () -> String, _ bytes: [UInt8]) {
            searched += 1
            if seen.insert(bytes).inserted { patterns.append((what(), bytes)) }
        }
        var skipped = 0
        for s in outcome.secrets {
            let v = s.secret.unsafeBytes
            guard searchable(v) else { skipped += 1; continue }
            let what = "\(s.kind.title) of record \(s.records.first ?? 0)"
            add(what, v)
            // Fragments of passwords and tokens too: a long write splits them over parts and a
            // server echoes each part, so a leak can hold pieces without the whole. (Keys travel
            // whole in one PDU; a credential value that did not decode holds the SSID as well.)
            if [.wifiPassword, .urlPassword, .urlToken].contains(s.kind), v.count >= 2 * fragmentLength {
                for i in 0...(v.count - fragmentLength) {
                    let window = Array(v[i..<(i + fragmentLength)])
                    if searchable(window) { add("a fragment of the \(what)", window) }
                }
            }
        }
        for r in before.anonymizer?.replacements() ?? [] where r.from.count >= 6 { add("an original address or name", r.from) }
        let hits = search(path, for: patterns)
        checks.append(RedactionCheck(
            name: "no secret bytes left", passed: hits.isEmpty,
            detail: hits.isEmpty
                ? "searched the whole file for \(searched) value\(searched == 1 ? "" : "s")\(skipped > 0 ? " (\(skipped) too short or too uniform to search for; overwritten where decoded)" : "")"
                : hits.prefix(5).map { "\($0.what) still at byte \($0.offset)" }.joined(separator: ", ")))

        // 2. GATTLab reads the same records and structure, and finds only redacted values.
        let after = try analyse(path, options: options, makeDecoder: makeDecoder, anonymize: false)
        let sameStructure = after.records == before.records && after.structure == before.structure
        checks.append(RedactionCheck(
            name: "same records and ATT/SMP structure (GATTLab)", passed: sameStructure,
            detail: sameStructure ? "\(after.records) records" : "\(before.records) records before, \(after.records) after; ATT/SMP structure \(after.structure == before.structure ? "equal" : "differs")"))
        let leftover = after.report.secrets.filter { !$0.alreadyRedacted }
        checks.append(RedactionCheck(
            name: "audit finds no secret values", passed: leftover.isEmpty,
            detail: leftover.isEmpty ? "\(after.report.secrets.count) secret fields, all redacted"
                : leftover.prefix(5).map { "\($0.kind.title) at record \($0.records.first ?? 0)" }.joined(separator: ", ")))

        // 3. Wireshark reads the same records and ATT structure.
        if let tshark = options.tshark {
            let a = tsharkStructure(tshark, input), b = tsharkStructure(tshark, path)
            let passed = a.error == nil && b.error == nil && a.lines == b.lines
            var detail = "\(a.lines.count) records, ATT and SMP fields equal"
            if let e = a.error ?? b.error { detail = e } else if !passed {
                let firstDiff = zip(a.lines, b.lines).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.lines.count, b.lines.count)
                detail = "\(a.lines.count) records before, \(b.lines.count) after; first difference at record \(firstDiff + 1)"
            }
            checks.append(RedactionCheck(name: "same records and ATT structure (tshark)", passed: passed, detail: detail))
        }
        return checks
    }

    /// Every occurrence of the patterns in the file, read in blocks that overlap by the longest
    /// pattern so nothing straddling a block boundary is missed.
    static func search(_ path: String, for patterns: [(what: String, bytes: [UInt8])]) -> [(what: String, offset: Int64)] {
        let set = PatternSet(patterns.map { ($0.bytes, $0.bytes) })
        guard !set.isEmpty, let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        let whatOf = Dictionary(patterns.map { ($0.bytes, $0.what) }, uniquingKeysWith: { a, _ in a })
        let overlap = (patterns.map(\.bytes.count).max() ?? 1) - 1
        var hits: [(String, Int64)] = []
        var carry: [UInt8] = []
        var base: Int64 = 0
        while let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            let window = carry + Array(chunk)
            var i = 0
            while i + PatternSet.minimumLength <= window.count {
                // A hit wholly inside the carried overlap was found in the previous block.
                if let p = set.match(window, at: i), i + set.patterns[p].from.count > carry.count {
                    hits.append((whatOf[set.patterns[p].from] ?? "a secret", base + Int64(i)))
                }
                i += 1
            }
            let keep = min(overlap, window.count)
            carry = Array(window.suffix(keep))
            base += Int64(window.count - keep)
        }
        return hits
    }

    /// tshark's view of what redaction must not change: per record its length and ATT and SMP
    /// fields, each record's line kept as a 64-bit digest (as text, the lines of a million records
    /// were over 100 MB of the command's memory, twice).
    static func tsharkStructure(_ tshark: String, _ path: String) -> (lines: [UInt64], error: String?) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tshark)
        p.arguments = ["-r", path, "-T", "fields", "-E", "occurrence=a", "-e", "frame.number", "-e", "frame.len",
                       "-e", "btatt.opcode", "-e", "btatt.handle", "-e", "btsmp.opcode", "-e", "_ws.malformed"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return ([], "tshark could not run: \(error.localizedDescription)") }
        var lines: [UInt64] = []
        var line: [UInt8] = []
        let reader = out.fileHandleForReading
        while let chunk = try? reader.read(upToCount: 1 << 16), !chunk.isEmpty {
            chunk.withUnsafeBytes { bytes in
                for b in bytes {
                    if b == 0x0A {
                        if !line.isEmpty { lines.append(structureDigest(line)) }
                        line.removeAll(keepingCapacity: true)
                    } else {
                        line.append(b)
                    }
                }
            }
        }
        if !line.isEmpty { lines.append(structureDigest(line)) }
        p.waitUntilExit()
        return (lines, nil)
    }

    /// FNV-1a of one line of `tsharkStructure`'s fields. The malformed column says whether, not
    /// what: a damaged packet's garbage reads differently once an address inside it is replaced,
    /// and that is not a change of structure.
    static func structureDigest(_ line: [UInt8]) -> UInt64 {
        var tabs = 0, lastTab = -1
        for (i, b) in line.enumerated() where b == 0x09 {
            tabs += 1
            lastTab = i
        }
        var digest: UInt64 = 0xCBF2_9CE4_8422_2325
        func add(_ bytes: some Sequence<UInt8>) {
            for b in bytes { digest = (digest ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        }
        if tabs == 5, lastTab < line.count - 1 {
            add(line[...lastTab])
            add("malformed".utf8)
        } else {
            add(line)
        }
        return digest
    }
}
