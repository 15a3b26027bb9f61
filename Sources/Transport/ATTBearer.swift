/// ATT bearers (DESIGN.md, Transport): something that carries whole ATT PDUs between a client and a
/// server, with message boundaries kept as an L2CAP SEQPACKET socket keeps them. One PDU per call,
/// opcode first, no L2CAP header.

/// Why a bearer operation failed.
public enum BearerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The link is closed (by either side); nothing more is sent or received.
    case closed
    /// A PDU larger than the bearer takes (an L2CAP SDU is at most 65535 bytes).
    case tooLarge(Int)
    /// The bearer could not be set up (no such socket, refused, a path too long), with why.
    case failed(String)

    public var description: String {
        switch self {
        case .closed: "the ATT bearer is closed"
        case .tooLarge(let n): "a PDU of \(n) bytes is larger than the bearer carries"
        case .failed(let why): why
        }
    }
}

/// A connected ATT bearer. Implementations are actors (or otherwise Sendable) so a client task and a
/// server task can use the two ends concurrently.
public protocol ATTBearer: Sendable {
    /// Sends one PDU. Throws `.closed` once either side closed the link.
    func send(_ pdu: [UInt8]) async throws(BearerError)
    /// The next PDU from the peer, waiting for it. Throws `.closed` when the link is closed and
    /// nothing is left to read (PDUs that arrived before the close are still delivered).
    func receive() async throws(BearerError) -> [UInt8]
    /// Closes the link for both ends; pending and future receives end with `.closed`.
    func close() async
}

/// A bearer whose time can be waited on: the emulator's virtual link, where waiting advances a
/// virtual clock instead of sleeping, so scenarios with 30-second timeouts run in microseconds.
public protocol TimedATTBearer: ATTBearer {
    /// Microseconds since the Unix epoch on the bearer's clock.
    func now() async -> Int64
    /// The next PDU, or nil when none arrives within `microseconds`.
    func receive(within microseconds: Int64) async throws(BearerError) -> [UInt8]?
    /// Lets `microseconds` pass (things the peer does meanwhile are delivered later, in order).
    func wait(_ microseconds: Int64) async throws(BearerError)
}

/// The largest PDU a bearer carries: an L2CAP SDU length field is 16 bits.
public let maxBearerPDU = 65_535
