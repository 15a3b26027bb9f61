import CPcap
#if canImport(Glibc)
import Glibc
#endif

/// Why a live source could not start or went on: kept apart from file errors because the user's
/// remedy differs (a machine with Bluetooth, root or CAP_NET_RAW, installing BlueZ).
public struct LiveSourceError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// No Bluetooth here: no AF_BLUETOOTH in the kernel, no monitor device, no btmon.
        case unavailable
        /// The monitor channel needs CAP_NET_RAW.
        case permissionDenied
        /// Anything else: the source started and then failed.
        case failed
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    static let monitorPrefix = "cannot open the Bluetooth monitor"

    /// Names the remedy from what the system said: the errno text libpcap or btmon printed,
    /// compared in the process's own locale, and libpcap's status codes.
    static func classify(status: Int32 = 0, message: String, source: String) -> LiveSourceError {
        func said(_ code: Int32) -> Bool { message.contains(String(cString: strerror(code))) }
        if status == PCAP_ERROR_PERM_DENIED || said(EPERM) || said(EACCES) {
            return LiveSourceError(.permissionDenied, "\(monitorPrefix)\(source): permission denied; run as root or grant CAP_NET_RAW (setcap cap_net_raw+ep on the binary)")
        }
        if status == PCAP_ERROR_NO_SUCH_DEVICE || said(EAFNOSUPPORT) || said(ENODEV) {
            return LiveSourceError(.unavailable, "\(monitorPrefix)\(source): this kernel has no Bluetooth support (no bluetooth-monitor device); run on a machine with Bluetooth or inside the VM harness (make vm-test)")
        }
        return LiveSourceError(.failed, "\(monitorPrefix)\(source): \(message)")
    }
}

/// What a live source gave after waiting.
public enum LiveRead {
    /// A record, valid until the next call (like a reader's).
    case record(CaptureRecord)
    /// Nothing within the wait, or a signal interrupted it: check whether to stop, then ask again.
    case idle
    /// The source ended (after `stop()`, or it closed by itself); nothing more will come.
    case end
}

/// A source of records that arrive over time. `next` never blocks longer than its timeout, so
/// the caller sees Ctrl-C, a duration limit and its own flushing in time.
public protocol LiveSource: AnyObject {
    /// For the summary line: where the records came from.
    var name: String { get }
    /// Whether records carry monitor opcodes and controller indexes (the writer keeps them as they are).
    var isMonitor: Bool { get }
    func next(timeoutMilliseconds: Int32) throws -> LiveRead
    /// Asks the source to end: what it already holds still comes out of `next`, then `.end`.
    func stop()
}

/// Monotonic microseconds, for timeouts and durations that must not jump with the wall clock.
public func monotonicMicros() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}

/// Wall-clock microseconds since the Unix epoch, the capture's time base.
func wallMicros() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}

extension CaptureRecord {
    /// A Linux monitor packet (DLT 254 and btsnoop 2001 alike once the header is read): a 4-byte
    /// big-endian index and opcode before the HCI packet. Too short stays `.other`, for the decoder to report.
    static func monitor(number: Int, fileOffset: Int64, timestamp: Int64, packet: UnsafeRawBufferPointer,
                        originalLength: Int) -> CaptureRecord {
        var record = CaptureRecord(number: number, fileOffset: fileOffset, timestamp: timestamp, direction: .unknown,
                                   kind: .other, originalLength: max(originalLength, packet.count), data: packet)
        guard packet.count >= 4 else { return record }
        record.controller = packet.u16be(0)
        record.rawType = packet.u16be(2)
        (record.kind, record.direction) = MonitorOpcode.classify(record.rawType)
        record.data = packet.dropping(4)
        record.originalLength = max(record.data.count, record.originalLength - 4)
        return record
    }
}

// MARK: - libpcap's bluetooth-monitor device

