import Analysis
import Capture
import Profiles

/// `gattlab audit --format sarif`: SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.
///
/// One run. `tool.driver.rules` is the whole audit catalogue; each finding is a result located in
/// its capture file. Captures are binary, so a result has no `region` (a line number would be
/// meaningless): the records and connection go in the result's `properties` and the first record
/// in a `logicalLocations` entry of kind "record". The secret inventory is not a problem to
/// report, so it is counted in `run.properties`, never listed as results; values never appear.
public enum AuditSARIF {
    public static let schemaURI = "https://json.schemastore.org/sarif-2.1.0.json"
    /// Key of the fingerprint in `partialFingerprints`; bump the version if its input changes.
    public static let fingerprintKey = "gattlabFinding/v1"

    public static func render(_ reports: [AuditReport], protocols: ProtocolSet, options: RenderOptions = .init(), toolVersion: String,
                              informationUri: String? = nil) -> String {
        var w = JSONWriter(pretty: options.pretty)
        write(reports, protocols: protocols, options: options, toolVersion: toolVersion, informationUri: informationUri, into: &w)
        return w.text
    }

    /// The same log written to `out` as it is made.
    public static func write(_ reports: [AuditReport], protocols: ProtocolSet, options: RenderOptions = .init(), toolVersion: String,
                             informationUri: String? = nil, to out: BufferedOutput) {
        var w = JSONWriter(pretty: options.pretty, sink: { out.write(bytes: $0) })
        write(reports, protocols: protocols, options: options, toolVersion: toolVersion, informationUri: informationUri, into: &w)
        w.finish()
    }

    static func write(_ reports: [AuditReport], protocols: ProtocolSet, options: RenderOptions, toolVersion: String,
                      informationUri: String?, into w: inout JSONWriter) {
        w.beginObject()
        w.field("$schema", schemaURI)
        w.field("version", "2.1.0")
        w.key("runs"); w.beginArray()
        w.beginObject()

        // Rules: the catalogue of the audited protocols, then any id a finding carries that the catalogue lacks, so that
        // every result's ruleIndex points at its rule.
        var rules = AuditCatalogue.rules(protocols: protocols)
        for r in reports {
            for f in r.findings where !rules.contains(where: { $0.id == f.id }) {
                rules.append(AuditRuleInfo(id: f.id, defaultSeverity: f.severity, title: f.title, fix: f.fix))
            }
        }
        var ruleIndex: [String: Int] = [:]
        for (i, rule) in rules.enumerated() { ruleIndex[rule.id] = i }

        w.key("tool"); w.beginObject()
        w.key("driver"); w.beginObject()
        w.field("name", "gattlab")
        if let informationUri { w.field("informationUri", informationUri) }
        w.field("version", toolVersion)
        w.key("rules"); w.beginArray()
        for rule in rules { writeRule(rule, into: &w) }
        w.endArray()
        w.endObject()
        w.endObject()

        // Artifacts: one per distinct location ("./a" and "a" are one; the schema wants them unique).
        var byURI: [String: Int] = [:]
        var artifactIndex: [String: Int] = [:]
        var artifacts: [AuditReport] = []
        for r in reports where artifactIndex[r.source] == nil {
            let key = uri(r.source).uri
            if let i = byURI[key] {
                artifactIndex[r.source] = i
            } else {
                byURI[key] = artifacts.count
                artifactIndex[r.source] = artifacts.count
                artifacts.append(r)
            }
        }
        w.key("artifacts"); w.beginArray()
        for r in artifacts {
            w.beginObject()
            w.key("location"); artifactLocation(r.source, index: nil, into: &w)
            w.key("roles"); w.beginArray(); w.string("analysisTarget"); w.endArray()
            w.key("properties"); w.beginObject()
            w.field("format", r.format)
            w.field("records", r.records)
            w.endObject()
            w.endObject()
        }
        w.endArray()

        w.key("results"); w.beginArray()
        for r in reports {
            for f in r.findings {
                writeResult(f, report: r, ruleIndex: ruleIndex[f.id], artifact: artifactIndex[r.source], options: options, into: &w)
            }
        }
        w.endArray()

        w.key("properties"); writeInventory(reports, into: &w)
        w.endObject()
        w.endArray()
        w.endObject()
    }

    static func writeRule(_ rule: AuditRuleInfo, into w: inout JSONWriter) {
        w.beginObject()
        w.field("id", rule.id)
        w.field("name", pascalName(rule.id))
        w.key("shortDescription"); message(rule.title, into: &w)
        w.key("fullDescription"); message(rule.fix.isEmpty ? rule.title : rule.title + ". Fix: " + rule.fix, into: &w)
        w.key("help"); message(rule.fix.isEmpty ? rule.title : rule.fix, into: &w)
        w.key("defaultConfiguration"); w.beginObject(); w.field("level", rule.defaultSeverity.rawValue); w.endObject()
        w.key("properties"); w.beginObject()
        w.key("tags"); w.beginArray()
        w.string("security")
        if let area = rule.id.split(separator: ".").first, area != "security" { w.string(String(area)) }
        w.endArray()
        // GitHub ranks security alerts by this CVSS-like score: high, medium, low.
        w.field("security-severity", rule.defaultSeverity == .error ? "8.0" : rule.defaultSeverity == .warning ? "5.0" : "2.0")
        w.endObject()
        w.endObject()
    }

