// CBlueZ brings <sys/socket.h> into this module too: without importing it here a whole-module
// (release) build no longer finds SOCK_SEQPACKET and MSG_NOSIGNAL through Glibc.
import CBlueZ
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An ATT bearer over a Unix-domain SOCK_SEQPACKET socket: one `send` is one message, as on a
/// kernel L2CAP ATT socket, so an emulator in another process (`gattlab emulate ... --listen
/// unix:PATH`) answers exactly as it would over the air.
///
/// Blocking reads run on the bearer's own dispatch queue and are bridged to async callers, so no
/// cooperative thread waits on the socket. Reads use `poll` with a timeout, which gives the
/// timed receive an ATT client needs (the 30 s transaction timeout).
public final class UnixSocketBearer: TimedATTBearer, @unchecked Sendable {
    private let socket: SeqPacketSocket

    init(fd: Int32) {
        socket = SeqPacketSocket(fd: fd, label: "unix-bearer")
        // A peer that vanished must end a send with an error, not kill the process.
        var on: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, socklen_t(MemoryLayout<Int32>.size))
        setSendTimeout(10_000_000)
    }

    /// How long a send waits for room when the peer stops reading (its queue is full) before
    /// it fails with `.closed`: a client that never reads must not hang an emulator forever.
    public func setSendTimeout(_ microseconds: Int64) { socket.setSendTimeout(microseconds) }

    /// Connects to a listening emulator.
    public static func connect(path: String) throws(BearerError) -> UnixSocketBearer {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
        guard fd >= 0 else { throw .failed("socket: \(String(cString: strerror(errno)))") }
        var address = try UnixSocketAddress(path)
        let rc = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        guard rc == 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            throw .failed("cannot connect to unix:\(path): \(message)")
        }
        return UnixSocketBearer(fd: fd)
    }

    public func send(_ pdu: [UInt8]) async throws(BearerError) { try await socket.send(pdu) }

    public func receive() async throws(BearerError) -> [UInt8] {
        while true {
            if let pdu = try await receive(within: 3_600_000_000) { return pdu }
        }
    }

    public func receive(within microseconds: Int64) async throws(BearerError) -> [UInt8]? {
        try await socket.receive(within: microseconds)
    }

    /// The control message that says "the link is now encrypted"; see `encryptionControlMessage`.
    public func requestEncryption() async throws(BearerError) {
        try await send(Self.encryptionControlMessage)
    }

    /// Link control over the Unix bearer. A kernel L2CAP socket raises security with
    /// setsockopt(BT_SECURITY), which makes the controller pair and encrypt; a Unix socket has no
    /// such call, so the client says it in band with a message that cannot be an ATT PDU: its
    /// first byte is 0x00, which is no ATT opcode. `0x00 "encrypt"` (ASCII) means "the link is
    /// now encrypted": the emulator marks its GATT server encrypted for the rest of this
    /// connection (a new connection starts unencrypted). Other 0x00-prefixed messages are
    /// ignored (and counted) by the emulator.
    public static let controlMessagePrefix: UInt8 = 0x00
    public static let encryptionControlMessage: [UInt8] = [controlMessagePrefix] + Array("encrypt".utf8)

    public func now() async -> Int64 { SeqPacketSocket.now() }

    public func wait(_ microseconds: Int64) async throws(BearerError) {
        guard !socket.isClosed else { throw .closed }
        try? await Task.sleep(nanoseconds: UInt64(max(0, microseconds)) * 1000)
    }

    public func close() async { socket.close() }
}

/// A listening Unix-domain SEQPACKET socket: an emulator waits here for one client after another.
public final class UnixSocketListener: @unchecked Sendable {
    public let path: String
    private let fd: Int32
    private let acceptQueue = DispatchQueue(label: "gattlab.unix-listener.accept")
    private let lock = NSLock()
    private var closed = false

