import CBlueZ
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// ATT's fixed L2CAP channel on LE links; BlueZ's headers do not name it.
let attChannelID: UInt16 = 4

/// An ATT bearer over a kernel L2CAP socket on the ATT channel (CID 4) of an LE link: a real device,
/// reached through a local controller (`gattlab replay --target bluez:hci0/AA:BB:CC:DD:EE:FF`).
///
/// Built like `UnixSocketBearer`: one `send` is one SEQPACKET message, and blocking reads run on the
/// bearer's own dispatch queue with `poll` for the timed receive.
public final class BlueZBearer: TimedATTBearer, @unchecked Sendable {
    /// The local controller and the remote device of this link.
    public let peer: BlueZTarget
    private let socket: SeqPacketSocket

    init(fd: Int32, peer: BlueZTarget) {
        socket = SeqPacketSocket(fd: fd, label: "bluez-bearer")
        self.peer = peer
    }

    /// Connects to `target` as a central. `security` is asked of the kernel before connecting, so
    /// it pairs or encrypts as needed before the first PDU. Gives up after `microseconds` (an LE
    /// connect to an absent device otherwise waits for the kernel's own timeout).
    ///
    /// The local side binds to the controller's public address unless `localAddress` is given
    /// (a static random address set with `btmgmt static-addr` needs `localAddressType: .random`).
    public static func connect(
        _ target: BlueZTarget, security: BlueZSecurity, timeout microseconds: Int64,
        localAddressType: BlueZAddressType = .public, localAddress: BlueZAddress? = nil
    ) async throws(BearerError) -> BlueZBearer {
        // The connect blocks a thread for up to the timeout: keep it off the cooperative pool.
        let result: Result<Int32, BearerError> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                do throws(BearerError) {
                    let (fd, _) = try openATTSocket(
                        controller: target.controller, addressType: localAddressType, address: localAddress, security: security)
                    do throws(BearerError) {
                        try connectSocket(fd, to: target, within: microseconds)
                        if security != .low {
                            // The kernel (6.12 at least) lets ATT through while SMP is still
                            // running: the first write would meet the device unencrypted. Hold
                            // until the link is encrypted (a key size), or the link ends.
                            try waitForEncryption(fd, level: security, within: 35_000_000)  // SMP itself gives up after 30 s
                        }
                        continuation.resume(returning: .success(fd))
                    } catch {
                        Glibc.close(fd)
                        continuation.resume(returning: .failure(error))
                    }
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return BlueZBearer(fd: try result.get(), peer: target)
    }

    /// How long a send waits for room (no credits: the peer stopped reading) before it fails with
    /// `.closed`, so a vanished central cannot hang a peripheral serving it.
    public func setSendTimeout(_ microseconds: Int64) { socket.setSendTimeout(microseconds) }

    /// Asks the kernel for a higher security level on the live link: it pairs (or encrypts with a
    /// stored key) before the next PDU goes out, as BlueZ's own GATT client does on an
    /// Insufficient Authentication or Encryption error.
    ///
    /// Until the pairing or encryption is done the kernel holds the socket in its configuring
    /// state, where a send fails; so this waits (at most `microseconds`; SMP itself gives up
    /// after 30 s) until the socket is writable again, and fails if the link went instead (a
    /// pairing the device refused ends it).
    public func raiseSecurity(to level: BlueZSecurity, within microseconds: Int64 = 35_000_000) async throws(BearerError) {
        var wanted = bt_security(level: level.level, key_size: 0)
        let rc = socket.withOpenDescriptor { setsockopt($0, SOL_BLUETOOTH, BT_SECURITY, &wanted, socklen_t(MemoryLayout<bt_security>.size)) }
        guard let rc else { throw .closed }
        guard rc == 0 else { throw socketError(errno, "cannot raise the link's security to \(level.rawValue)") }
        let fd = socket.fd
        let ready: (ready: Bool, revents: Int16) = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: waitFor(fd, events: POLLOUT, within: microseconds)) }
        }
        guard ready.ready else {
            throw .failed("the link did not reach security \(level.rawValue) within \(seconds(microseconds)); pairing may be waiting for an agent (is bluetoothd running?)")
        }
        if ready.revents & Int16(POLLHUP | POLLERR) != 0 || ready.revents & Int16(POLLOUT) == 0 {
            throw .failed("pairing or encryption to security \(level.rawValue) failed: the link ended")
        }
    }

    /// The security level the kernel reports for the link now; nil once closed.
    public var securityLevel: BlueZSecurity? {
        var value = bt_security()
        var length = socklen_t(MemoryLayout<bt_security>.size)
        guard socket.withOpenDescriptor({ getsockopt($0, SOL_BLUETOOTH, BT_SECURITY, &value, &length) }) == 0 else { return nil }
        return BlueZSecurity(level: value.level)
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

    public func now() async -> Int64 { SeqPacketSocket.now() }

    public func wait(_ microseconds: Int64) async throws(BearerError) {
        guard !socket.isClosed else { throw .closed }
        try? await Task.sleep(nanoseconds: UInt64(max(0, microseconds)) * 1000)
    }

    public func close() async { socket.close() }

    /// The controller's handle of this LE link; nil once the link (or the socket) is gone.
    public var linkHandle: UInt16? {
        var info = l2cap_conninfo()
        var length = socklen_t(MemoryLayout<l2cap_conninfo>.size)
        guard socket.withOpenDescriptor({ getsockopt($0, SOL_L2CAP, L2CAP_CONNINFO, &info, &length) }) == 0 else { return nil }
        return info.hci_handle
    }

    /// Ends the LE link itself with an HCI Disconnect, then closes the socket.
    ///
    /// Closing an ATT socket is not a disconnection: ATT's fixed channel has no close message, so
    /// the peer sees nothing, and the kernel keeps the link up for its idle timeout (2 s, 4 s on a
    /// peripheral). A new socket to the same peer within that time rides the same link. A
    /// fuzzer's next input (which must meet a device fresh from a connection), a replayed
    /// disconnection, and an emulated device that resets must end the link for real.
    ///
    /// `reason` is sent when the standard lets a host give it (0x05, 0x13-0x15, 0x1A, 0x29, 0x3B);
    /// 0x08, a supervision timeout (what a phone sees when a device resets and goes silent), becomes
    /// 0x15 (powered off), the nearest a host may say; anything else becomes 0x13 (the user ended
    /// the connection). Waits up to 2 s for Disconnection Complete.
    /// The socket is closed first (then the link's handle is used). Throws when the kernel
    /// refuses the command (it needs CAP_NET_RAW) or the controller does; the socket is closed
    /// either way. A link already gone is no error.
    public func disconnectLink(reason: UInt8 = 0x13) async throws(BearerError) {
        guard let handle = linkHandle else { return socket.close() }
        let controller = peer.controller
        // What was sent goes out first, as a firmware's last notification does before its reset:
        // an HCI Disconnect can overtake ACL data still queued in the kernel.
        await waitUntilSent(within: 500_000)
        // The socket goes first, while the link is whole, so the kernel does not release it while
        // it is tearing the link down on another CPU.
        await socket.closeAndWait()
        let code = Self.disconnectReason(for: reason)
        let peerAddress = peer.address.bdaddr
        let failure: Int32? = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let dd = hci_open_dev(Int32(controller))
                guard dd >= 0 else { return continuation.resume(returning: errno) }
                defer { Glibc.close(dd) }
                guard hci_disconnect(dd, handle, code, 2000) == 0 else { return continuation.resume(returning: errno) }
                // hci_disconnect returns when the Disconnection Complete reaches this socket, before
                // the kernel has removed the link: a connect to the same peer in between rode the
                // dying link (the VM's fuzzing saw 149 links for 150 inputs). Wait (at most 2 s)
                // until the link is gone, so the next connect makes a new one.
                var address = peerAddress
                for _ in 0..<200 where gattlab_le_link_exists(dd, &address) != 0 { usleep(10_000) }
                continuation.resume(returning: nil)
            }
        }
        guard let failure else { return }
        switch failure {
        case EPERM, EACCES:
            throw .failed("ending the LE link to \(peer.address) on hci\(controller) needs CAP_NET_RAW (HCI Disconnect); run as root or grant it")
        case EIO:
            return  // the controller refused: most often the link had just gone (Unknown Connection Identifier)
        default:
            throw socketError(failure, "cannot end the LE link to \(peer.address) on hci\(controller)")
        }
    }

    /// Waits until the kernel has handed everything sent on this socket to the controller (its
    /// send buffer is empty again), at most `microseconds`.
    func waitUntilSent(within microseconds: Int64) async {
        var size: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard socket.withOpenDescriptor({ getsockopt($0, SOL_SOCKET, SO_SNDBUF, &size, &length) }) == 0 else { return }
        let deadline = monotonicMicroseconds() + microseconds
        while monotonicMicroseconds() < deadline {
            var room: Int32 = 0
            guard socket.withOpenDescriptor({ ioctl($0, UInt(TIOCOUTQ), &room) }) == 0, room < size else { return }
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
    }

    /// The reasons a host may give in HCI Disconnect (Core 5.4, Vol 4, Part E, 7.1.6).
    static let hostReasons: Set<UInt8> = [0x05, 0x13, 0x14, 0x15, 0x1A, 0x29, 0x3B]

    /// What HCI Disconnect says for a device's `reason` (see `disconnectLink`).
    public static func disconnectReason(for reason: UInt8) -> UInt8 {
        hostReasons.contains(reason) ? reason : reason == 0x08 ? 0x15 : 0x13
    }
}

