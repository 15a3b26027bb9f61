import ATT
import Emulator
import GATT
import Profiles
import Transport

/// How a replay is paced.
public enum ReplayTiming: Sendable, Hashable, CustomStringConvertible {
    /// The recorded delays between the phone's steps.
    case recorded
    /// No delays: each step as soon as the previous one is done (waits for answers stay).
    case fast
    /// The recorded delays divided by this factor (2 = twice as fast).
    case scaled(Double)

    public init?(_ text: String) {
        switch text {
        case "recorded": self = .recorded
        case "fast": self = .fast
        default:
            guard let f = Double(text), f > 0, f.isFinite else { return nil }
            self = f == 1 ? .recorded : .scaled(f)
        }
    }

    /// The wait before a step whose recorded gap is `recorded` µs, held to an hour: a script is
    /// edited by hand, and no value in it may overflow the clock or trap a conversion.
    func delay(_ recorded: Int64) -> Int64 {
        let gap = min(max(recorded, 0), ReplayRunner.longestWait)
        switch self {
        case .recorded: return gap
        case .fast: return 0
        case .scaled(let f): return Int64(min(Double(gap) / f, Double(ReplayRunner.longestWait)))
        }
    }

    public var description: String {
        switch self {
        case .recorded: "recorded"
        case .fast: "fast"
        case .scaled(let f): "\(f)x"
        }
    }
}

public struct ReplayOptions: Sendable {
    /// The device protocols the run knows: their values are compared by meaning
    /// (`ReplayingProtocol`), and those with a session of their own (`ReplaySessionDriving`) run
    /// it alongside the script. The command line gives every registered one.
    public var protocols: ProtocolSet
    public var timing: ReplayTiming = .recorded
    /// `--set name=value`: ssid, password, url.
    public var settings: [String: String] = [:]
    /// Send no writes or commands (a real device without `--allow-writes`).
    public var readOnly = false
    /// The ATT transaction timeout; 30 s as the Core specification sets it.
    public var attTimeout: Int64 = ScriptedCentral.defaultTransactionTimeout
    /// By protocol progress (default) or step by step as recorded (`--strict`).
    public var comparison: ReplayComparison = .progress
    /// Says why the link could not be opened (the target's last error).
    public var connectFailure: (@Sendable () async -> String?)?
    /// Seeds what the replay makes up itself: a protocol session's keys (`ReplaySessionDriver`).
    public var seed: UInt64 = 1

    public init(protocols: ProtocolSet, timing: ReplayTiming = .recorded, settings: [String: String] = [:], readOnly: Bool = false,
                attTimeout: Int64 = ScriptedCentral.defaultTransactionTimeout, comparison: ReplayComparison = .progress) {
        self.protocols = protocols
        self.comparison = comparison
        self.timing = timing
        self.settings = settings
        self.readOnly = readOnly
        self.attTimeout = attTimeout
    }
}

/// Runs a `SessionScript` against a target over any link (the in-process emulator, an emulator
/// process over `unix:`, a real device over BlueZ) and compares each answer with the recording.
public struct ReplayRunner {
    /// The longest any wait of a script may last (delays, notification and link-loss timeouts).
    public static let longestWait: Int64 = 3_600_000_000
    /// The longest recorded device delay a wait follows (`Run.deviceWait`): ten minutes, the
    /// longest timeout extraction gives (twice a 300 s gap).
    public static let longestDeviceDelay: Int64 = 600_000_000

    public let script: SessionScript
    public let options: ReplayOptions

    public init(script: SessionScript, options: ReplayOptions) {
        self.script = script
        self.options = options
    }

    /// Checks what the run needs before anything is sent: every redacted secret has its `--set`.
    /// The value each write step sends (for a value cut across writes, the bytes of its pieces).
    public func values() throws(ReplayError) -> [Int: [UInt8]] { try writes().values }

