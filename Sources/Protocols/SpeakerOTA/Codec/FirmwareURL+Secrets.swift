import Capture
import Profiles

extension SpeakerOTA.FirmwareURL {
    /// A part of the URL that is a secret.
    public enum SecretPart: Sendable, Hashable {
        /// The password of `scheme://user:password@host`.
        case password
        /// The value of a query parameter named like a credential (`token=`, `sig=`, `X-Amz-Signature=`).
        case queryValue(name: String)
    }

    /// Query parameter names (lower case) that say their value is a credential.
    static let credentialWords = ["token", "key", "secret", "sig", "password", "passwd", "pwd", "auth", "credential",
                                  "session", "access", "code", "jwt", "bearer"]

    /// Where the URL's bytes lie: the authority (`user:password@host:port`), its user info, and the query.
    private var layout: (authority: Range<Int>, userInfo: Range<Int>?, query: Range<Int>?)? {
        let b = bytes
        guard let schemeEnd = (0..<max(0, b.count - 2)).first(where: { b[$0] == 0x3A && b[$0 + 1] == 0x2F && b[$0 + 2] == 0x2F }) else { return nil }
        let start = schemeEnd + 3
        let end = b[start...].firstIndex { $0 == 0x2F || $0 == 0x3F || $0 == 0x23 } ?? b.count
        let at = b[start..<end].lastIndex(of: 0x40)
        let queryStart = b.firstIndex(of: 0x3F).flatMap { $0 >= end ? $0 + 1 : nil }
        let queryEnd = queryStart.map { q in b[q...].firstIndex(of: 0x23) ?? b.count }
        return (start..<end, at.map { start..<$0 }, queryStart.flatMap { q in queryEnd.map { q..<$0 } })
    }

    /// The host (and port), without user info.
    public var host: String? {
        guard let l = layout else { return nil }
        let hostStart = l.userInfo.map { $0.upperBound + 1 } ?? l.authority.lowerBound
        return hostStart < l.authority.upperBound ? ProtocolText.decode(Array(bytes[hostStart..<l.authority.upperBound])).text : nil
    }

    /// Whether the URL carries a user name (`user@` or `user:password@`).
    public var hasUserInfo: Bool { layout?.userInfo != nil }

    /// Byte ranges of the URL's secrets, in order.
    public var secretParts: [(part: SecretPart, range: Range<Int>)] {
        guard let l = layout else { return [] }
        var out: [(SecretPart, Range<Int>)] = []
        if let u = l.userInfo, let colon = bytes[u].firstIndex(of: 0x3A), colon + 1 < u.upperBound {
            out.append((.password, (colon + 1)..<u.upperBound))
        }
        if let q = l.query {
            var i = q.lowerBound
            while i < q.upperBound {
                let end = bytes[i..<q.upperBound].firstIndex(of: 0x26) ?? q.upperBound
                if let eq = bytes[i..<end].firstIndex(of: 0x3D), eq + 1 < end {
                    let name = ProtocolText.decode(Array(bytes[i..<eq])).text
                    let lower = name.lowercased()
                    if Self.credentialWords.contains(where: { lower.contains($0) }) {
                        out.append((.queryValue(name: name), (eq + 1)..<end))
                    }
                }
                i = end + 1
            }
        }
        return out
    }

    /// The URL for people: each secret part as `<redacted:N bytes>` unless `reveal`.
    public func display(reveal: Bool) -> String {
        let parts = reveal ? [] : secretParts
        var out = ""
        var i = 0
        for p in parts {
            out += ProtocolText.display(Array(bytes[i..<p.range.lowerBound]))
            out += "<redacted:\(p.range.count) bytes>"
            i = p.range.upperBound
        }
        return out + ProtocolText.display(Array(bytes[i...]))
    }
}