/// Every controller's HCI traffic from the kernel's monitor channel, through libpcap's
/// `bluetooth-monitor` device (DLT 254). Needs a kernel with Bluetooth and CAP_NET_RAW.
public final class LiveMonitorSource: LiveSource {
    public static let defaultDevice = "bluetooth-monitor"
    public let name: String
    public let isMonitor = true
    private let handle: OpaquePointer
    /// The socket behind the handle, polled so a wait ends on time or on a signal: libpcap's own
    /// read for this device blocks and retries on EINTR.
    private let fd: Int32
    private var number = 0
    private var stopping = false

    public init(device: String = LiveMonitorSource.defaultDevice) throws(LiveSourceError) {
        name = device
        let suffix = device == Self.defaultDevice ? "" : " (\(device))"
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        let created: OpaquePointer? = pcap_create(device, &errbuf)
        guard let handle = created else {
            let message = String(decoding: errbuf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw LiveSourceError.classify(message: message, source: suffix)
        }
        // Large enough for the largest monitor record; immediate so each packet comes when it happens.
        pcap_set_snaplen(handle, 262_144)
        pcap_set_immediate_mode(handle, 1)
        pcap_set_timeout(handle, 100)
        let status = pcap_activate(handle)
        if status < 0 {
            let message = String(cString: pcap_geterr(handle))
            pcap_close(handle)
            throw LiveSourceError.classify(status: status, message: message, source: suffix)
        }
        let dlt = pcap_datalink(handle)
        guard dlt == 254 else {
            pcap_close(handle)
            throw LiveSourceError(.unavailable, "\(LiveSourceError.monitorPrefix)\(suffix): the device gives link type \(dlt), not 254 (BLUETOOTH_LINUX_MONITOR)")
        }
        self.handle = handle
        fd = pcap_get_selectable_fd(handle)
    }

    deinit { pcap_close(handle) }

    public func stop() { stopping = true }

    public func next(timeoutMilliseconds: Int32) throws -> LiveRead {
        if fd >= 0 {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // After stop() only what is already queued in the socket is read.
            let n = poll(&p, 1, stopping ? 0 : timeoutMilliseconds)
            if n < 0 {
                if errno == EINTR { return .idle }
                throw LiveSourceError(.failed, "the Bluetooth monitor: poll failed: \(String(cString: strerror(errno)))")
            }
            if n == 0 { return stopping ? .end : .idle }
            if p.revents & Int16(POLLIN) == 0 {
                throw LiveSourceError(.failed, "the Bluetooth monitor socket closed")
            }
        }
        var header: UnsafeMutablePointer<pcap_pkthdr>?
        var bytes: UnsafePointer<UInt8>?
        let rc = pcap_next_ex(handle, &header, &bytes)
        switch rc {
        case 1: break
        case 0: return stopping ? .end : .idle
        case -2: return .end
        default:
            throw LiveSourceError(.failed, "the Bluetooth monitor: \(String(cString: pcap_geterr(handle)))")
        }
        guard let header, let bytes else { return .idle }
        let h = header.pointee
        number += 1
        let timestamp = Int64(h.ts.tv_sec) &* 1_000_000 &+ Int64(h.ts.tv_usec)
        let packet = UnsafeRawBufferPointer(start: bytes, count: Int(h.caplen))
        return .record(.monitor(number: number, fileOffset: -1, timestamp: timestamp, packet: packet,
                                originalLength: Int(h.len)))
    }
}

// MARK: - A btsnoop stream that grows

/// btsnoop records parsed as bytes arrive (a FIFO btmon writes, a file that grows): a record is
/// returned once it is whole, and a cut one waits for its bytes. Memory is one buffer, grown
/// only to the largest record btsnoop allows.
final class BTSnoopStream {
    let path: String
    private var buffer: UnsafeMutableRawPointer
    private var capacity: Int
    private var start = 0
    private var end = 0
    private var headerRead = false
    private(set) var datalink: UInt32?
    private(set) var number = 0
    /// File offset of `start`.
    private(set) var offset: Int64 = 0

