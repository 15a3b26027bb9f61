import Analysis
import Capture

/// `gattlab audit` for a terminal: the findings (worst first) with evidence and fix, how each link
/// was protected, the inventory of secret values the file holds, and one summary line.
public enum AuditText {
    public static func render(_ r: AuditReport, options: RenderOptions = .init(), colors: Bool = false) -> String {
        var text = ""
        write(r, options: options, colors: colors) { text += $0 }
        return text
    }

    /// The report in pieces, as they are made: a long capture's audit is written as it is read
    /// back (its lists may lie in a temporary file), not built whole as one string first.
    static func write(_ r: AuditReport, options: RenderOptions, colors: Bool, _ out: (String) -> Void) {
        let c = TimelineText.Colors(enabled: colors)
        out(c.bold(AuditFormat.safe(r.source)) + "  " + c.dim("\(AuditFormat.safe(r.format)), \(r.records) records") + "\n")

        out("\n" + c.bold("Findings") + "\n")
        let findings = AuditFormat.sorted(r.findings)
        if r.findings.isEmpty { out("  none\n") }
        for f in findings {
            out("  " + severity(f.severity, c) + " " + c.bold(AuditFormat.safe(f.id)) + "  " + AuditFormat.safe(f.title) + "\n")
            var place: [String] = []
            if let conn = f.connection { place.append("connection " + AuditFormat.safe(conn)) }
            if !f.records.isEmpty { place.append(AuditFormat.records(f.records)) }
            if options.absoluteTime, let t = f.time { place.append("at " + TimeFormat.iso8601(t)) }
            if !place.isEmpty { out("      " + c.dim(place.joined(separator: ", ")) + "\n") }
            out("      " + AuditFormat.safe(f.evidence) + "\n")
            if !f.fix.isEmpty { out("      " + c.dim("fix: ") + AuditFormat.safe(f.fix) + "\n") }
        }

        out("\n" + c.bold("Links") + "\n")
        if r.links.isEmpty { out("  none: the capture has no connections\n") }
        for l in r.links { out("  " + link(l, c) + "\n") }

        out("\n" + c.bold("Secrets in this capture") + "\n")
        if r.secrets.isEmpty { out("  none found\n") }
        for s in r.secrets {
            let value = AuditFormat.value(s.secret, reveal: options.reveal)
            var head = "  " + c.bold(s.kind.title)
            if s.secret.label != s.kind.title, !s.secret.label.isEmpty { head += " (" + AuditFormat.safe(s.secret.label) + ")" }
            head += ": " + (value.encoding == "text" ? "\"" + value.text + "\"" : value.text)
            if s.alreadyRedacted { head += "  " + c.green("[already redacted]") }
            out(head + "\n")
            var place: [String] = [AuditFormat.safe(s.context), AuditFormat.records(s.records)]
            if let conn = s.connection { place.append(AuditFormat.safe(conn)) }
            if options.absoluteTime { place.append("at " + TimeFormat.iso8601(s.time)) }
            out("      " + c.dim(place.joined(separator: ", ")) + "\n")
            var exposure = air(s, c)
            if !s.locatable { exposure += "; " + c.yellow("not located in the file's bytes: redact cannot overwrite it") }
            out("      " + exposure + "\n")
        }

        out("\n" + summaryLine(r, c) + "\n")
    }

    /// Several captures one after another, with a total line when there is more than one.
    public static func render(_ reports: [AuditReport], options: RenderOptions = .init(), colors: Bool = false) -> String {
        var text = ""
        write(reports, options: options, colors: colors) { text += $0 }
        return text
    }

    /// The same text written to `out` as it is made.
    public static func write(_ reports: [AuditReport], options: RenderOptions = .init(), colors: Bool = false, to out: BufferedOutput) {
        write(reports, options: options, colors: colors) { out.write($0) }
    }

    static func write(_ reports: [AuditReport], options: RenderOptions, colors: Bool, _ out: (String) -> Void) {
        let c = TimelineText.Colors(enabled: colors)
        for (i, r) in reports.enumerated() {
            if i > 0 { out("\n") }
            write(r, options: options, colors: colors, out)
        }
        if reports.count > 1 {
            let all = AuditFormat.Counts(reports)
            out("\n" + c.bold("Total over \(reports.count) captures: ") + all.line + "\n")
        }
    }

    static func summaryLine(_ r: AuditReport, _ c: TimelineText.Colors) -> String {
        let counts = AuditFormat.Counts([r])
        let line = counts.line
        if counts.errors > 0 { return c.red(line) }
        if counts.warnings > 0 { return c.yellow(line) }
        return line
    }

    static func severity(_ s: AuditFinding.Severity, _ c: TimelineText.Colors) -> String {
        switch s {
        case .error: c.red("ERROR  ")
        case .warning: c.yellow("WARNING")
        case .note: c.blue("NOTE   ")
        }
    }

    static func link(_ l: AuditLink, _ c: TimelineText.Colors) -> String {
        var parts: [String] = []
        parts.append(c.bold(AuditFormat.safe(l.connection)) + (l.peer.map { " peer " + AuditFormat.safe($0) } ?? "") + ", from record \(l.firstRecord)")
        if let at = l.encryptedAtRecord {
            parts.append(c.green("encrypted from record \(at)") + (l.keySize.map { " (key size \($0) bytes)" } ?? ""))
        } else {
            parts.append(c.red("never encrypted"))
        }
        if let p = l.pairing {
            if let failed = p.failed {
                parts.append(c.yellow("pairing failed: " + AuditFormat.safe(failed)) + " (" + AuditFormat.records(p.records) + ")")
            } else {
                let sc = p.secureConnections ? "LE Secure Connections" : "LE legacy pairing"
                let flags = [p.mitm ? "MITM" : "no MITM", p.bonding ? "bonding" : "no bonding", "max key \(p.keySize) bytes"]
                parts.append("pairing: \(sc), \(AuditFormat.safe(p.method)), " + flags.joined(separator: ", ")
                             + " (" + AuditFormat.records(p.records) + ")")
            }
        } else {
            parts.append("no pairing in the capture")
        }
        return parts.joined(separator: "; ")
    }

