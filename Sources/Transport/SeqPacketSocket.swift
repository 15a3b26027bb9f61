// CBlueZ brings <sys/socket.h> into this module too; see UnixSocketBearer.swift.
import CBlueZ
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A connected SOCK_SEQPACKET socket carrying whole ATT PDUs, as both a Unix-domain socket to an
/// emulator process and a kernel L2CAP ATT socket do: what `UnixSocketBearer` and `BlueZBearer`
/// share. Reads and sends run on the socket's own dispatch queues (a blocking call never holds a
/// cooperative thread); reads wait to the microsecond (`waitReadable`), so a timed receive on a
/// sped-up clock keeps its precision; the descriptor is closed only after both queues are done
/// with it, so its number cannot be reused under a read or send still running.
final class SeqPacketSocket: @unchecked Sendable {
    let fd: Int32
    private let readQueue: DispatchQueue
    private let writeQueue: DispatchQueue
    private let lock = NSLock()
    private var closed = false
    /// Where messages are received, used only on `readQueue`: one buffer of the largest SDU,
    /// not 64 KiB allocated and zeroed for every PDU.
    private var buffer = [UInt8](repeating: 0, count: maxBearerPDU + 1)

    init(fd: Int32, label: String) {
        self.fd = fd
        readQueue = DispatchQueue(label: "gattlab.\(label).read")
        writeQueue = DispatchQueue(label: "gattlab.\(label).write")
    }

    deinit { close() }

    var isClosed: Bool {
        lock.lock(); defer { lock.unlock() }
        return closed
    }

    /// Runs `body` with the descriptor unless the socket is closed (socket options on a live link).
    func withOpenDescriptor<T>(_ body: (Int32) -> T) -> T? {
        lock.lock(); defer { lock.unlock() }
        return closed ? nil : body(fd)
    }

    /// How long a send waits for room (the peer stopped reading) before it fails with `.closed`.
    func setSendTimeout(_ microseconds: Int64) {
        let t = max(1, microseconds)
        var timeout = timeval(tv_sec: Int(t / 1_000_000), tv_usec: Int(t % 1_000_000))
        _ = withOpenDescriptor { setsockopt($0, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size)) }
    }

    func send(_ pdu: [UInt8]) async throws(BearerError) {
        guard pdu.count <= maxBearerPDU else { throw .tooLarge(pdu.count) }
        let fd = self.fd
        let sent: Bool = await withCheckedContinuation { continuation in
            writeQueue.async { [weak self] in
                guard let self, !self.isClosed else { return continuation.resume(returning: false) }
                let n = pdu.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                continuation.resume(returning: n == pdu.count)
            }
        }
        guard sent else { throw .closed }
    }

    func receive(within microseconds: Int64) async throws(BearerError) -> [UInt8]? {
        let fd = self.fd
        let result: Result<[UInt8]?, BearerError> = await withCheckedContinuation { continuation in
            readQueue.async { [weak self] in
                guard let self, !self.isClosed else { return continuation.resume(returning: .failure(.closed)) }
                continuation.resume(returning: Self.receiveMessage(fd, within: microseconds, into: &self.buffer))
            }
        }
        return try result.get()
    }

    /// One whole message, nil when none arrives in time, `.closed` when the link is gone.
    /// `buffer` holds at least `maxBearerPDU + 1` bytes.
    static func receiveMessage(_ fd: Int32, within microseconds: Int64, into buffer: inout [UInt8]) -> Result<[UInt8]?, BearerError> {
        guard let revents = waitReadable(fd, within: microseconds) else { return .failure(.closed) }
        if revents == 0 { return .success(nil) }
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        // 0 is an empty message, or the peer's close when poll also says it hung up.
        if n == 0, revents & Int16(POLLHUP) == 0 { return .success([]) }
        guard n > 0 else { return .failure(.closed) }
        // A message longer than any SDU was cut by recv: refuse it (the rest of it is gone; the
        // next receive gets the next message).
        guard n <= maxBearerPDU else { return .failure(.tooLarge(n)) }
        return .success(Array(buffer.prefix(n)))
    }

    func close() {
        lock.lock(); defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        // shutdown wakes a read or send in progress; close waits for both queues.
        shutdown(fd, Int32(SHUT_RDWR))
        let fd = self.fd
        let writeQueue = self.writeQueue
        readQueue.async { writeQueue.async { _ = Glibc.close(fd) } }
    }

    /// Closes as `close` does, and returns once the descriptor itself is closed (the kernel has
    /// released the socket).
    func closeAndWait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            close()
            // close() queued the descriptor's close behind both queues; this runs after it.
            let writeQueue = self.writeQueue
            readQueue.async { writeQueue.async { continuation.resume() } }
        }
    }

    /// The wall clock, microseconds since the Unix epoch.
    static func now() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return Int64(t.tv_sec) * 1_000_000 + Int64(t.tv_nsec) / 1000
    }
}

