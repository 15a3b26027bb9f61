import ArgumentParser
import Capture
import Profiles
import Protocols

/// `--esp-pop` and `--esp-client-key` for `replay extract` and `replay run`: the names, help and
/// parsing of decode's and timeline's options (`DecodeOptions`), here to decrypt a recorded
/// ESP-IDF security 1 session into a script that runs the session live.
struct ESPKeyOptions: ParsableArguments {
    @Option(name: .customLong("esp-pop"), help: ArgumentHelp(
        "ESP-IDF security 1: the proof of possession the phone used, to decrypt the session (a secret: redacted in the script unless --reveal-secrets).",
        valueName: "text"))
    var espPoP: String?

    @Option(name: .customLong("esp-client-key"), help: ArgumentHelp(
        "ESP-IDF security 1: the phone's X25519 private key, 64 hex digits (a secret: never printed or written).",
        valueName: "hex"))
    var espClientKey: String?

    var isEmpty: Bool { espPoP == nil && espClientKey == nil }

    func validate() throws {
        if let bad = GATTLabProtocols.all.malformedKey(givenKeys) {
            // The value is a secret: the message does not repeat it.
            throw ValidationError("--\(bad.name) takes \(bad.expected)")
        }
    }

    var givenKeys: [String: String?] { ["esp-pop": espPoP, "esp-client-key": espClientKey] }

    var keys: ProtocolKeys { ProtocolKeys.parse(givenKeys, protocols: GATTLabProtocols.all) }
}