/// A listening L2CAP socket on the ATT channel of a local controller: a peripheral (the emulator
/// on real hardware) waits here for centrals. The controller must advertise as connectable
/// (`btmgmt -i hciN advertising on`); the kernel then hands each LE link's ATT channel to `accept`.
public final class BlueZListener: @unchecked Sendable {
    public let controller: UInt16
    /// The local address listened on.
    public let address: BlueZAddress
    private let fd: Int32
    private let acceptQueue = DispatchQueue(label: "gattlab.bluez-listener.accept")
    private let lock = NSLock()
    private var closed = false

    /// Listens on hci`index`'s public address, or on `address` (a static random one with `.random`).
    public init(
        controller index: UInt16, addressType: BlueZAddressType = .public, address: BlueZAddress? = nil,
        security: BlueZSecurity = .low
    ) throws(BearerError) {
        let (fd, own) = try openATTSocket(controller: index, addressType: addressType, address: address, security: security)
        guard listen(fd, 4) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .failed("cannot listen for ATT connections on hci\(index): \(errorText(code))")
        }
        self.controller = index
        self.address = own
        self.fd = fd
    }

    deinit { close() }

    /// The next central's link, or nil when none connects within `microseconds` (or after `close`).
    /// The bearer's `peer` names the central.
    public func accept(within microseconds: Int64) async -> BlueZBearer? {
        let fd = self.fd
        let controller = self.controller
        return await withCheckedContinuation { (continuation: CheckedContinuation<BlueZBearer?, Never>) in
            acceptQueue.async { [weak self] in
                guard let self, !self.isClosed, waitFor(fd, events: POLLIN, within: microseconds).ready else {
                    return continuation.resume(returning: nil)
                }
                var peer = sockaddr_l2()
                var length = socklen_t(MemoryLayout<sockaddr_l2>.size)
                let client = withUnsafeMutablePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(fd, $0, &length) }
                }
                guard client >= 0 else { return continuation.resume(returning: nil) }
                // Glibc does not export accept4; a child process must not inherit the link.
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                let target = BlueZTarget(
                    controller: controller, address: BlueZAddress(peer.l2_bdaddr),
                    addressType: BlueZAddressType(kernelValue: peer.l2_bdaddr_type) ?? .public)
                continuation.resume(returning: BlueZBearer(fd: client, peer: target))
            }
        }
    }

    /// Stops listening; links already accepted stay open.
    public func close() {
        lock.lock(); defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        shutdown(fd, Int32(SHUT_RDWR))
        let fd = self.fd
        acceptQueue.async { _ = Glibc.close(fd) }
    }

    private var isClosed: Bool {
        lock.lock(); defer { lock.unlock() }
        return closed
    }
}

