import ArgumentParser
import Dispatch
import Emulator
import Replay
import Foundation
import Protocols
import Transport
#if canImport(Glibc)
import Glibc
#endif

extension EmulateCommand {
    /// `gattlab emulate [serve] DEVICE --listen unix:PATH | --hci hciN`: one emulated device in its
    /// own process, for replays and tests that connect over a socket, or as a real peripheral on
    /// a controller.
    struct Serve: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Serve an emulated device on a Unix socket or a Bluetooth controller, to one client after another (the default of `emulate`).",
            discussion: """
                The device keeps its state from one client to the next, as a real one does: a \
                speaker told to REBOOT into a new image is PENDING_VERIFY for the next phone. \
                What belongs to a connection (MTU, subscriptions, encryption) starts afresh. Each \
                message on the socket is one ATT PDU; a message 0x00 "encrypt" marks the link \
                encrypted (a Unix socket cannot pair). Device timers run on the wall clock, \
                --speed times as fast.

                With --hci hciN the device is a real LE peripheral on that controller: gattlab \
                runs `btmgmt -i hciN` (from BlueZ, as subprocesses) to set the controller's name \
                to the device's, then le on, io-cap 3 (no input, no output: Just Works pairing), \
                connectable on, advertising on and power on, and \
                accepts centrals on the kernel's L2CAP ATT channel (CID 4) of the controller's \
                public address. Needs root (or CAP_NET_ADMIN) and a kernel with Bluetooth. A \
                link the kernel encrypted (a central that paired) counts as encrypted for the \
                device. Device timers then run at real time (--speed 1) unless asked otherwise.

                Prints "listening on unix:PATH: ..." (or "listening on hciN (ADDRESS): ...") on \
                stderr, then one line per client served (unless --quiet). Stops on SIGINT or \
                SIGTERM, or after --connections clients, \
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
                  gattlab emulate speaker-ota --hci hci1
                  gattlab emulate --from field.btsnoop --listen unix:/tmp/recorded.sock
                  gattlab emulate speaker-download-stall --from field.btsnoop --hci hci1
                """ + "\n\n" + ExitStatus.help([.success, .usage, .unavailable, .software, .cannotCreate]))

        @Argument(help: ArgumentHelp("The device: \(EmulatedDevices.kinds), or a scenario name for its device with that scenario's faults (see `gattlab emulate list`). With --from and no device: the recorded one.",
                                     valueName: "device"))
        var device: String?

        @Option(name: .customLong("from"), help: ArgumentHelp("Build the device from a capture: its GATT table as discovered, the values it returned to reads, the MTU it accepted, its cadence and the Wi-Fi networks it saw; the protocol's state machine bound to that table, or, for a protocol gattlab does not model, a clone that answers as recorded. With a device name, that device (faults included) shaped like the recorded one.",
                                                        valueName: "capture"))
        var from: String?

        @Option(name: .customLong("device-address"), help: ArgumentHelp("With --from: the recorded device, by address, when the capture has several (default: the first with ATT traffic).",
                                                                        valueName: "addr"))
        var recordedAddress: String?

        @Option(name: .long, help: ArgumentHelp("Where to listen: unix:PATH (a path of at most 107 bytes; a stale socket file is replaced, any other file is not).",
                                                valueName: "unix:path"))
        var listen: String?

        @Option(name: .long, help: ArgumentHelp("Serve as a real LE peripheral on this controller (hciN): powered on, connectable and advertising with the device's name (set up with btmgmt).",
                                                valueName: "hciN"))
        var hci: String?

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
        var path: String { String((listen ?? "").dropFirst("unix:".count)) }

        /// N of `--hci hciN` (or of a bare N).
        var controllerIndex: UInt16? {
            guard let hci else { return nil }
            let digits = hci.hasPrefix("hci") ? String(hci.dropFirst(3)) : hci
            guard !digits.isEmpty, digits.utf8.count <= 5, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return UInt16(digits)
        }

        func validate() throws {
            if let device {
                do {
                    _ = try EmulatedDeviceSpec.named(device, quirks: quirk, protocols: GATTLabProtocols.all)
                } catch {
                    throw ValidationError(error.description)
                }
            } else if from == nil {
                throw ValidationError("give the device to emulate (\(EmulatedDevices.kinds) or a scenario), or --from CAPTURE")
            } else if !quirk.isEmpty {
                throw ValidationError("--quirk plants a bug in a named device; give its name with --from")
            }
            if recordedAddress != nil, from == nil { throw ValidationError("--device-address picks the device of a --from capture") }
            switch (listen, hci) {
            case (nil, nil): throw ValidationError("give --listen unix:PATH (a Unix socket) or --hci hciN (a Bluetooth controller)")
            case (.some, .some): throw ValidationError("give --listen or --hci, not both")
            case (.some(let listen), nil):
                guard listen.hasPrefix("unix:"), !path.isEmpty else {
                    throw ValidationError("--listen takes unix:PATH (a Unix socket to create), not '\(listen)'")
                }
            case (nil, .some(let hci)):
                guard controllerIndex != nil else { throw ValidationError("--hci takes a controller like hci0, not '\(hci)'") }
            }
            guard speed.isFinite, speed > 0, speed <= 1_000_000 else {
                throw ValidationError("--speed must be above 0 and at most 1000000")
            }
            if let connections, connections < 1 { throw ValidationError("--connections must be at least 1") }
        }

        /// The named device, the recorded one (--from), or the named one shaped like the recorded one.
        func deviceSpec() throws -> EmulatedDeviceSpec {
            let named = try device.map { name in
                do { return try EmulatedDeviceSpec.named(name, quirks: quirk, protocols: GATTLabProtocols.all) } catch { throw ExitCode(ExitStatus.usage.rawValue) }
            }
            guard let from else {
                guard let named else { throw ExitCode(ExitStatus.usage.rawValue) }
                return named
            }
            // The device keeps the recorded credentials in memory to answer joins as it did.
            let recorded = try ReplayCommand.recordedDevice(from, ExtractOptions(protocols: GATTLabProtocols.all, peer: recordedAddress, revealSecrets: true))
            let values = (try? ReplayRunner(script: recorded.script, options: ReplayOptions(protocols: GATTLabProtocols.all)).values()) ?? [:]
            if let named { return recorded.shape(named, values: values) }
            guard let spec = recorded.emulated(values: values, protocols: GATTLabProtocols.all) else {
                throw Failure(.badInput, "the capture has no discovery of the device to build it from", file: from,
                              hint: "use a capture in which the phone discovered the device's services, or name a device to emulate")
            }
            return spec
        }

        func run() throws {
            let spec = try deviceSpec()
            let stop = StopSignal()
            // Signals become a stop request that the serving loop sees within 50 ms; it then
            // closes the client and removes the socket file. Set up before the socket exists, so
            // a client that can connect can also stop it cleanly: with sigaction, in place when
            // it returns (a dispatch signal source registers later, on its own queue, and a
            // SIGTERM in between was lost: a test's emulator ignored it under load).
            let flag = StopSignals.install()
            let served = StopSignal()
            DispatchQueue.global().async {
                while !served.isStopped {
                    if flag.requested() { return stop.stop() }
                    usleep(20_000)
                }
            }
            defer { served.stop() }
            let emulator: SocketEmulator
            if let index = controllerIndex {
                let listener: BlueZListener
                do {
                    listener = try Self.peripheral(on: index, name: spec.name)
                } catch {
                    throw Failure(.unavailable, "\(error)", hint: "emulate --hci needs a Bluetooth controller (btvirt or a real one) and root")
                }
                emulator = SocketEmulator(device: spec, seed: seed, listener: listener, speed: speed, freshDevicePerClient: freshDevice,
                                          exitOnCrash: exitOnCrash)
            } else {
                do {
                    // This process serves one client at a time and does nothing else: the socket's
                    // calls may block the serving thread, with no dispatch hop per PDU.
                    emulator = SocketEmulator(device: spec, seed: seed, listener: try DirectUnixListener(path: path), speed: speed,
                                              freshDevicePerClient: freshDevice, exitOnCrash: exitOnCrash)
                } catch {
                    throw Failure(.cannotCreate, "\(error)", hint: "choose a socket path in a folder you can write to")
                }
            }
            let speedText = speed == speed.rounded() && speed < 1e15 ? String(Int64(speed)) : String(speed)
            let quirkText = spec.quirks.isEmpty ? "" : ", quirks \(spec.quirks.joined(separator: ","))"
            printError("listening on \(emulator.endpoint): \(spec.name) (seed \(seed), speed \(speedText)x\(quirkText))")
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
            if let crash = outcome.crash {
                throw Failure(.software, "the emulated firmware crashed: \(crash); exiting (--exit-on-crash)",
                              hint: "without --exit-on-crash the device resets and goes on serving, as firmware with a watchdog does")
            }
        }
    }
}