    /// What each write step sends: `values` by step index, and `cuts`, the piece lengths for a
    /// step that sends its value in other than one write (a credentials value rebuilt for `--set`
    /// that needs more writes than were recorded, the extra ones sent by the last step; or fewer,
    /// which leaves later steps none).
    func writes() throws(ReplayError) -> (values: [Int: [UInt8]], cuts: [Int: [Int]]) {
        var values: [Int: [UInt8]] = [:]
        var cuts: [Int: [Int]] = [:]
        let steps = script.steps
        var i = 0
        while i < steps.count {
            defer { i += 1 }
            let step = steps[i]
            guard let hex = step.value, let bytes = Hex.bytes(hex) else { continue }
            guard let field = step.credentials, step.plain == nil else {
                values[i] = bytes
                continue
            }
            // Consecutive credentials writes to one characteristic may be one value cut in pieces.
            var run = [bytes]
            var redacted = field.redacted
            while i + run.count < steps.count, run.count < 64 {
                let next = steps[i + run.count]
                guard next.action == .write, next.characteristic == step.characteristic, next.plain == nil,
                      let c = next.credentials, let b = next.value.flatMap(Hex.bytes) else { break }
                run.append(b)
                redacted = redacted || c.redacted
            }
            if run.count > 1, let cut = try CredentialValues.rebuildCut(run, field, redacted: redacted, settings: options.settings,
                                                                         first: i + 1, protocols: options.protocols) {
                for t in 0..<cut.consumed {
                    let last = t == cut.consumed - 1
                    let mine = last ? Array(cut.pieces.dropFirst(t)) : (t < cut.pieces.count ? [cut.pieces[t]] : [])
                    values[i + t] = mine.flatMap { $0 }
                    if mine.count != 1 { cuts[i + t] = mine.map(\.count) }
                }
                i += cut.consumed - 1
                continue
            }
            values[i] = try CredentialValues.rebuild(bytes, field, settings: options.settings, step: i + 1, protocols: options.protocols)
        }
        _ = try sessionDrivers()  // their --set needs (a password in plaintext, a PoP) too
        return (values, cuts)
    }

    /// A fresh session of each protocol that has steps in the script, in registration order.
    func sessionDrivers() throws(ReplayError) -> [any ReplaySessionDriver] {
        var drivers: [any ReplaySessionDriver] = []
        for type in options.protocols.replaySessions {
            if let d = try type.sessionDriver(for: script, options: options) { drivers.append(d) }
        }
        return drivers
    }

    public func run(on link: any TimedATTBearer & LinkControl, target: String) async throws(ReplayError) -> ReplayReport {
        let writes = try writes()
        let run = Run(script: script, options: options, link: link, values: writes.values, cuts: writes.cuts, sessions: try sessionDrivers())
        let startedAt = await link.now()
        let outcomes = await run.go()
        let endedAt = await link.now()
        return ReplayReport(script: script.source.capture, target: target, timing: options.timing.description,
                            steps: outcomes, duration: endedAt - startedAt, comparison: options.comparison,
                            tolerances: run.tolerances)
    }
}

/// One run's state: the central, the link, what has been observed. Public for the protocol
/// sessions (`ReplaySessionDriver`), which perform their steps through it.
public final class Run: @unchecked Sendable {
    // Used by one task from start to end (the runner's), never concurrently.
    public let script: SessionScript
    public let options: ReplayOptions
    public let link: any TimedATTBearer & LinkControl
    public let central: ScriptedCentral
    let values: [Int: [UInt8]]
    /// Steps whose value goes in other than one write: the length of each (`ReplayRunner.writes`).
    let cuts: [Int: [Int]]
    /// The protocols' own sessions, offered each step first.
    let sessions: [any ReplaySessionDriver]
    var outcomes: [StepOutcome] = []
    var connected = false
    /// When this run opened the current link, and when the recording did (µs since its start):
    /// what the device does on its own is timed from there (`deviceWait`).
    var linkOpened: (at: Int64, recorded: Int64)?
    var discovered = false
    var start: Int64 = 0
    /// What differed from the recording but was tolerated (progress comparison), one line each.
    var tolerances: [String] = []
    /// The last folded run on each characteristic, to judge notifications after it.
    var lastFolds: [BluetoothUUID: ProgressFold] = [:]
    /// The MTU the script's Exchange MTU agreed on this connection; nil before one (a recording
    /// that began mid-connection does not say its MTU, so lengths are not judged against it).
    var agreedMTU: Int?
    var progress: Bool { options.comparison == .progress }

    init(script: SessionScript, options: ReplayOptions, link: any TimedATTBearer & LinkControl, values: [Int: [UInt8]],
         cuts: [Int: [Int]] = [:], sessions: [any ReplaySessionDriver]) {
        self.cuts = cuts
        self.script = script
        self.options = options
        self.link = link
        self.values = values
        self.sessions = sessions
        central = ScriptedCentral(bearer: link, transactionTimeout: options.attTimeout)
    }

    /// Why a step could not go on.
    public enum Stop: Error {
        /// The link dropped: a failure unless the recording lost it too.
        case linkDropped
        case failed(String)
    }

