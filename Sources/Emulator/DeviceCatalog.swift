import Profiles
/// The emulated devices a user can name: the four device models with their default behaviour,
/// and the device of every scenario with that scenario's faults (`speaker-wrong-password` is a
/// speaker whose join fails). Replay targets (`emu:NAME`) and `gattlab emulate NAME --listen`
/// take these names.
public struct EmulatedDeviceSpec: Sendable {
    /// `speaker`, `sensor`, `nrf7`, `esp`, or a scenario name.
    public var name: String
    /// Which device model: `speaker`, `sensor`, `nrf7` or `esp`.
    public var kind: String
    public var summary: String
    /// The largest MTU the device's stack accepts.
    public var serverMTU: UInt16
    var make: @Sendable (UInt16) -> DeviceFactory
    /// The configuration behind `make`, for the devices quirks can be planted in.
    var configuration: DeviceConfiguration? = nil
    /// The quirks planted in this device (`named(_:quirks:)`), by name, in the order given.
    public private(set) var quirks: [String] = []

    /// The device model, built on a scheduler with a seed (the seed of the recording to replay:
    /// scan results, RSSI and ESP session keys follow it).
    public var factory: DeviceFactory { make(serverMTU) }

    public static let devices: [EmulatedDeviceSpec] = [
        EmulatedDeviceSpec(name: "speaker", kind: "speaker", summary: "the ChaoticVolt speaker's OTA service, no faults",
                           serverMTU: 247, make: { SpeakerDevice.factory(SpeakerConfiguration(), serverMTU: $0) },
                           configuration: .speaker(SpeakerConfiguration())),
        EmulatedDeviceSpec(name: "speaker-hangs-downloading", kind: "speaker",
                           summary: "a speaker whose firmware hangs as the download starts: the link stays up, nothing answers",
                           serverMTU: 247, make: { mtu in
                               SpeakerDevice.factory(hangsDownloading, serverMTU: mtu)
                           }, configuration: .speaker(hangsDownloading)),
        EmulatedDeviceSpec(name: "sensor", kind: "sensor", summary: "the sensor's Wi-Fi scan service, no faults",
                           serverMTU: 247, make: { SensorDevice.factory(SensorConfiguration(), serverMTU: $0) },
                           configuration: .sensor(SensorConfiguration())),
        EmulatedDeviceSpec(name: "nrf7", kind: "nrf7", summary: "an nRF7002 with Nordic's Wi-Fi provisioning service (Zephyr)",
                           serverMTU: 247, make: { NRF7Device.factory(NRF7Configuration(), serverMTU: $0) },
                           configuration: .nrf7(NRF7Configuration())),
        EmulatedDeviceSpec(name: "esp", kind: "esp", summary: "an ESP32 with ESP-IDF provisioning, security 1, PoP abcd1234",
                           serverMTU: 247, make: { ESPDevice.factory(ESPConfiguration(), serverMTU: $0) },
                           configuration: .esp(ESPConfiguration())),
    ]

    private static var hangsDownloading: SpeakerConfiguration {
        var c = SpeakerConfiguration()
        c.hangAt = .downloading
        return c
    }

    /// The four devices, then the device of each scenario.
    public static var all: [EmulatedDeviceSpec] {
        devices + Scenario.all.map(EmulatedDeviceSpec.init)
    }

    public static func named(_ name: String) -> EmulatedDeviceSpec? {
        devices.first { $0.name == name } ?? Scenario.named(name).map(EmulatedDeviceSpec.init)
    }

    /// The quirks (planted bugs) a kind of device knows, by name: `SpeakerQuirk` for speakers,
    /// `SensorQuirk` for sensors, none for the others.
    public static func knownQuirks(ofKind kind: String) -> [(name: String, summary: String)] {
        switch kind {
        case "speaker": SpeakerQuirk.allCases.map { ($0.rawValue, $0.summary) }
        case "sensor": SensorQuirk.allCases.map { ($0.rawValue, $0.summary) }
        default: []
        }
    }

