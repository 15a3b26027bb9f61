import Capture
import HCI
import Profiles

/// The audit's own rules: each turns what one connection showed into findings with a stable id.
/// With the audited protocols' rules between them (`AuditCatalogue.rules(protocols:)`) they are
/// what SARIF lists as the tool's rules and what the README documents.
enum AuditRules {
    /// Links, pairing, keys and credentials: listed before the protocols' rules.
    static let linkRules: [AuditRuleInfo] = [
        AuditRuleInfo(id: "credentials.unencrypted-link", defaultSeverity: .error, title: "Wi-Fi credentials sent over an unencrypted link",
             fix: "Require encryption on the credential characteristic (an encrypted-write permission: the device answers Insufficient Encryption and the phone pairs first), and pair before provisioning."),
        AuditRuleInfo(id: "credentials.before-encryption", defaultSeverity: .error, title: "Wi-Fi credentials sent before the link was encrypted",
             fix: "Pair and encrypt before writing credentials: give the characteristic an encrypted-write permission so an early write is refused instead of accepted in the clear."),
        AuditRuleInfo(id: "pairing.just-works", defaultSeverity: .warning, title: "Just Works pairing: no protection against a man in the middle",
             fix: "Use an authenticated association model (Numeric Comparison or Passkey Entry, or OOB): give the device a display or a button and set its IO capabilities accordingly."),
        AuditRuleInfo(id: "pairing.legacy", defaultSeverity: .warning, title: "LE legacy pairing (no LE Secure Connections)",
             fix: "Enable LE Secure Connections (SC flag in AuthReq) on both sides and refuse legacy pairing (Secure Connections Only mode): a legacy pairing captured off the air yields its keys."),
        AuditRuleInfo(id: "pairing.no-mitm", defaultSeverity: .warning, title: "Neither side asked for MITM protection",
             fix: "Set the MITM flag in AuthReq on the device and require authenticated pairing for the characteristics that take credentials."),
        AuditRuleInfo(id: "encryption.short-key", defaultSeverity: .warning, title: "Encryption key shorter than 16 bytes",
             fix: "Accept only 16-byte keys (maximum encryption key size 16 and a minimum of 16 on the device); short keys can be brute-forced (KNOB)."),
        AuditRuleInfo(id: "secrets.readable", defaultSeverity: .error, title: "A secret can be read back from the device",
             fix: "Make credential characteristics write-only (no Read property), or return nothing but a status."),
    ]

    /// About the capture as a whole: listed after the protocols' rules.
    static let captureRules: [AuditRuleInfo] = [
        AuditRuleInfo(id: "capture.holds-secrets", defaultSeverity: .note, title: "The capture holds secret values",
             fix: "Run `gattlab redact` on it before sharing it."),
        AuditRuleInfo(id: "audit.unknown-handles", defaultSeverity: .note, title: "Writes to handles of unknown characteristics",
             fix: "Give --profile NAME or --gatt-table FILE so the handles are named, then audit again."),
    ]

    /// The findings of one connection: the audit's own rules, then each protocol track's.
    static func findings(for t: Auditor.ConnectionTrack, catalogue: [AuditRuleInfo]) -> [AuditFinding] {
        let connection = t.link.connection
        var hits: [AuditHit] = []
        func add(_ id: String, _ evidence: String, _ records: [Int], _ time: Int64?, severity: AuditFinding.Severity? = nil) {
            hits.append(AuditHit(id, evidence, records: records, time: time, severity: severity))
        }
        let list = AuditHit.list

        // Credentials: in the clear on a link that never encrypted, or before it did.
        // In record order: a value the protocol was still joining is only known when the link ends.
        let clear = t.credentialsSent.filter { !$0.encrypted }.sorted { $0.record < $1.record }
        if !clear.isEmpty {
            let items = clear.map { (what: $0.what, record: $0.record, time: $0.time) }
            if let at = t.link.encryptedAtRecord {
                add("credentials.before-encryption", "\(list(items)) in the clear on \(connection); encryption began only at record \(at)",
                    items.map(\.record) + [at], items.first?.time)
            } else {
                add("credentials.unencrypted-link", "\(list(items)) on \(connection), which was never encrypted", items.map(\.record), items.first?.time)
            }
        }

        // Pairing: every exchange that got a response and did not fail; one finding per kind.
        let pairings = t.link.pairings.filter { $0.failed == nil && $0.ioCapabilities != nil }
        func pairingFinding(_ id: String, _ matches: [PairingSummary], _ say: (PairingSummary) -> String) {
            guard let first = matches.first else { return }
            add(id, say(first) + (matches.count > 1 ? " (\(matches.count) pairings)" : ""), matches.flatMap(\.records), first.time)
        }
        func what(_ p: PairingSummary) -> String { "\(p.secureConnections ? "LE Secure Connections" : "LE legacy") pairing, \(p.method)" }
        pairingFinding("pairing.just-works", pairings.filter { $0.method == "Just Works" }) { p in
            "\(what(p)) on \(connection) (IO capabilities \(p.ioCapabilities.map { "\($0.initiator) / \($0.responder)" } ?? "unknown"))"
        }
        pairingFinding("pairing.legacy", pairings.filter { !$0.secureConnections }) { p in
            "\(what(p)) on \(connection): the SC flag is not set by both sides"
        }
        pairingFinding("pairing.no-mitm", pairings.filter { !$0.mitm }) { _ in
            "the MITM flag is off in both Pairing Request and Response on \(connection)"
        }
        if let size = t.link.keySize ?? (t.link.encryptedAtRecord != nil ? t.link.pairing.map(\.keySize) : nil), size < 16 {
            let records = Set([t.link.encryptedAtRecord, t.link.pairing?.records.last].compactMap { $0 }).sorted()
            add("encryption.short-key", "\(connection) is encrypted with a \(size)-byte key", records, t.encryptedAtTime, severity: size <= 7 ? .error : .warning)
        }

        if !t.secretReads.isEmpty {
            let reads = t.secretReads.sorted { $0.record < $1.record }
            add("secrets.readable", list(reads) + " on \(connection)", reads.map(\.record), reads.first?.time)
        }
        hits += t.protocolTracks.flatMap { $0.findings(connection: connection) }
        return hits.map { h in
            let r = rule(h.id, in: catalogue)
            return AuditFinding(id: h.id, severity: h.severity ?? r.defaultSeverity, title: r.title, evidence: h.evidence, fix: r.fix,
                                connection: connection, records: Array(h.records.prefix(16)), time: h.time)
        }
    }

    static func rule(_ id: String, in catalogue: [AuditRuleInfo]) -> AuditRuleInfo {
        catalogue.first { $0.id == id } ?? AuditRuleInfo(id: id, defaultSeverity: .warning, title: id, fix: "")
    }
}
