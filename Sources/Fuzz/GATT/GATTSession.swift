import ATT
import Emulator
import Foundation
import Profiles
import Transport

/// What every execution of a black-box campaign shares: the discovered device, the answer
/// timeout, the coverage, the first complete scan (the reference a later one must equal) and
/// whether the link must be encrypted.
final class GATTCampaignState: @unchecked Sendable {  // guarded by lock
    let map: DeviceMap
    let timeout: Int64
    let maxPDUs: Int?
    /// The protocols the campaign knows: their reset commands and state characteristics.
    let protocols: [any FuzzableProtocol.Type]
    let coverage = GATTCoverage()
    private let lock = NSLock()
    private var reference: (networks: Set<String>, mtu: Int)?
    private var encrypt: Bool
    private var recording: Recording?

    init(map: DeviceMap, timeout: Int64, maxPDUs: Int?, protocols: [any FuzzableProtocol.Type]) {
        self.map = map
        self.timeout = timeout
        self.maxPDUs = maxPDUs
        self.protocols = protocols
        encrypt = map.needsEncryption
    }

    var needsEncryption: Bool {
        get { lock.withLock { encrypt } }
        set { lock.withLock { encrypt = newValue } }
    }

    /// The reference scan, set by the first complete one.
    func referenceScan(or networks: Set<String>, mtu: Int) -> (networks: Set<String>, mtu: Int) {
        lock.withLock {
            if let reference { return reference }
            reference = (networks, mtu)
            return (networks, mtu)
        }
    }

    private var passwords: [(index: Int, secret: [UInt8], write: GATTOperation)] = []

    /// The password in a value the device accepted on characteristic `index` (at least 8 bytes:
    /// shorter ones are found by chance), kept for the campaign with the operation that wrote
    /// it: the 64 latest.
    func keepSecret(in value: [UInt8], of index: Int, writtenBy write: GATTOperation) {
        guard let secret = GATTValues.secret(in: value, role: map.characteristics[index].role), secret.count >= 8 else { return }
        lock.withLock {
            if passwords.contains(where: { $0.index == index && $0.secret == secret }) { return }
            passwords.append((index, secret, write))
            if passwords.count > 64 { passwords.removeFirst() }
            // A characteristic written with it before it was known as a password shows its own write.
            for (c, values) in writes where values.contains(where: { GATTSession.containsWindow(of: secret, width: 8, in: $0) }) {
                writtenElsewhere.insert(Written(index: c, secret: secret))
            }
        }
    }

    func secrets() -> [(index: Int, secret: [UInt8], write: GATTOperation)] { lock.withLock { passwords } }

    /// What the last execution's finding needed of earlier inputs: the writes that put the
    /// disclosed password on the device. A reproducer starts with them, so that it shows the
    /// fault on a device powered on afresh and not only on the one the campaign left so.
    private var needed: [GATTOperation] = []

    func setNeeded(_ operations: [GATTOperation]) { lock.withLock { needed = operations } }
    func lastNeeded() -> [GATTOperation] { lock.withLock { needed } }

    /// Values written to each characteristic, the 8 latest: what a characteristic shows of its
    /// own writes is no disclosure.
    private var writes: [Int: [[UInt8]]] = [:]

    /// Passwords of `passwords` that some write put on another characteristic (index, secret):
    /// kept for the campaign, as the device keeps what was written however long ago.
    private var writtenElsewhere: Set<Written> = []
    private struct Written: Hashable {
        let index: Int
        let secret: [UInt8]
    }

    func noteWrite(_ value: [UInt8], to index: Int) {
        guard value.count >= 8 else { return }
        lock.withLock {
            writes[index, default: []].append(value)
            if writes[index]!.count > 8 { writes[index]!.removeFirst() }
            for p in passwords where GATTSession.containsWindow(of: p.secret, width: 8, in: value) {
                writtenElsewhere.insert(Written(index: index, secret: p.secret))
            }
        }
    }

    func wasWritten(_ secret: [UInt8], to index: Int) -> Bool {
        let (values, ever) = lock.withLock {
            (writes[index] ?? [], writtenElsewhere.contains(Written(index: index, secret: secret)))
        }
        return ever || values.contains { GATTSession.containsWindow(of: secret, width: 8, in: $0) }
    }

    /// The link the last input left up for the next (see `GATTSession.keep`).
    private var keptLink: KeptLink?
    func keep(_ link: KeptLink?) { lock.withLock { keptLink = link } }

    /// The last input ended in a finding (the device hung, crashed, or broke a rule): the next
    /// one waits until the device is back and answering (`GATTHealth.settle`).
    private var disturbed = false
    func markDisturbed() { lock.withLock { disturbed = true } }
    func takeDisturbed() -> Bool { lock.withLock { defer { disturbed = false }; return disturbed } }
    func takeKept() -> KeptLink? { lock.withLock { defer { keptLink = nil }; return keptLink } }

    func setLast(_ r: Recording) { lock.withLock { recording = r } }
    func last() -> Recording? { lock.withLock { recording } }
}