extension EmulateCommand.Serve {
    /// Makes hci`index` a connectable, advertising LE peripheral named `name` and listens on its
    /// ATT channel. Checks the kernel and the controller first, so a machine without Bluetooth
    /// gets one line that says so rather than btmgmt's own messages.
    static func peripheral(on index: UInt16, name: String) throws(BearerError) -> BlueZListener {
        try BlueZController.check(index)
        guard let btmgmt = ["/usr/bin/btmgmt", "/usr/sbin/btmgmt", "/bin/btmgmt"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw .failed("btmgmt not found; install BlueZ (apt-get install bluez) to use --hci")
        }
        // io-cap 3, NoInputNoOutput: the emulated devices have no display or keys, so a central that
        // pairs gets Just Works, which the kernel completes without an agent to ask.
        for command in [["name", name], ["le", "on"], ["io-cap", "3"], ["connectable", "on"], ["advertising", "on"], ["power", "on"]] {
            try runBtmgmt(btmgmt, index: index, command)
        }
        // The kernel reports the controller up a moment after btmgmt's answer.
        var waited = 0
        while !BlueZController.isUp(index), waited < 50 {
            usleep(100_000)
            waited += 1
        }
        return try BlueZListener(controller: index)
    }

    /// `btmgmt -i hciN ARGS...`, given 10 s; its output is kept only to explain a failure.
    /// posix_spawn rather than Foundation's Process: Process sets up a CFSocket wake-up pair that
    /// failed (and then hung) in the test VM.
    static func runBtmgmt(_ btmgmt: String, index: UInt16, _ arguments: [String]) throws(BearerError) {
        let what = "btmgmt -i hci\(index) \(arguments.joined(separator: " "))"
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw .failed("cannot run \(what): \(String(cString: strerror(errno)))") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        posix_spawn_file_actions_addclose(&actions, fds[1])
        let argv: [UnsafeMutablePointer<CChar>?] = ([btmgmt, "-i", "hci\(index)"] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, btmgmt, &actions, nil, argv, environ)
        Glibc.close(fds[1])
        defer { Glibc.close(fds[0]) }
        guard spawned == 0 else { throw .failed("cannot run \(what): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(10)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() >= deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                throw .failed("\(what) did not finish within 10 s")
            }
            usleep(20_000)
        }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
            if n <= 0 { break }
            output += buffer.prefix(n)
        }
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited, code == 0 else {
            let text = String(decoding: output, as: UTF8.self)
            let last = text.split(whereSeparator: \.isNewline).last.map(String.init)
                ?? (exited ? "exit status \(code)" : "killed by signal \(status & 0x7f)")
            throw .failed("\(what) failed: \(last)")
        }
    }
}
