import Capture
/// Virtual time for emulation: a clock in microseconds since the Unix epoch and a queue of timers.
/// Nothing sleeps; whoever drives the link advances the clock to the next timer. Timers due at the
/// same time run in the order they were scheduled, so a run is the same every time.
public final class VirtualScheduler {
    public private(set) var now: Int64
    private var timers: [(time: Int64, seq: Int, action: () -> Void)] = []
    private var seq = 0

    public init(start: Int64) { now = start }

    /// Runs `action` at `time` (or now, if that has passed).
    public func schedule(at time: Int64, _ action: @escaping () -> Void) {
        seq += 1
        let entry = (time: max(time, now), seq: seq, action: action)
        let i = timers.firstIndex { ($0.time, $0.seq) > (entry.time, entry.seq) } ?? timers.count
        timers.insert(entry, at: i)
    }

    public func schedule(after delay: Int64, _ action: @escaping () -> Void) {
        schedule(at: now + max(0, delay), action)
    }

    /// When the next timer is due.
    public var nextTime: Int64? { timers.first?.time }

    /// Moves the clock forward (never back).
    public func advance(to time: Int64) { now = max(now, time) }

    /// Runs the earliest timer, moving the clock to it. False when there is none.
    @discardableResult
    public func runNext() -> Bool {
        guard !timers.isEmpty else { return false }
        let t = timers.removeFirst()
        now = max(now, t.time)
        t.action()
        return true
    }

    /// Drops every timer (a device that reboots forgets what it was doing).
    public func cancelAll() { timers.removeAll() }
}

/// A small deterministic generator (SplitMix64): the emulator's only source of variation, so the
/// same seed gives the same run and the same bytes.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var generator: SplitMix64
    public init(seed: UInt64) { generator = SplitMix64(seed: seed ^ 0x5DEE_CE66_D1CE_4E5B) }

    public mutating func next() -> UInt64 { generator.next() }

    /// A value in `0..<bound` (0 when bound is not positive).
    public mutating func below(_ bound: Int64) -> Int64 {
        bound > 0 ? Int64(next() % UInt64(bound)) : 0
    }
}

/// An emulated device: a GATT server plus the behaviour behind its characteristics.
public protocol DeviceModel: AnyObject {
    var server: GATTServer { get }
    /// Set by the model when it ends the link: the HCI reason the phone will see (0x08 supervision
    /// timeout for a device that reset, 0x13 for one that hung up). The link clears it.
    var requestedDisconnect: UInt8? { get set }
    /// Set by the model when its firmware crashed, saying why (a planted quirk met its input). A
    /// crashed model has already reset, as firmware under a watchdog does (power-on state, its
    /// timers dead), and asked for disconnect 0x08: the phone only sees the link drop. Whoever
    /// runs the link takes the reason (and clears it) as it handles `requestedDisconnect`, so a
    /// fuzzer can tell a crash from an ordinary reset.
    var crash: String? { get set }
    /// A central connected (the first time or again).
    func connected()
    /// The link ended, whoever ended it.
    func disconnected()
}

/// Builds a device model on a link's scheduler with the run's seed.
public typealias DeviceFactory = @Sendable (VirtualScheduler, UInt64) -> any DeviceModel