/// A Unix SOCK_SEQPACKET client whose calls are the system calls themselves, on the caller's
/// thread: for a caller that owns its thread and waits for every answer anyway (a black-box
/// fuzzer), where `UnixSocketBearer`'s hops through dispatch queues cost more than the round
/// trip. One caller at a time; a receive blocks its thread for up to the time it is given.
public final class BlockingUnixSocket: @unchecked Sendable {
    private var fd: Int32
    private var buffer = [UInt8](repeating: 0, count: maxBearerPDU + 1)

    init(fd: Int32) { self.fd = fd }

    deinit { close() }

    public static func connect(path: String) throws(BearerError) -> BlockingUnixSocket {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
        guard fd >= 0 else { throw .failed("socket: \(String(cString: strerror(errno)))") }
        var address = try UnixSocketAddress(path)
        guard address.withSockaddr({ Glibc.connect(fd, $0, $1) }) == 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            throw .failed("cannot connect to unix:\(path): \(message)")
        }
        let socket = BlockingUnixSocket(fd: fd)
        // A peer that stops reading fails a send after 10 s instead of blocking forever.
        socket.setSendTimeout(10_000_000)
        return socket
    }

    public var isClosed: Bool { fd < 0 }

    /// How long a send waits for room (the peer stopped reading) before it fails with `.closed`.
    public func setSendTimeout(_ microseconds: Int64) {
        guard fd >= 0 else { return }
        let t = max(1, microseconds)
        var timeout = timeval(tv_sec: Int(t / 1_000_000), tv_usec: Int(t % 1_000_000))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    public func send(_ pdu: [UInt8]) throws(BearerError) {
        guard fd >= 0 else { throw .closed }
        guard pdu.count <= maxBearerPDU else { throw .tooLarge(pdu.count) }
        let n = pdu.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard n == pdu.count else { throw .closed }
    }

    /// One whole message, nil when none arrives within `microseconds`, `.closed` when the peer
    /// hung up.
    public func receive(within microseconds: Int64) throws(BearerError) -> [UInt8]? {
        guard fd >= 0 else { throw .closed }
        var left = microseconds
        let spin = min(microseconds, Self.spinMicroseconds)
        if spin > 0 {
            // The peer usually answers within microseconds: asking again for that long costs less
            // than sleeping and being woken (two context switches per round trip), which is what
            // bounds a round trip between two processes.
            let start = monotonicMicroseconds()
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while poll(&p, 1, 0) == 0, monotonicMicroseconds() - start < spin {}
            left = max(0, microseconds - (monotonicMicroseconds() - start))
        }
        return try SeqPacketSocket.receiveMessage(fd, within: left, into: &buffer).get()
    }

    /// How long a receive asks again before it sleeps (see `receive(within:)`): on this 2-core
    /// machine class a round trip to an emulator process took 92 µs with none, 55 µs with 100
    /// (docs/performance.md).
    static let spinMicroseconds: Int64 = 100

    public func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }
}