    static func air(_ s: SecretSighting, _ c: TimelineText.Colors) -> String {
        guard s.overTheAir else { return "between host and controller only (not over the air)" }
        switch s.linkEncrypted {
        case true?: return "over the air, link encrypted"
        case false?: return c.red("over the air, link NOT encrypted")
        case nil: return c.yellow("over the air, link encryption unknown")
        }
    }
}

/// What the audit renderers share: ordering, counting, record lists and showing secret values.
enum AuditFormat {
    static let schema = "gattlab.audit/1"

    /// Worst first; the auditor's order within a severity.
    /// Read as it is iterated: the list may be long, and lie in the audit's temporary file.
    static func sorted<Findings: RandomAccessCollection<AuditFinding>>(_ findings: Findings) -> LazyMapSequence<[Int], AuditFinding>
    where Findings.Index == Int {
        let severity = findings.map(\.severity)
        let order = severity.indices.sorted { a, b in severity[a] != severity[b] ? severity[a] > severity[b] : a < b }
        return order.lazy.map { findings[findings.startIndex + $0] }
    }

    struct Counts {
        var errors = 0, warnings = 0, notes = 0
        /// Sightings: places a secret value lies in the captures.
        var secrets = 0
        /// Different values (same kind and bytes counted once per capture).
        var distinctSecrets = 0

        init(_ reports: [AuditReport]) {
            for r in reports {
                for f in r.findings {
                    switch f.severity {
                    case .error: errors += 1
                    case .warning: warnings += 1
                    case .note: notes += 1
                    }
                }
                secrets += r.secrets.count
                distinctSecrets += AuditFormat.distinct(r.secrets)
            }
        }

        var line: String {
            func n(_ v: Int, _ word: String) -> String { "\(v) \(word)\(v == 1 ? "" : "s")" }
            var s = n(errors, "error") + ", " + n(warnings, "warning") + ", " + n(notes, "note") + "; " + n(distinctSecrets, "secret value")
            if secrets != distinctSecrets { s += " in \(secrets) places" }
            return s
        }
    }

    private struct DistinctKey: Hashable { var kind: String; var bytes: [UInt8] }

    static func distinct(_ sightings: some Sequence<SecretSighting>) -> Int {
        // Inserted one by one: a map first would hold every sighting's key at once.
        var seen = Set<DistinctKey>()
        for s in sightings { seen.insert(DistinctKey(kind: s.kind.rawValue, bytes: s.secret.unsafeBytes)) }
        return seen.count
    }

    /// A secret as output shows it: `<redacted:N bytes>` unless revealed; revealed, its text
    /// when it is valid UTF-8 that cannot disturb a terminal, else hex.
    static func value(_ s: Secret, reveal: Bool) -> (text: String, encoding: String) {
        guard reveal else { return (s.redacted, "redacted") }
        let bytes = s.unsafeBytes
        let text = String(decoding: bytes, as: UTF8.self)
        // String(decoding:) repairs invalid UTF-8 with U+FFFD; only an exact round trip is text.
        if Array(text.utf8) == bytes, text.unicodeScalars.allSatisfy(printable) { return (text, "text") }
        return (Hex.string(bytes), "hex")
    }

    /// Not a control character, nor a line or bidi control that could forge or reorder output.
    static func printable(_ u: Unicode.Scalar) -> Bool {
        let v = u.value
        if v < 0x20 || v == 0x7F || (0x80..<0xA0).contains(v) { return false }
        if (0x200E...0x200F).contains(v) || (0x2028...0x202E).contains(v) || (0x2066...0x2069).contains(v) { return false }
        return true
    }

    /// Text that came from a file or a device, safe for a terminal: control characters as \xNN,
    /// line and bidi controls as \u{NNNN}, so hostile text can neither move the cursor nor hide
    /// or reorder what is printed around it.
    static func safe(_ s: String) -> String {
        var out = ""
        for u in s.unicodeScalars {
            if printable(u) {
                out.unicodeScalars.append(u)
            } else if u.value < 0x100 {
                out += "\\x" + Hex.string([UInt8(truncatingIfNeeded: u.value)])
            } else {
                out += "\\u{" + String(u.value, radix: 16, uppercase: true) + "}"
            }
        }
        return out
    }

    /// "record 12", "records 3-5, 9": runs joined, at most 20 items shown.
    static func records(_ list: [Int]) -> String {
        guard !list.isEmpty else { return "no records" }
        var items: [String] = []
        var i = 0
        while i < list.count {
            var j = i
            while j + 1 < list.count, list[j + 1] == list[j] &+ 1 { j += 1 }
            items.append(j > i + 1 ? "\(list[i])-\(list[j])" : j == i + 1 ? "\(list[i]), \(list[j])" : "\(list[i])")
            i = j + 1
        }
        let shown = items.prefix(20).joined(separator: ", ") + (items.count > 20 ? " and \(items.count - 20) more" : "")
        return (list.count == 1 ? "record " : "records ") + shown
    }
}

/// A secret for people: `<redacted:N bytes>` unless revealed, then text when it is printable
/// UTF-8 (no control, line or bidi characters that could forge output), else hex.
public enum SecretDisplay {
    public static func show(_ s: Secret, reveal: Bool) -> String { AuditFormat.value(s, reveal: reveal).text }
}
