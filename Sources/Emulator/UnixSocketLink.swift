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
