/// Something that waits for centrals and hands over each one's link as a bearer: a Unix socket
/// an emulator listens on, or the ATT channel of a local controller (`BlueZListener`). The socket
/// emulator serves a device over either without knowing which.
public protocol ATTBearerListener: AnyObject, Sendable {
    /// Where it listens, as a target is written: `unix:PATH`, `hci1 (00:AA:01:01:00:01)`.
    var endpoint: String { get }
    /// The next client's link, or nil when none connects within `microseconds` (or after `close`).
    func acceptClient(within microseconds: Int64) async -> (any ServedATTBearer)?
    /// Stops listening; links already accepted stay open.
    func close()
}

/// The server's end of an accepted link.
public protocol ServedATTBearer: TimedATTBearer {
    /// How long a send may wait for room before it fails with `.closed` (a client that stopped reading).
    func setSendTimeout(_ microseconds: Int64)
    /// Whether the link is encrypted now, when the bearer knows (a kernel link after pairing);
    /// nil when it cannot tell (a Unix socket, whose client says so with a control message).
    var linkEncrypted: Bool? { get }
    /// Ends the link as the device does (a reset, a hang-up with `reason`), not only this end of
    /// it: a kernel LE link outlives its ATT socket unless told to end (see
    /// `BlueZBearer.disconnectLink`). A Unix socket just closes.
    func hangUp(reason: UInt8) async
}

extension ServedATTBearer {
    public func hangUp(reason: UInt8) async { await close() }
}

extension UnixSocketBearer: ServedATTBearer {
    public var linkEncrypted: Bool? { nil }
}

extension UnixSocketListener: ATTBearerListener {
    public var endpoint: String { "unix:\(path)" }
    public func acceptClient(within microseconds: Int64) async -> (any ServedATTBearer)? {
        await accept(within: microseconds)
    }
}

extension BlueZBearer: ServedATTBearer {
    public var linkEncrypted: Bool? {
        guard let level = securityLevel else { return nil }
        return level != .low
    }

    /// Best effort: without CAP_NET_RAW the socket just closes and the kernel ends the idle link
    /// seconds later.
    public func hangUp(reason: UInt8) async { try? await disconnectLink(reason: reason) }
}

extension BlueZListener: ATTBearerListener {
    public var endpoint: String { "hci\(controller) (\(address))" }
    public func acceptClient(within microseconds: Int64) async -> (any ServedATTBearer)? {
        await accept(within: microseconds)
    }
}
