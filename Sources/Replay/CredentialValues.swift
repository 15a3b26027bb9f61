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
            do throws(CredentialRebuildError) {
                if let value = try type.rebuildCredentials(recorded, format: field.format, redacted: field.redacted, settings: given) {
                    return value
                }
            } catch {
                switch error {
                case .needs(let name):
                    throw .usage("step \(step) writes \(field.format) whose \(name) was redacted at extraction; give it with --set \(name)=...")
                case .undecodable(let what):
                    throw .usage("step \(step): \(what) does not decode, so --set cannot rebuild it")
                }
            }
        }
        throw .usage("step \(step): unknown credentials format '\(field.format)'")
    }
}
