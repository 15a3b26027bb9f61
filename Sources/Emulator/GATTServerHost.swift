import Transport

/// Runs a GATT server (or a whole device model) over any ATT bearer: receive a PDU, answer it, send
/// what the device queued, until the bearer closes. For real-time bearers (in-memory pair, sockets);
/// the virtual-time `EmulatedLink` drives its device itself.
public actor GATTServerHost {
    private let server: GATTServer
    public private(set) var handled = 0

    /// `make` builds the server inside the host, so it never crosses an isolation boundary.
    public init(_ make: @Sendable () -> GATTServer) {
        server = make()
    }

    /// Serves until the peer closes the bearer. Returns the number of PDUs handled.
    @discardableResult
    public func serve(over bearer: some ATTBearer) async -> Int {
        while true {
            let request: [UInt8]
            do { request = try await bearer.receive() } catch { return handled }
            handled += 1
            for answer in server.handle(request) {
                do { try await bearer.send(answer) } catch { return handled }
            }
        }
    }

    /// Runs a closure on the server (set values, notify) and sends what it queued.
    public func update(over bearer: some ATTBearer, _ body: (GATTServer) -> Void) async throws(BearerError) {
        body(server)
        for pdu in server.takeOutgoing() { try await bearer.send(pdu) }
    }
}
