import ATT
import Foundation

/// Follows the device protocols through what the device says (notifications, indications and
/// reads of their characteristics) for one input: the protocol state the input has reached, which
/// names the coverage and guides the engine to inputs that reach new states, and the oracles on
/// content: a protocol message that does not decode or names a state the protocol does not have.
struct ProtocolObserver {
    let map: DeviceMap
    /// The protocols known to the campaign, for their reset commands.
    let protocols: [any FuzzableProtocol.Type]
    /// Those the black-box fuzzer follows, for the states they name.
    private let followed: [any BlackBoxFuzzable.Type]
    /// Their observers for this input, in the protocols' order.
    private var observers: [any BlackBoxObserving]
    private var progress = BlackBoxProgress()
    /// The protocol state reached so far ("start" before the device said anything).
    var state: String { progress.state }
    /// The items of the input's first complete answer that must not depend on the MTU (a scan).
    var scanned: Set<String>? { progress.answer }
    var scanMTU: Int { progress.answerMTU }

    init(map: DeviceMap, protocols: [any FuzzableProtocol.Type]) {
        self.map = map
        self.protocols = protocols
        followed = protocols.compactMap { $0 as? any BlackBoxFuzzable.Type }
        observers = followed.compactMap { $0.blackBoxObserver() }
    }

    /// Writing `value` to characteristic `index` tells the device to reset.
    private func resets(_ value: [UInt8], on index: Int) -> Bool {
        protocols.contains { $0.resetsDevice(writing: value, to: map.characteristics[index].uuid) }
    }

    /// A value the device sent (notified, indicated or read) on characteristic `index`; a finding
    /// when its content breaks the protocol.
    mutating func saw(_ value: [UInt8], on index: Int, mtu: Int, notified: Bool) -> FuzzOutcome {
        guard let role = map.characteristics[index].role else { return .ok }
        for k in observers.indices {
            if let outcome = observers[k].saw(value, role: role, mtu: mtu, notified: notified, progress: &progress) { return outcome }
        }
        return .ok
    }

    /// What the protocols say the state is.
    private var kinds: [BlackBoxStateKind] { followed.compactMap { $0.blackBoxStateKind(progress.state) } }

    /// A state the protocol stays in until told otherwise: a wait can end there.
    var isResting: Bool { kinds.contains(.resting) }

    /// A state the protocol leaves by itself, with more to say: a wait should hear it out.
    var inProgress: Bool { kinds.contains { $0 == .inProgress || $0 == .streaming } }

    /// A state in progress whose next word may take long: not one that already streams (nRF7
    /// scan records stream until STOP_SCAN; a silence there is the scan having no more).
    var awaitsFirstWord: Bool { inProgress && !kinds.contains(.streaming) }

    /// The input asked the device to drop the link (a reset command): a drop is the answer.
    private(set) var dropExpected = false

    /// A write sent (a command, whose acceptance is not told) or accepted.
    mutating func sent(_ value: [UInt8], on index: Int) {
        if resets(value, on: index) { dropExpected = true }
    }

    /// The link came back after an expected drop. A device told to reboot stays expected to
    /// drop for the rest of the input: a second REBOOT, or one that lands after the link came
    /// back, drops it again (a crash after a REBOOT in the same input is then not told).
    mutating func reconnected() { dropOwed = false }

    /// A reset command the device accepted and whose drop has not come yet: the device resets a moment
    /// after it answers, and that drop belongs to this input, not to the next one's first step.
    private(set) var dropOwed = false

    /// A write the device accepted: the states a write alone reaches.
    mutating func accepted(_ value: [UInt8], on index: Int) {
        if resets(value, on: index) { dropOwed = true }
        guard let role = map.characteristics[index].role else { return }
        for k in observers.indices { observers[k].accepted(value, role: role, progress: &progress) }
    }
}

/// Per characteristic and protocol state: what was sent there and what came back, over the
/// whole campaign, so a reviewer sees what was reached and what was not.
public final class GATTCoverage: @unchecked Sendable {  // guarded by lock
    public struct Row: Sendable, Codable, Hashable {
        public var characteristic: String
        public var state: String
        public var sent = 0
        /// Answered with success (or a command, which has no answer).
        public var ok = 0
        /// ATT errors by name ("Invalid Attribute Value Length (0x0D)").
        public var errors: [String: Int] = [:]
        public var drops = 0
        public var timeouts = 0
    }

    private let lock = NSLock()
    private var rows: [String: Row] = [:]
    /// Inputs' steps counted in the rows.
    public private(set) var steps = 0
    /// ATT PDUs sent by the inputs: requests, commands, every part of a long write or a Prepare
    /// Write flood, the probe at each input's end.
    public var operations: Int { lock.withLock { pdus } }
    private var pdus = 0

    func sentPDU() { lock.withLock { pdus += 1 } }

    public init() {}

    enum Answer { case ok, error(UInt8), dropped, timeout }

    func count(_ characteristic: String, state: String, _ answer: Answer) {
        lock.withLock {
            steps += 1
            let key = characteristic + "\u{1}" + state
            var row = rows[key] ?? Row(characteristic: characteristic, state: state)
            row.sent += 1
            switch answer {
            case .ok: row.ok += 1
            case .error(let code):
                let name = "\(ATTErrorCode(rawValue: code).name) (0x\(code < 16 ? "0" : "")\(String(code, radix: 16, uppercase: true)))"
                row.errors[name, default: 0] += 1
            case .dropped: row.drops += 1
            case .timeout: row.timeouts += 1
            }
            rows[key] = row
        }
    }

    /// The rows, by characteristic then state.
    public func snapshot() -> [Row] {
        lock.withLock { rows.values.sorted { ($0.characteristic, $0.state) < ($1.characteristic, $1.state) } }
    }
}