/// One input run over one connection: the operations sent in order, each request's answer
/// awaited and checked, notifications on the way followed by the protocol observer, and the
/// oracles asked after every step. Used by one task at a time.
final class GATTSession: @unchecked Sendable {
    let link: any TimedATTBearer & LinkControl
    let state: GATTCampaignState
    let features: Features
    var map: DeviceMap { state.map }
    var observer: ProtocolObserver
    var mtu = 23
    /// The largest MTU any exchange of this connection agreed: a server that takes a second
    /// Exchange MTU (the client should send one only) may use it, so answers are held to it.
    var largestMTU = 23
    var clientMTU = 23
    var exchanged = false
    /// Bytes of Prepare Writes the device accepted and still holds.
    var prepared = 0
    /// Values written in this input, by characteristic, for the disclosure oracle.
    var written: [(index: Int, value: [UInt8])] = []
    var budget: Int
    /// The step being run, for findings: "step 3 (write to speaker OTA control, 2 bytes, in URL_RECEIVED)".
    var step: String {
        guard let c = current else { return "the end of the input" }
        let value = c.op.value.isEmpty ? "" : ", \(c.op.value.count) bytes \(Self.hex(c.op.value))"
        return "step \(c.number) of \(c.total) (\(c.op.kind) \(c.label)\(value), in state \(c.state))"
    }
    /// What `step` tells, kept as parts: the sentence is built only when a finding needs it.
    private var current: (number: Int, total: Int, op: GATTOperation, label: String, state: String)?

    /// Whether this link was encrypted.
    var encrypted = false
    /// CCCD handles this link enabled notifications or indications on (a device keeps them for
    /// the connection): a protocol under way is waited for only where its notifications can come.
    var subscribed: Set<UInt16> = []
    /// The link came from the previous input (`KeptLink`), already up.
    let inherited: Bool

    init(link: any TimedATTBearer & LinkControl, state: GATTCampaignState, features: Features) {
        self.link = link
        self.state = state
        self.features = features
        observer = ProtocolObserver(map: state.map, protocols: state.protocols)
        budget = state.maxPDUs ?? Int.max
        inherited = false
    }

    /// A session on the link the previous input left up, with what that link agreed.
    init(kept: KeptLink, state: GATTCampaignState, features: Features) {
        link = kept.link
        self.state = state
        self.features = features
        observer = ProtocolObserver(map: state.map, protocols: state.protocols)
        budget = state.maxPDUs ?? Int.max
        inherited = true
        mtu = kept.mtu
        largestMTU = kept.largestMTU
        clientMTU = kept.clientMTU
        exchanged = kept.exchanged
        encrypted = kept.encrypted
        subscribed = kept.subscribed
    }

    private func encryptLink() async {
        await link.encrypt()
        encrypted = true
    }

    /// The link for the next input, when this one left it in a state the next may start from:
    /// up, no finding, nothing queued (Prepare Writes, an answer to an unknown opcode still due,
    /// a protocol under way whose notifications would reach the next input's observer), and
    /// encrypted as the campaign wants. Else nil, and the link is closed.
    func keep(after outcome: FuzzOutcome) async -> KeptLink? {
        if !outcome.isFinding, prepared == 0, lateErrors.isEmpty, pending == nil, queuedReboot == nil, !observer.inProgress,
           !observer.dropExpected, encrypted == state.needsEncryption, await link.isConnected() {
            return KeptLink(link: link, mtu: mtu, largestMTU: largestMTU, clientMTU: clientMTU, exchanged: exchanged, encrypted: encrypted,
                            subscribed: subscribed)
        }
        if outcome.isFinding { state.markDisturbed() }
        await link.close()
        return nil
    }

    /// Connects, retrying for up to two seconds of wall time: a device that rebooted takes a
    /// moment before it accepts again.
    static func connect(_ link: any TimedATTBearer & LinkControl) async -> Bool {
        var pause: UInt64 = 2_000_000
        var waited: UInt64 = 0
        while true {
            await link.connect()
            if await link.isConnected() { return true }
            guard waited < 2_000_000_000 else { return false }
            try? await Task.sleep(nanoseconds: pause)
            waited += pause
            pause = min(pause * 2, 200_000_000)
        }
    }

    /// Writes of earlier inputs that this run's finding needs (see `GATTCampaignState.lastNeeded`).
    var needs: [GATTOperation] = []

    /// Where the health check after a drop connects (nil: this session's link). A reproducer's
    /// recording ends at the fault: how the device came back is told in words, and a link it
    /// took while it restarted, and dropped, is no part of the fault (nor does a device started
    /// afresh repeat it).
    var healthLink: (@Sendable () -> any TimedATTBearer & LinkControl)?

    /// Runs `operations`; the first `done` of them are taken as done already (an Exchange MTU
    /// the kept link made with the same MTU).
    func run(_ operations: [GATTOperation], done: Int = 0) async -> FuzzOutcome {
        let outcome = await runSteps(operations, done: done)
        state.setNeeded(outcome.isFinding ? needs : [])
        return outcome
    }

    private func runSteps(_ operations: [GATTOperation], done: Int) async -> FuzzOutcome {
        if !inherited {
            guard await Self.connect(link) else {
                return .finding(kind: "target-gone", detail: "the target no longer accepts connections (it died or hangs)")
            }
            if state.needsEncryption { await encryptLink() }
        }
        for (i, op) in operations.enumerated() where i >= done {
            guard budget > 0 else { break }
            let outcome = await perform(op, number: i + 1, of: operations.count)
            if outcome.isFinding { return outcome }
        }
        if observer.dropOwed, case .finding(let k, let d) = await awaitReboot() { return .finding(kind: k, detail: d) }
        current = nil
        let end = await probe()
        if end.isFinding { return end }
        return scanOracle()
    }

