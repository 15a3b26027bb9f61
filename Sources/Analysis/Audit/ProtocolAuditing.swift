import ATT
import Capture
import GATT
import Profiles

/// A device protocol the audit checks (I-3). The audit itself knows links, pairing, keys and
/// secret-bearing characteristics; a protocol adds its rules and, on each connection, a track
/// that follows its messages and says which secrets they carried and what was wrong.
public protocol ProtocolAuditing: DeviceProtocol {
    /// Its rules, in the order the catalogue (and so SARIF) lists them.
    static var auditRules: [AuditRuleInfo] { get }
    /// Characteristics besides the secret-bearing ones whose values may hold a secret the decoder
    /// locates (a firmware URL's password): their long-write parts are followed, so that a
    /// Prepare Write Response echoing a secret counts as a sighting too.
    static var auditedCharacteristics: Set<BluetoothUUID> { get }
    /// A new track for one connection.
    static func makeAuditTrack() -> any ProtocolAuditTrack
}

extension ProtocolAuditing {
    public static var auditedCharacteristics: Set<BluetoothUUID> { [] }
}

/// What one connection showed of a protocol. The audit calls it in capture order.
public protocol ProtocolAuditTrack {
    /// An ATT PDU on the connection (`info` names its handle when the table knows it), with
    /// whether the link was encrypted then.
    mutating func consume(_ pdu: ATTPDU, info: HandleInfo?, encrypted: Bool, record: Int, time: Int64)
    /// A decoded message of this protocol; returns the secrets it carried.
    mutating func consume(_ e: ProfileEvent, encrypted: Bool) -> [AuditSighting]
    /// The findings of the connection, at the end of the capture.
    func findings(connection: String) -> [AuditHit]
}

extension ProtocolAuditTrack {
    public mutating func consume(_ pdu: ATTPDU, info: HandleInfo?, encrypted: Bool, record: Int, time: Int64) {}
}

/// A secret a message carried.
public enum AuditSighting {
    /// A Wi-Fi credential (`what`: "Wi-Fi password"): inventoried, and checked against the
    /// link's encryption (`credentials.*`) or, when read, as readable (`secrets.readable`).
    case credential(Secret, what: String)
    /// Any other secret, inventoried only; `note` is added to where it was seen.
    case secret(SecretKind, Secret, note: String = "")
}

/// A finding of a protocol's rule; the audit adds the rule's title, fix and default severity.
public struct AuditHit {
    public var id: String
    public var evidence: String
    public var records: [Int]
    public var time: Int64?
    /// Set when the rule raises or lowers its default.
    public var severity: AuditFinding.Severity?

    public init(_ id: String, _ evidence: String, records: [Int], time: Int64?, severity: AuditFinding.Severity? = nil) {
        self.id = id
        self.evidence = evidence
        self.records = records
        self.time = time
        self.severity = severity
    }

    /// Evidence listing what happened where: the first four, then how many more.
    public static func list(_ items: [(what: String, record: Int, time: Int64)]) -> String {
        let shown = items.prefix(4).map { "\($0.what) at record \($0.record)" }
        return shown.joined(separator: ", ") + (items.count > 4 ? " and \(items.count - 4) more" : "")
    }
}
