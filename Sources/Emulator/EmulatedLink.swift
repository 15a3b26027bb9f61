import Capture
import Transport

/// Link-level control a scripted central needs beside ATT: connect, pair, hang up.
public protocol LinkControl: Sendable {
    /// Opens the link (LE Connection Complete). Throws nothing: an emulated device always answers.
    func connect() async
    /// Encrypts the link, as pairing or a bonded reconnection does (Encryption Change).
    func encrypt() async
    /// Pairs with the Security Manager and records it as a phone's HCI log shows it: SMP on
    /// CID 6, LE Enable Encryption, Encryption Change, Read Encryption Key Size, key distribution.
    /// The link is encrypted afterwards, as `encrypt()` leaves it.
    func pair(_ options: PairingOptions) async
    /// Whether the link is up.
    func isConnected() async -> Bool
}

/// Timing of the emulated radio link.
public struct LinkTiming: Sendable, Hashable {
    /// Connection interval in microseconds (7.5 ms to 4 s; phones use 7.5-50 ms).
    public var connectionInterval: Int64 = 15_000
    /// Controller ACL buffer size (27 on LE controllers without Data Length Extension).
    public var aclBufferSize = 27
    public init(connectionInterval: Int64 = 15_000, aclBufferSize: Int = 27) {
        self.connectionInterval = connectionInterval
        self.aclBufferSize = aclBufferSize
    }
}