    init(path: String, capacity: Int = 1 << 18) {
        self.path = path
        self.capacity = capacity
        buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// Bytes received that are not yet part of a returned record (a cut record at the end).
    var pending: Int { end - start }

    /// Reads what `fd` has (non-blocking): the count, 0 at end of file, -1 with errno (EAGAIN: nothing yet).
    func read(from fd: Int32) -> Int {
        if capacity - end < 4096, start > 0 {
            // Records already returned are done with: move the cut one to the front.
            let kept = end - start
            if kept > 0 { memmove(buffer, buffer + start, kept) }
            start = 0
            end = kept
        }
        if capacity - end == 0 { return -1 }
        let n = Glibc.read(fd, buffer + end, capacity - end)
        if n > 0 { end += n }
        return n
    }

    /// Bytes given directly (tests, and sources that are not descriptors).
    func append(_ bytes: [UInt8]) {
        reserve(end - start + bytes.count)
        bytes.withUnsafeBytes { if let b = $0.baseAddress { (buffer + end).copyMemory(from: b, byteCount: bytes.count) } }
        end += bytes.count
    }

    private func reserve(_ needed: Int) {
        if start > 0 {
            let kept = end - start
            if kept > 0 { memmove(buffer, buffer + start, kept) }
            start = 0
            end = kept
        }
        guard needed > capacity else { return }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: needed, alignment: 16)
        grown.copyMemory(from: buffer, byteCount: end)
        buffer.deallocate()
        buffer = grown
        capacity = needed
    }

    /// The next whole record, or nil until more bytes come. Valid until the next `read` or `append`.
    func next() throws(CaptureError) -> CaptureRecord? {
        if !headerRead {
            guard end - start >= 16 else { return nil }
            let h = UnsafeRawBufferPointer(start: buffer + start, count: 16)
            guard Array(h.prefix(8)) == Array("btsnoop\0".utf8) else {
                throw CaptureError(.corrupt, path: path, offset: 0, "not btsnoop: the stream does not start with its signature")
            }
            let version = h.u32be(8), link = h.u32be(12)
            guard version == 1, link == 2001 else {
                throw CaptureError(.unsupported, path: path, offset: 8,
                                   "btsnoop version \(version), datalink \(link): expected version 1, datalink 2001 (Linux monitor)")
            }
            datalink = link
            headerRead = true
            start += 16
            offset += 16
        }
        guard end - start >= 24 else { return nil }
        let h = UnsafeRawBufferPointer(start: buffer + start, count: 24)
        let included = Int(h.u32be(4))
        if included > BTSnoopReader.maxRecordLength {
            throw CaptureError(.corrupt, path: path, record: number + 1, offset: offset,
                               "included length \(included) is larger than any HCI packet (at most \(BTSnoopReader.maxRecordLength))")
        }
        let total = 24 + included
        if end - start < total {
            // Room for the whole record, so the next reads can complete it.
            if total > capacity - start { reserve(max(total, capacity)) }
            return nil
        }
        let original = Int(h.u32be(0))
        let flags = h.u32be(8)
        let timestamp = h.i64be(16) &- BTSnoopReader.epochOffset
        let body = UnsafeRawBufferPointer(start: buffer + start + 24, count: included)
        number += 1
        var record = CaptureRecord(number: number, fileOffset: offset, timestamp: timestamp, direction: .unknown,
                                   kind: .other, originalLength: max(original, included), data: body)
        record.controller = UInt16(truncatingIfNeeded: flags >> 16)
        record.rawType = UInt16(truncatingIfNeeded: flags)
        (record.kind, record.direction) = MonitorOpcode.classify(record.rawType)
        start += total
        offset += Int64(total)
        return record
    }
}

// MARK: - btmon

/// Records from BlueZ's `btmon -w`, followed as it writes: btmon writes into a FIFO in a private
/// temporary folder, so records arrive as they happen (no file to poll) and btmon's own text goes
/// elsewhere. Any program that takes `-w PATH` and writes btsnoop 2001 there works the same way
/// (the tests use a stand-in script on PATH).
public final class BTMonSource: LiveSource {
    public let name: String
    public let isMonitor = true
    private let folder: String
    private let fifo: String
    private let fifoFD: Int32
    private let outputFD: Int32
    private let pid: pid_t
    private let stream: BTSnoopStream
    private var eof = false
    private var exitStatus: Int32?
    private var stopDeadline: Int64?
    /// The last of btmon's own output (banner, errors), for the error line.
    private var output: [UInt8] = []

