/// A secret value (Wi-Fi password, PoP, LTK, IRK, CSRK) that must not reach any output by accident.
///
/// Its `description` is redacted. The only way to the bytes for display is `reveal(_:)`, which
/// output code calls with the user's explicit `--reveal-secrets` choice. Lives in the lowest
/// module so every layer above carries secrets as this type.
public struct Secret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// What the secret is, for people: "LTK", "Wi-Fi password".
    public let label: String
    private let bytes: [UInt8]
    /// Where the bytes lie in the capture, when the decoder tracked it (see `ByteOrigin`).
    /// Not part of the value: two secrets with the same bytes and label are equal.
    public var location: SecretLocation?

    public init(_ bytes: [UInt8], label: String, location: SecretLocation? = nil) {
        self.bytes = bytes
        self.label = label
        self.location = location
    }

    public static func == (a: Secret, b: Secret) -> Bool { a.label == b.label && a.bytes == b.bytes }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(label)
        hasher.combine(bytes)
    }

    /// The same secret, located at `origin` (nil leaves it unlocated), with the bytes that
    /// follow from it (`SecretLocation.dependents`).
    public func located(_ origin: ByteOrigin?, mask: [UInt8]? = nil, dependents: [SecretLocation.Dependent] = []) -> Secret {
        var s = self
        s.location = origin.map { SecretLocation(origin: $0, mask: mask, dependents: dependents) }
        return s
    }

    public var count: Int { bytes.count }

    /// `<redacted:N bytes>`: what every output shows unless secrets are revealed.
    public var redacted: String { "<redacted:\(bytes.count) bytes>" }
    public var description: String { redacted }
    public var debugDescription: String { "Secret(\(label), \(redacted))" }

    /// `dump()` and mirrors see the label and the redacted marker, never the bytes.
    public var customMirror: Mirror {
        Mirror(self, children: ["label": label, "value": redacted], displayStyle: .struct)
    }

    /// The bytes, for code that must use them (redaction, decryption), never for display.
    public var unsafeBytes: [UInt8] { bytes }

    /// Hex of the value when `reveal` is true, else the redacted marker.
    public func hex(reveal: Bool) -> String { reveal ? Hex.string(bytes) : redacted }
}