/// The phone's end of a virtual BLE link to an emulated device, deterministic by construction:
/// one actor owns the device, its scheduler and the recording, and every PDU takes virtual time.
/// A request is answered about two connection intervals after it is sent (PROTOCOLS.md §7);
/// device timers fire when the central waits. Everything is recorded as the phone's HCI log.
public actor EmulatedLink: TimedATTBearer, LinkControl {
    public let seed: UInt64
    public let timing: LinkTiming
    private let scheduler: VirtualScheduler
    private let device: any DeviceModel
    private var recorder: HCIRecorder
    private var random: SeededRandom
    private var inbox: [[UInt8]] = []
    private var connected = false
    private let peer: [UInt8]
    /// The keys of the last pairing that bonded, for `resumeEncryption()`.
    public private(set) var bond: BondedKeys?
    /// Records ATT PDUs each way, for tests.
    public private(set) var sentPDUs: [[UInt8]] = []
    public private(set) var receivedPDUs: [[UInt8]] = []
    /// Why the device's firmware crashed, each time it did (see `DeviceModel.crash`), in order.
    public private(set) var crashes: [String] = []

    /// The start of every recording: 2025-06-01 10:00:00 UTC.
    public static let epoch: Int64 = 1_748_772_000_000_000

    /// `handle` is the HCI connection handle every connection of this link gets (0x0040 unless
    /// several links share one recording).
    public init(seed: UInt64, timing: LinkTiming = LinkTiming(), handle: UInt16 = 0x0040, device factory: DeviceFactory) {
        self.seed = seed
        self.timing = timing
        var random = SeededRandom(seed: seed)
        let scheduler = VirtualScheduler(start: Self.epoch + random.below(1_000_000))
        self.scheduler = scheduler
        device = factory(scheduler, seed)
        recorder = HCIRecorder(handle: handle & 0x0FFF, aclBufferSize: timing.aclBufferSize)
        // A static random address (top two bits set), little-endian as HCI carries it.
        var address = (0..<6).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        address[5] |= 0xC0
        peer = address
        self.random = random
    }

    /// What was recorded so far.
    public func recording() -> Recording { recorder.recording }

    /// Runs a closure on the device model (tests and scenarios inspect state this way).
    public func withDevice<T: Sendable>(_ body: (any DeviceModel) -> T) -> T { body(device) }

    private var jitter: Int64 { random.below(timing.connectionInterval / 10) }

    private func tick(_ intervals: Int64 = 1) {
        scheduler.advance(to: scheduler.now + intervals * timing.connectionInterval + jitter)
    }

    // MARK: LinkControl

    public func connect() {
        guard !connected else { return }
        tick()
        connected = true
        inbox = []
        device.server.resetConnection()
        recorder.connectionComplete(peer: peer, interval: UInt16(timing.connectionInterval / 1250), at: scheduler.now)
        device.connected()
        flushDevice()
    }

    public func encrypt() {
        guard connected else { return }
        tick(4)
        device.server.encrypted = true
        recorder.encryptionChange(at: scheduler.now)
    }

    public func pair(_ options: PairingOptions) {
        guard connected else { return }
        tick()
        // The phone's public address, the same for every pairing of this link.
        var r = SeededRandom(seed: seed &+ 13)
        let phoneAddress = (0..<6).map { _ in UInt8(truncatingIfNeeded: r.next()) }
        let plan = PairingPlan(options, random: &random, deviceAddress: peer, phoneAddress: phoneAddress)
        for step in plan.steps {
            runTimers(upTo: scheduler.now)
            guard connected else { return }
            switch step {
            case .smp(let sent, let pdu):
                if sent {
                    let fragments = recorder.smp(pdu, sent: true, at: scheduler.now)
                    tick()
                    recorder.completedPackets(fragments, at: scheduler.now)
                } else {
                    // An answer, or the next PDU of a run the device sends: an interval on.
                    tick()
                    recorder.smp(pdu, sent: false, at: scheduler.now)
                }
            case .pause(let time):
                runTimers(upTo: scheduler.now + time)
                scheduler.advance(to: scheduler.now + time)
            case .encrypt(let rand, let ediv, let key):
                tick()
                startEncryption(rand: rand, ediv: ediv, key: key)
            case .readKeySize(let size):
                readKeySize(size)
            }
        }
        if let bond = plan.bond { self.bond = bond }
    }

    /// A bonded phone encrypting a later connection with the LTK of `bond` (LE Enable Encryption
    /// with its EDIV and Rand, Encryption Change, Read Encryption Key Size), as Android does
    /// when it reconnects to a bonded device. False without a bond or a link.
    @discardableResult
    public func resumeEncryption() -> Bool {
        guard connected, let bond else { return false }
        tick()
        startEncryption(rand: bond.rand, ediv: bond.ediv, key: bond.ltk.unsafeBytes)
        readKeySize(bond.keySize)
        return true
    }

    /// LE Enable Encryption, its Command Status, and Encryption Change about two intervals later;
    /// the device's server is encrypted from then on.
    private func startEncryption(rand: UInt64, ediv: UInt16, key: [UInt8]) {
        recorder.startEncryption(rand: rand, ediv: ediv, key: key, at: scheduler.now)
        recorder.commandStatus(0x2019, at: scheduler.now + 400)
        tick(2)
        device.server.encrypted = true
        recorder.encryptionChange(at: scheduler.now)
    }

    /// HCI Read Encryption Key Size and its Command Complete (Android asks after every
    /// Encryption Change).
    private func readKeySize(_ size: Int) {
        scheduler.advance(to: scheduler.now + 300)
        recorder.readEncryptionKeySize(at: scheduler.now)
        scheduler.advance(to: scheduler.now + 500)
        recorder.commandComplete(0x1408, [0x00] + recorder.handleBytes + [UInt8(min(16, max(0, size)))], at: scheduler.now)
    }

    public func isConnected() -> Bool { connected }

    public func now() -> Int64 { scheduler.now }

    // MARK: ATTBearer

    public func send(_ pdu: [UInt8]) throws(BearerError) {
        guard connected else { throw .closed }
        guard pdu.count <= maxBearerPDU else { throw .tooLarge(pdu.count) }
        runTimers(upTo: scheduler.now)
        guard connected else { throw .closed }
        sentPDUs.append(pdu)
        let fragments = recorder.att(pdu, sent: true, at: scheduler.now)
        tick()
        recorder.completedPackets(fragments, at: scheduler.now)
        let answers = device.server.handle(pdu)
        if !answers.isEmpty { tick() }
        deliver(answers)
        handleDeviceDisconnect()
    }

    public func receive() throws(BearerError) -> [UInt8] {
        // An hour of virtual time without anything from the device ends the wait as a closed link.
        guard let pdu = try receive(within: 3_600_000_000) else { throw .closed }
        return pdu
    }

    public func receive(within microseconds: Int64) throws(BearerError) -> [UInt8]? {
        let deadline = scheduler.now + max(0, microseconds)
        while true {
            if !inbox.isEmpty { return inbox.removeFirst() }
            guard connected else { throw .closed }
            guard let next = scheduler.nextTime, next <= deadline else {
                scheduler.advance(to: deadline)
                return nil
            }
            runTimers(upTo: next)
        }
    }

    public func wait(_ microseconds: Int64) throws(BearerError) {
        runTimers(upTo: scheduler.now + max(0, microseconds))
        scheduler.advance(to: scheduler.now + max(0, microseconds))
    }

    /// The phone hangs up: HCI Disconnect, then Disconnection Complete with 0x16 (local host).
    public func close() {
        guard connected else { return }
        tick()
        recorder.command(0x0406, recorder.handleBytes + [0x13], at: scheduler.now)
        tick()
        endLink(reason: 0x16)
    }

    // MARK: Internals

    private func runTimers(upTo time: Int64) {
        while let next = scheduler.nextTime, next <= time {
            scheduler.runNext()
            flushDevice()
            handleDeviceDisconnect()
        }
    }

    private func flushDevice() {
        guard connected else {
            _ = device.server.takeOutgoing()
            return
        }
        deliver(device.server.takeOutgoing())
    }

    private func deliver(_ pdus: [[UInt8]]) {
        for (i, pdu) in pdus.enumerated() {
            if i > 0 { tick() }
            receivedPDUs.append(pdu)
            recorder.att(pdu, sent: false, at: scheduler.now)
            inbox.append(pdu)
        }
    }

    private func handleDeviceDisconnect() {
        if let why = device.crash {
            device.crash = nil
            crashes.append(why)
        }
        guard let reason = device.requestedDisconnect else { return }
        device.requestedDisconnect = nil
        guard connected else { return }
        // The phone notices a vanished device after the supervision timeout; a device that hangs
        // up is seen at once.
        scheduler.advance(to: scheduler.now + (reason == 0x08 ? 5_000_000 : timing.connectionInterval))
        endLink(reason: reason)
    }

    private func endLink(reason: UInt8) {
        connected = false
        recorder.disconnectionComplete(reason: reason, at: scheduler.now)
        device.disconnected()
        device.server.resetConnection()
    }
}
