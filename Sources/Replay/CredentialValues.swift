import ATT
import Capture
import Profiles

/// The values in a script that carry credentials: where the secret bytes lie in them (the
/// protocols' `credentials(in:)`, to overwrite with '*' when extracting without
/// `--reveal-secrets`) and how to rebuild them with the values of `--set ssid=... --set
/// password=... --set url=...` at run time (`ReplayingProtocol.rebuildCredentials`), so a
/// customer's recorded credentials never reach a lab device unless asked for.
public enum CredentialValues {
    /// The value to send: the recorded one with `settings` applied. Throws when the recorded secret
    /// was redacted and no `--set` gives it, or when the format's codec cannot rebuild the value.
    public static func rebuild(_ recorded: [UInt8], _ field: ReplayStep.CredentialField, settings: [String: String],
                        step: Int, protocols: ProtocolSet) throws(ReplayError) -> [UInt8] {
        let given = CredentialSettings(settings)
        for type in protocols.replaying {
            if let value = try asked(step: step, format: field.format, { () throws(CredentialRebuildError) in
                try type.rebuildCredentials(recorded, format: field.format, redacted: field.redacted, settings: given)
            }) {
                return value
            }
        }
        throw .usage("step \(step): unknown credentials format '\(field.format)'")
    }

    /// The writes to send for a value cut across the write steps `steps` (consecutive writes to
    /// one characteristic, the first `first`, 1-based), rebuilt with `settings` by the protocol
    /// that knows its format: how many steps it took and the pieces to send (a new password may
    /// need more writes than were recorded, or fewer). Nil when no protocol reads them as one.
    public static func rebuildCut(_ pieces: [[UInt8]], _ field: ReplayStep.CredentialField, redacted: Bool, settings: [String: String],
                                  first: Int, protocols: ProtocolSet) throws(ReplayError) -> (consumed: Int, pieces: [[UInt8]])? {
        let given = CredentialSettings(settings)
        for type in protocols.replaying {
            if let cut = try asked(step: first, format: field.format, { () throws(CredentialRebuildError) in
                try type.rebuildCutCredentials(pieces, format: field.format, redacted: redacted, settings: given)
            }), cut.consumed > 0, cut.consumed <= pieces.count {
                return cut
            }
        }
        return nil
    }

    /// A protocol's answer, its errors in the replay's words.
    private static func asked<T>(step: Int, format: String, _ body: () throws(CredentialRebuildError) -> T?) throws(ReplayError) -> T? {
        do throws(CredentialRebuildError) {
            return try body()
        } catch {
            switch error {
            case .needs(let name):
                throw .usage("step \(step) writes \(format) whose \(name) was redacted at extraction; give it with --set \(name)=...")
            case .undecodable(let what):
                throw .usage("step \(step): \(what) does not decode, so --set cannot rebuild it")
            }
        }
    }
}
