import Profiles

/// One audit rule as renderers and documentation see it: SARIF lists every rule of the catalogue
/// as the tool's rules, whether it fired or not.
public struct AuditRuleInfo: Sendable, Hashable {
    /// Stable id, the same as `AuditFinding.id`.
    public var id: String
    /// The level a finding of this rule has unless the rule raises it (a very short key).
    public var defaultSeverity: AuditFinding.Severity
    public var title: String
    /// How to fix it.
    public var fix: String

    public init(id: String, defaultSeverity: AuditFinding.Severity, title: String, fix: String) {
        self.id = id
        self.defaultSeverity = defaultSeverity
        self.title = title
        self.fix = fix
    }
}

/// Every audit rule: the audit's own and those of the audited protocols.
public enum AuditCatalogue {
    /// Every rule, in catalogue order (the order SARIF's `ruleIndex` counts in): links, pairing,
    /// keys and credentials, then each protocol's in registration order, then the capture's.
    public static func rules(protocols: ProtocolSet) -> [AuditRuleInfo] {
        AuditRules.linkRules + protocols.conforming(to: (any ProtocolAuditing.Type).self).flatMap { $0.auditRules } + AuditRules.captureRules
    }
}