    /// Starts `executable` (searched on PATH) with `-w FIFO` and the extra arguments.
    public init(executable: String = "btmon", arguments extra: [String] = []) throws(LiveSourceError) {
        name = executable
        let tmp = getenv("TMPDIR").map { String(cString: $0) } ?? ""
        let base = tmp.isEmpty ? "/tmp" : tmp
        var template = Array("\(base)/gattlab-btmon-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map { mkdtemp($0) != nil } ?? false }
        guard made else {
            throw LiveSourceError(.failed, "cannot create a temporary folder in \(base): \(String(cString: strerror(errno)))")
        }
        folder = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        fifo = folder + "/monitor.btsnoop"
        stream = BTSnoopStream(path: "\(executable) output")
        guard mkfifo(fifo, 0o600) == 0 else {
            let e = errno
            rmdir(folder)
            throw LiveSourceError(.failed, "cannot create a FIFO for \(executable): \(String(cString: strerror(e)))")
        }
        // Non-blocking: opening waits for no writer, and a FIFO no writer ever opened never
        // reports end of file, so a btmon that fails before opening it is seen by its exit.
        let fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        var pipeFDs: [Int32] = [-1, -1]
        // pipe2 is hidden without _GNU_SOURCE: pipe, then close-on-exec, so only btmon's copy
        // (dup2'd onto its stdout and stderr) stays open in the child.
        guard fd >= 0, pipe(&pipeFDs) == 0 else {
            let e = errno
            if fd >= 0 { close(fd) }
            unlink(fifo); rmdir(folder)
            throw LiveSourceError(.failed, "cannot set up reading from \(executable): \(String(cString: strerror(e)))")
        }
        for p in pipeFDs { _ = fcntl(p, F_SETFD, FD_CLOEXEC) }
        fifoFD = fd
        outputFD = pipeFDs[0]
        _ = fcntl(outputFD, F_SETFL, fcntl(outputFD, F_GETFL) | O_NONBLOCK)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // gattlab ignores SIGPIPE and catches SIGINT/SIGTERM; btmon gets the defaults back.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGPIPE, SIGINT, SIGTERM] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable, "-w", fifo] + extra).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var child: pid_t = 0
        let rc = posix_spawnp(&child, executable, &actions, &attributes, argv, environ)
        close(pipeFDs[1])
        if rc != 0 {
            close(fifoFD); close(outputFD)
            unlink(fifo); rmdir(folder)
            if rc == ENOENT {
                throw LiveSourceError(.unavailable, "cannot run \(executable): not found on PATH; install BlueZ (apt-get install bluez) or leave out --via btmon")
            }
            throw LiveSourceError(.failed, "cannot run \(executable): \(String(cString: strerror(rc)))")
        }
        pid = child
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
        close(fifoFD)
        close(outputFD)
        unlink(fifo)
        rmdir(folder)
    }

    /// btmon ends on SIGINT as on Ctrl-C: it closes its file, and the FIFO then ends.
    public func stop() {
        guard stopDeadline == nil else { return }
        stopDeadline = monotonicMicros() + 3_000_000
        if exitStatus == nil { kill(pid, SIGINT) }
    }

    /// Bytes of a record btmon had begun but not finished when it ended.
    public var cutBytesAtEnd: Int { eof ? stream.pending : 0 }

    public func next(timeoutMilliseconds: Int32) throws -> LiveRead {
        let deadline = monotonicMicros() + Int64(timeoutMilliseconds) * 1000
        while true {
            if let record = try stream.next() { return .record(record) }
            if eof {
                waitForExit()
                try checkExit()
                return .end
            }
            try reap(blocking: false)
            if exitStatus != nil {
                // Its writing end is closed: whatever the FIFO holds is read without waiting,
                // and a FIFO it never opened reads as ended. Anything but more data ends it (a
                // read that found nothing must not be tried again and again: that spun here).
                drainOutput()
                if readFIFO() == .data { continue }
                eof = true
                continue
            }
            if let stopDeadline, monotonicMicros() > stopDeadline {
                kill(pid, SIGKILL)  // it did not end on SIGINT: what the FIFO holds is still read
                self.stopDeadline = .max
            }
            let left = max(0, deadline - monotonicMicros())
            var fds = [pollfd(fd: fifoFD, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: outputFD, events: Int16(POLLIN), revents: 0)]
            // Short polls while waiting for the child to exit: a FIFO nobody opened gives no event.
            let wait = Int32(min(left / 1000, 100))
            let n = poll(&fds, 2, wait)
            if n < 0 {
                if errno == EINTR { return .idle }
                throw LiveSourceError(.failed, "\(name): poll failed: \(String(cString: strerror(errno)))")
            }
            if fds[1].revents != 0 { drainOutput() }
            if fds[0].revents != 0 {
                if readFIFO() == .end { eof = true }
                continue
            }
            if monotonicMicros() >= deadline { return .idle }
        }
    }

    enum FIFORead { case data, end, nothingYet }

    /// Reads what the FIFO holds.
    private func readFIFO() -> FIFORead {
        let n = stream.read(from: fifoFD)
        if n > 0 { return .data }
        if n == 0 { return .end }
        return errno == EAGAIN || errno == EINTR ? .nothingYet : .end
    }

    private func drainOutput() {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(outputFD, $0.baseAddress, $0.count) }
            guard n > 0 else { return }
            output.append(contentsOf: chunk.prefix(n))
            if output.count > 8192 { output.removeFirst(output.count - 4096) }
        }
    }