    func go() async -> [StepOutcome] {
        start = await link.now()
        var previousRecorded: Int64 = 0
        var previousDone = start
        var index = 0
        let steps = script.steps
        while index < steps.count {
            let step = steps[index]
            if step.action != .notification && step.action != .linkLost {
                let wait = options.timing.delay(step.at.subtractingReportingOverflow(previousRecorded).partialValue)
                    - min(max(0, await link.now() - previousDone), ReplayRunner.longestWait)
                if wait > 0 { try? await link.wait(wait) }
            }
            var outcome = StepOutcome(index: index + 1, step: step)
            // Progress comparison: a run of notifications on a protocol characteristic is waited
            // for as one protocol condition; its later steps are reported as folded into it.
            var folded: [StepOutcome] = []
            var next = index + 1
            do {
                if progress, !options.readOnly, let run = foldableRun(at: index) {
                    folded = try await notifications(run, &outcome)
                    next = run.upperBound
                } else {
                    try await perform(step, index, &outcome)
                }
            } catch {
                switch error {
                case .failed(let why) where why.hasPrefix(Self.noAnswer) && recordedUnanswered(index):
                    // The recorded device did not answer this request either (it hung; a fuzz
                    // finding's reproducer): the same fault.
                    outcome.observe("no answer, as recorded: the device stopped answering")
                case .failed(let why):
                    outcome.fail(why)
                case .linkDropped:
                    connected = false
                    // The recording lost this connection too: the steps up to its loss cannot run.
                    if let lost = steps[(index + 1)...].prefix(while: { $0.action != .connect }).firstIndex(where: { $0.action == .linkLost }) {
                        // The recording had no answer either, and only notifications before its
                        // loss: the device dropped the link at this request, as recorded (a fuzz
                        // finding's reproducer, a crash).
                        let asRecorded = step.expect?.result == nil && steps[(index + 1)..<lost].allSatisfy { $0.action == .notification }
                        if asRecorded {
                            outcome.observe("the link dropped before an answer, as recorded")
                        } else {
                            outcome.diverge("the link dropped before this step's answer; the recording lost it later, at step \(lost + 1)")
                        }
                        outcomes.append(outcome)
                        for j in (index + 1)..<lost {
                            var skipped = StepOutcome(index: j + 1, step: steps[j])
                            if asRecorded {
                                skipped.observe("not seen: the link dropped first, as it did soon after")
                            } else {
                                skipped.diverge("not run: the link had dropped")
                            }
                            outcomes.append(skipped)
                        }
                        var lostOutcome = StepOutcome(index: lost + 1, step: steps[lost])
                        lostOutcome.observe(asRecorded ? "the device ended the link, as recorded" : "the link was already lost")
                        outcomes.append(lostOutcome)
                        index = lost + 1
                        previousRecorded = steps[lost].at
                        previousDone = await link.now()
                        continue
                    }
                    outcome.fail("the target disconnected")
                }
            }
            outcome.observedAt = await link.now() - start
            outcomes.append(outcome)
            outcomes += folded
            if outcome.status == .failed {
                for j in next..<steps.count {
                    var notRun = StepOutcome(index: j + 1, step: steps[j])
                    notRun.status = .notRun
                    outcomes.append(notRun)
                }
                break
            }
            previousRecorded = steps[next - 1].at
            previousDone = await link.now()
            index = next
        }
        if connected {
            if var last = outcomes.popLast() {
                await checkUnexpectedNotifications(&last)
                outcomes.append(last)
            }
            await link.close()
        }
        return outcomes
    }

    // MARK: Steps

