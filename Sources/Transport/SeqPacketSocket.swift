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
                continuation.resume(returning: Self.receiveMessage(fd, within: microseconds))
            }
        }
        return try result.get()
    }

    /// One whole message, nil when none arrives in time, `.closed` when the link is gone.
    static func receiveMessage(_ fd: Int32, within microseconds: Int64) -> Result<[UInt8]?, BearerError> {
        guard let revents = waitReadable(fd, within: microseconds) else { return .failure(.closed) }
        if revents == 0 { return .success(nil) }
        var buffer = [UInt8](repeating: 0, count: maxBearerPDU + 1)
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
