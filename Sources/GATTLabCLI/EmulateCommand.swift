import ArgumentParser
import Capture
import Emulator
import Foundation
import Protocols

/// `gattlab emulate`: run emulated devices against a scripted phone and record what the phone's
/// HCI log would hold.
struct EmulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emulate",
        abstract: "Run emulated devices (\(EmulatedDevices.kinds)): serve one on a Unix socket, or run a scenario and record it.",
        discussion: """
            `gattlab emulate DEVICE --listen unix:PATH` (the `serve` subcommand) serves an \
            emulated device to clients one after another over a Unix SEQPACKET socket, one ATT \
            PDU per message as on a kernel L2CAP ATT socket: a replay or a test connects there \
            instead of to a device in the air.

            `gattlab emulate scenario NAME` connects a scripted central to an emulated device on \
            a virtual link (virtual time: a 30-second timeout takes no time), runs the device's \
            protocol with the scenario's faults, and writes the phone's view as btsnoop (datalink \
            1002): LE Connection Complete, ACL fragmented at 27 bytes, Number of Completed \
            Packets, Encryption Change when paired, Disconnection Complete. The same seed gives \
            the same bytes.

            Examples:
              gattlab emulate list
              gattlab emulate speaker --listen unix:/tmp/speaker.sock
              gattlab emulate speaker-rollback --listen unix:/tmp/s.sock --speed 100
              gattlab emulate scenario speaker-ota --record ota.btsnoop
              gattlab emulate scenario sensor-scan --record scan.btsnoop --seed 7 --mtu 23
              gattlab emulate scenario esp-sec1-provision --record esp.btsnoop --verbose
            """,
        subcommands: [Serve.self, ListScenarios.self, RunScenario.self],
        defaultSubcommand: Serve.self)

    struct ListScenarios: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the devices and the scenarios.", discussion: ExitStatus.help([.success]))

        func run() {
            let protocols = GATTLabProtocols.all
            let devices = EmulatedDeviceSpec.devices(protocols), scenarios = Scenario.all(protocols)
            let width = (devices.map(\.name) + scenarios.map(\.name)).map(\.count).max() ?? 0
            func line(_ name: String, _ summary: String) -> String {
                "  " + name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + summary
            }
            print("Devices (gattlab emulate DEVICE --listen unix:PATH):")
            for d in devices { print(line(d.name, d.summary)) }
            // Quirks before the scenarios: scripts read the scenarios as everything after their heading.
            print("")
            print("Quirks (gattlab emulate DEVICE --quirk NAME, repeatable; planted bugs for fuzzers to find):")
            for p in protocols.conforming(to: (any EmulatedProtocol.Type).self) {
                for q in p.quirks { print(line("\(p.deviceKind) \(q.name)", q.summary)) }
            }
            print("")
            print("Scenarios (gattlab emulate scenario NAME; each is also a DEVICE, with the scenario's faults):")
            for s in scenarios { print(line(s.name, s.summary)) }
        }
    }

    struct RunScenario: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "scenario", abstract: "Run one scenario and record it.", discussion: ExitStatus.help([.success, .usage, .cannotCreate]))

        @Argument(help: ArgumentHelp("The scenario (see `gattlab emulate list`).", valueName: "name"))
        var name: String

        @Option(name: .long, help: ArgumentHelp("Write the session as btsnoop to this file.", valueName: "file"))
        var record: String?

        @Flag(name: .long, help: "Replace the --record file if it exists.")
        var force = false

        @Option(name: .long, help: "Seed for timing jitter, addresses and scan results; the same seed gives the same bytes.")
        var seed: UInt64 = 1

        @Option(name: .long, help: "The MTU the phone asks for in Exchange MTU (23 to 517).")
        var mtu: UInt16 = 247

        @Flag(name: .long, help: "Print the steps the phone took.")
        var verbose = false

        func validate() throws {
            guard Scenario.named(name, protocols: GATTLabProtocols.all) != nil else {
                throw ValidationError("no scenario '\(name)'; known: \(Scenario.all(GATTLabProtocols.all).map(\.name).joined(separator: ", "))")
            }
            guard (23...517).contains(mtu) else { throw ValidationError("--mtu must be 23 to 517") }
        }

        func run() throws {
            guard let scenario = Scenario.named(name, protocols: GATTLabProtocols.all) else { throw ExitCode(ExitStatus.usage.rawValue) }
            let box = ResultBox()
            let semaphore = DispatchSemaphore(value: 0)
            let (seed, mtu) = (seed, mtu)
            Task {
                do throws(CentralError) {
                    box.set(.success(try await scenario.run(seed: seed, mtu: mtu)))
                } catch {
                    box.set(.failure(error))
                }
                semaphore.signal()
            }
            semaphore.wait()
            let result: ScenarioResult
            switch box.get() {
            case .success(let r): result = r
            case .failure(let e):
                // Scenarios are written to run to their end, faults included: stopping is a bug.
                throw Failure(.software, "scenario \(name) stopped: \(e)", hint: "this is a bug in gattlab; please report it with the command line")
            case nil:
                throw Failure(.software, "scenario \(name) ended without a result", hint: "this is a bug in gattlab; please report it with the command line")
            }
            if verbose { for line in result.log { print(line) } }
            if let record {
                do {
                    try result.recording.write(to: record, overwrite: force)
                } catch {
                    throw Failure(error)
                }
                print("\(name): \(result.recording.packets.count) HCI packets written to \(record) (seed \(seed), MTU \(mtu))")
            } else {
                print("\(name): \(result.recording.packets.count) HCI packets (seed \(seed), MTU \(mtu)); --record FILE writes them")
            }
        }
    }
}

/// Carries a scenario's result from its task to the command's thread.
private final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Result<ScenarioResult, CentralError>?
    func set(_ v: Result<ScenarioResult, CentralError>) { lock.withLock { value = v } }
    func get() -> Result<ScenarioResult, CentralError>? { lock.withLock { value } }
}

/// The emulated device models, for help and errors: each registered protocol's plain model.
enum EmulatedDevices {
    static let kinds = GATTLabProtocols.all.conforming(to: (any EmulatedProtocol.Type).self).map { $0.deviceKind }.joined(separator: ", ")
}
