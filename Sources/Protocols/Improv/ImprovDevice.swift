import ATT
import Emulator
import Capture
import GATT
import Profiles

/// How an emulated Improv device behaves in one run.
public struct ImprovConfiguration: Sendable, Hashable, DeviceConfiguring {
    /// The networks around it; nil takes `WiFiEnvironment.neighbourhood(seed:)`.
    public var environment: WiFiEnvironment?
    /// The device starts in AUTHORIZATION_REQUIRED; `authorizeAfter` later (the button press)
    /// it is AUTHORIZED. Nil: nobody ever presses the button.
    public var requiresAuthorization = false
    public var authorizeAfter: Int64? = 1_500_000
    /// The device resets (link lost, 0x08) once it reports PROVISIONING: provisioning never finishes.
    public var resetWhileProvisioning = false
    /// Capabilities it reports: identify, device info and Wi-Fi scan.
    public var capabilities: UInt8 = 0x07
    /// How long a join takes.
    public var joinDuration: Int64 = 3_000_000
    /// A recorded device's database to serve instead of the built-in one (`emulate --from`).
    public var recordedTable: RecordedTable?
    public init() {}

    public func factory(serverMTU: UInt16) -> DeviceFactory {
        { scheduler, seed in ImprovDevice(scheduler: scheduler, seed: seed, configuration: self, serverMTU: serverMTU) }
    }

    public func inEnvironment(_ environment: WiFiEnvironment) -> ImprovConfiguration? {
        var c = self
        c.environment = environment
        return c
    }
}

/// An Improv Wi-Fi device as ESPHome's esp32_improv runs it: no encryption, commands joined
/// from several writes until their length is reached, INVALID_RPC_PACKET for a bad checksum or
/// length, UNKNOWN_RPC_COMMAND for a command it lacks, NOT_AUTHORIZED for WIFI_SETTINGS before the
/// button press, UNABLE_TO_CONNECT when the join fails, PROVISIONED and a result with the next URL
/// when it succeeds.
public final class ImprovDevice: DeviceModel {
    public let server: GATTServer
    public var requestedDisconnect: UInt8?
    public var crash: String?
    public let configuration: ImprovConfiguration
    public let environment: WiFiEnvironment
    private let scheduler: VirtualScheduler
    private var random: SeededRandom
    private var held: [UInt8] = []
    private var generation = 0
    public private(set) var state: Int
    /// Every state notified, for tests.
    public private(set) var history: [Int] = []

    let stateHandle: UInt16
    let errorHandle: UInt16
    let commandHandle: UInt16
    let resultHandle: UInt16

    public init(scheduler: VirtualScheduler, seed: UInt64, configuration: ImprovConfiguration = ImprovConfiguration(), serverMTU: UInt16 = 247) {
        self.scheduler = scheduler
        self.configuration = configuration
        environment = configuration.environment ?? .neighbourhood(seed: seed)
        random = SeededRandom(seed: seed &+ 7)
        state = configuration.requiresAuthorization ? 1 : 2
        server = Self.server(configuration.recordedTable, serverMTU: serverMTU)
        stateHandle = server.valueHandle(of: Improv.currentState) ?? 12
        errorHandle = server.valueHandle(of: Improv.errorState) ?? 15
        commandHandle = server.valueHandle(of: Improv.rpcCommand) ?? 18
        resultHandle = server.valueHandle(of: Improv.rpcResult) ?? 20
        server.setValue([UInt8(state)], for: stateHandle)
        server.setValue([0], for: errorHandle)
        if let caps = server.valueHandle(of: Improv.capabilities) { server.setValue([configuration.capabilities], for: caps) }
        server.onWrite(commandHandle) { [weak self] _, w in
            guard let self else { return .unlikelyError }  // the server outlived its model
            self.written(w.value)
            return nil
        }
        history = [state]
    }

    /// The built-in table, or the recorded device's database with its encryption rules.
    static func server(_ recorded: RecordedTable?, serverMTU: UInt16) -> GATTServer {
        RecordedTable.server(recorded, builtIn: ImprovProtocol.builtInAttributeTable?.table, serverMTU: serverMTU,
                             values: [3: Array("Improv-Light".utf8), 5: [0x00, 0x00]])
    }

    public func connected() {
        guard state == 1, let after = configuration.authorizeAfter else { return }
        let g = generation
        scheduler.schedule(after: after) { [weak self] in
            guard let self, self.generation == g, self.state == 1 else { return }
            self.set(state: 2)
        }
    }

    public func disconnected() {
        held = []
        generation += 1
    }

    private func set(state: Int) {
        self.state = state
        history.append(state)
        _ = server.notify(stateHandle, [UInt8(state)])
    }

    private var error = 0

    /// Notifies an error; NO_ERROR only to clear one, as esp32_improv does.
    private func set(error: Int) {
        guard error != 0 || self.error != 0 else { return }
        self.error = error
        _ = server.notify(errorHandle, [UInt8(error)])
    }

    private func result(_ command: Int, _ strings: [String]) {
        guard let bytes = Improv.Result(command: command, strings: strings.map { Array($0.utf8) }).encode() else { return }
        _ = server.notify(resultHandle, bytes)
    }

    /// Joins writes until the frame's length is reached, as esp32_improv does.
    private func written(_ value: [UInt8]) {
        held += value
        guard held.count >= 2 else { return }
        let needed = Int(held[1]) + 3
        if held.count < needed { return }
        let frame = Array(held.prefix(needed))
        held = []
        let (command, _) = Improv.Command.decode(frame)
        guard let command else {
            set(error: 1)  // INVALID_RPC_PACKET
            return
        }
        set(error: 0)
        switch command.command.raw {
        case 0x01:
            guard state != 1 else {
                set(error: 4)  // NOT_AUTHORIZED
                return
            }
            join(ssid: command.ssid ?? [], password: command.password?.unsafeBytes ?? [])
        case 0x02:
            break  // blinks
        case 0x03:
            result(0x03, ["ESPHome", "2024.6.0", "ESP32-C3", "Improv-Light"])
        case 0x04:
            var at: Int64 = 1_200_000 + random.below(300_000)
            let g = generation
            for n in environment.visible(dualBand: false) {
                let rssi = String(n.rssi)
                let auth = Improv.authName(n.auth.rawValue)
                scheduler.schedule(after: at) { [weak self] in
                    guard let self, self.generation == g else { return }
                    self.result(0x04, [n.ssid, rssi, auth])
                }
                at += 30_000 + random.below(30_000)
            }
            scheduler.schedule(after: at) { [weak self] in
                guard let self, self.generation == g else { return }
                self.result(0x04, [])
            }
        default:
            set(error: 2)  // UNKNOWN_RPC_COMMAND
        }
    }

    private func join(ssid: [UInt8], password: [UInt8]) {
        set(state: 3)
        if configuration.resetWhileProvisioning {
            generation += 1
            requestedDisconnect = 0x08
            return
        }
        let g = generation
        let outcome = environment.join(ssid: ssid, passphrase: password, dualBand: false)
        scheduler.schedule(after: configuration.joinDuration + random.below(500_000)) { [weak self] in
            guard let self, self.generation == g else { return }
            switch outcome {
            case .success:
                self.set(state: 4)
                self.result(0x01, ["http://improv-light.local"])
            case .failure:
                self.set(error: 3)  // UNABLE_TO_CONNECT
                self.set(state: 2)
            }
        }
    }
}