    private func reap(blocking: Bool = false) throws(LiveSourceError) {
        guard exitStatus == nil else { return }
        var status: Int32 = 0
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { exitStatus = status; return }
            if r == 0 { return }
            if errno == EINTR { continue }
            exitStatus = 0  // ECHILD: nothing left to wait for
            return
        }
    }

    /// After the FIFO ended: btmon closes it only when it exits, but a program that closes it
    /// and lingers is asked to stop, then killed, rather than waited for forever.
    private func waitForExit() {
        while exitStatus == nil {
            try? reap()
            guard exitStatus == nil else { return }
            if stopDeadline == nil { stop() }
            if let stopDeadline, monotonicMicros() > stopDeadline {
                kill(pid, SIGKILL)
                self.stopDeadline = .max
            }
            usleep(10_000)
        }
    }

    /// A btmon that failed says why on its output: mapped to the same errors as libpcap's.
    private func checkExit() throws(LiveSourceError) {
        drainOutput()
        guard let status = exitStatus else { return }
        let exited = status & 0x7F == 0
        let code = (status >> 8) & 0xFF
        let signal = status & 0x7F
        // Ended by the stop we asked for, or exited cleanly: a normal end.
        if exited && code == 0 { return }
        if !exited && stopDeadline != nil && (signal == SIGINT || signal == SIGKILL || signal == SIGTERM) { return }
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
            .map { $0.trimmingCharacters() }.filter { !$0.isEmpty && !$0.hasPrefix("Bluetooth monitor ver") }
        let said = lines.last ?? (exited ? "exit status \(code)" : "killed by signal \(signal)")
        if stream.number == 0 {
            let e = LiveSourceError.classify(message: said, source: " (\(name))")
            if e.kind != .failed { throw e }
        }
        throw LiveSourceError(.failed, "\(name) stopped: \(said)")
    }
}

extension Substring {
    fileprivate func trimmingCharacters() -> String {
        String(drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
    }
}

// MARK: - A recorded capture as a source

/// A capture file fed through the live path: for tests and for splitting a recording into a ring
/// of files. It never waits.
public final class CaptureFileSource: LiveSource {
    public let name: String
    public let isMonitor: Bool
    private let reader: any CaptureReader
    private var stopping = false

    public init(reader: any CaptureReader) {
        self.reader = reader
        name = reader.path
        isMonitor = reader.linkType.hasControllerIndex
    }

    public func stop() { stopping = true }

    public func next(timeoutMilliseconds: Int32) throws -> LiveRead {
        guard !stopping, let record = try reader.next() else { return .end }
        return .record(record)
    }
}
