import ATT
import Dispatch
import Emulator
import Foundation
import Profiles
import Replay
import Transport

/// What a black-box campaign adds to its summary: the device it found, what it reached, how fast.
public struct BlackBoxReport: Sendable, Codable, Hashable {
    /// The discovered table, one line per characteristic.
    public var table: [String]
    /// Device protocols found by UUID.
    public var protocols: [String]
    public var serverMTU: Int
    public var encrypted: Bool
    /// ATT operations sent (requests, commands, long-write parts, probes), over all executions.
    public var operations: Int
    public var operationsPerSecond: Double
    public var coverage: [GATTCoverage.Row]
    /// Findings that did not come again when the minimised input was run once more: not reported.
    public var unconfirmed: [String]
}

/// Black-box fuzzing of any GATT device: discover its table, then send inputs of operations aimed
/// at its characteristics by index (see `GATTOperation`), seeded by each protocol's valid flows
/// (found by UUID) and by a recorded session, mutated by what each characteristic is for.
public enum GATTBlackBox {
    /// A campaign target for the device `connect` reaches. Discovers it first (an error when
    /// that fails: a device that cannot be discovered is no finding). `seedOperations` are extra
    /// seeds (a recorded session's writes), already mapped onto this device's table. The
    /// protocols' value mutators shape values of their characteristics, found by UUID.
    public static func target(label: String, timeout: Int64, maxPDUs: Int? = nil, seedScripts: [SessionScript] = [], protocols: ProtocolSet,
                              connect: @escaping @Sendable () -> any TimedATTBearer & LinkControl,
                              progress: (String) -> Void = { _ in }) throws(FuzzError) -> (FuzzTarget, GATTCampaignReporter) {
        let map: DeviceMap
        let blackBox = protocols.conforming(to: (any BlackBoxFuzzable.Type).self)
        do { map = try blocking { try await DeviceMap.discover(connect(), timeout: timeout, protocols: blackBox) } } catch {
            throw .io("\(label): discovering the GATT table failed: \(error)")
        }
        guard !map.characteristics.isEmpty else { throw .io("\(label): the device has no characteristic to fuzz (discovery found none)") }
        let state = GATTCampaignState(map: map, timeout: timeout, maxPDUs: maxPDUs, protocols: protocols.conforming(to: (any FuzzableProtocol.Type).self))
        let reporter = GATTCampaignReporter(state: state)
        progress("discovered \(label): \(map.characteristics.count) characteristics, \(map.descriptors.count) descriptors, server MTU \(map.serverMTU)"
                 + (map.needsEncryption ? ", encrypted link" : "") + "; protocols: " + (map.protocols.isEmpty ? "none known (generic mutations)" : map.protocols.joined(separator: ", ")))
        var recorded: [[GATTOperation]] = []
        for script in seedScripts {
            let mapped = GATTSessionSeeds.operations(script, on: map)
            progress("seeds from \(script.source.capture): \(mapped.operations.count) operations"
                     + (mapped.unmatched > 0 ? "; \(mapped.unmatched) steps name characteristics this device does not have" : ""))
            if !mapped.operations.isEmpty { recorded.append(mapped.operations) }
        }
        // The recorded sessions first: the campaign starts with them.
        let seeds = recorded + GATTValues.flows(map, protocols: blackBox)
        let values = Dictionary(FuzzTargets.valueMutators(protocols).map { ($0.characteristic, $0.mutate) }, uniquingKeysWith: { first, _ in first })
        let target = FuzzTarget(
            name: "device", summary: "black-box GATT fuzzing of \(label): \(map.characteristics.count) characteristics, protocols: \(map.protocols.isEmpty ? "none known" : map.protocols.joined(separator: ", "))",
            maxLength: 4096, seeds: { seeds.map(GATTInput.encode) },
            mutator: { data, r in GATTMutator.mutate(&data, map: map, values: values, protocols: blackBox, &r) },
            minimizeTries: 300,
            execute: { input, f in
                let ops = GATTInput.decode(input)
                return blocking {
                    // The link the previous input left up, where it is as a fresh link would
                    // be (its MTU decides how much of each value is sent): this input starts
                    // with the Exchange MTU that link made (taken as made), or neither exchanges.
                    if let kept = state.takeKept() {
                        let done = ops.first.map { kept.madeExchange($0) } == true ? 1 : 0
                        if done == 1 || (ops.first?.kind != .exchangeMTU && kept.isAsNew) {
                            let session = GATTSession(kept: kept, state: state, features: f)
                            let outcome = await session.run(ops, done: done)
                            state.keep(await session.keep(after: outcome))
                            guard outcome.isFinding else { return outcome }
                            // A finding must show on a fresh link too, as minimising and
                            // confirming will run it; else it needed what the last input left on
                            // the link, and is not this input's.
                        } else {
                            await kept.link.close()
                        }
                    }
                    if state.takeDisturbed() { await GATTHealth.settle(connect(), timeout: timeout) }
                    let session = GATTSession(link: connect(), state: state, features: f)
                    let outcome = await session.run(ops)
                    state.keep(await session.keep(after: outcome))
                    return outcome
                }
            },
            artifact: { path, kind in
                // What the finding needs of earlier inputs (the write that stored a disclosed
                // password) goes first, so the reproducer shows the fault on a device powered on
                // afresh; the saved input says so too.
                let needed = state.lastNeeded()
                var operations = GATTInput.decode(FileManager.default.contents(atPath: path).map { Array($0) } ?? [])
                if !needed.isEmpty {
                    operations = needed + operations
                    try? Data(GATTInput.encode(operations)).write(to: URL(fileURLWithPath: path))
                    if let note = try? String(contentsOfFile: path + ".txt", encoding: .utf8) {
                        let added = "state: the input starts with \(needed.count) write\(needed.count == 1 ? "" : "s") an earlier input made (\(needed.map(\.description).joined(separator: ", "))), which the finding needs\n"
                        try? (note + added).write(toFile: path + ".txt", atomically: true, encoding: .utf8)
                    }
                }
                // The input once more, recorded after a discovery of the table (no value reads:
                // values earlier inputs changed would differ on a fresh device before the fault
                // does), so the capture replays by UUID.
                let run = operations
                let record: @Sendable () -> (outcome: FuzzOutcome, recording: Recording) = {
                    blocking {
                        // A device serves one central at a time: the link the last input kept goes first.
                        if let kept = state.takeKept() { await kept.link.close() }
                        if state.takeDisturbed() { await GATTHealth.settle(connect(), timeout: timeout) }
                        // A device that just crashed takes a moment to accept again, and may drop a
                        // link it took while it restarts: up to three tries, each recorded afresh, so
                        // the capture starts with a whole discovery.
                        var link = RecordingLink(connect())
                        for attempt in 1...3 {
                            if await GATTSession.connect(link), (try? await DeviceMap.discover(link, timeout: timeout, tableOnly: true, protocols: blackBox)) != nil { break }
                            await link.close()
                            guard attempt < 3 else { break }
                            try? await Task.sleep(nanoseconds: 300_000_000)
                            link = RecordingLink(connect())
                        }
                        let session = GATTSession(link: link, state: state, features: Features())
                        // The capture ends at the fault: the check of how the device came back
                        // goes over a link of its own (see `healthLink`).
                        session.healthLink = connect
                        let outcome = await session.run(run)
                        await link.close()
                        if outcome.isFinding { state.markDisturbed() }
                        return (outcome, await link.recording())
                    }
                }
                // The capture must show the fault: a device whose fault depends on timing may not
                // give it in one run. Up to three, the first that gives it kept, and said when none did.
                var recorded = record()
                for _ in 1..<3 where recorded.outcome.findingKind != kind { recorded = record() }
                if recorded.outcome.findingKind != kind, let note = try? String(contentsOfFile: path + ".txt", encoding: .utf8) {
                    try? (note + "capture: the recorded run gave \(recorded.outcome.findingKind ?? "no finding") in 3 tries, not \(kind)\n")
                        .write(toFile: path + ".txt", atomically: true, encoding: .utf8)
                }
                try? recorded.recording.write(to: path + ".btsnoop", overwrite: true)
                // And as a replay script, redacted as every script is: a device under test may
                // answer with a real stored password (the capture replays without --set).
                if let script = try? ScriptExtractor.extract(path: path + ".btsnoop", options: ExtractOptions(protocols: protocols)) {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                    if let data = try? encoder.encode(script) { _ = FileManager.default.createFile(atPath: path + ".json", contents: data) }
                }
            },
            remote: label, units: GATTInput.units, confirmations: 2,
            join: { inputs in
                // Each input ran on a link of its own (or one the previous left up): a reconnect
                // between them, which minimising drops when the device does not care.
                GATTInput.encode(inputs.enumerated().flatMap { i, input in (i > 0 ? [GATTOperation(.reconnect)] : []) + GATTInput.decode(input) })
            })
        return (target, reporter)
    }