// MARK: - Socket set-up

/// `sockaddr_l2` for an LE address on a fixed channel: the family, no PSM, the address reversed as
/// `bdaddr_t` keeps it, the channel little-endian.
func l2Address(_ address: BlueZAddress, type: BlueZAddressType, channel: UInt16 = attChannelID) -> sockaddr_l2 {
    var result = sockaddr_l2()
    result.l2_family = sa_family_t(AF_BLUETOOTH)
    result.l2_psm = 0
    result.l2_bdaddr = address.bdaddr
    result.l2_cid = gattlab_htobs(channel)
    result.l2_bdaddr_type = type.kernelValue
    return result
}

/// The public address of hci`index`, as the kernel reports it.
func controllerAddress(_ index: UInt16) throws(BearerError) -> BlueZAddress {
    var address = bdaddr_t()
    guard hci_devba(Int32(index), &address) == 0 else {
        let code = errno
        switch code {
        case ENODEV: throw .failed("no controller hci\(index); list the controllers with 'btmgmt info'")
        case ENETDOWN: throw .failed("controller hci\(index) is down; power it on with 'btmgmt -i hci\(index) power on'")
        default: throw socketError(code, "cannot read the address of controller hci\(index)")
        }
    }
    guard gattlab_bdaddr_is_any(&address) == 0 else {
        throw .failed("controller hci\(index) has no public address; give its static random address with the random address type")
    }
    return BlueZAddress(address)
}

