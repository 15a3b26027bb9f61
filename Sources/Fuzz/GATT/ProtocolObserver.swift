import ATT
import Foundation
import Profiles

/// Follows the device protocols through what the device says (notifications, indications and
/// reads of their characteristics) for one input: the protocol state the input has reached, which
/// names the coverage and guides the engine to inputs that reach new states, and the oracles on
/// content: a protocol message that does not decode or names a state the protocol does not have.
struct ProtocolObserver {
    let map: DeviceMap
    /// The protocols known to the campaign, for their reset commands.
    let protocols: [any FuzzableProtocol.Type]
    /// The protocol state reached so far ("start" before the device said anything).
    private(set) var state = "start"
    private var joiner = SensorScan.Joiner()
    /// The networks of the first complete scan of the input.
    private(set) var scanned: Set<String>?
    private(set) var scanMTU = 23

    init(map: DeviceMap, protocols: [any FuzzableProtocol.Type]) {
        self.map = map
        self.protocols = protocols
    }

    /// Writing `value` to characteristic `index` tells the device to reset.
    private func resets(_ value: [UInt8], on index: Int) -> Bool {
        protocols.contains { $0.resetsDevice(writing: value, to: map.characteristics[index].uuid) }
    }

    /// A value the device sent (notified, indicated or read) on characteristic `index`; a finding
    /// when its content breaks the protocol.
    mutating func saw(_ value: [UInt8], on index: Int, mtu: Int, notified: Bool) -> FuzzOutcome {
        guard let role = map.characteristics[index].role else { return .ok }
        switch role {
        case .speakerStatus:
            let (status, _) = SpeakerOTA.Status.decode(value)
            guard let status else {
                return .finding(kind: "undecodable-notification",
                                detail: "a \(value.count)-byte OTA status (a status is \(SpeakerOTA.statusLength) bytes)")
            }
            guard let s = status.state else {
                return .finding(kind: "impossible-state", detail: "a status in state 0x\(String(status.rawState, radix: 16)), which the OTA protocol does not have")
            }
            state = s == .error ? "ERROR \(status.error.map { "\($0)" } ?? "0x\(String(status.rawError, radix: 16))")" : "\(s)"
        case .sensorScan where notified:
            if state == "scan requested" { state = "scanning" }
            if joiner.add(value) {
                state = "scan complete"
                let (networks, problems) = SensorScan.parse(joiner.bytes)
                if networks.isEmpty, !problems.isEmpty {
                    return .finding(kind: "undecodable-notification", detail: "a complete scan answer with no network that parses: \(problems.first?.message ?? "")")
                }
                if scanned == nil { scanned = Set(networks.map(\.ssidText)); scanMTU = mtu }
                joiner = SensorScan.Joiner()
            }
        case .nrf7DataOut:
            let (result, problems) = NRF7.Result.decode(value)
            guard let result else {
                return .finding(kind: "undecodable-notification", detail: "nRF7 Data Out that is no Result: \(problems.first?.message ?? "")")
            }
            if let s = result.state { state = "connection \(s)" } else if result.scanRecord != nil, !state.hasPrefix("connection") { state = "scan results" }
        case .nrf7ControlPoint where notified:
            let (response, problems) = NRF7.Response.decode(value)
            guard let response else {
                return .finding(kind: "undecodable-notification", detail: "an nRF7 Control Point indication that is no Response: \(problems.first?.message ?? "")")
            }
            if let op = response.requestOpCode, response.status?.raw == 0 { state = "\(op) done" }
        case .nrf7Info:
            if NRF7.Info.decode(value).0 == nil, !value.isEmpty {
                return .finding(kind: "undecodable-notification", detail: "an nRF7 Info value that is no Info message")
            }
        default:
            break
        }
        return .ok
    }

    /// A state the protocol stays in until told otherwise: a wait can end there.
    var isResting: Bool {
        state == "scan complete" || state == "SUCCESS" || state.hasPrefix("ERROR") || state == "connection CONNECTED"
            || state == "connection CONNECTION_FAILED"
    }

    /// A state the protocol leaves by itself, with more to say: a wait should hear it out.
    var inProgress: Bool {
        ["WIFI_CONNECTING", "WIFI_CONNECTED", "DOWNLOADING", "VERIFYING", "scan requested", "scanning", "START_SCAN done", "scan results",
         "SET_CONFIG done", "connection AUTHENTICATION", "connection ASSOCIATION", "connection OBTAINING_IP"].contains(state)
    }

    /// A state in progress whose next word may take long: not an nRF7 scan that already gave
    /// results (its records stream until STOP_SCAN; a silence there is the scan having no more).
    var awaitsFirstWord: Bool { inProgress && state != "scan results" }

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
        if map.characteristics[index].role == .sensorScan, value == SensorScan.request {
            state = "scan requested"
            joiner = SensorScan.Joiner()
        }
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