    /// Runs async work to completion from the engine's synchronous loop, on the engine's own
    /// thread (`CallerThreadExecutor`): an input costs no thread switch where its awaits complete
    /// at once, as the direct `unix:` link's system calls do.
    static func blocking<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
        let box = BlockingBox<T>()
        let executor = CallerThreadExecutor()
        Task(executorPreference: executor) {
            box.value = await work()
            executor.finish()
        }
        executor.runUntilFinished()
        return box.value!
    }

    static func blocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
        let result: Result<T, any Error> = blocking {
            do { return .success(try await work()) } catch { return .failure(error) }
        }
        return try result.get()
    }
}

/// A result handed from a task to the thread that waits for it: written before the task says it
/// finished, read after.
final class BlockingBox<T>: @unchecked Sendable { var value: T? }

/// A task executor whose jobs run on the thread that waits for the task (`runUntilFinished`):
/// jobs enqueued from elsewhere (a timer's, an actor's hop back) wake that thread. Handing each
/// input to Swift's thread pool and back cost two thread switches, as much as a PDU's round trip.
final class CallerThreadExecutor: TaskExecutor, @unchecked Sendable {  // guarded by condition
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    /// Runs the jobs as they come until `finish()`.
    func runUntilFinished() {
        while true {
            condition.lock()
            while jobs.isEmpty, !finished { condition.wait() }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            let done = finished && batch.isEmpty
            condition.unlock()
            if done { return }
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }
}

/// The campaign's report, read when it ends.
public final class GATTCampaignReporter: @unchecked Sendable {
    let state: GATTCampaignState
    private let started = DispatchTime.now().uptimeNanoseconds
    init(state: GATTCampaignState) { self.state = state }