/// An L2CAP SEQPACKET socket bound to the ATT channel of hci`index` (at `address`, else the
/// controller's public address) with `security` set; and the address bound.
func openATTSocket(
    controller index: UInt16, addressType: BlueZAddressType, address: BlueZAddress?, security: BlueZSecurity
) throws(BearerError) -> (fd: Int32, address: BlueZAddress) {
    let fd = socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_L2CAP)
    guard fd >= 0 else { throw socketError(errno, "cannot open a Bluetooth L2CAP socket") }
    do throws(BearerError) {
        let own: BlueZAddress
        if let address { own = address } else { own = try controllerAddress(index) }
        var local = l2Address(own, type: addressType)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_l2>.size)) }
        }
        guard bound == 0 else {
            let code = errno
            if code == EADDRINUSE {
                throw .failed("the ATT channel of hci\(index) (\(own)) is already in use by another program; stop it first")
            }
            throw socketError(code, "cannot bind to hci\(index) (\(own), \(addressType.rawValue))")
        }
        var wanted = bt_security(level: security.level, key_size: 0)
        guard setsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &wanted, socklen_t(MemoryLayout<bt_security>.size)) == 0 else {
            throw socketError(errno, "cannot ask hci\(index) for security level \(security.rawValue)")
        }
        return (fd, own)
    } catch {
        Glibc.close(fd)
        throw error
    }
}

/// Connects without blocking past `microseconds`, then puts the socket back into blocking mode.
func connectSocket(_ fd: Int32, to target: BlueZTarget, within microseconds: Int64) throws(BearerError) {
    let flags = fcntl(fd, F_GETFL)
    guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
        throw socketError(errno, "cannot set up the connection to \(target.address)")
    }
    var remote = l2Address(target.address, type: target.addressType)
    let rc = withUnsafePointer(to: &remote) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_l2>.size)) }
    }
    if rc != 0 {
        let code = errno
        guard code == EINPROGRESS else { throw connectError(code, target, microseconds) }
        let wait = waitFor(fd, events: POLLOUT, within: microseconds)
        guard wait.ready else { throw connectError(ETIMEDOUT, target, microseconds) }
        var pending: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &pending, &length) == 0 else { throw connectError(errno, target, microseconds) }
        if pending != 0 { throw connectError(pending, target, microseconds) }
        // Hung up without an error: the link went away before it was usable.
        if wait.revents & Int16(POLLOUT) == 0 { throw connectError(ECONNREFUSED, target, microseconds) }
    }
    guard fcntl(fd, F_SETFL, flags) == 0 else { throw socketError(errno, "cannot set up the connection to \(target.address)") }
}

// MARK: - Reading

/// poll for `events`, resumed after signals, until `microseconds` have passed.
/// Waits until the kernel reports the link encrypted (`BT_SECURITY` with a key size), polling
/// every 20 ms; fails when the link ends first or the time is up (pairing refused, no agent).
func waitForEncryption(_ fd: Int32, level: BlueZSecurity, within microseconds: Int64) throws(BearerError) {
    let deadline = monotonicMicroseconds() + max(0, microseconds)
    while true {
        var value = bt_security()
        var length = socklen_t(MemoryLayout<bt_security>.size)
        guard getsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &value, &length) == 0 else {
            throw .failed("pairing or encryption to security \(level.rawValue) failed: the link ended")
        }
        if value.key_size > 0, value.level >= level.level { return }
        var p = pollfd(fd: fd, events: 0, revents: 0)
        if poll(&p, 1, 0) > 0, p.revents & Int16(POLLHUP | POLLERR) != 0 {
            throw .failed("pairing or encryption to security \(level.rawValue) failed: the link ended")
        }
        guard monotonicMicroseconds() < deadline else {
            throw .failed("the link did not reach security \(level.rawValue) in time; pairing may be waiting for an agent (is bluetoothd running?)")
        }
        usleep(20_000)
    }
}

