import ArgumentParser
import Capture
import Emulator
import Foundation

/// `gattlab emulate`: run emulated devices against a scripted phone and record what the phone's
/// HCI log would hold.
struct EmulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emulate",
        abstract: "Run emulated devices (speaker, sensor, nRF7, ESP-IDF) against a scripted phone and record the session.",
        discussion: """
            Each scenario connects a scripted central to an emulated device on a virtual link \
            (virtual time: a 30-second timeout takes no time), runs the device's protocol with \
            the scenario's faults, and writes the phone's view as btsnoop (datalink 1002): LE \
            Connection Complete, ACL fragmented at 27 bytes, Number of Completed Packets, \
            Encryption Change when paired, Disconnection Complete. The same seed gives the same \
            bytes.

            Examples:
              gattlab emulate list
              gattlab emulate scenario speaker-ota --record ota.btsnoop
              gattlab emulate scenario sensor-scan --record scan.btsnoop --seed 7 --mtu 23
              gattlab emulate scenario esp-sec1-provision --record esp.btsnoop --verbose
            """,
        subcommands: [ListScenarios.self, RunScenario.self])

    struct ListScenarios: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the scenarios.")

        func run() {
            let width = Scenario.all.map(\.name.count).max() ?? 0
            for s in Scenario.all {
                print(s.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + s.summary)
            }
        }
    }

    struct RunScenario: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "scenario", abstract: "Run one scenario and record it.")

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
            guard Scenario.named(name) != nil else {
                throw ValidationError("no scenario '\(name)'; known: \(Scenario.all.map(\.name).joined(separator: ", "))")
            }
            guard (23...517).contains(mtu) else { throw ValidationError("--mtu must be 23 to 517") }
        }

        func run() throws {
            guard let scenario = Scenario.named(name) else { throw ExitCode(ExitStatus.usage.rawValue) }
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
                printError("gattlab: error: scenario \(name) stopped: \(e)")
                throw ExitCode(ExitStatus.finding.rawValue)
            case nil: throw ExitCode(ExitStatus.finding.rawValue)
            }
            if verbose { for line in result.log { print(line) } }
            if let record {
                do {
                    try result.recording.write(to: record, overwrite: force)
                } catch {
                    printError("gattlab: error: \(error.description)")
                    throw ExitCode(ExitStatus.of(error).rawValue)
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