    // MARK: Steps

    private func perform(_ op: GATTOperation, number: Int, of total: Int) async -> FuzzOutcome {
        let before = observer.state
        let characteristic = map.characteristics.isEmpty ? nil : Int(op.target) % map.characteristics.count
        let descriptor = map.descriptors.isEmpty ? nil : Int(op.target) % map.descriptors.count
        let label: String
        switch op.kind {
        case .writeDescriptor, .readDescriptor: label = descriptor.map { map.descriptors[$0].label } ?? "descriptors"
        case .exchangeMTU: label = "Exchange MTU"
        case .reconnect: label = "reconnect"
        case .wait: label = "wait"
        case .raw: label = "raw ATT 0x" + String(op.value.first ?? 0, radix: 16)
        default: label = characteristic.map { map.characteristics[$0].label } ?? "characteristics"
        }
        current = (number, total, op, label, before)
        features.add(20, UInt64(op.kind.rawValue) << 32 | UInt64(op.target) << 16 | Features.lengthClass(op.value.count))
        features.add(21, Features.hash(before) ^ UInt64(op.kind.rawValue) << 8 ^ UInt64(characteristic ?? 0xFF))
        var answer = GATTCoverage.Answer.ok
        defer { state.coverage.count(label, state: before, answer) }
        let outcome: FuzzOutcome
        switch op.kind {
        case .write, .writeCommand:
            guard let c = characteristic else { return .ok }
            let value = Array(op.value.prefix(mtu - 3))
            let command = op.kind == .writeCommand
            observer.sent(value, on: c)
            let pdu = command ? ATTPDU.writeCommand(handle: map.characteristics[c].valueHandle, value: value)
                              : ATTPDU.writeRequest(handle: map.characteristics[c].valueHandle, value: value)
            outcome = await exchange(pdu.encode(), answer: &answer)
            if !outcome.isFinding, case .ok = answer {
                written.append((c, value))
                observer.accepted(value, on: c)
                // As a reproducer would write it again from a fresh link (MTU 23): a long write
                // when it does not fit one PDU there.
                let again = value.count <= 20 ? GATTOperation(op.kind, target: UInt8(truncatingIfNeeded: c), value: value)
                                              : GATTOperation(.longWrite, target: UInt8(truncatingIfNeeded: c), value: value)
                state.keepSecret(in: value, of: c, writtenBy: again)
            }
            state.noteWrite(value, to: c)
        case .read:
            guard let c = characteristic else { return .ok }
            let handle = map.characteristics[c].valueHandle
            let pdu = op.value.count >= 2 ? ATTPDU.readBlobRequest(handle: handle, offset: UInt16(op.value[0]) | UInt16(op.value[1]) << 8)
                                          : ATTPDU.readRequest(handle: handle)
            var value: [UInt8]?
            outcome = await exchange(pdu.encode(), answer: &answer, value: &value)
            if !outcome.isFinding, let value {
                // A Read Blob's answer is part of the value: only a whole value is the protocol's.
                if op.value.count < 2, case .finding(let k, let d) = observer.saw(value, on: c, mtu: mtu, notified: false) {
                    return .finding(kind: k, detail: "\(d), read at \(step)")
                }
                if let leak = disclosure(value, readFrom: c, notified: false) { return leak }
            }
        case .longWrite:
            guard let c = characteristic else { return .ok }
            var whole: [UInt8] = []
            for _ in 0...Int(op.extra) { whole += op.value }
            outcome = await longWrite(whole, to: c, answer: &answer,
                                      writtenBy: GATTOperation(.longWrite, target: UInt8(truncatingIfNeeded: c), value: op.value, extra: op.extra))
        case .prepareFlood:
            guard let c = characteristic else { return .ok }
            // Full parts: a flood is about how much the device keeps.
            let piece = Array((op.value + [UInt8](repeating: 0x41, count: max(0, mtu - 5 - op.value.count))).prefix(mtu - 5))
            // An Execute later (this input's or another's) may write the queued parts.
            state.noteWrite(piece, to: c)
            var offset = 0
            var result = FuzzOutcome.ok
            for _ in 0..<((Int(op.extra) + 1) * 32) {
                let pdu = ATTPDU.prepareWriteRequest(handle: map.characteristics[c].valueHandle, offset: UInt16(truncatingIfNeeded: offset), value: piece)
                result = await exchange(pdu.encode(), answer: &answer)
                guard !result.isFinding, case .ok = answer else { break }
                offset += piece.count
            }
            outcome = result
        case .writeDescriptor, .readDescriptor:
            guard let d = descriptor else { return .ok }
            let handle = map.descriptors[d].handle
            let pdu = op.kind == .readDescriptor ? ATTPDU.readRequest(handle: handle)
                                                 : ATTPDU.writeRequest(handle: handle, value: Array(op.value.prefix(mtu - 3)))
            outcome = await exchange(pdu.encode(), answer: &answer)
            if op.kind == .writeDescriptor, !outcome.isFinding, case .ok = answer { noteCCCD(handle, op.value) }
        case .subscribe:
            guard let c = characteristic, let cccd = map.characteristics[c].cccd else { return .ok }
            let value: [UInt8] = map.characteristics[c].canNotify ? [1, 0] : [2, 0]
            outcome = await exchange(ATTPDU.writeRequest(handle: cccd, value: value).encode(), answer: &answer)
            if !outcome.isFinding, case .ok = answer { noteCCCD(cccd, value) }
        case .exchangeMTU:
            let asked = UInt16(Self.clientMTU(of: op))
            clientMTU = Int(asked)
            outcome = await exchange(ATTPDU.exchangeMTURequest(clientRxMTU: asked).encode(), answer: &answer)
        case .reconnect:
            await link.close()
            encrypted = false
            mtu = 23
            largestMTU = 23
            exchanged = false
            prepared = 0
            subscribed = []
            guard await Self.connect(link) else {
                answer = .dropped
                return .finding(kind: "target-gone", detail: "the device no longer accepts connections after \(step)")
            }
            if state.needsEncryption { await encryptLink() }
            outcome = .ok
        case .wait:
            let doublings = Int64(min(op.extra, GATTOperation.maxWaitExtra))
            outcome = await listen(Int64(20_000) << doublings)
            if case .finding(let k, _) = outcome, k == "link-dropped" { answer = .dropped }
        case .raw:
            let pdu = Array(op.value.prefix(mtu))
            guard let opcode = pdu.first, opcode != 0 else { return .ok }  // 0x00 is the unix: control prefix, not ATT
            // A write in raw form is still a write (a REBOOT sent so is expected to drop the link).
            if opcode == 0x12 || opcode == 0x52 || opcode == 0x16, pdu.count >= 3,
               let c = map.characteristics.firstIndex(where: { $0.valueHandle == UInt16(pdu[1]) | UInt16(pdu[2]) << 8 }) {
                if opcode != 0x16 { observer.sent(Array(pdu.dropFirst(3)), on: c) }
                state.noteWrite(Array(pdu.dropFirst(opcode == 0x16 ? 5 : 3)), to: c)
            }
            outcome = await exchange(pdu, answer: &answer)
            if opcode == 0x12 || opcode == 0x52, pdu.count >= 3, !outcome.isFinding, case .ok = answer {
                noteCCCD(UInt16(pdu[1]) | UInt16(pdu[2]) << 8, Array(pdu.dropFirst(3)))
            }
        }
        return outcome
    }

