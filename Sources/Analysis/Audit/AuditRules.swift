import Capture
import HCI
import Profiles

/// The audit's rules: each turns what one connection showed into findings with a stable id.
/// The catalogue (`AuditRules.catalogue`) is what SARIF lists as the tool's rules and what the
/// README documents.
enum AuditRules {
    static let catalogue: [AuditRuleInfo] = [
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
        AuditRuleInfo(id: "ota.open-control", defaultSeverity: .error, title: "OTA commands accepted on an unencrypted, unauthenticated link",
             fix: "Require an encrypted, authenticated link (and a bonded phone) for OTA_URL and OTA_CONTROL writes: anyone in radio range can otherwise start, reboot or roll back an update."),
        AuditRuleInfo(id: "ota.url-plain-http", defaultSeverity: .warning, title: "Firmware URL over plain http",
             fix: "Serve firmware over https and verify the server, and sign images so a swapped download is refused."),
        AuditRuleInfo(id: "ota.url-credentials", defaultSeverity: .error, title: "Firmware URL carries a user name and password",
             fix: "Do not put credentials in the URL: use short-lived signed URLs or a token the device keeps, never sent over BLE."),
        AuditRuleInfo(id: "ota.url-token", defaultSeverity: .warning, title: "Firmware URL carries a token in its query",
             fix: "Use short-lived, single-use download tokens and https; the token crossed the air with the URL."),
        AuditRuleInfo(id: "esp.security0", defaultSeverity: .error, title: "ESP-IDF provisioning with security 0 (no encryption)",
             fix: "Use protocomm security 2 (SRP6a) or at least security 1 with a proof of possession (WIFI_PROV_SECURITY_1 and a PoP)."),
        AuditRuleInfo(id: "esp.security1-no-pop", defaultSeverity: .warning, title: "ESP-IDF security 1 without a proof of possession",
             fix: "Give the device a proof of possession (printed on it or shown in its app) so only its owner can provision it, or use security 2."),
        AuditRuleInfo(id: "nrf7.control-point-unencrypted", defaultSeverity: .error, title: "nRF7 provisioning control point used without encryption",
             fix: "Keep the control point's encrypted permissions (BT_GATT_PERM_WRITE_ENCRYPT / authenticated) as the Wi-Fi provisioning sample has them, and pair first."),
        AuditRuleInfo(id: "capture.holds-secrets", defaultSeverity: .note, title: "The capture holds secret values",
             fix: "Run `gattlab redact` on it before sharing it."),
        AuditRuleInfo(id: "audit.unknown-handles", defaultSeverity: .note, title: "Writes to handles of unknown characteristics",
             fix: "Give --profile NAME or --gatt-table FILE so the handles are named, then audit again."),
    ]

    static func rule(_ id: String) -> AuditRuleInfo {
        catalogue.first { $0.id == id } ?? AuditRuleInfo(id: id, defaultSeverity: .warning, title: id, fix: "")
    }

    static func findings(for t: Auditor.ConnectionTrack) -> [AuditFinding] {
        var out: [AuditFinding] = []
        let connection = t.link.connection
        func add(_ id: String, _ evidence: String, _ records: [Int], _ time: Int64?, severity: AuditFinding.Severity? = nil) {
            let r = rule(id)
            out.append(AuditFinding(id: id, severity: severity ?? r.defaultSeverity, title: r.title, evidence: evidence, fix: r.fix,
                                    connection: connection, records: Array(records.prefix(16)), time: time))
        }
        func list(_ items: [(what: String, record: Int, time: Int64)]) -> String {
            let shown = items.prefix(4).map { "\($0.what) at record \($0.record)" }
            return shown.joined(separator: ", ") + (items.count > 4 ? " and \(items.count - 4) more" : "")
        }

        // Credentials: in the clear on a link that never encrypted, or before it did.
        let clear = t.credentialsSent.filter { !$0.encrypted }
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
            add("secrets.readable", list(t.secretReads) + " on \(connection)", t.secretReads.map(\.record), t.secretReads.first?.time)
        }
        if !t.openCommands.isEmpty {
            add("ota.open-control", "\(list(t.openCommands)) accepted on \(connection) while it was not encrypted",
                t.openCommands.map(\.record), t.openCommands.first?.time)
        }

        // Firmware URLs.
        for u in t.urls {
            let shown = u.url.display(reveal: false)
            if u.url.scheme == "http" {
                add("ota.url-plain-http", "firmware URL \(shown) at record \(u.record)", [u.record], u.time)
            }
            let parts = u.url.secretParts
            if parts.contains(where: { $0.part == .password }) {
                add("ota.url-credentials", "firmware URL \(shown) at record \(u.record) carries user:password", [u.record], u.time)
            }
            let tokens = parts.compactMap { if case .queryValue(let n) = $0.part { n } else { nil } }
            if !tokens.isEmpty {
                add("ota.url-token", "firmware URL at record \(u.record) carries \(tokens.map { "`\(ProtocolText.display($0))`" }.joined(separator: ", ")) in its query",
                    [u.record], u.time)
            }
        }

        // Provisioning protocols.
        if t.espSecurity == 0 {
            add("esp.security0", "the provisioning session on \(connection) uses security 0: every message, the Wi-Fi password included, is plaintext protobuf",
                t.espRecords, t.espTime)
        } else if t.espSecurity == 1, t.espNoPoP {
            add("esp.security1-no-pop", "the device on \(connection) runs security 1 and reports no_pop: any phone in range can provision it",
                t.espRecords, t.espTime)
        }
        if !t.nrf7Unencrypted.isEmpty {
            add("nrf7.control-point-unencrypted", "\(list(t.nrf7Unencrypted)) on \(connection) while it was not encrypted",
                t.nrf7Unencrypted.map(\.record), t.nrf7Unencrypted.first?.time)
        }
        return out
    }
}
