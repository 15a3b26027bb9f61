import Foundation
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// Virtual time driven by the wall clock: it starts at the wall time of its creation and runs
/// `speed` times as fast (1 = real time; 1000 = a 30 s device timer fires after 30 ms). Elapsed
/// time comes from the monotonic clock, so a wall-clock step does not make devices jump.
struct ScaledClock: Sendable {
    let speed: Double
    private let wallStart: Int64
    private let monotonicStart: Int64

    /// A speed that is not a positive finite number runs at real time.
    init(speed: Double) {
        self.speed = speed.isFinite && speed > 0 ? speed : 1
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        wallStart = Int64(wall.tv_sec) * 1_000_000 + Int64(wall.tv_nsec) / 1000
        monotonicStart = Self.monotonic()
    }

    static func monotonic() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1_000_000 + Int64(t.tv_nsec) / 1000
    }

    /// Virtual microseconds since the Unix epoch.
    func now() -> Int64 {
        wallStart &+ Self.clamped(Double(Self.monotonic() - monotonicStart) * speed)
    }

    /// Real microseconds for `virtual` microseconds of virtual time, rounded up (never shorter).
    func real(_ virtual: Int64) -> Int64 {
        guard virtual > 0 else { return 0 }
        return Self.clamped((Double(virtual) / speed).rounded(.up))
    }

    /// Double to Int64 without trapping on values beyond its range.
    private static func clamped(_ value: Double) -> Int64 {
        guard value.isFinite else { return value > 0 ? Int64.max / 4 : 0 }
        return value >= Double(Int64.max / 4) ? Int64.max / 4 : Int64(max(0, value))
    }
}

/// Tells a serving emulator to stop (the CLI sets it on SIGINT/SIGTERM). The emulator looks at
/// it at least every 50 ms.
public final class StopSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var stopped = false
    public init() {}
    public func stop() { lock.withLock { stopped = true } }
    public var isStopped: Bool { lock.withLock { stopped } }
}

/// What a socket emulator did, over all its connections.
public struct SocketEmulatorCounters: Sendable, Hashable {
    /// Clients accepted.
    public var connections = 0
    /// ATT PDUs received from clients (control messages and empty messages not included).
    public var pdusIn = 0
    /// ATT PDUs sent to clients.
    public var pdusOut = 0
    /// PDUs the device sent while no client was connected (dropped, as a radio would).
    public var droppedOutgoing = 0
    /// `0x00 "encrypt"` control messages honoured.
    public var encryptions = 0
    /// Other 0x00-prefixed messages, ignored.
    public var ignoredControlMessages = 0
    /// Empty messages, ignored.
    public var emptyMessages = 0
    /// Messages longer than an L2CAP SDU (65535 bytes), ignored.
    public var oversizedMessages = 0
    /// Connections the device ended (a reset, a hang-up).
    public var deviceDisconnects = 0
    /// Connections the client ended, or lost by a failed send.
    public var clientHangups = 0
    /// Times the device's firmware crashed (a planted quirk met its input; see `DeviceModel.crash`).
    public var crashes = 0
    public init() {}
}