    /// The MTU an Exchange MTU operation asks for (23 when its value is shorter than 2 bytes).
    static func clientMTU(of op: GATTOperation) -> Int {
        op.value.count >= 2 ? Int(UInt16(op.value[0]) | UInt16(op.value[1]) << 8) : 23
    }

    /// Prepare Writes cut at MTU-5, then Execute; a refusal cancels the queue, as a phone does.
    private func longWrite(_ value: [UInt8], to c: Int, answer: inout GATTCoverage.Answer, writtenBy op: GATTOperation) async -> FuzzOutcome {
        let handle = map.characteristics[c].valueHandle
        var offset = 0
        let part = max(1, mtu - 5)
        repeat {
            let piece = Array(value[offset..<min(value.count, offset + part)])
            let outcome = await exchange(ATTPDU.prepareWriteRequest(handle: handle, offset: UInt16(truncatingIfNeeded: offset), value: piece).encode(), answer: &answer)
            if outcome.isFinding { return outcome }
            guard case .ok = answer else {
                var ignored = GATTCoverage.Answer.ok
                return await exchange(ATTPDU.executeWriteRequest(flags: 0).encode(), answer: &ignored)
            }
            offset += piece.count
        } while offset < value.count
        observer.sent(value, on: c)
        let outcome = await exchange(ATTPDU.executeWriteRequest(flags: 1).encode(), answer: &answer)
        if !outcome.isFinding, case .ok = answer {
            written.append((c, value))
            observer.accepted(value, on: c)
            state.keepSecret(in: value, of: c, writtenBy: op)
        }
        state.noteWrite(value, to: c)
        return outcome
    }

    // MARK: ATT

    /// The response each request must get (or an Error Response naming it).
    static func responseOpcode(for request: UInt8) -> UInt8? {
        switch request {
        case 0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20: request + 1
        default: nil
        }
    }

    private func exchange(_ pdu: [UInt8], answer: inout GATTCoverage.Answer) async -> FuzzOutcome {
        var value: [UInt8]?
        return await exchange(pdu, answer: &answer, value: &value)
    }