    func perform(_ step: ReplayStep, _ index: Int, _ o: inout StepOutcome) async throws(Stop) {
        if step.action != .connect, !connected, step.action != .disconnect, step.action != .linkLost {
            // The recording began with the link already up: open it now.
            try await connect(&o, recordedAt: step.at)
            o.observe("connected first (the recording began mid-connection)")
        }
        for session in sessions {
            if try await session.perform(step, index, &o, run: self) { return }
        }
        switch step.action {
        case .connect:
            try await connect(&o, recordedAt: step.at)
        case .exchangeMTU:
            let asked = step.mtu ?? 23
            do {
                let agreed = try await central.exchangeMTU(asked)
                agreedMTU = Int(agreed)
                o.observe("MTU \(agreed)")
                compareResult(step, &o, error: nil)
                if let expected = step.expect?.mtu, expected != agreed { o.diverge("recorded MTU \(expected), observed \(agreed)") }
            } catch .attError(_, _, let e) {
                o.observe(e.description)
                compareResult(step, &o, error: e)
            } catch {
                throw stop(error)
            }
        case .discover:
            try await discover(step, &o)
        case .subscribe:
            let (handle, name) = try await resolve(step, &o, descriptor: BluetoothUUID(uuid16: 0x2902))
            guard let handle else { return }
            o.name = name
            let answer = try await request(.writeRequest(handle: handle, value: values[index] ?? [1, 0]))
            record(answer, step, &o)
        case .read:
            let (handle, name) = try await resolve(step, &o, descriptor: step.descriptor.flatMap(BluetoothUUID.init(string:)))
            guard let handle else { return }
            o.name = name
            try await read(handle, step, &o)
        case .write:
            let (handle, name) = try await resolve(step, &o, descriptor: step.descriptor.flatMap(BluetoothUUID.init(string:)))
            guard let handle else { return }
            o.name = name
            if options.readOnly {
                o.skip("a write; --allow-writes sends it")
                return
            }
            if let lengths = cuts[index] {
                try await writePieces(handle, values[index] ?? [], lengths: lengths, step, &o)
            } else {
                try await write(handle, values[index] ?? [], step, &o)
            }
        case .notification:
            if options.readOnly {
                o.skip("follows writes that were not sent")
                return
            }
            try await notification(step, &o)
        case .encrypt:
            await central.encrypt()
            o.observe("link encrypted")
        case .disconnect:
            await checkUnexpectedNotifications(&o)
            if connected { await central.disconnect() }
            connected = false
            o.observe("the phone hung up")
        case .linkLost:
            if options.readOnly {
                if connected { await central.disconnect() }
                connected = false
                o.skip("the device's link loss followed writes that were not sent; hung up instead")
                return
            }
            await checkUnexpectedNotifications(&o)
            guard connected else {
                o.observe("the link was already lost")
                return
            }
            let timeout = await deviceWait(step)
            if await central.waitForDisconnect(within: timeout) {
                o.observe("the device ended the link")
            } else {
                o.diverge("recorded: the device ended the link\(step.expect?.reason.map { " (\($0))" } ?? ""); observed: still connected after \(timeout / 1_000_000) s; the phone hung up")
                await checkUnexpectedNotifications(&o)
                await central.disconnect()
            }
            connected = false
        case .pdu:
            guard let bytes = values[index], let pdu = try? ATTPDU.decode(bytes) else {
                o.skip("the PDU does not decode")
                return
            }
            if options.readOnly, let op = ATTOpcode(rawValue: pdu.opcode), op.isCommand || [0x12, 0x16, 0x18].contains(op.rawValue) {
                o.skip("a write; --allow-writes sends it")
                return
            }
            if let op = ATTOpcode(rawValue: pdu.opcode), op.isRequest {
                let answer = try await request(pdu)
                o.observe(ATTOpcode.name(for: answer.opcode))
                if let expected = step.expect?.opcode, expected != "0x" + Hex.string([answer.opcode]) {
                    o.diverge("recorded answer \(expected), observed 0x\(Hex.string([answer.opcode])) \(ATTOpcode.name(for: answer.opcode))")
                }
            } else {
                try await send(bytes)
                o.observe("sent")
            }
        }
    }

    func connect(_ o: inout StepOutcome, recordedAt: Int64) async throws(Stop) {
        await central.connect()
        // A device that just rebooted (a REBOOT, a crash) takes a moment to accept again, as it
        // takes a moment to advertise: up to two seconds.
        var waited = 0
        while !(await link.isConnected()), waited < 2_000 {
            try? await Task.sleep(nanoseconds: 20_000_000)
            waited += 20
            await central.connect()
        }
        guard await link.isConnected() else {
            let why = await options.connectFailure?() ?? nil
            throw .failed("cannot connect\(why.map { ": \($0)" } ?? "")")
        }
        connected = true
        linkOpened = (await link.now(), recordedAt)
        agreedMTU = nil
        for session in sessions { session.linkOpened() }
        o.observe("connected")
    }

    /// Sends a request and returns its answer; a dropped link or a timeout stops the step.
    public func request(_ pdu: ATTPDU) async throws(Stop) -> ATTPDU {
        do {
            return try await central.request(pdu)
        } catch {
            throw stop(error)
        }
    }

    /// Sends a PDU that has no answer (a command).
    public func send(_ bytes: [UInt8]) async throws(Stop) {
        do { try await link.send(bytes) } catch { throw .linkDropped }
    }

    static let noAnswer = "no answer within the ATT transaction timeout"

    /// A request the recording has no answer to, after which the phone hung up: the recorded
    /// device stopped answering there.
    func recordedUnanswered(_ index: Int) -> Bool {
        let step = script.steps[index]
        guard step.expect == nil, step.method != .command, [.write, .read, .subscribe].contains(step.action),
              index + 1 < script.steps.count else { return false }
        return script.steps[index + 1].action == .disconnect
    }