    /// The device `name` with `quirks` planted (names of `SpeakerQuirk` or `SensorQuirk` cases,
    /// for speaker and sensor devices, scenario devices of those kinds included). No quirks gives
    /// exactly `named(name)`. Throws, in one line, for an unknown device, a device kind without
    /// quirks, or a quirk the kind does not know (naming the ones it does).
    public static func named(_ name: String, quirks: [String]) throws(EmulatedDeviceError) -> EmulatedDeviceSpec {
        guard var spec = named(name) else {
            throw EmulatedDeviceError("no device '\(name)'; known: \(all.map(\.name).joined(separator: ", "))")
        }
        guard !quirks.isEmpty else { return spec }
        let known = knownQuirks(ofKind: spec.kind).map(\.name)
        guard let base = spec.configuration, !known.isEmpty else {
            throw EmulatedDeviceError("the \(spec.kind) device '\(name)' has no quirks; quirks are planted in speaker and sensor devices")
        }
        for q in quirks where !known.contains(q) {
            throw EmulatedDeviceError("no quirk '\(q)' for the \(spec.kind); known: \(known.joined(separator: ", "))")
        }
        let configuration: DeviceConfiguration
        switch base {
        case .speaker(var c):
            c.quirks.formUnion(quirks.compactMap(SpeakerQuirk.init(rawValue:)))
            let planted = c
            configuration = .speaker(planted)
            spec.make = { SpeakerDevice.factory(planted, serverMTU: $0) }
        case .sensor(var c):
            c.quirks.formUnion(quirks.compactMap(SensorQuirk.init(rawValue:)))
            let planted = c
            configuration = .sensor(planted)
            spec.make = { SensorDevice.factory(planted, serverMTU: $0) }
        case .nrf7, .esp:
            throw EmulatedDeviceError("the \(spec.kind) device '\(name)' has no quirks; quirks are planted in speaker and sensor devices")
        }
        spec.configuration = configuration
        var seen = Set<String>()
        spec.quirks = quirks.filter { seen.insert($0).inserted }
        spec.summary += " (quirks: \(spec.quirks.joined(separator: ", ")))"
        return spec
    }

    /// The device a scenario's recording was made against, from a capture's file name
    /// (`speaker-wrong-password-mtu23.btsnoop` -> `speaker-wrong-password`), if it names one.
    public static func forRecording(named fileName: String) -> EmulatedDeviceSpec? {
        var base = Substring(fileName.split(separator: "/").last ?? "")
        if let dot = base.firstIndex(of: ".") { base = base[..<dot] }
        let parts = base.split(separator: "-", omittingEmptySubsequences: false)
        if let last = parts.last, last.hasPrefix("mtu"), last.count > 3, last.dropFirst(3).allSatisfy(\.isNumber) {
            base = base.dropLast(last.count + 1)
        }
        return named(String(base))
    }
}

extension EmulatedDeviceSpec {
    /// The same device (its faults and quirks kept) in another Wi-Fi world: what its scans find
    /// and which joins succeed. A replay puts the recording's world here, so that a device shaped
    /// like the recorded one finds the recorded networks. A speaker has no scan: unchanged.
    public func inEnvironment(_ environment: WiFiEnvironment) -> EmulatedDeviceSpec {
        var spec = self
        switch configuration {
        case .sensor(var c)?:
            c.networks = environment.networks.map { SensorScan.Network(ssid: Array($0.ssid.utf8), rssi: Int($0.rssi)) }
            let shaped = c
            spec.configuration = .sensor(shaped)
            spec.make = { SensorDevice.factory(shaped, serverMTU: $0) }
        case .nrf7(var c)?:
            c.environment = environment
            let shaped = c
            spec.configuration = .nrf7(shaped)
            spec.make = { NRF7Device.factory(shaped, serverMTU: $0) }
        case .esp(var c)?:
            c.environment = environment
            let shaped = c
            spec.configuration = .esp(shaped)
            spec.make = { ESPDevice.factory(shaped, serverMTU: $0) }
        case .speaker?, nil:
            return self
        }
        spec.summary += " (in the recording's Wi-Fi world)"
        return spec
    }

    /// The device of a scenario (an initializer here keeps the memberwise one).
    init(_ s: Scenario) {
        self.init(name: s.name, kind: s.deviceKind, summary: s.summary, serverMTU: s.serverMTU, make: s.device,
                  configuration: s.configuration)
    }
}

/// Why `EmulatedDeviceSpec.named(_:quirks:)` refused, in one line.
public struct EmulatedDeviceError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The configuration behind a device: quirks are planted in it (speaker, sensor) and a
/// recording's Wi-Fi world is put in it (`inEnvironment`).
enum DeviceConfiguration: Sendable {
    case speaker(SpeakerConfiguration)
    case sensor(SensorConfiguration)
    case nrf7(NRF7Configuration)
    case esp(ESPConfiguration)
}

extension Scenario {
    /// The device model a scenario runs: the first word of its name.
    public var deviceKind: String {
        String(name.prefix { $0 != "-" })
    }
}