    static func writeResult(_ f: AuditFinding, report r: AuditReport, ruleIndex: Int?, artifact: Int?,
                            options: RenderOptions, into w: inout JSONWriter) {
        w.beginObject()
        w.field("ruleId", f.id)
        if let ruleIndex { w.field("ruleIndex", ruleIndex) }
        w.field("level", f.severity.rawValue)
        // Evidence names records and handles, never a secret value (AuditFinding's contract); it
        // can quote device text, so control and bidi characters are shown escaped for viewers.
        let text = f.evidence.isEmpty ? f.title : f.title + ": " + f.evidence
        w.key("message"); message(AuditFormat.safe(text), into: &w)
        w.key("locations"); w.beginArray()
        w.beginObject()
        w.key("physicalLocation"); w.beginObject()
        w.key("artifactLocation"); artifactLocation(r.source, index: artifact, into: &w)
        w.endObject()
        if let first = f.records.first {
            w.key("logicalLocations"); w.beginArray()
            w.beginObject(); w.field("name", "record \(first)"); w.field("kind", "record"); w.endObject()
            w.endArray()
        }
        w.endObject()
        w.endArray()
        w.key("partialFingerprints"); w.beginObject()
        w.field(fingerprintKey, fingerprint(ruleId: f.id, file: r.source, connection: f.connection, firstRecord: f.records.first))
        w.endObject()
        w.key("properties"); w.beginObject()
        w.key("records"); w.beginArray(); f.records.forEach { w.int($0) }; w.endArray()
        if let c = f.connection { w.field("connection", c) }
        if let t = f.time {
            w.key("time"); w.int(Int(truncatingIfNeeded: t))
            if options.absoluteTime { w.field("timeUTC", TimeFormat.iso8601(t)) }
        }
        w.endObject()
        w.endObject()
    }

    /// Counts of secret values, overall and per capture: what sharing the files would expose.
    static func writeInventory(_ reports: [AuditReport], into w: inout JSONWriter) {
        let all = reports.flatMap(\.secrets)
        w.beginObject()
        w.field("secretValues", all.count)
        w.key("secretValuesByKind"); w.beginObject()
        for kind in SecretKind.allCases {
            let n = all.filter { $0.kind == kind }.count
            if n > 0 { w.field(kind.rawValue, n) }
        }
        w.endObject()
        w.field("secretValuesOverTheAir", all.filter(\.overTheAir).count)
        w.field("secretValuesOverUnencryptedLinks", all.filter { $0.overTheAir && $0.linkEncrypted == false }.count)
        w.field("secretValuesAlreadyRedacted", all.filter(\.alreadyRedacted).count)
        w.field("secretValuesNotLocatable", all.filter { !$0.locatable }.count)
        w.key("captures"); w.beginArray()
        for r in reports {
            w.beginObject()
            w.field("file", r.source)
            w.field("format", r.format)
            w.field("records", r.records)
            w.field("secretValues", r.secrets.count)
            w.field("distinctSecretValues", AuditFormat.distinct(r.secrets))
            w.endObject()
        }
        w.endArray()
        w.endObject()
    }

    static func message(_ text: String, into w: inout JSONWriter) {
        w.beginObject(); w.field("text", text); w.endObject()
    }

    /// A relative path stays relative to SRCROOT (GitHub takes it as a path in the repository);
    /// an absolute one becomes a file:// URI.
    static func artifactLocation(_ path: String, index: Int?, into w: inout JSONWriter) {
        let u = uri(path)
        w.beginObject()
        w.field("uri", u.uri)
        if let base = u.baseId { w.field("uriBaseId", base) }
        if let index { w.field("index", index) }
        w.endObject()
    }

    static func uri(_ path: String) -> (uri: String, baseId: String?) {
        if path.hasPrefix("/") { return ("file://" + percentEncoded(path), nil) }
        var p = Substring(path)
        while p.hasPrefix("./") { p = p.dropFirst(2) }
        // Code scanning rejects an empty uri; a capture read from a pipe has no path.
        return (p.isEmpty ? "stdin" : percentEncoded(String(p)), "SRCROOT")
    }

    /// A path as a URI path: unreserved characters, sub-delimiters, "@" and "/" stay; everything
    /// else (":" too, which would read as a scheme in a relative reference) is %XX of its UTF-8.
    static func percentEncoded(_ path: String) -> String {
        var out = ""
        for b in path.utf8 {
            let keep = (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39)
                || "-._~!$&'()*+,;=@/".utf8.contains(b)
            if keep {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                out += "%" + Hex.string([b]).uppercased()
            }
        }
        return out
    }

    /// "credentials.unencrypted-link" -> "CredentialsUnencryptedLink": SARIF wants a readable,
    /// identifier-like name beside the opaque id.
    static func pascalName(_ id: String) -> String {
        id.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    /// FNV-1a 64 of rule id, file name (not its directory, so moving the file keeps the alert),
    /// connection and first record, as 16 hex digits: the same finding gets the same value run
    /// after run, so code scanning does not open it twice.
    static func fingerprint(ruleId: String, file: String, connection: String?, firstRecord: Int?) -> String {
        let name = file.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? file
        let input = [ruleId, name, connection ?? "", firstRecord.map(String.init) ?? ""].joined(separator: "\u{1F}")
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in input.utf8 {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01B3
        }
        let hex = String(h, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