/// One emulated device served on a Unix SEQPACKET socket (`gattlab emulate NAME --listen
/// unix:PATH`) or on a controller's ATT channel as a real peripheral (`--hci hciN`, a
/// `BlueZListener`), to clients one after another: the device lives as long as the emulator, so what a
/// client did stays done for the next one (a speaker that rebooted into a new image is
/// PENDING_VERIFY when the next phone connects), while what belongs to a connection (MTU, CCCDs,
/// prepare queue, encryption) starts afresh.
///
/// The device model runs on virtual time that follows the wall clock `speed` times as fast. The
/// host never waits past the next device timer, runs timers at their own virtual time (so a late
/// wake-up does not shift the timers they schedule), and sends what they queued if a client is
/// connected.
public actor SocketEmulator {
    public let name: String
    public let seed: UInt64
    public nonisolated var speed: Double { clock.speed }
    /// The socket path when listening on a Unix socket, else empty.
    public let path: String
    /// Where it listens: `unix:PATH`, or `hciN (ADDRESS)`.
    public nonisolated var endpoint: String { listener.endpoint }
    private let clock: ScaledClock
    private let listener: any ATTBearerListener
    private var scheduler: VirtualScheduler
    private var device: any DeviceModel
    private let factory: DeviceFactory
    /// Each client gets a device just started (a soak test of one session), instead of the one
    /// device whose state carries over from client to client.
    public let freshDevicePerClient: Bool
    /// A firmware crash ends the serving (after the connection it ended), as a fuzzer's target
    /// process dies; otherwise the device resets and serving goes on.
    public let exitOnCrash: Bool
    private var serving = false
    private var log: (@Sendable (String) -> Void)?
    public private(set) var counters = SocketEmulatorCounters()
    /// Why the firmware crashed, each time it did, in order.
    public private(set) var crashes: [String] = []

    /// The longest the host waits without looking at the stop signal.
    static let maxWait: Int64 = 50_000

    /// How long a send to a client that stopped reading may wait before the client is dropped.
    public let clientSendTimeout: Int64

    /// Serves `spec` built with `seed` on `listener` (a Unix socket, or a controller's ATT channel).
    public init(device spec: EmulatedDeviceSpec, seed: UInt64 = 1, listener: any ATTBearerListener, speed: Double = 1,
                clientSendTimeout: Int64 = 10_000_000, freshDevicePerClient: Bool = false, exitOnCrash: Bool = false) {
        self.freshDevicePerClient = freshDevicePerClient
        self.exitOnCrash = exitOnCrash
        factory = spec.factory
        name = spec.name
        self.clientSendTimeout = clientSendTimeout
        self.seed = seed
        self.listener = listener
        path = (listener as? UnixSocketListener)?.path ?? (listener as? DirectUnixListener)?.path ?? ""
        clock = ScaledClock(speed: speed)
        let scheduler = VirtualScheduler(start: clock.now())
        self.scheduler = scheduler
        device = spec.factory(scheduler, seed)
    }

    /// Listens on `path` (see `UnixSocketListener.init(path:)` for what it refuses) and serves `spec`.
    public init(device spec: EmulatedDeviceSpec, seed: UInt64 = 1, path: String, speed: Double = 1,
                clientSendTimeout: Int64 = 10_000_000, freshDevicePerClient: Bool = false, exitOnCrash: Bool = false) throws(BearerError) {
        self.init(device: spec, seed: seed, listener: try UnixSocketListener(path: path), speed: speed,
                  clientSendTimeout: clientSendTimeout, freshDevicePerClient: freshDevicePerClient, exitOnCrash: exitOnCrash)
    }

    /// Runs a closure on the device model (tests inspect its state this way).
    public func withDevice<T: Sendable>(_ body: (any DeviceModel) -> T) -> T { body(device) }

    /// How a connection ended.
    enum Ending: CustomStringConvertible {
        case clientClosed, clientVanished, device(UInt8), stopped
        var description: String {
            switch self {
            case .clientClosed: "the client hung up"
            case .clientVanished: "the client vanished (a send failed)"
            case .device(let reason): String(format: "the device hung up (0x%02X)", reason)
            case .stopped: "stopped"
            }
        }
    }

    /// Serves clients one after another until `connections` have been served (nil: forever) or
    /// `stop` is set, then stops listening and removes the socket file; serving does not start
    /// again. `log` gets one line per connection: its number, PDUs in and out, and how it ended.
    /// Nothing a client sends ends the serving, unless `exitOnCrash` and it crashes the firmware
    /// (`log` gets "firmware crash: WHY" for each crash). Returns the counters.
    @discardableResult
    public func serve(connections: Int? = nil, stop: StopSignal? = nil,
                      log: (@Sendable (String) -> Void)? = nil) async -> SocketEmulatorCounters {
        guard !serving else { return counters }
        serving = true
        self.log = log
        defer { listener.close() }
        var served = 0
        while connections.map({ served < $0 }) ?? true {
            guard let client = await nextClient(stop: stop) else { break }
            served += 1
            counters.connections += 1
            let before = counters
            var encrypted = false
            let ending = await serve(client, stop: stop, encrypted: &encrypted)
            if case .device(let reason) = ending {
                // A reset or a hang-up ends the link itself, as the firmware's would.
                await client.hangUp(reason: reason)
            } else {
                await client.close()
            }
            noteCrash()
            device.requestedDisconnect = nil
            device.disconnected()
            device.server.resetConnection()
            switch ending {
            case .device: counters.deviceDisconnects += 1
            case .clientClosed, .clientVanished: counters.clientHangups += 1
            case .stopped: break
            }
            log?("client \(served): \(counters.pdusIn - before.pdusIn) PDUs in, \(counters.pdusOut - before.pdusOut) out"
                 + "\(encrypted ? ", encrypted" : ""); \(ending)")
            if case .stopped = ending { break }
            if stopsForCrash { break }
        }
        return counters
    }

    /// Waits for a client, running device timers meanwhile (what they send is dropped). Nil when stopped.
    private func nextClient(stop: StopSignal?) async -> (any ServedATTBearer)? {
        while stop?.isStopped != true, !stopsForCrash {
            _ = await runDueTimers(client: nil)
            if stopsForCrash { return nil }
            if let client = await listener.acceptClient(within: waitTime()) {
                client.setSendTimeout(clientSendTimeout)
                return client
            }
        }
        return nil
    }

    private func serve(_ client: any ServedATTBearer, stop: StopSignal?, encrypted: inout Bool) async -> Ending {
        if freshDevicePerClient, counters.connections > 1 {
            scheduler = VirtualScheduler(start: clock.now())
            device = factory(scheduler, seed)
        }
        device.server.resetConnection()
        device.connected()
        if let ending = await flush(to: client) { return ending }
        if let reason = takeDisconnectRequest() { return .device(reason) }
        while true {
            if stop?.isStopped == true { return .stopped }
            if let ending = await runDueTimers(client: client) { return ending }
            let message: [UInt8]?
            do {
                message = try await client.receive(within: waitTime())
            } catch .tooLarge {
                counters.oversizedMessages += 1
                continue
            } catch {
                return .clientClosed
            }
            guard let message else { continue }
            // What was due before the PDU arrived happens first, as on the air.
            if let ending = await runDueTimers(client: client) { return ending }
            guard let opcode = message.first else {
                counters.emptyMessages += 1
                continue
            }
            if opcode == UnixSocketBearer.controlMessagePrefix {
                // See UnixSocketBearer.encryptionControlMessage: the only control message.
                if message == UnixSocketBearer.encryptionControlMessage {
                    device.server.encrypted = true
                    encrypted = true
                    counters.encryptions += 1
                } else {
                    counters.ignoredControlMessages += 1
                }
                continue
            }
            // A kernel link encrypted by pairing says so itself (a Unix client sends "encrypt").
            if client.linkEncrypted == true, !device.server.encrypted {
                device.server.encrypted = true
                if !encrypted { counters.encryptions += 1 }
                encrypted = true
            }
            counters.pdusIn += 1
            if let ending = await send(device.server.handle(message), to: client) { return ending }
            if let reason = takeDisconnectRequest() { return .device(reason) }
        }
    }

    /// Runs the timers due by now, each at its own virtual time, sending what each queued; the
    /// ending when the device hung up (or the client vanished) on the way.
    private func runDueTimers(client: (any ServedATTBearer)?) async -> Ending? {
        let now = clock.now()
        while let next = scheduler.nextTime, next <= now {
            scheduler.runNext()
            if let ending = await flush(to: client) { return ending }
            if let reason = takeDisconnectRequest(), client != nil { return .device(reason) }
        }
        scheduler.advance(to: now)
        return nil
    }

    private func flush(to client: (any ServedATTBearer)?) async -> Ending? {
        let outgoing = device.server.takeOutgoing()
        guard let client else {
            counters.droppedOutgoing += outgoing.count
            return nil
        }
        return await send(outgoing, to: client)
    }

    private func send(_ pdus: [[UInt8]], to client: any ServedATTBearer) async -> Ending? {
        for pdu in pdus {
            do { try await client.send(pdu) } catch { return .clientVanished }
            counters.pdusOut += 1
        }
        return nil
    }

    /// The target "process died": serving ends.
    private var stopsForCrash: Bool { exitOnCrash && !crashes.isEmpty }

    /// Takes the device's crash report, if it has one: counted, kept and logged.
    private func noteCrash() {
        guard let why = device.crash else { return }
        device.crash = nil
        crashes.append(why)
        counters.crashes += 1
        log?("firmware crash: \(why)")
    }

    private func takeDisconnectRequest() -> UInt8? {
        noteCrash()
        defer { device.requestedDisconnect = nil }
        return device.requestedDisconnect
    }

    /// Real microseconds until the next device timer, at most `maxWait`.
    private func waitTime() -> Int64 {
        guard let next = scheduler.nextTime else { return Self.maxWait }
        return min(Self.maxWait, clock.real(next - clock.now()))
    }
}