    func stop(_ error: CentralError) -> Stop {
        switch error {
        case .bearer(.closed): .linkDropped
        case .timeout: .failed("\(Self.noAnswer) (\(options.attTimeout / 1_000_000) s)")
        default: .failed(error.description)
        }
    }

    func discover(_ step: ReplayStep, _ o: inout StepOutcome) async throws(Stop) {
        let table: AttributeTable
        do {
            table = try await central.discover()
            if step.readsDescriptions == true { _ = try await central.readUserDescriptions() }
        } catch {
            throw stop(error)
        }
        discovered = true
        let found = Set(table.characteristics.values.map(\.uuid.canonicalString))
        o.observe("\(found.count) characteristics")
        var missing = (step.expect?.characteristics ?? []).filter { !found.contains($0) }
        if progress {
            // A recorded characteristic the session never uses (Database Hash, a vendor's extra
            // service) says nothing about the protocol: tolerated.
            let used = Set(script.steps.compactMap(\.characteristic))
            let unused = missing.filter { !used.contains($0) }
            if !unused.isEmpty {
                tolerances.append("discovery (step \(o.step)): the target lacks \(unused.count) recorded characteristic\(unused.count == 1 ? "" : "s") the session never uses: \(unused.map(Names.of).joined(separator: ", "))")
            }
            missing = missing.filter { used.contains($0) }
        }
        if !missing.isEmpty {
            o.diverge("the target lacks \(missing.count) recorded characteristic\(missing.count == 1 ? "" : "s"): \(missing.map(Names.of).joined(separator: ", "))")
        }
    }

    /// The handle a step names, discovering first if needed; nil (step diverged) when the target lacks it.
    public func resolve(_ step: ReplayStep, _ o: inout StepOutcome, descriptor: BluetoothUUID?) async throws(Stop) -> (UInt16?, String?) {
        if let h = step.handle { return (h, "handle 0x" + Hex.string([UInt8(h >> 8), UInt8(h & 0xFF)])) }
        guard let text = step.characteristic, let uuid = BluetoothUUID(string: text) else { return (nil, nil) }
        if !discovered {
            do { _ = try await central.discover() } catch { throw stop(error) }
            discovered = true
        }
        let table = await central.table
        let name = Names.of(text)
        guard let c = table.characteristics.values.filter({ $0.uuid == uuid }).min(by: { $0.valueHandle < $1.valueHandle }) else {
            o.diverge("the target has no characteristic \(name)")
            return (nil, name)
        }
        guard let descriptor else { return (c.valueHandle, name) }
        let next = table.characteristics.values.map(\.declarationHandle).filter { $0 > c.valueHandle }.min() ?? 0xFFFF
        guard let d = table.descriptors.filter({ $0.value == descriptor && $0.key > c.valueHandle && $0.key < next }).map(\.key).min() else {
            o.diverge("the target's \(name) has no descriptor \(descriptor)")
            return (nil, name)
        }
        return (d, name)
    }

    func read(_ handle: UInt16, _ step: ReplayStep, _ o: inout StepOutcome) async throws(Stop) {
        if let offset = step.offset {
            // One part of the value, as recorded: what a device answers past an offset is the point.
            switch try await request(.readBlobRequest(handle: handle, offset: offset)) {
            case .errorResponse(_, _, let e):
                o.observe(e.description)
                compareResult(step, &o, error: e)
            case .readBlobResponse(let value):
                o.observe("Read Blob at offset \(offset): \(value.count) bytes")
                compareResult(step, &o, error: nil)
                compareValue(step, value, &o)
            case let other:
                o.diverge("unexpected answer \(ATTOpcode.name(for: other.opcode))")
            }
            return
        }
        let first = try await request(.readRequest(handle: handle))
        switch first {
        case .errorResponse(_, _, let e):
            o.observe(e.description)
            compareResult(step, &o, error: e)
        case .readResponse(var value):
            let mtu = Int(await central.mtu)
            var last = value.count
            while last == mtu - 1, value.count < GATTServer.maxValueLength {
                let more = try await request(.readBlobRequest(handle: handle, offset: UInt16(value.count)))
                guard case .readBlobResponse(let v) = more else { break }
                value += v
                last = v.count
            }
            compareResult(step, &o, error: nil)
            compareValue(step, value, &o)
        default:
            o.diverge("unexpected answer \(ATTOpcode.name(for: first.opcode))")
        }
    }

