/// Two connected in-memory ATT bearers, like the two ends of an L2CAP SEQPACKET socket pair: each
/// `send` on one end is exactly one `receive` on the other, in order. Deterministic: no timers, no
/// threads of its own; a receive waits until the peer sends or either end closes.
public final class InMemoryBearer: ATTBearer {
    private let link: InMemoryLink
    private let side: Int

    private init(link: InMemoryLink, side: Int) {
        self.link = link
        self.side = side
    }

    /// A connected pair: what `client` sends, `server` receives, and the other way round.
    public static func pair() -> (client: InMemoryBearer, server: InMemoryBearer) {
        let link = InMemoryLink()
        return (InMemoryBearer(link: link, side: 0), InMemoryBearer(link: link, side: 1))
    }

    public func send(_ pdu: [UInt8]) async throws(BearerError) {
        try await link.send(pdu, from: side)
    }

    public func receive() async throws(BearerError) -> [UInt8] {
        let result = await link.receive(at: side)
        return try result.get()
    }

    public func close() async {
        await link.close()
    }

    /// Whether the link is closed.
    public func isClosed() async -> Bool { await link.closed }

    /// PDUs waiting to be received at this end.
    public func pending() async -> Int { await link.pendingCount(at: side) }
}

/// The shared state of a pair: one queue per direction and at most one waiting receiver per end.
actor InMemoryLink {
    private var queues: [[[UInt8]]] = [[], []]
    private var heads = [0, 0]
    private var waiters: [CheckedContinuation<Result<[UInt8], BearerError>, Never>?] = [nil, nil]
    private(set) var closed = false

    func send(_ pdu: [UInt8], from side: Int) throws(BearerError) {
        guard !closed else { throw .closed }
        guard pdu.count <= maxBearerPDU else { throw .tooLarge(pdu.count) }
        let to = 1 - side
        if let waiter = waiters[to] {
            waiters[to] = nil
            waiter.resume(returning: .success(pdu))
        } else {
            queues[to].append(pdu)
        }
    }

    func receive(at side: Int) async -> Result<[UInt8], BearerError> {
        if heads[side] < queues[side].count {
            let pdu = queues[side][heads[side]]
            heads[side] += 1
            if heads[side] == queues[side].count {
                queues[side].removeAll(keepingCapacity: true)
                heads[side] = 0
            }
            return .success(pdu)
        }
        if closed { return .failure(.closed) }
        // One receiver per end, as on a socket read by one task: a second concurrent receive fails
        // the first rather than leaving it waiting forever.
        if let earlier = waiters[side] { earlier.resume(returning: .failure(.closed)) }
        return await withCheckedContinuation { waiters[side] = $0 }
    }

    func close() {
        closed = true
        for i in 0..<2 {
            if let waiter = waiters[i] {
                waiters[i] = nil
                waiter.resume(returning: .failure(.closed))
            }
        }
    }

    func pendingCount(at side: Int) -> Int { queues[side].count - heads[side] }
}
