import Profiles
/// The emulated devices a user can name: each protocol's device models with their default
/// behaviour, and the device of every scenario with that scenario's faults
/// (`speaker-wrong-password` is a speaker whose join fails). Replay targets (`emu:NAME`) and
/// `gattlab emulate NAME --listen` take these names.
public struct EmulatedDeviceSpec: Sendable {
    /// The device model's name (`speaker`) or a scenario name.
    public var name: String
    /// Which device model: its protocol's `deviceKind` (`speaker`), or `clone`.
    public var kind: String
    public var summary: String
    /// The largest MTU the device's stack accepts.
    public var serverMTU: UInt16
    var make: @Sendable (UInt16) -> DeviceFactory
    /// The configuration behind `make`; nil for a clone, which has none to change.
    var configuration: (any DeviceConfiguring)? = nil
    /// The quirks planted in this device (`named(_:quirks:protocols:)`), by name, in the order given.
    public private(set) var quirks: [String] = []

    /// A device model with its configuration.
    public init(name: String, kind: String, summary: String, serverMTU: UInt16 = 247, configuration: some DeviceConfiguring) {
        self.init(name: name, kind: kind, summary: summary, serverMTU: serverMTU, make: { configuration.factory(serverMTU: $0) },
                  configuration: configuration)
    }

    init(name: String, kind: String, summary: String, serverMTU: UInt16, make: @escaping @Sendable (UInt16) -> DeviceFactory,
         configuration: (any DeviceConfiguring)? = nil) {
        self.name = name
        self.kind = kind
        self.summary = summary
        self.serverMTU = serverMTU
        self.make = make
        self.configuration = configuration
    }

    /// The device model, built on a scheduler with a seed (the seed of the recording to replay:
    /// scan results, RSSI and ESP session keys follow it).
    public var factory: DeviceFactory { make(serverMTU) }

    /// Every protocol's devices, in registration order.
    public static func devices(_ protocols: ProtocolSet) -> [EmulatedDeviceSpec] {
        protocols.conforming(to: (any EmulatedProtocol.Type).self).flatMap { $0.devices }
    }

    /// The protocols' devices, then the device of each scenario.
    public static func all(_ protocols: ProtocolSet) -> [EmulatedDeviceSpec] {
        devices(protocols) + Scenario.all(protocols).map(EmulatedDeviceSpec.init)
    }

    public static func named(_ name: String, protocols: ProtocolSet) -> EmulatedDeviceSpec? {
        devices(protocols).first { $0.name == name } ?? Scenario.named(name, protocols: protocols).map(EmulatedDeviceSpec.init)
    }

    /// The quirks (planted bugs) a kind of device knows, by name: its protocol's `quirks`.
    public static func knownQuirks(ofKind kind: String, protocols: ProtocolSet) -> [(name: String, summary: String)] {
        protocols.conforming(to: (any EmulatedProtocol.Type).self).first { $0.deviceKind == kind }?.quirks ?? []
    }

    /// The device `name` with `quirks` planted (names from its protocol's `quirks`, scenario
    /// devices included). No quirks gives exactly `named(name)`. Throws, in one line, for an
    /// unknown device, a device kind without quirks, or a quirk the kind does not know (naming
    /// the ones it does).
    public static func named(_ name: String, quirks: [String], protocols: ProtocolSet) throws(EmulatedDeviceError) -> EmulatedDeviceSpec {
        guard var spec = named(name, protocols: protocols) else {
            throw EmulatedDeviceError("no device '\(name)'; known: \(all(protocols).map(\.name).joined(separator: ", "))")
        }
        guard !quirks.isEmpty else { return spec }
        let known = knownQuirks(ofKind: spec.kind, protocols: protocols).map(\.name)
        guard let base = spec.configuration, !known.isEmpty else {
            let withQuirks = protocols.conforming(to: (any EmulatedProtocol.Type).self).filter { !$0.quirks.isEmpty }.map { $0.deviceKind }
            throw EmulatedDeviceError("the \(spec.kind) device '\(name)' has no quirks; quirks are planted in \(Self.list(withQuirks)) devices")
        }
        for q in quirks where !known.contains(q) {
            throw EmulatedDeviceError("no quirk '\(q)' for the \(spec.kind); known: \(known.joined(separator: ", "))")
        }
        spec.set(base.planting(quirks: quirks))
        var seen = Set<String>()
        spec.quirks = quirks.filter { seen.insert($0).inserted }
        spec.summary += " (quirks: \(spec.quirks.joined(separator: ", ")))"
        return spec
    }

    /// `a`, `a and b`, `a, b and c`.
    private static func list(_ words: [String]) -> String {
        guard let last = words.last, words.count > 1 else { return words.first ?? "" }
        return words.dropLast().joined(separator: ", ") + " and " + last
    }

    /// The device a scenario's recording was made against, from a capture's file name
    /// (`speaker-wrong-password-mtu23.btsnoop` -> `speaker-wrong-password`), if it names one.
    public static func forRecording(named fileName: String, protocols: ProtocolSet) -> EmulatedDeviceSpec? {
        var base = Substring(fileName.split(separator: "/").last ?? "")
        if let dot = base.firstIndex(of: ".") { base = base[..<dot] }
        let parts = base.split(separator: "-", omittingEmptySubsequences: false)
        if let last = parts.last, last.hasPrefix("mtu"), last.count > 3, last.dropFirst(3).allSatisfy(\.isNumber) {
            base = base.dropLast(last.count + 1)
        }
        return named(String(base), protocols: protocols)
    }
}

extension EmulatedDeviceSpec {
    /// The same device (its faults and quirks kept) in another Wi-Fi world: what its scans find
    /// and which joins succeed. A replay puts the recording's world here, so that a device shaped
    /// like the recorded one finds the recorded networks. A model without Wi-Fi (the speaker has
    /// no scan): unchanged.
    public func inEnvironment(_ environment: WiFiEnvironment) -> EmulatedDeviceSpec {
        guard let shaped = configuration?.inEnvironment(environment) else { return self }
        var spec = self
        spec.set(shaped)
        spec.summary += " (in the recording's Wi-Fi world)"
        return spec
    }

    /// The same device with its configuration changed, when it is a `C` (a replay shapes the
    /// device like the recorded one); other devices unchanged. `C` is not constrained: the
    /// caller may not see the module that makes it `DeviceConfiguring` (Replay shapes an ESP
    /// device so, until the protocol's own replay code does it).
    public func reconfigured<C>(_ change: (inout C) -> Void) -> EmulatedDeviceSpec {
        guard var c = configuration as? C else { return self }
        change(&c)
        guard let changed = c as? any DeviceConfiguring else { return self }
        var spec = self
        spec.set(changed)
        return spec
    }

    /// Puts a changed configuration in place, with the factory that builds it.
    mutating func set(_ c: any DeviceConfiguring) {
        configuration = c
        make = { c.factory(serverMTU: $0) }
    }

    /// The device of a scenario (an initializer here keeps the memberwise one).
    init(_ s: Scenario) {
        self.init(name: s.name, kind: s.deviceKind, summary: s.summary, serverMTU: s.serverMTU, configuration: s.configuration)
    }
}

/// Why `EmulatedDeviceSpec.named(_:quirks:protocols:)` refused, in one line.
public struct EmulatedDeviceError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension Scenario {
    /// The device model a scenario runs: the first word of its name.
    public var deviceKind: String {
        String(name.prefix { $0 != "-" })
    }
}
