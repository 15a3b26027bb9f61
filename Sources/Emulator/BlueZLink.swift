import Foundation
import Transport

/// The phone's end of a link to a real device through the kernel's L2CAP ATT socket, so a replay
/// (or a black-box fuzz campaign) drives a device on a controller as it drives an emulated one.
/// Time is the wall clock, `speed` times as fast: give it the `--speed` of an emulated peripheral
/// (`gattlab emulate --hci --speed`) so recorded delays and timeouts keep pace with its timers; a
/// real device runs at 1.
public actor BlueZLink: TimedATTBearer, LinkControl {
    public let target: BlueZTarget
    public let security: BlueZSecurity
    /// How long a connection attempt may take (an absent device never answers).
    public let connectTimeout: Int64
    private var bearer: BlueZBearer?
    /// Why the last `connect()` failed (nil after one that worked).
    public private(set) var lastError: BearerError?

    public nonisolated var speed: Double { clock.speed }
    private let clock: ScaledClock

    public init(target: BlueZTarget, security: BlueZSecurity = .low, connectTimeout: Int64 = 20_000_000, speed: Double = 1) {
        clock = ScaledClock(speed: speed)
        self.target = target
        self.security = security
        self.connectTimeout = connectTimeout
    }

    public func connect() async {
        guard bearer == nil else { return }
        do {
            bearer = try await BlueZBearer.connect(target, security: security, timeout: connectTimeout)
            lastError = nil
        } catch {
            lastError = error
        }
    }

    /// The kernel pairs (or re-encrypts with a bond) when the socket's security level rises.
    public func encrypt() async {
        guard let bearer else { return }
        do { try await bearer.raiseSecurity(to: security == .high ? .high : .medium) } catch { lastError = error }
    }

    public func pair(_ options: PairingOptions) async { await encrypt() }

    public func isConnected() -> Bool { bearer != nil }

    public func send(_ pdu: [UInt8]) async throws(BearerError) {
        guard let bearer else { throw .closed }
        do { try await bearer.send(pdu) } catch {
            if error == .closed { await drop() }
            throw error
        }
    }

    public func receive() async throws(BearerError) -> [UInt8] {
        guard let bearer else { throw .closed }
        do { return try await bearer.receive() } catch {
            if error == .closed { await drop() }
            throw error
        }
    }

    public func receive(within microseconds: Int64) async throws(BearerError) -> [UInt8]? {
        guard let bearer else { throw .closed }
        do { return try await bearer.receive(within: clock.real(microseconds)) } catch {
            if error == .closed { await drop() }
            throw error
        }
    }

    public func now() -> Int64 { clock.now() }

    public func wait(_ microseconds: Int64) async throws(BearerError) {
        let real = clock.real(microseconds)
        guard real > 0 else { return }
        try? await Task.sleep(nanoseconds: UInt64(real) * 1000)
    }

    /// Ends the link itself (HCI Disconnect), so the device sees the disconnection now and the
    /// next `connect()` makes a new link rather than riding the idle old one (see
    /// `BlueZBearer.disconnectLink`). Without CAP_NET_RAW only the socket closes, the kernel ends
    /// the link seconds later, and `linkEndError` says why.
    public func close() async {
        guard let bearer else { return }
        self.bearer = nil
        do {
            try await bearer.disconnectLink()
            linkEndError = nil
        } catch {
            linkEndError = error
        }
    }

    /// Why the last `close()` could not end the link itself (nil when it did).
    public private(set) var linkEndError: BearerError?

    private func drop() async {
        guard let bearer else { return }
        self.bearer = nil
        await bearer.close()
    }
}