    func write(_ handle: UInt16, _ value: [UInt8], _ step: ReplayStep, _ o: inout StepOutcome) async throws(Stop) {
        switch step.method ?? .request {
        case .command:
            try await send(ATTPDU.writeCommand(handle: handle, value: value).encode())
            o.observe("sent")
        case .request:
            record(try await request(.writeRequest(handle: handle, value: value)), step, &o)
        case .long:
            let part = max(1, Int(await central.mtu) - 5)
            var offset = 0
            while offset < value.count || offset == 0 {
                let piece = Array(value[offset..<min(value.count, offset + part)])
                let answer = try await request(.prepareWriteRequest(handle: handle, offset: UInt16(clamping: offset), value: piece))
                if case .errorResponse(_, _, let e) = answer {
                    _ = try await request(.executeWriteRequest(flags: 0))
                    o.observe(e.description)
                    compareResult(step, &o, error: e)
                    return
                }
                offset += max(1, piece.count)
                if value.isEmpty { break }
            }
            let cancel = step.meaning?.hasPrefix("cancelled") == true
            record(try await request(.executeWriteRequest(flags: cancel ? 0 : 1)), step, &o)
        }
    }

    /// A step that sends its part of a rebuilt value in other than one write: each piece as the
    /// step's method, the last answer judged; an error answer stops the step there. None left
    /// (the rebuilt value took fewer writes than were recorded): nothing is sent.
    func writePieces(_ handle: UInt16, _ value: [UInt8], lengths: [Int], _ step: ReplayStep, _ o: inout StepOutcome) async throws(Stop) {
        guard !lengths.isEmpty else {
            o.observe("nothing sent: the value rebuilt for --set ended at an earlier write")
            return
        }
        var offset = 0
        for (n, length) in lengths.enumerated() {
            let piece = Array(value[min(offset, value.count)..<min(value.count, offset + length)])
            offset += length
            if n == lengths.count - 1 {
                try await write(handle, piece, step, &o)
            } else if step.method == .command {
                try await send(ATTPDU.writeCommand(handle: handle, value: piece).encode())
            } else {
                let answer = try await request(.writeRequest(handle: handle, value: piece))
                if case .errorResponse = answer {
                    // The device refused a piece: the rest would not make the value either.
                    o.observe("piece \(n + 1) of \(lengths.count) of the rebuilt value refused")
                    return record(answer, step, &o)
                }
            }
        }
        if lengths.count > 1 { o.observe("the rebuilt value's last \(lengths.count) pieces sent in this step") }
    }

    /// The run of notification steps starting at `index` on one characteristic whose
    /// notifications fold into protocol progress, or nil.
    func foldableRun(at index: Int) -> Range<Int>? {
        let steps = script.steps
        let first = steps[index]
        guard first.action == .notification, first.descriptor == nil, let text = first.characteristic, let uuid = BluetoothUUID(string: text),
              ProgressFold(characteristic: uuid, protocols: options.protocols) != nil else { return nil }
        var end = index + 1
        while end < steps.count, steps[end].action == .notification, steps[end].characteristic == text, steps[end].descriptor == nil { end += 1 }
        return index..<end
    }

    /// Waits for a run of recorded notifications as one protocol condition: notifications are
    /// folded until the target's progress reaches the recording's last phase (or a phase the
    /// protocol does not leave, or the run's time is up), then compared as folds. Returns the
    /// outcomes of the run's later steps; `o` is the first step's.
    func notifications(_ run: Range<Int>, _ o: inout StepOutcome) async throws(Stop) -> [StepOutcome] {
        let steps = script.steps
        let first = steps[run.lowerBound]
        guard let text = first.characteristic, let uuid = BluetoothUUID(string: text),
              var recorded = ProgressFold(characteristic: uuid, protocols: options.protocols), var observed = ProgressFold(characteristic: uuid, protocols: options.protocols)
        else { return [] }
        let name = Names.of(text)
        o.name = name
        for i in run { if let hex = steps[i].expect?.value, let v = Hex.bytes(hex) { recorded.add(v) } }
        // The run may take as long as its steps' timeouts together (each twice its recorded gap).
        var budget: Int64 = 0
        for i in run { budget = min(ReplayRunner.longestWait, budget + min(max(steps[i].timeout ?? 10_000_000, 0), ReplayRunner.longestWait)) }
        if let last = run.last { budget = max(budget, await deviceWait(steps[last])) }
        let deadline = await link.now() + budget
        var timedOut = false
        var observedLengths: [Int] = []
        while !observed.reached(recorded) {
            let left = deadline - (await link.now())
            guard left > 0 else {
                timedOut = true
                break
            }
            let value: [UInt8]?
            do { value = try await central.nextNotification(uuid, within: left) } catch { throw stop(error) }
            guard let value else {
                if !(await link.isConnected()) { throw .linkDropped }
                timedOut = true
                break
            }
            observed.add(value)
            observedLengths.append(value.count)
        }
        compareLengths(recorded: run.compactMap { steps[$0].expect?.value.flatMap(Hex.bytes)?.count }, observed: observedLengths, &o)
        lastFolds[uuid] = observed
        let kind = first.indication == true ? "indication" : "notification"
        o.observe("\(observed.summary) (\(observed.count) \(kind)\(observed.count == 1 ? "" : "s"), \(run.count) recorded)")
        var differences = observed.differences(from: recorded)
        // A recording that itself waited in vain (a scan without END) is not waited past.
        if timedOut, differences.isEmpty, recorded.reached(recorded), !observed.reached(recorded) {
            differences.append((0, "waited \(Double(budget) / 1e6) s for \(recorded.summary); observed \(observed.summary)"))
        }
        if differences.isEmpty { tolerances += observed.tolerated(against: recorded, name: "\(name) (step \(run.lowerBound + 1))") }
        var later = run.dropFirst().map { i in
            var folded = StepOutcome(index: i + 1, step: steps[i])
            folded.name = name
            folded.observe("folded into step \(run.lowerBound + 1)")
            return folded
        }
        // Each difference is told at the recorded notification where it shows.
        for (at, why) in differences {
            if at <= 0 || at > later.count { o.diverge(why) } else { later[at - 1].diverge(why) }
        }
        return later
    }

