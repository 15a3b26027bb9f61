import Transport

/// Wraps any link and records what crosses it as a phone's HCI log (btsnoop), so a replay against
/// an emulator process or a real device can be decoded, diffed and replayed like any capture:
/// LE Connection Complete on connect, ATT PDUs as ACL each way, Encryption Change, Disconnection
/// Complete. Times are the wrapped link's clock. The in-process emulator records itself in more
/// detail (`EmulatedLink.recording()`).
public actor RecordingLink: TimedATTBearer, LinkControl {
    private let inner: any TimedATTBearer & LinkControl
    private var recorder: HCIRecorder
    private let peer: [UInt8]
    private var up = false
    /// Packets are capped so a long campaign cannot grow memory without bound.
    public static let maxPackets = 2_000_000

    /// `peer`: the device's address as HCI carries it (little-endian), for Connection Complete.
    public init(_ inner: any TimedATTBearer & LinkControl, peer: [UInt8] = [0x01, 0x00, 0x00, 0x00, 0x00, 0xC0],
                aclBufferSize: Int = 251) {
        self.inner = inner
        self.peer = peer.count == 6 ? peer : [0x01, 0x00, 0x00, 0x00, 0x00, 0xC0]
        recorder = HCIRecorder(handle: 0x0040, aclBufferSize: aclBufferSize)
    }

    public func recording() -> Recording { recorder.recording }

    private var full: Bool { recorder.recording.packets.count >= Self.maxPackets }

    private func noteDrop() async {
        guard up, !(await inner.isConnected()) else { return }
        up = false
        recorder.disconnectionComplete(reason: 0x13, at: await inner.now())
    }

    public func connect() async {
        await inner.connect()
        guard await inner.isConnected(), !up else { return }
        up = true
        if !full { recorder.connectionComplete(peer: peer, interval: 24, at: await inner.now()) }
    }

    public func encrypt() async {
        await inner.encrypt()
        if up, !full { recorder.encryptionChange(at: await inner.now()) }
    }

    public func pair(_ options: PairingOptions) async {
        await inner.pair(options)
        if up, !full { recorder.encryptionChange(at: await inner.now()) }
    }

    public func isConnected() async -> Bool { await inner.isConnected() }

    public func now() async -> Int64 { await inner.now() }

    public func send(_ pdu: [UInt8]) async throws(BearerError) {
        do {
            try await inner.send(pdu)
        } catch {
            await noteDrop()
            throw error
        }
        if !full { _ = recorder.att(pdu, sent: true, at: await inner.now()) }
    }

    public func receive() async throws(BearerError) -> [UInt8] {
        do {
            let pdu = try await inner.receive()
            if !full { _ = recorder.att(pdu, sent: false, at: await inner.now()) }
            return pdu
        } catch {
            await noteDrop()
            throw error
        }
    }

    public func receive(within microseconds: Int64) async throws(BearerError) -> [UInt8]? {
        do {
            let pdu = try await inner.receive(within: microseconds)
            if let pdu, !full { _ = recorder.att(pdu, sent: false, at: await inner.now()) }
            if pdu == nil { await noteDrop() }
            return pdu
        } catch {
            await noteDrop()
            throw error
        }
    }

    public func wait(_ microseconds: Int64) async throws(BearerError) {
        try await inner.wait(microseconds)
    }

    /// The phone hangs up: HCI Disconnect, then Disconnection Complete (local host).
    public func close() async {
        let innerUp = await inner.isConnected()
        let wasUp = up && innerUp
        await inner.close()
        guard up else { return }
        up = false
        let t = await inner.now()
        if wasUp {
            recorder.command(0x0406, recorder.handleBytes + [0x13], at: t)
            recorder.disconnectionComplete(reason: 0x16, at: t)
        } else {
            recorder.disconnectionComplete(reason: 0x13, at: t)
        }
    }
}
