import ArgumentParser
import ATT
import Capture
import Foundation
import GATT
import HCI
import Profiles
import Protocols
import Report

enum OutputFormatOption: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

/// `replay run --table`: the shape of an emulated target.
enum DeviceShape: String, ExpressibleByArgument, CaseIterable {
    /// Shaped like the recorded device (its Wi-Fi world).
    case recorded
    /// The emulator's own device, as named.
    case emulator
}

/// Options every decoding command shares (each command has its own --format).
struct DecodeOptions: ParsableArguments {
    @Option(name: .customLong("gatt-table"), help: ArgumentHelp(
        "Attribute table (JSON) for captures that start after GATT discovery.",
        discussion: "The format is what `gattlab info --format json` writes under \"tables\"; see README.",
        valueName: "file"))
    var gattTable: String?

    @Option(name: .long, help: ArgumentHelp(
        "Use a built-in device's attribute table when the capture has no discovery: \(GATTLabProtocols.all.builtInNames.joined(separator: ", ")).",
        valueName: "name"))
    var profile: String?

    @Flag(name: .customLong("reveal-secrets"), help: "Show secret values (LTKs, Wi-Fi passwords) instead of <redacted:N bytes>.")
    var revealSecrets = false

    @Option(name: .customLong("esp-pop"), help: ArgumentHelp(
        "ESP-IDF security 1: the device's proof of possession, to decrypt provisioning sessions (a secret: never printed).",
        valueName: "text"))
    var espPoP: String?

    @Option(name: .customLong("esp-client-key"), help: ArgumentHelp(
        "ESP-IDF security 1: the phone's X25519 private key, 64 hex digits (a secret: never printed).",
        valueName: "hex"))
    var espClientKey: String?

    @Flag(name: .customLong("no-color"), help: "No colour in text output (also when NO_COLOR is set or stdout is not a terminal).")
    var noColor = false

    func validate() throws {
        if gattTable != nil && profile != nil {
            throw ValidationError("--gatt-table and --profile both give a table; choose one")
        }
        if let bad = GATTLabProtocols.all.malformedKey(givenKeys) {
            // The value is a secret: the message does not repeat it.
            throw ValidationError("--\(bad.name) takes \(bad.expected)")
        }
        if let profile, GATTLabProtocols.all.builtInTable(named: profile) == nil {
            throw ValidationError("unknown --profile '\(profile)'; built-in profiles: \(GATTLabProtocols.all.builtInNames.joined(separator: ", "))")
        }
    }

    /// The starting table and its source, or a usage error for an unreadable table file.
    func startingTable() throws -> (AttributeTable, TableSource)? {
        if let gattTable {
            do {
                let loaded = try GATTTableFile.load(path: gattTable)
                return (loaded.table, .file(gattTable))
            } catch {
                throw ValidationError("--gatt-table: \(error.message)")
            }
        }
        if let profile, let loaded = GATTLabProtocols.all.builtInTable(named: profile) {
            return (loaded.table, .builtIn(profile))
        }
        return nil
    }

    /// The key options as given, by name.
    var givenKeys: [String: String?] { ["esp-pop": espPoP, "esp-client-key": espClientKey] }

    /// Keys for the protocol decoders, as secrets.
    func protocolKeys() -> ProtocolKeys {
        ProtocolKeys.parse(givenKeys, protocols: GATTLabProtocols.all)
    }

    func makeDecoder() throws -> GATTDecoder {
        let decoder = GATTDecoder()
        if let (table, source) = try startingTable() {
            decoder.defaultTable = table
            decoder.defaultTableSource = source
        }
        return decoder
    }
}

// The decode filters (Report) are read straight from the command line.
extension ConnectionFilter: ExpressibleByArgument {}
extension HandleFilter: ExpressibleByArgument {}
extension UUIDFilter: ExpressibleByArgument {}

/// `--ltk` and `--ltk-file`: long-term keys to decrypt sniffed encrypted links with (decode, timeline).
/// Keys are secrets: messages never repeat them.
struct LinkKeyOptions: ParsableArguments {
    @Option(name: .customLong("ltk"), help: ArgumentHelp(
        "Decrypt sniffed encrypted links with this long-term key: 32 hex digits, most significant octet first (repeatable; a secret: never printed).",
        discussion: "The key that verifies (by MIC) on a link is used for it; the byte-reversed form, as HCI logs and key stores keep it, is tried too.",
        valueName: "hex"))
    var ltk: [String] = []

    @Option(name: .customLong("ltk-file"), help: ArgumentHelp(
        "Long-term keys for sniffed links, one per line: LTK, or ADDRESS LTK for the links of one device; # starts a comment.",
        valueName: "file"))
    var ltkFile: String?

    @Flag(name: .customLong("no-pairing-keys"), help: ArgumentHelp(
        "Do not recover keys from sniffed LE legacy pairings.",
        discussion: "By default, as crackle does, the TK of a legacy pairing is found from its confirm and random values (Just Works, or a passkey by trying all 1,000,000), its STK decrypts the rest of the pairing, and the LTKs distributed there decrypt the pair's later links (by EDIV and Rand). Keys are never printed."))
    var noPairingKeys = false

    func validate() throws {
        for text in ltk where LinkLayerKey.parseLTK(Substring(text)) == nil {
            throw ValidationError("--ltk takes 32 hex digits (a 16-byte key, most significant octet first)")
        }
        // A bad key file is a usage error of the command it was given to, found before any work.
        if ltkFile != nil { _ = try keys() }
    }

    /// The keys of --ltk and --ltk-file; a file that cannot be read or has a bad line is a usage error.
    func keys() throws -> [LinkLayerKey] {
        var keys = ltk.compactMap { LinkLayerKey.parseLTK(Substring($0)).map { LinkLayerKey(ltk: $0) } }
        guard let ltkFile else { return keys }
        let text: String
        do {
            text = try String(contentsOfFile: ltkFile, encoding: .utf8)
        } catch {
            throw ValidationError("--ltk-file: cannot read \(ltkFile)")
        }
        for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            switch LinkLayerKey.parse(line: line) {
            case .success(let key?): keys.append(key)
            case .success(nil): continue
            case .failure(let problem): throw ValidationError("--ltk-file \(ltkFile) line \(n + 1): \(problem)")
            }
        }
        if keys.isEmpty { throw ValidationError("--ltk-file \(ltkFile) holds no key") }
        return keys
    }
}