    func notification(_ step: ReplayStep, _ o: inout StepOutcome) async throws(Stop) {
        guard step.characteristic != nil || step.handle != nil else {
            o.skip("no characteristic named")
            return
        }
        // Waited for on the handle the device notified from, as recorded: the characteristic's
        // value, or (a stack that notifies from a descriptor) the descriptor the step names.
        let (resolved, name) = try await resolve(step, &o, descriptor: step.descriptor.flatMap(BluetoothUUID.init(string:)))
        guard let handle = resolved else { return }
        o.name = name
        let timeout = await deviceWait(step)
        let value: [UInt8]?
        do { value = try await central.nextNotification(handle: handle, within: timeout) } catch { throw stop(error) }
        guard let value else {
            if !(await link.isConnected()) { throw .linkDropped }
            o.diverge("no \(step.indication == true ? "indication" : "notification") within \(Double(timeout) / 1e6) s; recorded \(step.expect?.meaning ?? step.expect?.value ?? "one")")
            return
        }
        compareLengths(recorded: [step.expect?.value.flatMap(Hex.bytes)?.count].compactMap { $0 }, observed: [value.count], &o)
        compareValue(step, value, &o)
    }

    /// How long to wait for what the device does on its own (a notification, the link's end):
    /// the step's timeout, or longer when this run came to the step sooner after opening the
    /// link than the recording did (`--timing fast` drops the phone's delays, not the device's):
    /// what is left of the device's recorded delay since the link opened (at most
    /// `longestDeviceDelay`) and a margin of 2 s and a tenth of that. On virtual time it costs
    /// nothing, and any wait ends when the event comes.
    func deviceWait(_ step: ReplayStep) async -> Int64 {
        let timeout = min(max(step.timeout ?? 10_000_000, 0), ReplayRunner.longestWait)
        guard let opened = linkOpened else { return timeout }
        // A hand-edited script's times may be anything: no difference may overflow.
        let (since, overflow) = step.at.subtractingReportingOverflow(opened.recorded)
        let recorded = overflow ? 0 : min(max(since, 0), ReplayRunner.longestDeviceDelay)
        let left = recorded - min(max(0, await link.now() - opened.at), ReplayRunner.longestWait)
        guard left > 0 else { return timeout }
        return min(max(timeout, left + 2_000_000 + left / 10), ReplayRunner.longestWait)
    }

    /// A notification value longer than ATT_MTU - 3 breaks the ATT specification (Core Vol 3
    /// Part F 3.4.7.1), whatever its content: a target that does it where the recorded device
    /// did not diverges, and so does one that no longer does it where the recording did (a
    /// fuzzing reproducer of that fault). Judged only where the script's exchange told the MTU.
    func compareLengths(recorded: [Int], observed: [Int], _ o: inout StepOutcome) {
        guard let mtu = agreedMTU else { return }
        let recordedOver = recorded.filter { $0 > mtu - 3 }
        let observedOver = observed.filter { $0 > mtu - 3 }
        switch (recordedOver.max(), observedOver.max()) {
        case (nil, let n?):
            o.diverge("a \(n)-byte notification value on MTU \(mtu): longer than the MTU allows (at most \(mtu - 3) bytes)")
        case (let n?, nil):
            o.diverge("the recorded device sent a \(n)-byte notification value on MTU \(mtu) (longer than the MTU allows); this one kept to the MTU")
        case (_?, let n?):
            o.observe("a \(n)-byte notification value on MTU \(mtu), over the MTU as recorded")
        case (nil, nil):
            break
        }
    }

