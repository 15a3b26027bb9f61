import Analysis
import ArgumentParser
import ATT
import Emulator
import Foundation
import Fuzz
import GATT
import Profiles
import Protocols
import Report

struct ProtocolsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "protocols",
        abstract: "List the device protocols GATTLab knows and what it can do with each.",
        discussion: """
            Lists every registered device protocol, in the order it was registered \
            (Sources/Protocols/Registry.swift): its name (as timeline and decode JSON show it) and \
            short name (what --profile takes), the service UUIDs a device running it advertises, \
            the characteristics it decodes (UUID and name; "secret" marks those whose values carry \
            Wi-Fi credentials, which output redacts), the endpoints it finds by their 0x2901 name, \
            the keys it takes to read encrypted sessions (such as --esp-pop), and what GATTLab \
            supports for it:

              decode          its values are decoded (decode, timeline, audit, redact)
              built-in table  --profile NAME gives its attribute table to captures that start \
            after discovery
              timeline        its events have a lane of their own on timelines (ota, scan, \
            provisioning)
              audit           its own audit rules (by id), besides the link and pairing rules
              emulate         its emulated devices (emu:NAME), scenarios (gattlab emulate \
            scenario NAME) and the bugs that can be planted in them (--quirk NAME)
              fuzz            its fuzz targets (gattlab fuzz NAME, Corpus/NAME/, make fuzz \
            TARGET=NAME)

            Use it to find the --profile name for a device, to check which UUIDs a capture must \
            show for GATTLab to decode it, or, after adding a protocol, that it is registered.

            Examples:
              gattlab protocols
              gattlab protocols --format json | jq '.[].characteristics[].uuid'
            """ + "\n\n" + ExitStatus.help([.success, .usage]))

    @Option(name: .long, help: "Output format: text for people, json for machines.")
    var format: OutputFormatOption = .text

    func run() throws {
        let list = GATTLabProtocols.all.types.map(ProtocolListing.init)
        let out = BufferedOutput()
        switch format {
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            out.line(String(decoding: try encoder.encode(list), as: UTF8.self))
        case .text:
            for (index, p) in list.enumerated() {
                if index > 0 { out.line("") }
                p.text(out)
            }
        }
        out.flush()
    }
}

/// What GATTLab supports for a protocol, one entry per hook protocol its type may conform to:
/// nil when it does not, else the details shown after the name (rule ids, the --profile name).
struct ProtocolCapability: Sendable {
    let name: String
    let details: @Sendable (any DeviceProtocol.Type) -> [String]?

    /// In the order `gattlab protocols` lists them. A new hook protocol adds its line here.
    static let all: [ProtocolCapability] = [
        ProtocolCapability(name: "decode") { _ in [] },
        ProtocolCapability(name: "built-in table") { type in
            type.builtInTable == nil ? nil : ["--profile \(type.shortName)"]
        },
        ProtocolCapability(name: "timeline") { type in
            (type as? any ProtocolAnalysis.Type).map { ["lane \($0.lane.rawValue)"] }
        },
        ProtocolCapability(name: "audit") { type in
            (type as? any ProtocolAuditing.Type)?.auditRules.map(\.id)
        },
        ProtocolCapability(name: "emulate") { type in
            // The scenarios are counted: `gattlab emulate list` lists them with a line on each.
            (type as? any EmulatedProtocol.Type).map { e in
                e.devices.map { "emu:\($0.name)" } + ["\(e.scenarios.count + e.auditScenarios.count) scenarios"]
                    + e.quirks.map { "quirk \($0.name)" }
            }
        },
        ProtocolCapability(name: "fuzz") { type in
            (type as? any FuzzableProtocol.Type).map { f in f.fuzzTargets.map(\.name) + f.deviceFuzzTargets.map(\.name) }
        },
    ]
}

/// One protocol as `gattlab protocols` shows it.
struct ProtocolListing: Encodable {
    struct Service: Encodable {
        let uuid: String
        let name: String?
    }

    struct Characteristic: Encodable {
        let uuid: String
        let name: String?
        let secret: Bool
    }

    struct Key: Encodable {
        let option: String
        let value: String
        let help: String
    }

    struct Support: Encodable {
        let name: String
        let details: [String]
    }

    let name: String
    let shortName: String
    let advertisedServices: [Service]
    let characteristics: [Characteristic]
    let endpointNames: [String]
    let keys: [Key]
    let supports: [Support]

    init(_ type: any DeviceProtocol.Type) {
        name = type.name
        shortName = type.shortName
        advertisedServices = type.advertisedServices.sorted { $0.description < $1.description }.map { uuid in
            Service(uuid: uuid.description, name: KnownUUIDs.name(uuid))
        }
        characteristics = type.characteristics.sorted { $0.description < $1.description }.map { uuid in
            Characteristic(uuid: uuid.description, name: KnownUUIDs.name(uuid), secret: type.secretCharacteristics.contains(uuid))
        }
        endpointNames = type.endpointNames.sorted()
        keys = type.keys.map { Key(option: "--\($0.name)", value: $0.valueName, help: $0.help) }
        supports = ProtocolCapability.all.compactMap { c in c.details(type).map { Support(name: c.name, details: $0) } }
    }

    func text(_ out: BufferedOutput) {
        out.line(shortName.isEmpty ? name : "\(name) (\(shortName))")
        if !advertisedServices.isEmpty {
            out.line("  advertises " + advertisedServices.map { s in s.uuid + (s.name.map { " \($0)" } ?? "") }.joined(separator: ", "))
        }
        for c in characteristics {
            out.line("  characteristic \(c.uuid)" + (c.name.map { " \($0)" } ?? "") + (c.secret ? " (secret)" : ""))
        }
        if !endpointNames.isEmpty { out.line("  endpoint names " + endpointNames.joined(separator: ", ")) }
        for k in keys { out.line("  key \(k.option) \(k.value): \(k.help)") }
        for s in supports {
            out.line("  supports " + (s.details.isEmpty ? s.name : "\(s.name): \(s.details.joined(separator: ", "))"))
        }
    }
}
