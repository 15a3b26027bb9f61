import ArgumentParser
import Dispatch
import Emulator
import Foundation
import Transport
#if canImport(Glibc)
import Glibc
#endif

extension EmulateCommand {
    /// `gattlab emulate [serve] DEVICE --listen unix:PATH`: one emulated device in its own
    /// process, for replays and tests that connect over a socket.
    struct Serve: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Serve an emulated device on a Unix socket, to one client after another (the default of `emulate`).",
            discussion: """
                The device keeps its state from one client to the next, as a real one does: a \
                speaker told to REBOOT into a new image is PENDING_VERIFY for the next phone. \
                What belongs to a connection (MTU, subscriptions, encryption) starts afresh. Each \
                message on the socket is one ATT PDU; a message 0x00 "encrypt" marks the link \
                encrypted (a Unix socket cannot pair). Device timers run on the wall clock, \
                --speed times as fast.

                Prints "listening on unix:PATH: ..." on stderr, then one line per client served \
                (unless --quiet). Stops on SIGINT or SIGTERM, or after --connections clients, \
                and removes the socket file.

                --quirk plants a bug of a class real firmware has had (see `gattlab emulate \
                list`), for proving that a fuzzer finds it. A planted crash resets the device \
                and drops the link (reason 0x08), and is logged as "firmware crash: WHY"; with \
                --exit-on-crash the emulator then exits with status 70, as a crashed target \
                process would.

                Examples:
                  gattlab emulate speaker --listen unix:/tmp/speaker.sock
                  gattlab emulate serve nrf7 --listen unix:/tmp/nrf7.sock --seed 7
                  gattlab emulate sensor-scan --listen unix:/tmp/s.sock --connections 1 --quiet
                  gattlab emulate speaker --quirk ssid-overflow --exit-on-crash --listen unix:/tmp/f.sock
                """)

        @Argument(help: ArgumentHelp("The device: speaker, sensor, nrf7, esp, or a scenario name for its device with that scenario's faults (see `gattlab emulate list`).",
                                     valueName: "device"))
        var device: String

        @Option(name: .long, help: ArgumentHelp("Where to listen: unix:PATH (a path of at most 107 bytes; a stale socket file is replaced, any other file is not).",
                                                valueName: "unix:path"))
        var listen: String

        @Option(name: .long, help: "Seed of the device (scan results, RSSI, ESP session keys, timing jitter); use a recording's seed to replay it.")
        var seed: UInt64 = 1

        @Option(name: .long, help: "How fast device time runs: 1 is real time, 1000 makes a 30 s device timer fire after 30 ms.")
        var speed: Double = 1

        @Option(name: .long, help: ArgumentHelp("Stop after serving this many clients (default: until SIGINT or SIGTERM).", valueName: "n"))
        var connections: Int?

        @Flag(name: .customLong("fresh-device"), help: "Give each client a device just started, instead of one device whose state carries over (soak tests of one session).")
        var freshDevice = false

        @Flag(name: .long, help: "Print nothing per client.")
        var quiet = false

        @Option(name: .long, help: ArgumentHelp("Plant a firmware bug (repeatable): speaker ssid-overflow, short-status-write, unbounded-prepare-queue; sensor split-line-loss.",
                                                valueName: "name"))
        var quirk: [String] = []

        @Flag(name: .customLong("exit-on-crash"), help: "Exit with status 70 when the device's firmware crashes (a fuzzer's target process dying), instead of resetting it and serving on.")
        var exitOnCrash = false

        /// The socket path of `--listen unix:PATH`.
        var path: String { String(listen.dropFirst("unix:".count)) }

        func validate() throws {
            do {
                _ = try EmulatedDeviceSpec.named(device, quirks: quirk)
            } catch {
                throw ValidationError(error.description)
            }
            guard listen.hasPrefix("unix:"), !path.isEmpty else {
                throw ValidationError("--listen takes unix:PATH (a Unix socket to create), not '\(listen)'")
            }
            guard speed.isFinite, speed > 0, speed <= 1_000_000 else {
                throw ValidationError("--speed must be above 0 and at most 1000000")
            }
            if let connections, connections < 1 { throw ValidationError("--connections must be at least 1") }
        }

        func run() throws {
            guard let spec = try? EmulatedDeviceSpec.named(device, quirks: quirk) else { throw ExitCode(ExitStatus.usage.rawValue) }
            let stop = StopSignal()
            // Signals become a stop request that the serving loop sees within 50 ms; it then
            // closes the client and removes the socket file. Set up before the socket exists, so
            // a client that can connect can also stop it cleanly.
            var sources: [any DispatchSourceSignal] = []
            for sig in [SIGINT, SIGTERM] {
                signal(sig, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                source.setEventHandler { stop.stop() }
                source.resume()
                sources.append(source)
            }
            let emulator: SocketEmulator
            do {
                emulator = try SocketEmulator(device: spec, seed: seed, path: path, speed: speed, freshDevicePerClient: freshDevice,
                                              exitOnCrash: exitOnCrash)
            } catch {
                printError("gattlab: error: \(error)")
                throw ExitCode(ExitStatus.cannotCreate.rawValue)
            }
            let speedText = speed == speed.rounded() && speed < 1e15 ? String(Int64(speed)) : String(speed)
            let quirkText = spec.quirks.isEmpty ? "" : ", quirks \(spec.quirks.joined(separator: ","))"
            printError("listening on unix:\(path): \(spec.name) (seed \(seed), speed \(speedText)x\(quirkText))")
            let done = DispatchSemaphore(value: 0)
            let connections = connections
            var log: (@Sendable (String) -> Void)?
            if !quiet { log = { @Sendable line in printError(line) } }
            final class Outcome: @unchecked Sendable { var crash: String? }  // written before done.signal()
            let outcome = Outcome()
            let exitOnCrash = exitOnCrash
            Task {
                await emulator.serve(connections: connections, stop: stop, log: log)
                if exitOnCrash { outcome.crash = await emulator.crashes.first }
                done.signal()
            }
            done.wait()
            for source in sources { source.cancel() }
            if let crash = outcome.crash {
                printError("gattlab: firmware crash: \(crash); exiting (--exit-on-crash)")
                throw ExitCode(ExitStatus.software.rawValue)
            }
        }
    }
}
