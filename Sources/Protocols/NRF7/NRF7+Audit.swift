import Analysis
import Capture
import Profiles

/// nRF7 provisioning's audit: the passphrase in SET_CONFIG, and a control point used on a link
/// that was not encrypted.
extension NRF7Protocol: ProtocolAuditing {
    public static let auditRules = [
        AuditRuleInfo(id: "nrf7.control-point-unencrypted", defaultSeverity: .error, title: "nRF7 provisioning control point used without encryption",
             fix: "Keep the control point's encrypted permissions (BT_GATT_PERM_WRITE_ENCRYPT / authenticated) as the Wi-Fi provisioning sample has them, and pair first."),
    ]

    public static func makeAuditTrack() -> any ProtocolAuditTrack { AuditTrack() }

    struct AuditTrack: ProtocolAuditTrack {
        var unencrypted: [(what: String, record: Int, time: Int64)] = []

        mutating func consume(_ e: ProfileEvent, encrypted: Bool) -> [AuditSighting] {
            guard let r = e.message(as: NRF7.Request.self) else { return [] }
            if !encrypted {
                unencrypted.appendCapped((r.opCode?.description ?? "request", e.firstFrame, e.time))
            }
            guard let passphrase = r.config?.passphrase else { return [] }
            return [.credential(passphrase, what: "Wi-Fi passphrase (SET_CONFIG)")]
        }

        func findings(connection: String) -> [AuditHit] {
            guard !unencrypted.isEmpty else { return [] }
            return [AuditHit("nrf7.control-point-unencrypted", "\(AuditHit.list(unencrypted)) on \(connection) while it was not encrypted",
                             records: unencrypted.map(\.record), time: unencrypted.first?.time)]
        }
    }
}
