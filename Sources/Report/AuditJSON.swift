import Analysis
import Capture

/// `gattlab audit --format json`: one document per capture (`schema` "gattlab.audit/1") with
/// `findings`, `links`, `secrets` and `summary`. Times are integer microseconds since the Unix
/// epoch (`…UTC` beside them with absolute times on). Secret values are `<redacted:N bytes>`
/// unless revealed.
public enum AuditJSON {
    public static let schema = AuditFormat.schema

    public static func render(_ r: AuditReport, options: RenderOptions = .init()) -> String {
        var w = JSONWriter(pretty: options.pretty)
        write(r, options: options, schema: true, into: &w)
        return w.text
    }

    /// Several captures in one document: `{"schema": …, "captures": [...], "summary": {...}}`.
    public static func render(_ reports: [AuditReport], options: RenderOptions = .init()) -> String {
        var w = JSONWriter(pretty: options.pretty)
        write(reports, options: options, into: &w)
        return w.text
    }

    /// The same document (one report alone, several in one) written to `out` as it is made, so
    /// that the audit of a day of captures never sits in memory as text too.
    public static func write(_ reports: [AuditReport], options: RenderOptions = .init(), to out: BufferedOutput) {
        var w = JSONWriter(pretty: options.pretty, sink: { out.write(bytes: $0) })
        if reports.count == 1 { write(reports[0], options: options, schema: true, into: &w) } else { write(reports, options: options, into: &w) }
        w.finish()
    }

    static func write(_ reports: [AuditReport], options: RenderOptions, into w: inout JSONWriter) {
        w.beginObject()
        w.field("schema", schema)
        w.key("captures"); w.beginArray()
        for r in reports { write(r, options: options, schema: false, into: &w) }
        w.endArray()
        w.key("summary"); summary(AuditFormat.Counts(reports), worst: reports.compactMap(\.worstSeverity).max(), into: &w)
        w.endObject()
    }

    static func write(_ r: AuditReport, options: RenderOptions, schema withSchema: Bool, into w: inout JSONWriter) {
        func time(_ key: String, _ v: Int64?) {
            w.key(key)
            guard let v else { return w.null() }
            w.int(Int(truncatingIfNeeded: v))
            if options.absoluteTime { w.field(key + "UTC", TimeFormat.iso8601(v)) }
        }
        func ints(_ key: String, _ list: [Int]) {
            w.key(key); w.beginArray(); list.forEach { w.int($0) }; w.endArray()
        }

        w.beginObject()
        if withSchema { w.field("schema", schema) }
        w.field("file", r.source)
        w.field("format", r.format)
        w.field("records", r.records)

        w.key("findings"); w.beginArray()
        for f in AuditFormat.sorted(r.findings) {
            w.beginObject()
            w.field("id", f.id)
            w.field("severity", f.severity.rawValue)
            w.field("title", f.title)
            w.field("evidence", f.evidence)
            w.field("fix", f.fix)
            w.field("connection", f.connection)
            ints("records", f.records)
            time("time", f.time)
            w.endObject()
        }
        w.endArray()

        w.key("links"); w.beginArray()
        for l in r.links {
            w.beginObject()
            w.field("connection", l.connection)
            w.field("peer", l.peer)
            w.field("firstRecord", l.firstRecord)
            w.field("encrypted", l.encryptedAtRecord != nil)
            w.field("encryptedAtRecord", l.encryptedAtRecord)
            w.field("keySize", l.keySize)
            w.key("pairing")
            if let p = l.pairing {
                w.beginObject()
                w.field("method", p.method)
                w.field("secureConnections", p.secureConnections)
                w.field("mitm", p.mitm)
                w.field("bonding", p.bonding)
                w.field("keySize", p.keySize)
                w.field("failed", p.failed)
                ints("records", p.records)
                w.endObject()
            } else {
                w.null()
            }
            w.endObject()
        }
        w.endArray()

        w.key("secrets"); w.beginArray()
        for s in r.secrets {
            w.beginObject()
            w.field("kind", s.kind.rawValue)
            w.field("label", s.secret.label)
            w.field("context", s.context)
            ints("records", s.records)
            time("time", s.time)
            w.field("connection", s.connection)
            w.field("overTheAir", s.overTheAir)
            w.key("linkEncrypted"); if let e = s.linkEncrypted { w.bool(e) } else { w.null() }
            w.field("alreadyRedacted", s.alreadyRedacted)
            w.field("locatable", s.locatable)
            w.field("length", s.secret.count)
            let value = AuditFormat.value(s.secret, reveal: options.reveal)
            w.field("value", value.text)
            // Only a revealed value needs saying how to read it: UTF-8 text or hex.
            if options.reveal { w.field("valueEncoding", value.encoding) }
            w.endObject()
        }
        w.endArray()

        w.key("summary"); summary(AuditFormat.Counts([r]), worst: r.worstSeverity, into: &w)
        w.endObject()
    }

    static func summary(_ c: AuditFormat.Counts, worst: AuditFinding.Severity?, into w: inout JSONWriter) {
        w.beginObject()
        w.field("errors", c.errors)
        w.field("warnings", c.warnings)
        w.field("notes", c.notes)
        w.field("worstSeverity", worst?.rawValue)
        w.field("secrets", c.secrets)
        w.field("distinctSecrets", c.distinctSecrets)
        w.endObject()
    }
}
