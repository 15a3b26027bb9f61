import Analysis
import Capture
import Profiles

/// Improv's audit. Improv has no encryption of its own and its GATT permissions ask for none:
/// WIFI_SETTINGS carries the password in plaintext by design, the only guard being that the
/// device must be authorized (a button press) first. So the password is readable by anyone in
/// radio range unless the link was encrypted by pairing, which Improv clients do not ask for.
extension ImprovProtocol: ProtocolAuditing {
    public static let auditRules = [
        AuditRuleInfo(id: "improv.password-plaintext", defaultSeverity: .warning,
             title: "Improv sent the Wi-Fi password in plaintext (by design of the protocol)",
             fix: "Improv has no encryption: provision only while nobody can listen (the device's authorization window), change the password if the capture may have been overheard, or pair first where the firmware allows an encrypted link."),
    ]

    public static func makeAuditTrack() -> any ProtocolAuditTrack { AuditTrack() }

    struct AuditTrack: ProtocolAuditTrack {
        var plaintext: [(what: String, record: Int, time: Int64)] = []

        mutating func consume(_ e: ProfileEvent, encrypted: Bool) -> [AuditSighting] {
            guard let c = e.message(as: Improv.Command.self), let password = c.password else { return [] }
            if !encrypted {
                let ssid = c.ssid.map { " for \"\(ProtocolText.display($0))\"" } ?? ""
                plaintext.appendCapped(("WIFI_SETTINGS\(ssid)", e.firstFrame, e.time))
            }
            return [.credential(password, what: "Wi-Fi password (Improv WIFI_SETTINGS)")]
        }

        func findings(connection: String) -> [AuditHit] {
            guard !plaintext.isEmpty else { return [] }
            return [AuditHit("improv.password-plaintext",
                             "\(AuditHit.list(plaintext)) on \(connection), unencrypted: Improv carries the password as plain bytes by design",
                             records: plaintext.map(\.record), time: plaintext.first?.time)]
        }
    }
}