    /// Binds `path`. An existing socket file is replaced only when nothing listens on it (a stale
    /// one from a crashed emulator); any other existing file is refused.
    public init(path: String) throws(BearerError) {
        self.path = path
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else { throw .failed("\(path) exists and is not a socket; choose another path") }
            if (try? UnixSocketBearer.connect(path: path)) != nil { throw .failed("an emulator already listens on unix:\(path)") }
            unlink(path)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
        guard fd >= 0 else { throw .failed("socket: \(String(cString: strerror(errno)))") }
        var address = try UnixSocketAddress(path)
        guard address.withSockaddr({ bind(fd, $0, $1) }) == 0, listen(fd, 4) == 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            throw .failed("cannot listen on unix:\(path): \(message)")
        }
        self.fd = fd
    }

    deinit { close() }

    /// Stops listening and removes the socket file. Later accepts find no client.
    public func close() {
        lock.lock(); defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
        unlink(path)
    }

    private var isClosed: Bool {
        lock.lock(); defer { lock.unlock() }
        return closed
    }

    /// The next client on the caller's thread (see `DirectUnixListener`), or nil.
    func acceptBlocking(within microseconds: Int64) -> BlockingUnixSocket? {
        guard !isClosed, let revents = waitReadable(fd, within: microseconds), revents != 0 else { return nil }
        let client = Glibc.accept(fd, nil, nil)
        return client >= 0 ? BlockingUnixSocket(fd: client) : nil
    }

    /// The next client, or nil when none connects within `microseconds`.
    public func accept(within microseconds: Int64) async -> UnixSocketBearer? {
        let fd = self.fd
        return await withCheckedContinuation { continuation in
            acceptQueue.async { [weak self] in
                guard let self, !self.isClosed, let revents = waitReadable(fd, within: microseconds), revents != 0 else {
                    return continuation.resume(returning: nil)
                }
                let client = Glibc.accept(fd, nil, nil)
                continuation.resume(returning: client >= 0 ? UnixSocketBearer(fd: client) : nil)
            }
        }
    }
}

/// Waits until `fd` is readable (data, or the peer hung up) or `microseconds` pass, to the
/// microsecond: poll counts milliseconds, and an emulator run at 1000 times real time would turn
/// that into a second of device time. select waits, then poll with no wait tells what happened.
/// Returns poll's revents, 0 when the time passed, nil on an error. A signal restarts the wait
/// with the time left.
func waitReadable(_ fd: Int32, within microseconds: Int64) -> Int16? {
    let deadline = monotonicMicroseconds() + max(0, microseconds)
    while true {
        let left = max(0, deadline - monotonicMicroseconds())
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let rc: Int32
        let wordBits = MemoryLayout<UInt>.size * 8
        if fd >= 0, Int(fd) < MemoryLayout<fd_set>.size * 8 {
            var set = fd_set()
            withUnsafeMutableBytes(of: &set) { raw in
                let offset = Int(fd) / wordBits * MemoryLayout<UInt>.size
                let word = raw.load(fromByteOffset: offset, as: UInt.self) | (1 << UInt(Int(fd) % wordBits))
                raw.storeBytes(of: word, toByteOffset: offset, as: UInt.self)
            }
            var tv = timeval(tv_sec: Int(left / 1_000_000), tv_usec: Int(left % 1_000_000))
            rc = select(fd + 1, &set, nil, nil, &tv)
            if rc > 0 {
                _ = poll(&p, 1, 0)
                return p.revents == 0 ? Int16(POLLIN) : p.revents
            }
        } else {
            // Beyond select's set: poll, rounding up so the wait is never shorter than asked.
            rc = poll(&p, 1, Int32(clamping: (left + 999) / 1000))
            if rc > 0 { return p.revents }
        }
        if rc == 0 { return 0 }
        if errno == EINTR { continue }
        return nil
    }
}

func monotonicMicroseconds() -> Int64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Int64(t.tv_sec) * 1_000_000 + Int64(t.tv_nsec) / 1000
}

/// `sockaddr_un` for a path, refusing one longer than the kernel takes (107 bytes).
struct UnixSocketAddress {
    private var storage = sockaddr_un()

    init(_ path: String) throws(BearerError) {
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: storage.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw .failed("unix socket path of \(bytes.count) bytes; at most \(capacity - 1)")
        }
        storage.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
    }

    mutating func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        return withUnsafePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
