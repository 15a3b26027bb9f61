import Transport

/// The phone's end of a link to an emulator served on a Unix socket (`gattlab emulate NAME
/// --listen unix:PATH`, or a `SocketEmulator`), so a `ScriptedCentral` or a replay can drive a
/// device in another process as it drives one on an `EmulatedLink`.
///
/// Time is the wall clock, `speed` times as fast: give it the emulator's speed and a scenario's
/// 30 s timeouts are as long, in device time, as on a virtual link. At speed 1 `now()` is the
/// wall clock.
public actor UnixSocketLink: TimedATTBearer, LinkControl {
    public let path: String
    public nonisolated var speed: Double { clock.speed }
    private let clock: ScaledClock
    private var bearer: UnixSocketBearer?
    /// Why the last `connect()` failed (nil after one that worked).
    public private(set) var lastError: BearerError?

    public init(path: String, speed: Double = 1) {
        self.path = path
        clock = ScaledClock(speed: speed)
    }

    // MARK: LinkControl

    /// Connects to the emulator. LinkControl's connect cannot throw: a failure is kept in
    /// `lastError` and the link stays down (sends then throw `.closed`).
    public func connect() {
        guard bearer == nil else { return }
        do {
            bearer = try UnixSocketBearer.connect(path: path)
            lastError = nil
        } catch {
            lastError = error
        }
    }

    /// Tells the emulator the link is encrypted (`UnixSocketBearer.encryptionControlMessage`).
    public func encrypt() async {
        guard let bearer else { return }
        do { try await bearer.requestEncryption() } catch { await drop() }
    }

    /// There is no SMP over a Unix socket (the emulator has no Security Manager, and a kernel
    /// L2CAP socket would pair below ATT anyway): the link just becomes encrypted, as after a
    /// pairing that worked.
    public func pair(_ options: PairingOptions) async { await encrypt() }

    public func isConnected() -> Bool { bearer != nil }

    // MARK: TimedATTBearer

    public func send(_ pdu: [UInt8]) async throws(BearerError) {
        guard let bearer else { throw .closed }
        do {
            try await bearer.send(pdu)
        } catch .closed {
            await drop()
            throw .closed
        }
    }

    public func receive() async throws(BearerError) -> [UInt8] {
        guard let bearer else { throw .closed }
        do {
            return try await bearer.receive()
        } catch .closed {
            await drop()
            throw .closed
        }
    }

    public func receive(within microseconds: Int64) async throws(BearerError) -> [UInt8]? {
        guard let bearer else { throw .closed }
        do {
            return try await bearer.receive(within: clock.real(microseconds))
        } catch .closed {
            // The emulator hung up (the device reset or ended the link).
            await drop()
            throw .closed
        }
    }

    public func now() -> Int64 { clock.now() }

    /// Lets time pass, connected or not (a phone waits for a rebooting device to come back).
    public func wait(_ microseconds: Int64) async throws(BearerError) {
        let real = clock.real(microseconds)
        guard real > 0 else { return }
        try? await Task.sleep(nanoseconds: UInt64(real) * 1000)
    }

    /// Hangs up.
    public func close() async { await drop() }

    private func drop() async {
        guard let bearer else { return }
        self.bearer = nil
        await bearer.close()
    }
}

/// `UnixSocketLink` for one task at a time that waits on its own thread: each send and timed
/// receive is the system call itself (`BlockingUnixSocket`), with no hop through an actor or a
/// dispatch queue. A black-box campaign sends thousands of PDUs a second and awaits every answer
/// anyway, so the hops were most of its cost. A receive blocks the thread it runs on: use it where
/// nothing else in the process needs that thread (the fuzzer against a device in another process),
/// never against an emulator served in the same process.
public final class DirectUnixLink: TimedATTBearer, LinkControl, @unchecked Sendable {
    public let path: String
    private let clock: ScaledClock
    private var socket: BlockingUnixSocket?
    /// Why the last `connect()` failed (nil after one that worked).
    public private(set) var lastError: BearerError?

    public init(path: String, speed: Double = 1) {
        self.path = path
        clock = ScaledClock(speed: speed)
    }

    public func connect() {
        guard socket == nil else { return }
        do {
            socket = try BlockingUnixSocket.connect(path: path)
            lastError = nil
        } catch {
            lastError = error
        }
    }

    public func encrypt() async {
        do { try socket?.send(UnixSocketBearer.encryptionControlMessage) } catch { drop() }
    }

    public func pair(_ options: PairingOptions) async { await encrypt() }

    public func isConnected() -> Bool { socket != nil }

    public func send(_ pdu: [UInt8]) async throws(BearerError) {
        guard let socket else { throw .closed }
        do { try socket.send(pdu) } catch .closed {
            drop()
            throw .closed
        }
    }

    public func receive() async throws(BearerError) -> [UInt8] {
        while true {
            if let pdu = try await receive(within: 3_600_000_000) { return pdu }
        }
    }

    public func receive(within microseconds: Int64) async throws(BearerError) -> [UInt8]? {
        guard let socket else { throw .closed }
        do { return try socket.receive(within: clock.real(microseconds)) } catch .closed {
            drop()
            throw .closed
        }
    }

    public func now() -> Int64 { clock.now() }

    public func wait(_ microseconds: Int64) async throws(BearerError) {
        let real = clock.real(microseconds)
        guard real > 0 else { return }
        try? await Task.sleep(nanoseconds: UInt64(real) * 1000)
    }

    public func close() async { drop() }

    private func drop() {
        socket?.close()
        socket = nil
    }
}