    /// Sends one PDU; for a request, waits for its answer and checks it. `value` is a Read
    /// Response's value.
    private func exchange(_ pdu: [UInt8], answer: inout GATTCoverage.Answer, value: inout [UInt8]?) async -> FuzzOutcome {
        guard let opcode = pdu.first else { return .ok }
        budget -= 1
        state.coverage.sentPDU()
        // A reset command can arrive queued: a Prepare Write of it, then an Execute (a drop then
        // is the answer, as for a plain write of it).
        if opcode == 0x16, pdu.count >= 6, pdu[3] == 0, pdu[4] == 0,
           let c = map.characteristics.firstIndex(where: { $0.valueHandle == UInt16(pdu[1]) | UInt16(pdu[2]) << 8 }),
           state.protocols.contains(where: { $0.resetsDevice(writing: Array(pdu.dropFirst(5)), to: map.characteristics[c].uuid) }) {
            queuedReboot = (c, Array(pdu.dropFirst(5)))
        }
        if opcode == 0x18, pdu.count >= 2, pdu[1] == 1, let queued = queuedReboot { observer.sent(queued.value, on: queued.index) }
        do { try await link.send(pdu) } catch {
            answer = .dropped
            return await dropped("before \(step) was sent")
        }
        let expected = Self.responseOpcode(for: opcode)
        // A command (bit 6) has no answer; an opcode no specification has may get Request Not
        // Supported, briefly waited for so it is not taken for the next request's answer.
        let isCommand = opcode & 0x40 != 0 || opcode == 0x1E
        if isCommand { return .ok }
        let wait = expected == nil ? min(state.timeout, 30_000) : state.timeout
        let reply: [UInt8]?
        do { reply = try await nextAnswer(within: wait) } catch {
            answer = .dropped
            return await dropped("after \(step)")
        }
        guard let reply else {
            if expected == nil {
                // Its Request Not Supported may still come: not to be taken for the next answer.
                if lateErrors.count < 16 { lateErrors.append(opcode) }
                return .ok
            }
            answer = .timeout
            return .finding(kind: "no-answer", detail: "no answer within \(state.timeout / 1000) ms to \(step) (an ATT timeout: the device stopped answering)")
        }
        if reply.count > max(mtu, largestMTU) {
            return .finding(kind: "answer-over-mtu", detail: "a \(reply.count)-byte answer on MTU \(mtu) to \(step)")
        }
        features.add(22, UInt64(opcode) << 16 | UInt64(reply.first ?? 0) << 8 | UInt64(reply.first == 0x01 && reply.count == 5 ? reply[4] : 0))
        if reply.first == 0x01 {
            guard reply.count == 5 else { return violation("an Error Response of \(reply.count) bytes (it has 5) to \(step)") }
            answer = .error(reply[4])
            if reply[1] != opcode { return violation("an Error Response for request 0x\(String(reply[1], radix: 16)) to \(step) (request 0x\(String(opcode, radix: 16)))") }
            if DeviceMap.asksForEncryption(ATTErrorCode(rawValue: reply[4])), !state.needsEncryption {
                // The device asks for a paired link: from the next input on, links are encrypted.
                state.needsEncryption = true
            }
            if reply[4] == 0x09 || opcode == 0x18 { prepared = 0 }
            return .ok
        }
        if let expected, reply.first != expected {
            return violation("answer 0x\(String(reply.first ?? 0, radix: 16)) to \(step), which needs 0x\(String(expected, radix: 16)) or an Error Response")
        }
        switch opcode {
        case 0x02:
            let server = reply.count >= 3 ? Int(UInt16(reply[1]) | UInt16(reply[2]) << 8) : 0
            if server < 23 { return violation("an Exchange MTU Response with MTU \(server), below the minimum of 23") }
            // The client MTU this request asked for, as the device took it: a raw Exchange MTU
            // carries its own, which the last typed exchange's would misstate (a raw one too
            // short to hold it, answered all the same, leaves the last one).
            if pdu.count >= 3 { clientMTU = Int(UInt16(pdu[1]) | UInt16(pdu[2]) << 8) }
            if !exchanged {
                mtu = max(23, min(clientMTU, server))
                exchanged = true
            }
            largestMTU = max(largestMTU, min(clientMTU, server))
            features.add(23, UInt64(mtu))
        case 0x0A, 0x0C:
            value = Array(reply.dropFirst())
        case 0x16:
            // The Prepare Write Response echoes the request (Core Vol 3 Part F 3.4.6.2).
            if Array(reply.dropFirst()) != Array(pdu.dropFirst()) {
                return violation("a Prepare Write Response that does not echo its request (\(step))")
            }
            prepared += max(0, pdu.count - 5)
            if prepared > DeviceTargets.maxQueuedBytes {
                return .finding(kind: "unbounded-prepare-queue", detail: "the device accepted \(prepared) bytes of Prepare Writes without Prepare Queue Full")
            }
        case 0x18:
            prepared = 0
        default:
            break
        }
        return .ok
    }

    private func violation(_ detail: String) -> FuzzOutcome { .finding(kind: "att-violation", detail: detail) }

    /// The next PDU that is not a notification or indication; those are checked, followed and
    /// confirmed on the way. Nil on timeout; throws when the link drops.
    private func nextAnswer(within timeout: Int64) async throws(BearerError) -> [UInt8]? {
        let deadline = await link.now() + timeout
        while true {
            let left = deadline - (await link.now())
            guard left > 0 else { return nil }
            guard let pdu = try await link.receive(within: left) else { return nil }
            if pdu.first == 0x1B || pdu.first == 0x1D {
                if pdu.first == 0x1D { try await link.send([0x1E]) }
                if case .finding(let k, let d) = serverInitiated(pdu) { pending = .finding(kind: k, detail: d) }
                continue
            }
            if pdu.count == 5, pdu[0] == 0x01, let i = lateErrors.firstIndex(of: pdu[1]) {
                lateErrors.remove(at: i)
                continue
            }
            return pdu
        }
    }