    public func report(unconfirmed: [String]) -> BlackBoxReport {
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        let ops = state.coverage.operations
        return BlackBoxReport(table: state.map.summaryLines, protocols: state.map.protocols, serverMTU: state.map.serverMTU,
                              encrypted: state.needsEncryption, operations: ops, operationsPerSecond: Double(ops) / max(seconds, 1e-9),
                              coverage: state.coverage.snapshot(), unconfirmed: unconfirmed)
    }
}

/// Mutations of an input of operations, knowing the device: a value changed by its
/// characteristic's role, a length at a limit, an operation inserted, removed, repeated or moved
/// (steps skipped, repeated, reordered), a reconnect or an MTU exchange put in the middle, a
/// write turned into a long write or a command, another target, a malformed PDU.
enum GATTMutator {
    static func mutate(_ data: inout [UInt8], map: DeviceMap, values: [BluetoothUUID: GATTValues.Mutate], protocols: [any BlackBoxFuzzable.Type],
                       _ r: inout FuzzRandom) {
        var ops = GATTInput.decode(data)
        if ops.isEmpty { ops = [GATTValues.mtu(247)] }
        for _ in 0..<(1 + r.below(2)) { once(&ops, map: map, values: values, protocols: protocols, &r) }
        data = GATTInput.encode(Array(ops.prefix(48)))
    }

