import Foundation
import Transport

/// The phone's end of a link to a real device through the kernel's L2CAP ATT socket, so a replay
/// (or a black-box fuzz campaign) drives a device on a controller as it drives an emulated one.
/// Time is the wall clock.
public actor BlueZLink: TimedATTBearer, LinkControl {
    public let target: BlueZTarget
    public let security: BlueZSecurity
    /// How long a connection attempt may take (an absent device never answers).
    public let connectTimeout: Int64
    private var bearer: BlueZBearer?
    /// Why the last `connect()` failed (nil after one that worked).
    public private(set) var lastError: BearerError?

    public init(target: BlueZTarget, security: BlueZSecurity = .low, connectTimeout: Int64 = 20_000_000) {
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
        do { try bearer.raiseSecurity(to: security == .high ? .high : .medium) } catch { lastError = error }
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
        do { return try await bearer.receive(within: microseconds) } catch {
            if error == .closed { await drop() }
            throw error
        }
    }

    public func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1_000_000) }

    public func wait(_ microseconds: Int64) async throws(BearerError) {
        guard microseconds > 0 else { return }
        try? await Task.sleep(nanoseconds: UInt64(microseconds) * 1000)
    }

    public func close() async { await drop() }

    private func drop() async {
        guard let bearer else { return }
        self.bearer = nil
        await bearer.close()
    }
}