    /// A finding seen in a notification while waiting for an answer, reported after it.
    var pending: FuzzOutcome?
    /// The characteristic and the value, when a reset command sits in the device's prepare queue.
    var queuedReboot: (index: Int, value: [UInt8])?
    /// Opcodes no specification has, sent and not yet answered, once per sending (the same one
    /// sent twice is answered twice): an Error Response for one is that late answer.
    var lateErrors: [UInt8] = []

    private func serverInitiated(_ pdu: [UInt8]) -> FuzzOutcome {
        guard pdu.count >= 3 else { return violation("a \(pdu.count)-byte notification (it needs a handle) near \(step)") }
        if pdu.count > max(mtu, largestMTU) {
            return .finding(kind: "answer-over-mtu", detail: "a \(pdu.count)-byte notification on MTU \(mtu) near \(step)")
        }
        let handle = UInt16(pdu[1]) | UInt16(pdu[2]) << 8
        guard let c = map.characteristics.firstIndex(where: { $0.valueHandle == handle }) else {
            return violation("a notification on handle 0x\(String(handle, radix: 16)), which is no characteristic's value, near \(step)")
        }
        let value = Array(pdu.dropFirst(3))
        features.add(24, UInt64(c) << 16 | Features.lengthClass(value.count))
        if case .finding(let k, let d) = observer.saw(value, on: c, mtu: mtu, notified: true) { return .finding(kind: k, detail: "\(d), near \(step)") }
        features.add(25, Features.hash(observer.state))
        if let leak = disclosure(value, readFrom: c, notified: true) { return leak }
        return .ok
    }

    /// Listens for `microseconds` of device time, following notifications. It ends early when
    /// the protocol comes to rest, or after a silence: a tenth of the wait and at most 300 ms
    /// while the protocol is under way (a Wi-Fi join, a download, a scan), 100 ms when not.
    private func listen(_ microseconds: Int64) async -> FuzzOutcome {
        let deadline = await link.now() + microseconds
        let start = observer.state
        var heard = false
        while true {
            let now = await link.now()
            guard now < deadline else { break }
            // A protocol under way gets half the wait for its first word (a Wi-Fi scan takes
            // seconds before its first chunk), when its notifications can come at all: a link
            // that never subscribed hears nothing however long it waits (a sensor campaign spent
            // 80% of its time so). Then a campaign cannot afford seconds of silence per input:
            // a device that is slower goes on between inputs, and the next input sees its state.
            let quiet = observer.awaitsFirstWord && !heard && protocolCanNotify ? microseconds / 2 : max(2_000, min(microseconds / 10, observer.inProgress ? 300_000 : 100_000))
            let pdu: [UInt8]?
            do { pdu = try await link.receive(within: min(quiet, deadline - now)) } catch {
                return await dropped("during \(step)")
            }
            guard let pdu else { break }
            heard = true
            if pdu.first == 0x1D { try? await link.send([0x1E]) }
            if pdu.first == 0x1B || pdu.first == 0x1D {
                let outcome = serverInitiated(pdu)
                if outcome.isFinding { return outcome }
            }
            if observer.state != start, observer.isResting { break }
        }
        return pending ?? .ok
    }

    /// A value written to a handle: when it is a characteristic's CCCD, whether notifications or
    /// indications are now on.
    private func noteCCCD(_ handle: UInt16, _ value: [UInt8]) {
        guard map.characteristics.contains(where: { $0.cccd == handle }) else { return }
        if let bits = value.first, bits & 0x03 != 0 { subscribed.insert(handle) } else { subscribed.remove(handle) }
    }

    /// Whether the protocol's notifications can reach this link: a protocol characteristic that
    /// notifies or indicates has its CCCD on (or has none: a device that notifies regardless).
    /// A scan asked for on a link that never subscribed is not heard, however long one waits.
    private var protocolCanNotify: Bool {
        map.characteristics.contains { c in
            c.role != nil && (c.canNotify || c.canIndicate) && (c.cccd.map { subscribed.contains($0) } ?? true)
        }
    }

    /// Waits up to a second of device time for the drop of a REBOOT the device accepted (it
    /// answers first, then resets), following notifications meanwhile.
    private func awaitReboot() async -> FuzzOutcome {
        let deadline = await link.now() + 1_000_000
        while observer.dropOwed {
            let left = deadline - (await link.now())
            guard left > 0 else { break }
            do {
                guard let pdu = try await link.receive(within: left) else { break }
                if pdu.first == 0x1D { try? await link.send([0x1E]) }
                if pdu.first == 0x1B || pdu.first == 0x1D, case .finding(let k, let d) = serverInitiated(pdu) { return .finding(kind: k, detail: d) }
            } catch {
                return await dropped("after \(step)")
            }
        }
        return .ok
    }

    /// The end of an input: a request that any server answers (Find Information on handle 1),
    /// so a device that died or hangs after the last step shows it now and not in the next input.
    private func probe() async -> FuzzOutcome {
        if let pending { return pending }
        var answer = GATTCoverage.Answer.ok
        let outcome = await exchange(ATTPDU.findInformationRequest(startHandle: 1, endHandle: 1).encode(), answer: &answer)
        return pending ?? outcome
    }