func waitFor(_ fd: Int32, events: Int32, within microseconds: Int64) -> (ready: Bool, revents: Int16) {
    let deadline = monotonicMicroseconds() + max(0, microseconds)
    while true {
        var p = pollfd(fd: fd, events: Int16(events), revents: 0)
        let left = max(0, deadline - monotonicMicroseconds())
        let ready = poll(&p, 1, Int32(clamping: (left + 999) / 1000))
        if ready > 0 { return (true, p.revents) }
        if ready < 0, errno == EINTR, left > 0 { continue }
        return (false, 0)
    }
}



// MARK: - Errors for people

/// Failures of the socket calls themselves, with what to do where the cause is common.
func socketError(_ code: Int32, _ what: String) -> BearerError {
    switch code {
    case EAFNOSUPPORT:
        .failed("this kernel has no Bluetooth support (AF_BLUETOOTH); use a machine with Bluetooth, or the VM harness")
    case EACCES, EPERM:
        .failed("permission denied opening a Bluetooth socket; run as root or grant CAP_NET_RAW/CAP_NET_ADMIN")
    case ENODEV:
        .failed("\(what): no such controller")
    default:
        .failed("\(what): \(errorText(code))")
    }
}

func connectError(_ code: Int32, _ target: BlueZTarget, _ microseconds: Int64) -> BearerError {
    let device = "\(target.address) (\(target.addressType.rawValue))"
    switch code {
    case ETIMEDOUT, ECONNREFUSED, EHOSTDOWN, ECONNRESET, ECONNABORTED:
        return .failed(
            "\(device) did not accept the connection within \(seconds(microseconds)) (\(errorText(code))); check that it is in range, "
                + "advertising as connectable, and that its address type is \(target.addressType.rawValue)")
    case EHOSTUNREACH:
        return .failed("no route from hci\(target.controller) to \(device): the controller is down or not LE-capable, or the local address it was bound to is not its identity address")
    case EACCES, EPERM:
        return .failed("\(device) connected but the link did not reach the security asked for (pairing or encryption failed); pair the devices first or ask for less security")
    default:
        return socketError(code, "cannot connect to \(device) through hci\(target.controller)")
    }
}

func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }

/// "10 s", "2.5 s".
func seconds(_ microseconds: Int64) -> String {
    let tenths = (max(0, microseconds) + 50_000) / 100_000
    return tenths % 10 == 0 ? "\(tenths / 10) s" : "\(tenths / 10).\(tenths % 10) s"
}

// MARK: - Controllers

/// A local controller, before anything is done with it.
public enum BlueZController {
    /// Whether hci`index` exists on a kernel with Bluetooth, whatever its power state: an error
    /// that says what is missing (no AF_BLUETOOTH, no such controller, no permission) otherwise.
    public static func check(_ index: UInt16) throws(BearerError) {
        var info = hci_dev_info()
        guard hci_devinfo(Int32(index), &info) == 0 else {
            let code = errno
            if code == ENODEV {
                throw .failed("no controller hci\(index); list the controllers with 'btmgmt info'")
            }
            throw socketError(code, "cannot query controller hci\(index)")
        }
    }

    /// Whether this process may send HCI commands (CAP_NET_RAW in its effective set), as
    /// `BlueZBearer.disconnectLink` must.
    public static var maySendCommands: Bool {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
              let mask = UInt64(line.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        else { return geteuid() == 0 }
        return mask & (1 << 13) != 0  // CAP_NET_RAW
    }

    /// Whether hci`index` is powered (up).
    public static func isUp(_ index: UInt16) -> Bool {
        var info = hci_dev_info()
        guard hci_devinfo(Int32(index), &info) == 0 else { return false }
        return info.flags & (1 << UInt32(HCI_UP)) != 0
    }
}