    static func once(_ ops: inout [GATTOperation], map: DeviceMap, values: [BluetoothUUID: GATTValues.Mutate], protocols: [any BlackBoxFuzzable.Type],
                     _ r: inout FuzzRandom) {
        let i = r.below(ops.count)
        let count = UInt8(truncatingIfNeeded: map.characteristics.count)
        switch r.below(16) {
        case 0...5:  // a value by its target's role
            var op = ops[i]
            switch op.kind {
            case .writeDescriptor:
                op.value = r.pick(GATTValues.cccdValues) ?? [1, 0]
                if r.chance(30) { GenericMutator.mutate(&op.value, &r, maxLength: 32) }
            case .exchangeMTU:
                // The edges half the time, any MTU the specification allows the other half.
                let m = r.chance(50) ? (r.pick([0, 1, 22, 23, 24, 25, 64, 65, 184, 185, 186, 246, 247, 248, 251, 252, 512, 513, 516, 517, 518, 1024, 0xFFFF]) ?? 23)
                                     : 23 + r.below(495)
                op.value = [UInt8(m & 0xFF), UInt8(m >> 8)]
            case .raw:
                op.value = GATTValues.rawPDU(map, &r)
            case .read:
                // Read Blob offsets at the value's end and past it, and at the MTU's.
                let length = map.characteristic(op.target)?.baseline?.count ?? 0
                let offsets = [0, 1, length - 1, length, length + 1, length + 2, length + 8, length + 16, length + 32, 19, 21, 22, 244, 245, 512, 513, 0xFFFF]
                let offset = max(0, r.pick(offsets) ?? 0)
                op.value = r.chance(40) ? [] : [UInt8(offset & 0xFF), UInt8(offset >> 8 & 0xFF)]
            default:
                let c = map.characteristic(op.target)
                if op.kind == .wait || op.kind == .reconnect || op.kind == .subscribe { op.kind = .write }
                GATTValues.mutate(&op.value, role: c?.role, structured: c.flatMap { values[$0.uuid] }, baseline: c?.baseline, mtu: map.serverMTU, &r)
                if op.value.count > 20, op.kind == .write, r.chance(50) { op.kind = .longWrite }
            }
            op.value = Array(op.value.prefix(255))
            ops[i] = op
        case 6:  // a step of a valid flow, or any operation on any target, inserted
            let flows = GATTValues.flows(map, protocols: protocols)
            if r.chance(60), let flow = r.pick(flows), let step = r.pick(flow) {
                ops.insert(step, at: r.below(ops.count + 1))
            } else {
                let kind = r.pick(GATTOperation.Kind.allCases) ?? .write
                var op = GATTOperation(kind, target: UInt8(r.below(max(1, Int(count)) + 2)), value: [])
                if kind == .raw { op.value = GATTValues.rawPDU(map, &r) }
                if kind == .writeDescriptor { op.value = r.pick(GATTValues.cccdValues) ?? [1, 0] }
                if kind == .prepareFlood || kind == .longWrite { op.extra = UInt8(r.below(16)) }
                if kind == .write || kind == .longWrite || kind == .writeCommand || kind == .prepareFlood {
                    let c = map.characteristic(op.target)
                    op.value = c?.baseline ?? []
                    GATTValues.mutate(&op.value, role: c?.role, structured: c.flatMap { values[$0.uuid] }, baseline: c?.baseline, mtu: map.serverMTU, &r)
                }
                op.value = Array(op.value.prefix(255))
                ops.insert(op, at: r.below(ops.count + 1))
            }
        case 7 where ops.count > 1:  // a step skipped
            ops.remove(at: i)
        case 8:  // a step repeated
            ops.insert(ops[i], at: i)
        case 9 where ops.count > 1:  // two steps swapped
            ops.swapAt(i, r.below(ops.count))
        case 10:  // a reconnect in the middle
            ops.insert(GATTOperation(.reconnect), at: r.below(ops.count + 1))
        case 11:  // an MTU exchange at an edge, first or anywhere
            let m = r.pick([23, 24, 25, 64, 185, 247, 251, 512, 517, 1024]) ?? 23
            ops.insert(GATTValues.mtu(m), at: r.chance(60) ? 0 : r.below(ops.count + 1))
        case 12:  // another way to write it
            let kinds: [GATTOperation.Kind] = [.write, .longWrite, .writeCommand, .prepareFlood]
            if kinds.contains(ops[i].kind) { ops[i].kind = r.pick(kinds) ?? .write }
            ops[i].extra = UInt8(r.pick([0, 0, 0, 1, 3, 15]) ?? 0)
        case 13:  // another target
            ops[i].target = UInt8(r.below(max(1, Int(count))))
        case 14:  // a malformed request
            ops.insert(GATTOperation(.raw, value: GATTValues.rawPDU(map, &r)), at: r.below(ops.count + 1))
        default:  // a descriptor: CCCD values out of range and others
            let d = UInt8(r.below(max(1, map.descriptors.count)))
            ops.insert(GATTOperation(r.chance(80) ? .writeDescriptor : .readDescriptor, target: d, value: r.pick(GATTValues.cccdValues) ?? [3, 0]),
                       at: r.below(ops.count + 1))
        }
    }
}
