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

/// The server's end of a `unix:` link whose calls block the caller's thread
/// (`BlockingUnixSocket`): for an emulator process that serves one client at a time and does
/// nothing else, where the dispatch hops of `UnixSocketBearer` cost more than the round trip.
public final class DirectUnixBearer: ServedATTBearer, @unchecked Sendable {
    private let socket: BlockingUnixSocket

    init(_ socket: BlockingUnixSocket) { self.socket = socket }

    public var linkEncrypted: Bool? { nil }
    public func setSendTimeout(_ microseconds: Int64) { socket.setSendTimeout(microseconds) }
    public func send(_ pdu: [UInt8]) async throws(BearerError) { try socket.send(pdu) }

    public func receive() async throws(BearerError) -> [UInt8] {
        while true {
            if let pdu = try socket.receive(within: 3_600_000_000) { return pdu }
        }
    }

    public func receive(within microseconds: Int64) async throws(BearerError) -> [UInt8]? {
        try socket.receive(within: microseconds)
    }

    public func now() async -> Int64 { SeqPacketSocket.now() }

    public func wait(_ microseconds: Int64) async throws(BearerError) {
        guard !socket.isClosed else { throw .closed }
        try? await Task.sleep(nanoseconds: UInt64(max(0, microseconds)) * 1000)
    }

    public func close() async { socket.close() }
}

/// A `unix:` listener whose accepts and accepted links block the caller's thread (see
/// `DirectUnixBearer`): `gattlab emulate --listen unix:` serves from it, one client at a time,
/// in a process of its own. Code that serves in a process shared with other work (tests) uses
/// `UnixSocketListener`, whose calls never hold a cooperative thread.
public final class DirectUnixListener: ATTBearerListener, @unchecked Sendable {
    private let listener: UnixSocketListener

    public init(path: String) throws(BearerError) { listener = try UnixSocketListener(path: path) }

    public var path: String { listener.path }
    public var endpoint: String { listener.endpoint }
    public func close() { listener.close() }

    public func acceptClient(within microseconds: Int64) async -> (any ServedATTBearer)? {
        listener.acceptBlocking(within: microseconds).map(DirectUnixBearer.init)
    }
}
