import ArgumentParser
import ATT
import GATT
import HCI

enum OutputFormatOption: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

/// Options every decoding command shares.
struct DecodeOptions: ParsableArguments {
    @Option(name: .long, help: "Output format: text for people, json for machines (JSON Lines for decode).")
    var format: OutputFormatOption = .text

    @Option(name: .customLong("gatt-table"), help: ArgumentHelp(
        "Attribute table (JSON) for captures that start after GATT discovery.",
        discussion: "The format is what `gattlab info --format json` writes under \"tables\"; see README.",
        valueName: "file"))
    var gattTable: String?

    @Option(name: .long, help: ArgumentHelp(
        "Use a built-in device's attribute table when the capture has no discovery: \(BuiltInProfiles.names.joined(separator: ", ")).",
        valueName: "name"))
    var profile: String?

    @Flag(name: .customLong("reveal-secrets"), help: "Show secret values (LTKs, Wi-Fi passwords) instead of <redacted:N bytes>.")
    var revealSecrets = false

    @Flag(name: .customLong("no-color"), help: "No colour in text output (also when NO_COLOR is set or stdout is not a terminal).")
    var noColor = false

    func validate() throws {
        if gattTable != nil && profile != nil {
            throw ValidationError("--gatt-table and --profile both give a table; choose one")
        }
        if let profile, BuiltInProfiles.table(named: profile) == nil {
            throw ValidationError("unknown --profile '\(profile)'; built-in profiles: \(BuiltInProfiles.names.joined(separator: ", "))")
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
        if let profile, let loaded = BuiltInProfiles.table(named: profile) {
            return (loaded.table, .builtIn(profile))
        }
        return nil
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

/// `--connection`: an HCI handle (64, 0x40), a handle on another controller (hci1/0x40) or an access address.
struct ConnectionFilter: ExpressibleByArgument {
    var controller: UInt16?
    var id: UInt32

    init?(argument: String) {
        var rest = Substring(argument.lowercased())
        if rest.hasPrefix("hci"), let slash = rest.firstIndex(of: "/") {
            guard let c = UInt16(rest[rest.index(rest.startIndex, offsetBy: 3)..<slash]) else { return nil }
            controller = c
            rest = rest[rest.index(after: slash)...]
        } else if rest.hasPrefix("aa:") {
            controller = ConnectionKey.linkLayerController
            rest = rest.dropFirst(3)
        }
        guard let v = parseInteger(rest, max: UInt64(UInt32.max)) else { return nil }
        id = UInt32(v)
    }

    func matches(_ key: ConnectionKey) -> Bool {
        key.id == id && (controller == nil || controller == key.controller)
    }
}

/// `--handle`: decimal or 0x-prefixed hex.
struct HandleFilter: ExpressibleByArgument {
    var handle: UInt16
    init?(argument: String) {
        guard let v = parseInteger(Substring(argument.lowercased()), max: 0xFFFF) else { return nil }
        handle = UInt16(v)
    }
}

/// `--uuid`: a UUID in any usual form, or a known name ("OTA_STATUS", "Battery Level").
struct UUIDFilter: ExpressibleByArgument {
    var uuid: BluetoothUUID?
    var name: String?
    init?(argument: String) {
        if let u = BluetoothUUID(string: argument) { uuid = u } else { name = argument.lowercased() }
    }

    func matches(_ candidate: BluetoothUUID?) -> Bool {
        guard let candidate else { return false }
        if let uuid { return uuid == candidate }
        return KnownUUIDs.name(candidate)?.lowercased() == name
    }
}

func parseInteger(_ s: Substring, max: UInt64) -> UInt64? {
    let v = s.hasPrefix("0x") ? UInt64(s.dropFirst(2), radix: 16) : UInt64(s)
    guard let v, v <= max else { return nil }
    return v
}
