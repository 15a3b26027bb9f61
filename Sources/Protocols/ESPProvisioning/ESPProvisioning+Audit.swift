import Analysis
import Capture
import Profiles

/// ESP-IDF provisioning's audit: the passphrase in CmdSetConfig, and the session's security
/// (security 0, or security 1 without a proof of possession).
extension ESPProvisioningProtocol: ProtocolAuditing {
    public static let auditRules = [
        AuditRuleInfo(id: "esp.security0", defaultSeverity: .error, title: "ESP-IDF provisioning with security 0 (no encryption)",
             fix: "Use protocomm security 2 (SRP6a) or at least security 1 with a proof of possession (WIFI_PROV_SECURITY_1 and a PoP)."),
        AuditRuleInfo(id: "esp.security1-no-pop", defaultSeverity: .warning, title: "ESP-IDF security 1 without a proof of possession",
             fix: "Give the device a proof of possession (printed on it or shown in its app) so only its owner can provision it, or use security 2."),
    ]

    public static func makeAuditTrack() -> any ProtocolAuditTrack { AuditTrack() }

    struct AuditTrack: ProtocolAuditTrack {
        /// From proto-ver's sec_ver, then the session endpoint's messages.
        var security: Int?
        var noPoP = false
        var records: [Int] = []
        var time: Int64?

        mutating func consume(_ e: ProfileEvent, encrypted: Bool) -> [AuditSighting] {
            switch e.message {
            case let v as ESPProvisioning.Version:
                if let s = v.securityVersion { security = s }
                if v.noPoP { noPoP = true }
                note(e)
            case let s as ESPProvisioning.SessionMessage:
                switch s.payload {
                case .sec0Command, .sec0Response: security = 0
                case .sec1Command0, .sec1Response0, .sec1Command1, .sec1Response1: security = 1
                case .sec2: security = 2
                default: break
                }
                note(e)
            case let m as ESPProvisioning.ConfigMessage:
                guard case .setConfig(let c) = m.payload else { break }
                if security == 1 || c.passphrase.location?.mask != nil {
                    // Encrypted by the session (security 1): the password did not cross the air in the clear.
                    return [.secret(.wifiPassword, c.passphrase, note: " (decrypted, security 1)")]
                }
                return [.credential(c.passphrase, what: "Wi-Fi passphrase (CmdSetConfig)")]
            default:
                break
            }
            return []
        }

        private mutating func note(_ e: ProfileEvent) {
            if records.count < 8 { records.append(e.firstFrame) }
            if time == nil { time = e.time }
        }

        func findings(connection: String) -> [AuditHit] {
            if security == 0 {
                return [AuditHit("esp.security0", "the provisioning session on \(connection) uses security 0: every message, the Wi-Fi password included, is plaintext protobuf",
                                 records: records, time: time)]
            }
            if security == 1, noPoP {
                return [AuditHit("esp.security1-no-pop", "the device on \(connection) runs security 1 and reports no_pop: any phone in range can provision it",
                                 records: records, time: time)]
            }
            return []
        }
    }
}
