import Capture

/// What `gattlab audit` found in one capture: findings about how credentials and keys were
/// handled, and the inventory of every secret the file holds (what sharing it would expose).
public struct AuditReport: Sendable {
    public var source: String
    public var format: String
    public var records: Int
    // The three lists grow with the capture (a day of a test rack: tens of thousands of each),
    // so they keep their elements encoded, in memory up to a limit and then in a temporary file
    // (`SpillList`): the audit's memory stays flat however long the capture.
    public var findings: SpillList<AuditFinding>
    public var secrets: SpillList<SecretSighting>
    /// One entry per connection: how it was protected.
    public var links: SpillList<AuditLink>

    /// `memoryLimit`: bytes each list keeps in memory before it writes to its file.
    public init(source: String, format: String, records: Int, memoryLimit: Int = SpillList<AuditFinding>.defaultMemoryLimit) {
        self.source = source
        self.format = format
        self.records = records
        findings = SpillList(memoryLimit: memoryLimit)
        secrets = SpillList(memoryLimit: memoryLimit)
        links = SpillList(memoryLimit: memoryLimit)
    }

    /// The worst severity found, nil when nothing was.
    public var worstSeverity: AuditFinding.Severity? { findings.map(\.severity).max() }
}

/// One audit finding: a rule (stable `id`) that fired on a connection, with its evidence.
public struct AuditFinding: Sendable {
    /// SARIF's levels, in order: a note is worth knowing, a warning weakens protection, an error
    /// exposes a credential or lets anyone in radio range act.
    public enum Severity: String, Sendable, Comparable, CaseIterable {
        case note, warning, error
        var rank: Int { self == .error ? 2 : self == .warning ? 1 : 0 }
        public static func < (a: Severity, b: Severity) -> Bool { a.rank < b.rank }
    }

    public var id: String
    public var severity: Severity
    public var title: String
    /// What in the capture shows it, one sentence, never a secret's value.
    public var evidence: String
    /// How to fix it.
    public var fix: String
    /// The connection (`hci0/0x0040`, `aa:0x50657a24`), when the finding is about one.
    public var connection: String?
    /// Records (1-based frame numbers) that show it; the first is the main location.
    public var records: [Int]
    /// Time of the first record, microseconds since the Unix epoch.
    public var time: Int64?

    public init(id: String, severity: Severity, title: String, evidence: String, fix: String,
                connection: String?, records: [Int], time: Int64?) {
        self.id = id
        self.severity = severity
        self.title = title
        self.evidence = evidence
        self.fix = fix
        self.connection = connection
        self.records = records
        self.time = time
    }
}

/// What kind of secret a sighting is.
public enum SecretKind: String, Sendable, CaseIterable {
    case wifiPassword = "wifi-password"
    case ltk
    case irk
    case csrk
    case linkKey = "link-key"
    /// A key the host handed to HCI LE Encrypt (stacks derive keys with it).
    case leEncryptKey = "le-encrypt-key"
    case urlPassword = "url-password"
    case urlToken = "url-token"
    /// The value of a credential characteristic that no protocol decoder could take apart: the
    /// whole value is treated as secret.
    case credentialValue = "credential-value"
    /// A Pairing Confirm or Pairing Random value that gives keys away: in a legacy pairing, with
    /// the others, the TK by search, then the STK and the keys distributed under it; in a Secure
    /// Connections Passkey Entry, one bit of the passkey per round.
    case pairingValue = "pairing-value"

    public var title: String {
        switch self {
        case .wifiPassword: "Wi-Fi password"
        case .ltk: "LTK"
        case .irk: "IRK"
        case .csrk: "CSRK"
        case .linkKey: "BR/EDR link key"
        case .leEncryptKey: "LE Encrypt key"
        case .urlPassword: "password in a firmware URL"
        case .urlToken: "token in a firmware URL"
        case .credentialValue: "credential characteristic value"
        case .pairingValue: "pairing confirm/random value"
        }
    }
}

/// One place a secret value appears in the capture.
public struct SecretSighting: Sendable {
    public var kind: SecretKind
    /// The value (redacted by every renderer unless secrets are revealed) and where its bytes lie.
    public var secret: Secret
    /// Records its bytes came from.
    public var records: [Int]
    public var time: Int64
    public var connection: String?
    /// Where it was seen, for people: "OTA_CREDENTIALS write", "SMP Encryption Information",
    /// "HCI LE Start Encryption".
    public var context: String
    /// Whether the value went over the radio (false for HCI commands between host and controller).
    public var overTheAir: Bool
    /// Whether the link was encrypted when it did; nil when not over the air or unknown.
    public var linkEncrypted: Bool?
    /// The bytes are already the redaction filler (a capture that went through `gattlab redact`).
    public var alreadyRedacted: Bool
    /// The value could be located in the file's bytes, so `redact` can overwrite it.
    public var locatable: Bool { secret.location != nil }

    public init(kind: SecretKind, secret: Secret, records: [Int], time: Int64, connection: String?,
                context: String, overTheAir: Bool, linkEncrypted: Bool?) {
        self.kind = kind
        self.secret = secret
        self.records = records
        self.time = time
        self.connection = connection
        self.context = context
        self.overTheAir = overTheAir
        self.linkEncrypted = linkEncrypted
        alreadyRedacted = Redaction.isFiller(secret.unsafeBytes)
    }
}

/// How one connection was protected, as the capture shows it.
public struct AuditLink: Sendable {
    public var connection: String
    public var peer: String?
    public var firstRecord: Int
    /// Record of the first Encryption Change that enabled encryption.
    public var encryptedAtRecord: Int?
    public var keySize: Int?
    /// What the last SMP exchange negotiated, when the capture holds it.
    public var pairing: PairingSummary? { pairings.last }
    /// Every pairing on the connection, in order (a failed one, then a retry).
    public var pairings: [PairingSummary] = []

    public init(connection: String, peer: String?, firstRecord: Int) {
        self.connection = connection
        self.peer = peer
        self.firstRecord = firstRecord
    }
}

/// The pairing a Pairing Request and Response agreed on.
public struct PairingSummary: Sendable, Hashable {
    public var secureConnections: Bool
    public var mitm: Bool
    public var bonding: Bool
    /// "Just Works", "Passkey Entry", "Numeric Comparison", "Out of Band".
    public var method: String
    public var keySize: Int
    public var records: [Int]
    public var failed: String?
    /// When the Pairing Request was sent.
    public var time: Int64?
    /// The IO capabilities the two sides declared (initiator, responder).
    public var ioCapabilities: (initiator: String, responder: String)?

    public static func == (a: PairingSummary, b: PairingSummary) -> Bool {
        a.secureConnections == b.secureConnections && a.mitm == b.mitm && a.bonding == b.bonding && a.method == b.method
            && a.keySize == b.keySize && a.records == b.records && a.failed == b.failed
    }

    public func hash(into h: inout Hasher) { h.combine(records) }
}

/// The filler `gattlab redact` writes over secret bytes, and how to recognise it.
public enum Redaction {
    /// `*`: printable, so redacted text stays text and a redacted password reads as one.
    public static let filler: UInt8 = 0x2A

    public static func isFiller(_ bytes: [UInt8]) -> Bool { !bytes.isEmpty && bytes.allSatisfy { $0 == filler } }
}