    // MARK: Comparison

    func record(_ answer: ATTPDU, _ step: ReplayStep, _ o: inout StepOutcome) {
        switch answer {
        case .errorResponse(_, _, let e):
            o.observe(e.description)
            compareResult(step, &o, error: e)
        case .writeResponse, .executeWriteResponse:
            o.observe("ok")
            compareResult(step, &o, error: nil)
        default:
            o.diverge("unexpected answer \(ATTOpcode.name(for: answer.opcode))")
        }
    }

    /// Compares an answer's ATT result (`error`: the ATT error, nil for success) with the recording's.
    public func compareResult(_ step: ReplayStep, _ o: inout StepOutcome, error: ATTErrorCode?) {
        if step.expect == nil, let i = script.steps.firstIndex(of: step), recordedUnanswered(i) {
            o.diverge("answered where the recorded device stopped answering (the phone hung up without an answer)")
            return
        }
        guard let expect = step.expect, let result = expect.result else { return }
        let observed = error.map { "0x" + Hex.string([$0.rawValue]) }
        if result == "error", let recorded = expect.error, recorded != observed {
            o.diverge("recorded ATT error \(recorded) \(expect.meaning ?? ""), observed \(error.map(\.description) ?? "success")")
        } else if result == "ok", let error {
            o.diverge("recorded success, observed ATT error \(error)")
        }
    }

    /// Compares by meaning, after applying the script's redaction to what was observed.
    func compareValue(_ step: ReplayStep, _ observed: [UInt8], _ o: inout StepOutcome) {
        let uuid = step.descriptor == nil ? step.characteristic.flatMap(BluetoothUUID.init(string:)) : nil
        var shown = observed
        if script.redacted, let uuid {
            shown = options.protocols.redactingCredentials(observed, characteristic: uuid, endpoint: nil)
        }
        o.observe(ValueMeaning.describe(shown, characteristic: uuid, written: false, protocols: options.protocols) ?? Hex.string(shown))
        guard let hex = step.expect?.value, let recorded = Hex.bytes(hex) else { return }
        guard let difference = ValueMeaning.difference(recorded: recorded, observed: shown, characteristic: uuid, progress: progress, protocols: options.protocols) else { return }
        if progress, step.action == .read, ValueMeaning.isInformational(uuid) {
            // A Device Name, a firmware revision, a descriptor: what the device says about itself.
            tolerances.append("\(o.name ?? "a descriptor") (step \(o.step)): informational read: \(difference)")
        } else {
            o.diverge(difference)
        }
    }

    /// Notifications that came and that the recording does not have.
    func checkUnexpectedNotifications(_ o: inout StepOutcome) async {
        var extra = await central.takeUnconsumedNotifications()
        guard !extra.isEmpty else { return }
        let table = await central.table
        if progress {
            // More updates of the phase a folded run ended in are the device's cadence, not a
            // difference; one that moves the protocol on is.
            var tolerated: [String: Int] = [:]
            extra = extra.filter { n in
                guard let uuid = table.info(for: n.handle)?.uuid, var fold = lastFolds[uuid] else { return true }
                let before = (fold.phases, fold.networks, fold.problems.count)
                fold.add(n.value)
                guard before == (fold.phases, fold.networks, fold.problems.count) else { return true }
                tolerated[Names.of(uuid.canonicalString), default: 0] += 1
                return false
            }
            for (name, n) in tolerated.sorted(by: { $0.key < $1.key }) {
                tolerances.append("\(name): \(n) more notification\(n == 1 ? "" : "s") of the phase already reached")
            }
            guard !extra.isEmpty else { return }
        }
        for n in extra.prefix(5) {
            let uuid = table.info(for: n.handle)?.uuid
            let meaning = ValueMeaning.describe(n.value, characteristic: uuid, written: false, protocols: options.protocols) ?? Hex.string(n.value)
            o.diverge("a notification the recording does not have: \(uuid.map { Names.of($0.canonicalString) } ?? "handle \(n.handle)") \(meaning)")
        }
        if extra.count > 5 { o.diverge("and \(extra.count - 5) more notifications the recording does not have") }
    }
}

/// Characteristic names for reports: the known name, else the UUID.
enum Names {
    static func of(_ uuid: String) -> String {
        guard let u = BluetoothUUID(string: uuid) else { return uuid }
        return KnownUUIDs.name(u) ?? uuid
    }
}
