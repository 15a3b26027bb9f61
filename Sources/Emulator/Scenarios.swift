import ATT
import Profiles
import Transport

/// What a scenario run produced.
public struct ScenarioResult: Sendable {
    public var name: String
    public var seed: UInt64
    public var recording: Recording
    /// One line per step the central took, for the CLI and for test failure messages.
    public var log: [String]
}

/// A named, seeded run of a scripted central against an emulated device, recorded as the phone's
/// HCI log. Same seed and MTU, same bytes.
public struct Scenario: Sendable {
    public var name: String
    public var summary: String
    /// The device the phone talks to, with the scenario's faults.
    var configuration: any DeviceConfiguring
    var script: @Sendable (ScriptedCentral, UInt16, ScenarioLog) async throws(CentralError) -> Void
    /// The largest MTU the device's stack accepts (23: a stack without MTU exchange support).
    public var serverMTU: UInt16

    /// `script` is the phone: it gets the central, the MTU it asks for and the step log.
    public init(name: String, summary: String, configuration: some DeviceConfiguring, serverMTU: UInt16 = 247,
                script: @escaping @Sendable (ScriptedCentral, UInt16, ScenarioLog) async throws(CentralError) -> Void) {
        self.name = name
        self.summary = summary
        self.configuration = configuration
        self.serverMTU = serverMTU
        self.script = script
    }

    /// Runs the scenario. `mtu` is what the phone asks for in Exchange MTU (23 or 247 typically).
    public func run(seed: UInt64 = 1, mtu: UInt16 = 247, timing: LinkTiming = LinkTiming()) async throws(CentralError) -> ScenarioResult {
        let link = EmulatedLink(seed: seed, timing: timing, device: configuration.factory(serverMTU: serverMTU))
        let log = ScenarioLog()
        try await runScript(over: link, mtu: mtu, log: log)
        return ScenarioResult(name: name, seed: seed, recording: await link.recording(), log: log.lines)
    }

    /// Runs the scenario's phone over any link, such as a `UnixSocketLink` to the scenario's
    /// device served in another process (`EmulatedDeviceSpec.named(_:protocols:)`). Returns the step log,
    /// which is the same as `run(seed:mtu:)`'s for the same seed and MTU.
    public func run(over link: any TimedATTBearer & LinkControl, mtu: UInt16) async throws(CentralError) -> [String] {
        let log = ScenarioLog()
        try await runScript(over: link, mtu: mtu, log: log)
        return log.lines
    }

    private func runScript(over link: any TimedATTBearer & LinkControl, mtu: UInt16, log: ScenarioLog) async throws(CentralError) {
        let central = ScriptedCentral(bearer: link)
        do {
            try await script(central, mtu, log)
        } catch {
            log.add("stopped: \(error)")
            throw error
        }
        if await link.isConnected() { await link.close() }
    }

    /// Every protocol's own scenarios, then their audit scenarios; protocols in registration order.
    public static func all(_ protocols: ProtocolSet) -> [Scenario] {
        let emulated = protocols.conforming(to: (any EmulatedProtocol.Type).self)
        return emulated.flatMap { $0.scenarios } + emulated.flatMap { $0.auditScenarios }
    }

    public static func named(_ name: String, protocols: ProtocolSet) -> Scenario? {
        all(protocols).first { $0.name == name }
    }

    /// The same scenario on a device whose stack accepts at most `mtu`.
    public func serving(mtu: UInt16) -> Scenario {
        var s = self
        s.serverMTU = mtu
        return s
    }

    /// A device model's defaults with one change (`with { $0.missingEnd = true }`).
    public static func with<C: DeviceConfiguring>(_ change: (inout C) -> Void) -> C {
        var v = C()
        change(&v)
        return v
    }
}

/// A step log shared by a script and its runner.
public final class ScenarioLog: @unchecked Sendable {
    // Used by one task at a time (the script, then the runner), never concurrently.
    public private(set) var lines: [String] = []
    public init() {}
    public func add(_ line: String) { lines.append(line) }
}

extension Scenario {
    /// Connects, exchanges MTU, discovers and subscribes to `uuid` (the start of most sessions).
    public static func open(_ central: ScriptedCentral, mtu: UInt16, log: ScenarioLog, subscribeTo uuid: BluetoothUUID) async throws(CentralError) {
        await central.connect()
        let agreed = try await central.exchangeMTU(mtu)
        let table = try await central.discover()
        log.add("connected, MTU \(agreed), \(table.characteristics.count) characteristics")
        try await central.subscribe(uuid)
    }
}