    // MARK: Oracles

    /// A read or notification that carries bytes of an earlier write to another characteristic:
    /// a static value (a name, a revision) that changed to show them, or a secret shown anywhere.
    private func disclosure(_ value: [UInt8], readFrom c: Int, notified: Bool) -> FuzzOutcome? {
        guard value.count >= 6 else { return nil }
        let target = map.characteristics[c]
        // Passwords written in this input or an earlier one (a device keeps them): none may be
        // shown by another characteristic. Bytes the characteristic already showed at discovery,
        // before anything was written, are its own: a password that happens to hold them (the
        // fuzzer's values come partly from what the device says) is not disclosed by it.
        for (index, secret, write) in state.secrets() where index != c && Self.containsWindow(of: secret, width: 8, in: value, notIn: target.baseline)
            && !state.wasWritten(secret, to: c) && !written.contains(where: { $0.index == c && Self.containsWindow(of: secret, width: 8, in: $0.value) })
            && !(notified && echoes(secret, storedIn: index)) {
            // The password may have come from an earlier input: the reproducer writes it first.
            if !written.contains(where: { $0.index == index && Self.containsWindow(of: secret, width: 8, in: $0.value) }) { needs = [write] }
            return .finding(kind: "secret-disclosed", detail: "\(target.label) showed a password written to \(map.characteristics[index].label) (\(secret.count) bytes), at \(step)")
        }
        for (index, w) in written where index != c {
            guard target.looksStatic, let baseline = target.baseline, value != baseline, w.count >= 6 else { continue }
            for start in stride(from: 0, through: w.count - 6, by: 1) {
                let window = Array(w[start..<start + 6])
                if Set(window).count > 1, Self.contains(value, window), !Self.contains(baseline, window) {
                    return .finding(kind: "memory-disclosure", detail: "\(target.label), a value that was \(Self.hex(baseline)) at discovery, read back \(Self.hex(value)): bytes written to \(map.characteristics[index].label) (a buffer shared or not cleared), at \(step)")
                }
            }
        }
        return nil
    }

    /// Whether a notification showing `secret` may be an echo of the client's own bytes: this
    /// input (the step being run included) wrote them to another characteristic than the one
    /// that stores the password, as a UART's RX is echoed on its TX.
    private func echoes(_ secret: [UInt8], storedIn origin: Int) -> Bool {
        if written.contains(where: { $0.index != origin && Self.containsWindow(of: secret, width: 8, in: $0.value) }) { return true }
        guard let op = current?.op, [.write, .writeCommand, .longWrite, .raw].contains(op.kind), !map.characteristics.isEmpty,
              op.kind == .raw || Int(op.target) % map.characteristics.count != origin else { return false }
        return Self.containsWindow(of: secret, width: 8, in: op.value)
    }

    /// Whether any `width` consecutive bytes of `secret` appear in `value` (a read may cut it)
    /// and not in `baseline`, when one is given.
    static func containsWindow(of secret: [UInt8], width: Int, in value: [UInt8], notIn baseline: [UInt8]? = nil) -> Bool {
        guard secret.count >= width, value.count >= width else { return false }
        for start in 0...(secret.count - width) {
            let window = secret[start..<start + width]
            if contains(value, window), !(baseline.map { contains($0, window) } ?? false) { return true }
        }
        return false
    }

    /// Whether `needle` occurs in `haystack`; compares in place (this runs on every value read
    /// or notified, against every password of the campaign).
    static func contains(_ haystack: [UInt8], _ needle: some Collection<UInt8>) -> Bool {
        let n = needle.count
        guard n > 0, haystack.count >= n, let first = needle.first else { return false }
        for i in 0...(haystack.count - n) where haystack[i] == first && haystack[i..<i + n].elementsEqual(needle) {
            return true
        }
        return false
    }

    /// The complete scan of this input must list the networks of the campaign's first one.
    private func scanOracle() -> FuzzOutcome {
        guard let networks = observer.scanned else { return .ok }
        let reference = state.referenceScan(or: networks, mtu: observer.scanMTU)
        guard networks != reference.networks else { return .ok }
        let missing = reference.networks.subtracting(networks).sorted().prefix(3).joined(separator: ", ")
        let extra = networks.subtracting(reference.networks).sorted().prefix(3).joined(separator: ", ")
        return .finding(kind: "scan-inconsistent", detail: "a SCAN at MTU \(observer.scanMTU) gave \(networks.count) networks, at MTU \(reference.mtu) \(reference.networks.count)"
                        + (missing.isEmpty ? "" : "; missing: \(missing)") + (extra.isEmpty ? "" : "; not in the first scan: \(extra)"))
    }

