// swift-tools-version:6.1
// GATTLab: record, decode, replay and fuzz BLE GATT traffic. The module graph follows
// DESIGN.md: data flows Capture -> HCI -> ATT/GATT -> (Profiles, Analysis, Report), and no
// module imports one above it.
import Foundation
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    // The decoders mutate class state once per record; dynamic exclusivity checks cost about a
    // sixth of decoding time (measured with perf). Static checks stay; bounds checks stay.
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

// The libFuzzer builds (Scripts/libfuzzer.sh, .clusterfuzzlite/build.sh) run SwiftPM with
// --sanitize SANITIZER (every module) and GATTLAB_FUZZ_INSTRUMENT=SANITIZER. Coverage
// instrumentation (-sanitize=fuzzer: edge counters and comparison tracing) then goes only to the
// modules the fuzz targets exercise, below, and the driver links libFuzzer itself: libFuzzer
// clears and scans every counter in the binary after each input, and with every module
// instrumented (crypto, the protobuf runtime, transports, renderers, replay: about 416k counters)
// that scan was most of an execution's time. GATTLAB_FUZZ_MODULES=A,B narrows it to those
// modules: a target whose code is one protocol's codec (`gattlab-fuzz --list`, 4th column) is
// built with that codec alone instrumented, a few thousand counters instead of 175,000. (The
// sanitizer is named again here because swiftc takes the last -sanitize= it is given.)
let fuzzSanitizer = Context.environment["GATTLAB_FUZZ_INSTRUMENT"].flatMap { $0.isEmpty ? nil : $0 }
let fuzzModules = Context.environment["GATTLAB_FUZZ_MODULES"].flatMap { $0.isEmpty || $0 == "*" ? nil : Set($0.split(separator: ",").map(String.init)) }
/// For the modules whose code the fuzz targets run: their parsers, the decoding pipeline under
/// the capture and timeline targets, the emulated devices under the device targets.
func fuzzCoverage(_ module: String) -> [SwiftSetting] {
    guard let sanitizer = fuzzSanitizer, fuzzModules?.contains(module) ?? true else { return [] }
    return [.unsafeFlags(["-sanitize=fuzzer,\(sanitizer)"])]
}

/// The codecs' code is called from Protocols (the protocols' decoding, devices and fuzz targets),
/// which in one module the optimiser inlined and specialised: with the codecs apart, that needs
/// their bodies visible to it (without: the in-process improv fuzz target ran 204k exec/s where
/// it ran 261k before the split; with: within 4% of before, as nrf7). Not in the libFuzzer builds:
/// codec code inlined into Protocols would run there without its coverage counters.
let crossModule: [SwiftSetting] = fuzzSanitizer == nil
    ? [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))] : []

/// Each protocol's codec, its messages with their decoding and encoding and nothing else, is a
/// module of its own, `<folder>Codec`, from Sources/Protocols/<folder>/Codec (left out of
/// Protocols, which re-exports it in Registry.swift), so that a libFuzzer build of a protocol's
/// targets can instrument its codec alone (docs/fuzzing.md). Found by their folders, so that a
/// protocol is still added with no line here; a codec with protobuf messages (a Generated
/// folder) gets the protobuf runtime and ProtocolsShared.
let protocolsFolder = Context.packageDirectory + "/Sources/Protocols"
let codecs: [(folder: String, protobuf: Bool)] = ((try? FileManager.default.contentsOfDirectory(atPath: protocolsFolder)) ?? [])
    .filter { FileManager.default.fileExists(atPath: "\(protocolsFolder)/\($0)/Codec") }
    .sorted()
    .map { ($0, FileManager.default.fileExists(atPath: "\(protocolsFolder)/\($0)/Codec/Generated")) }
let codecTargets: [Target] = codecs.map { c in
    .target(
        name: "\(c.folder)Codec",
        dependencies: ["ATT", "Capture", "Profiles"]
            + (c.protobuf ? ["ProtocolsShared", .product(name: "SwiftProtobuf", package: "swift-protobuf")] : []),
        path: "Sources/Protocols/\(c.folder)/Codec",
        swiftSettings: strict + crossModule + fuzzCoverage("\(c.folder)Codec"))
}