    /// The link dropped: a finding, with how the device came back (its health); or, when the
    /// input asked for it (a REBOOT), the link is made again and the input goes on.
    private func dropped(_ when: String) async -> FuzzOutcome {
        if observer.dropExpected {
            await link.close()
            encrypted = false
            guard await Self.connect(link) else {
                return .finding(kind: "target-gone", detail: "the device did not accept a connection within 2 s after it was asked to reboot (\(step))")
            }
            if state.needsEncryption { await encryptLink() }
            observer.reconnected()
            mtu = 23
            largestMTU = 23
            exchanged = false
            prepared = 0
            return .ok
        }
        let before = observer.state
        let checked = healthLink?() ?? link
        let health = await GATTHealth.check(link: checked, map: map, protocols: state.protocols, encrypt: state.needsEncryption, timeout: state.timeout)
        if healthLink != nil { await checked.close() }
        return .finding(kind: "link-dropped", detail: "the device dropped the link \(when) (a crash or a reset); \(health.sentence(before: before))")
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let shown = bytes.prefix(12).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        return bytes.count > 12 ? shown + "…" : shown
    }
}

/// A link an input left up for the next one (see `GATTSession.keep`), with what it agreed: a new
/// connection per input costs more than most inputs' operations together.
struct KeptLink: @unchecked Sendable {  // used by one task at a time, as its session was
    let link: any TimedATTBearer & LinkControl
    let mtu: Int
    let largestMTU: Int
    let clientMTU: Int
    let exchanged: Bool
    let encrypted: Bool
    let subscribed: Set<UInt16>

    /// No MTU was exchanged on it: a fresh link's MTU.
    var isAsNew: Bool { !exchanged && largestMTU == 23 && mtu == 23 }

    /// Whether `op` is the Exchange MTU this link made first (the same client MTU): a fresh link
    /// is, after it, where this one is.
    func madeExchange(_ op: GATTOperation) -> Bool {
        guard op.kind == .exchangeMTU, exchanged, largestMTU == mtu else { return false }
        return GATTSession.clientMTU(of: op) == clientMTU
    }
}

/// How a device came back after it dropped the link: how long until it accepted a connection,
/// and the protocol state it reports (a device that rebooted forgets what it was told).
struct GATTHealth {
    var back: Bool
    var state: String?
    /// Links the device took and dropped again before it answered: it was still restarting (a
    /// connection queued before it stopped listening is dropped as it goes down).
    var restarts = 0

    static func check(link: any TimedATTBearer & LinkControl, map: DeviceMap, protocols: [any FuzzableProtocol.Type],
                      encrypt: Bool, timeout: Int64) async -> GATTHealth {
        // The first protocol whose state characteristic the device has; without one, Find
        // Information on handle 1, which any server answers, tells that the link holds.
        var found: (index: Int, protocol: any FuzzableProtocol.Type)?
        for p in protocols {
            if let uuid = p.stateCharacteristic, let i = map.characteristics.firstIndex(where: { $0.uuid == uuid }) {
                found = (i, p)
                break
            }
        }
        let request = found.map { ATTPDU.readRequest(handle: map.characteristics[$0.index].valueHandle) }
            ?? ATTPDU.findInformationRequest(startHandle: 1, endHandle: 1)
        let deadline = Date().addingTimeInterval(2)
        var restarts = 0
        while true {
            await link.close()
            // A moment for the device to go down first: a phone does not reconnect within the
            // millisecond, and a link taken meanwhile is dropped (below).
            try? await Task.sleep(nanoseconds: 20_000_000)
            guard await GATTSession.connect(link) else { return GATTHealth(back: false, restarts: restarts) }
            if encrypt { await link.encrypt() }
            let reply: [UInt8]?
            do {
                try await link.send(request.encode())
                reply = try await link.receive(within: timeout)
            } catch {
                // Dropped before an answer: the device took the link while it went down. Again,
                // as a phone reconnects, until it stays up.
                restarts += 1
                guard Date() < deadline else { return GATTHealth(back: false, restarts: restarts) }
                continue
            }
            guard let found, let reply, reply.first == 0x0B else { return GATTHealth(back: true, restarts: restarts) }
            return GATTHealth(back: true, state: found.protocol.state(read: Array(reply.dropFirst())), restarts: restarts)
        }
    }

    /// Waits, up to two seconds of wall time, until the device accepts a link and answers a
    /// request on it (Find Information on handle 1, which any server answers). A device that hung
    /// may reboot only once the hung link is gone, and drop a link it took meanwhile: the next
    /// input would meet that restart and tell another fault than its own.
    static func settle(_ link: any TimedATTBearer & LinkControl, timeout: Int64) async {
        let deadline = Date().addingTimeInterval(2)
        repeat {
            if await GATTSession.connect(link),
               (try? await link.send(ATTPDU.findInformationRequest(startHandle: 1, endHandle: 1).encode())) != nil,
               let reply = try? await link.receive(within: timeout), reply.first == 0x05 || reply.first == 0x01 {
                await link.close()
                return
            }
            await link.close()
            try? await Task.sleep(nanoseconds: 20_000_000)
        } while Date() < deadline
    }

    func sentence(before: String) -> String {
        guard back else {
            return restarts > 0 ? "it took \(restarts) link\(restarts == 1 ? "" : "s") in 2 s and dropped each before it answered" : "it did not accept a connection again within 2 s"
        }
        guard let state else { return "it accepted a connection again" }
        if state == "IDLE", before != "IDLE", before != "start" {
            return "it came back in IDLE after \(before): it rebooted and lost its configuration"
        }
        return "it came back in \(state)"
    }
}