let package = Package(
    name: "GATTLab",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "gattlab", targets: ["gattlab"]),
        .library(name: "GATTLab", targets: ["AssignedNumbers", "Capture", "HCI", "ATT", "GATT", "Profiles", "Analysis", "Report", "Redact", "Transport", "Emulator", "Replay", "Fuzz", "Protocols"]),
        // The one libFuzzer driver for every in-process fuzz target, chosen at start by its name
        // (a copy fuzz-<target>), GATTLAB_FUZZ_TARGET or --target=NAME (docs/fuzzing.md). make fuzz
        // and .clusterfuzzlite/build.sh build it with the fuzzer runtime and a sanitizer; the
        // normal build makes it a standalone driver that runs files once.
        .executable(name: "gattlab-fuzz", targets: ["FuzzDriver"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // Runtime for the generated nRF7 and ESP-IDF provisioning messages (code generated once, committed).
        // Its traits (BinaryDelimitedStreams, FieldMaskUtilities) are APIs GATTLab does not use,
        // and SwiftPM passes their -D flags in an order that changes from one evaluation of the
        // manifests to the next: every libFuzzer build per codec (.clusterfuzzlite/build.sh
        // evaluates them anew for each) compiled the protobuf runtime again, 94 files, about
        // half the time.
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0", traits: []),
        // X25519, SHA-256 and AES-CTR for ESP-IDF security 1 sessions; AES for LE link-layer encryption.
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        // System libraries, reached through module maps (see Sources/C*/module.modulemap).
        .systemLibrary(name: "CPcap", pkgConfig: "libpcap", providers: [.apt(["libpcap-dev"])]),
        .systemLibrary(name: "CBlueZ", pkgConfig: "bluez", providers: [.apt(["libbluetooth-dev"])]),

        // Capture files in and out: btsnoop, PacketLogger, pcap/pcapng (libpcap).
        .target(name: "Capture", dependencies: ["CPcap"], swiftSettings: strict + fuzzCoverage("Capture")),
        // Names for the Bluetooth SIG's assigned numbers (generated from its YAML by
        // Scripts/assigned-numbers.py, committed) and for common vendor services. No dependencies.
        .target(name: "AssignedNumbers", swiftSettings: strict),
        // HCI commands/events, ACL reassembly, L2CAP, SMP, the LE link layer of sniffers (AES-CCM
        // to decrypt sniffed links with a known LTK), advertising (its AD structures name services
        // with ATT's BluetoothUUID; ATT depends on nothing).
        .target(
            name: "HCI",
            dependencies: ["Capture", "ATT", "AssignedNumbers", .product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto")],
            swiftSettings: strict + fuzzCoverage("HCI")),
        // Every ATT PDU, encode and decode. Depends on nothing, so the emulator and fuzzer can use it alone.
        .target(name: "ATT", swiftSettings: strict + fuzzCoverage("ATT")),
        // Attribute tables from discovery, long operations, MTU, subscriptions: the session model.
        .target(name: "GATT", dependencies: ["ATT", "HCI", "AssignedNumbers"], swiftSettings: strict + fuzzCoverage("GATT")),
        // The device-protocol interface (DeviceProtocol, ProfileMessage, ProtocolSet) and the decoding
        // stage above GATT; the protocols themselves live in Protocols.
        .target(name: "Profiles", dependencies: ["GATT", "ATT", "HCI", "Capture"], swiftSettings: strict + fuzzCoverage("Profiles")),
        // ATT bearers: an in-memory pair, a Unix socket to an emulator process, kernel L2CAP (BlueZ).
        .target(name: "Transport", dependencies: ["ATT", "CBlueZ"], swiftSettings: strict),
        // Emulated devices: a GATT server on the ATT codec, device models with faults, recording.
        .target(name: "Emulator", dependencies: ["Profiles", "Transport", "GATT", "ATT", "HCI", "Capture"], swiftSettings: strict + fuzzCoverage("Emulator")),
        // Replay: scripts from captures, a runner over any bearer, the comparison with the recording.
        .target(name: "Replay", dependencies: ["Emulator", "Profiles", "Transport", "GATT", "ATT", "HCI", "Capture"], swiftSettings: strict),
        // Fuzzing: mutators (generic and per protocol), in-process targets, the engine, corpora, findings.
        .target(name: "Fuzz", dependencies: ["Emulator", "Replay", "Analysis", "Profiles", "Transport", "GATT", "ATT", "HCI", "Capture"], swiftSettings: strict),
        // Timelines and diagnoses over the decoded events.
        // (Crypto: the audit's temporary file is encrypted, SpillList.)
        .target(
            name: "Analysis",
            dependencies: ["Profiles", "GATT", "ATT", "HCI", "Capture", .product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto")],
            swiftSettings: strict + fuzzCoverage("Analysis")),
        // Capture redaction: secrets overwritten in place, addresses and names replaced, the result proven.
        .target(
            name: "Redact",
            dependencies: ["Analysis", "Profiles", "GATT", "ATT", "HCI", "Capture", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict),
        // Renderers: decode output (text, JSON Lines; EventRenderer, with its filters and the
        // colours and buffered stdout every command writes with), timelines (text, JSON, HTML,
        // Perfetto), audits (text, JSON, SARIF).
        .target(name: "Report", dependencies: ["Analysis", "Profiles", "GATT", "ATT", "HCI", "Capture"], swiftSettings: strict),
        // What the protobuf codecs share (parsing with a problem that says where the wire broke).
        .target(
            name: "ProtocolsShared", dependencies: ["Profiles", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            path: "Sources/Protocols/Shared", swiftSettings: strict + crossModule),
        // The device protocols, one folder each, and Registry.swift: the one list that names them
        // all. It sits above every engine, so a protocol's folder can plug into each of them.
        .target(
            name: "Protocols",
            dependencies: [
                "Profiles", "Analysis", "Report", "Redact", "Emulator", "Replay", "Fuzz",
                "ProtocolsShared",
            ] + codecs.map { .target(name: "\($0.folder)Codec") } + [
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            exclude: codecs.map { "\($0.folder)/Codec" } + ["Shared"],
            swiftSettings: strict + fuzzCoverage("Protocols")),
        // Command-line parsing and wiring only.
        .target(
            name: "GATTLabCLI",
            dependencies: [
                "Capture", "HCI", "ATT", "GATT", "Profiles", "Transport", "Emulator", "Analysis", "Report", "Redact", "Replay", "Fuzz",
                "Protocols", "CBuildInfo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict),
        // The git revision of the build, for `gattlab --version`: make writes revision.h (git
        // describe) beside it; a build without make says "unknown". (A SwiftPM build-tool plugin
        // would do it too, but makes every fresh build compile protoc for the host as well.)
        .target(name: "CBuildInfo", path: "Sources/CBuildInfo"),
        .executableTarget(name: "gattlab", dependencies: ["GATTLabCLI"], swiftSettings: strict),
        // With GATTLAB_FUZZ_INSTRUMENT the driver's main hands over to libFuzzer's (LLVMFuzzerRunDriver):
        // without SwiftPM's --sanitize fuzzer, SwiftPM makes the executable module's main the program's.
        .executableTarget(
            name: "FuzzDriver", dependencies: ["Fuzz", "Protocols"],
            swiftSettings: strict + (fuzzSanitizer == nil ? [] : [.define("GATTLAB_FUZZ_MAIN")]),
            linkerSettings: fuzzSanitizer.map { [.unsafeFlags(["-sanitize=fuzzer,\($0)"])] } ?? []),

        // Helpers shared by the test targets (deterministic randomness).
        .target(name: "TestSupport", dependencies: ["Capture"], path: "Tests/TestSupport"),
        .testTarget(name: "CaptureTests", dependencies: ["Capture", "TestSupport"]),
        .testTarget(name: "HCITests", dependencies: ["HCI", "Capture", "CBlueZ", "TestSupport", .product(name: "Crypto", package: "swift-crypto"),
                                                 .product(name: "_CryptoExtras", package: "swift-crypto")]),
        .testTarget(name: "ATTTests", dependencies: ["ATT"]),
        .testTarget(name: "AssignedNumbersTests", dependencies: ["AssignedNumbers"]),
        .testTarget(name: "TransportTests", dependencies: ["Transport", "ATT", "CBlueZ"]),
        .testTarget(name: "GATTTests", dependencies: ["GATT", "ATT", "HCI", "Capture", "TestSupport"]),
        .testTarget(name: "ProfilesTests", dependencies: ["Protocols", "SpeakerOTACodec", "SensorScanCodec", "NRF7Codec", "ESPProvisioningCodec", "Profiles", "GATT", "ATT", "HCI", "Capture", "TestSupport"]),
        .testTarget(name: "EmulatorTests", dependencies: ["Protocols", "Emulator", "Transport", "Profiles", "GATT", "ATT", "HCI", "Capture", "TestSupport"]),
        // The renderers' parts (decode output, filters); whole outputs are tested through the binary.
        .testTarget(name: "ReportTests", dependencies: ["Report", "GATT", "ATT", "HCI", "Capture", "TestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "AnalysisTests", dependencies: ["Protocols", "Analysis", "Report", "Emulator", "Profiles", "GATT", "ATT", "HCI", "Capture", "TestSupport"]),
        .testTarget(name: "RedactTests", dependencies: ["Protocols", "Redact", "Analysis", "Emulator", "Profiles", "GATT", "ATT", "HCI", "Capture", "TestSupport"]),
        .testTarget(name: "ReplayTests", dependencies: ["Protocols", "Replay", "Emulator", "Transport", "Profiles", "GATT", "ATT", "HCI", "Capture", "TestSupport"]),
        .testTarget(name: "FuzzTests", dependencies: ["Protocols", "Fuzz", "Emulator", "Profiles", "ATT", "HCI", "Capture", "TestSupport"]),
        // One test target for every protocol folder (Tests/ProtocolsTests/<Name>/) and the registry.
        .testTarget(name: "ProtocolsTests", dependencies: ["Protocols", "ImprovCodec", "Profiles", "GATT", "ATT", "HCI", "Capture", "TestSupport"]),
        .testTarget(name: "GATTLabCLITests", dependencies: ["Protocols", "GATTLabCLI", "GATT", "HCI", "Capture", "Emulator", "Fuzz", "TestSupport"], exclude: ["Fixtures"]),
    ] + codecTargets,
    swiftLanguageModes: [.v6]
)
