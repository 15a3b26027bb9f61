import ATT
import Dispatch
import Foundation
import Emulator
import Profiles
import Transport

/// Black-box fuzzing of a device in another process (`unix:`) or a real one (`bluez:`): the
/// inputs of the device targets (ATT PDUs, repeat counts, and for the sensor an MTU) sent over a
/// link, one connection per input. Oracles: the device dropped the link (a crash, a reset) or
/// stopped accepting connections (the process died), no answer within the timeout, an answer
/// longer than the MTU, more than 64 KiB of Prepare Writes accepted (memory without bound), a
/// status in no state the protocol has, and SCAN results that depend on the MTU. Each input's
/// exchange is recorded so a finding comes with a btsnoop capture Wireshark opens.
public enum BlackBox {
    /// A black-box target for `kind` (device-speaker or device-sensor) reached through `connect`.
    /// `timeout` is the wait for each answer, in the link's time.
    /// `maxPDUs` caps the PDUs one input sends, repeats included (nil: no cap): a radio link
    /// carries some hundred PDUs a second, and an input of 256 repeated Prepare Writes would
    /// take seconds of the campaign.
    public static func target(_ kind: String, label: String, timeout: Int64 = 5_000_000, maxPDUs: Int? = nil,
                              protocols: ProtocolSet,
                              connect: @escaping @Sendable () -> any TimedATTBearer & LinkControl) throws(FuzzError) -> FuzzTarget {
        let base = try FuzzTargets.named(kind, protocols: protocols)
        let handles = emulatedHandles(kind, protocols)
        let invariant = FuzzTargets.devices(protocols).first(where: { $0.name == kind })?.mtuInvariant
        let probe = invariant.flatMap { i in handles[i.characteristic].map { (invariant: i, handle: $0) } }
        let state = State(handles: handles, oracles: protocols.conforming(to: (any FuzzableProtocol.Type).self), probe: probe)
        return FuzzTarget(name: kind, summary: "\(base.summary), black-box over \(label)", maxLength: base.maxLength, seeds: base.seeds,
                          mutator: base.mutator, minimizeTries: 60, execute: { input, f in
            let box = OutcomeBox()
            let semaphore = DispatchSemaphore(value: 0)
            Task {
                let link = RecordingLink(connect())
                let outcome = await session(kind, input, link: link, timeout: timeout, maxPDUs: maxPDUs, state: state, features: f)
                state.setLast(await link.recording())
                box.value = outcome
                semaphore.signal()
            }
            semaphore.wait()
            return box.value
        }, artifact: { path, _ in
            try? state.last()?.write(to: path + ".btsnoop", overwrite: true)
        }, remote: label)
    }

    final class OutcomeBox: @unchecked Sendable {
        // Written by the session task before the semaphore is signalled, read after it.
        var value: FuzzOutcome = .ok
    }

    /// What black-box runs share: the reference scan and the last exchange's recording.
    final class State: @unchecked Sendable {
        /// Where the target's emulated device keeps the protocols' characteristics (a real
        /// device's table would come from discovery), for the notification oracles.
        let handles: [BluetoothUUID: UInt16]
        let oracles: [any FuzzableProtocol.Type]
        /// The target's MTU invariant, with where the emulated device keeps its characteristic.
        let probe: (invariant: MTUInvariant, handle: UInt16)?
        private let lock = NSLock()
        private var recording: Recording?
        private var referenceNetworks: Set<String>?
        init(handles: [BluetoothUUID: UInt16], oracles: [any FuzzableProtocol.Type], probe: (invariant: MTUInvariant, handle: UInt16)?) {
            self.handles = handles
            self.oracles = oracles
            self.probe = probe
        }
        func setLast(_ r: Recording) { lock.withLock { recording = r } }
        func last() -> Recording? { lock.withLock { recording } }
        func reference() -> Set<String>? { lock.withLock { referenceNetworks } }
        func setReference(_ n: Set<String>) { lock.withLock { referenceNetworks = n } }
    }

    static func session(_ kind: String, _ input: [UInt8], link: RecordingLink, timeout: Int64, maxPDUs: Int? = nil,
                        state: State, features f: Features) async -> FuzzOutcome {
        let outcome = await exchange(kind, input, link: link, timeout: timeout, maxPDUs: maxPDUs, state: state, features: f)
        await link.close()
        return outcome
    }

    static func exchange(_ kind: String, _ input: [UInt8], link: RecordingLink, timeout: Int64, maxPDUs: Int? = nil,
                         state: State, features f: Features) async -> FuzzOutcome {
        await link.connect()
        if !(await link.isConnected()) {
            try? await link.wait(200_000)
            await link.connect()
            guard await link.isConnected() else {
                return .finding(kind: "target-gone", detail: "the target no longer accepts connections (the process died or hangs)")
            }
        }
        var mtu = 23
        var body = input
        if let probe = state.probe {
            guard input.count >= 2 else { return .ok }
            let asked = max(23, min(517, Int(UInt16(input[0]) << 8 | UInt16(input[1]))))
            body = Array(input.dropFirst(2))
            let result = await scanNetworks(link, mtu: UInt16(asked), timeout: timeout, invariant: probe.invariant, handle: probe.handle)
            let agreed: Int, networks: Set<String>?
            switch result {
            case .success(let r): (agreed, networks) = r
            case .failure(let e): return e.outcome
            }
            mtu = agreed
            f.add(1, UInt64(agreed))
            if let reference = state.reference(), let networks, networks != reference {
                let missing = reference.subtracting(networks).sorted().prefix(3).joined(separator: ", ")
                return .finding(kind: "scan-depends-on-mtu", detail: "SCAN at MTU \(agreed) returned \(networks.count) networks, \(reference.count) at MTU 247; missing: \(missing)")
            }
            // The reference: the first complete answer at MTU 247 (the first seed asks for it).
            if state.reference() == nil, agreed == 247, let networks { state.setReference(networks) }
        }
        var prepared = 0
        let notified = Notified()
        var clientMTU = mtu
        var exchanged = state.probe != nil
        var budget = maxPDUs ?? Int.max
        for (times, pdu) in DeviceTargets.pdus(body) {
            guard let opcode = pdu.first, budget > 0 else { continue }
            f.add(2, UInt64(opcode) << 8 | Features.lengthClass(pdu.count))
            let repeats = min(times, 256, budget)
            budget -= repeats
            for _ in 0..<repeats {
                do { try await link.send(pdu) } catch {
                    return .finding(kind: "link-dropped", detail: "the device dropped the link before PDU 0x\(String(opcode, radix: 16)) was sent (a crash or reset)")
                }
                if opcode == 0x02, pdu.count >= 3 { clientMTU = Int(UInt16(pdu[1]) | UInt16(pdu[2]) << 8) }
                let wantsAnswer = ATTOpcode(rawValue: opcode).map { $0.isRequest } ?? false
                guard wantsAnswer else { continue }
                let answer: [UInt8]?
                do { answer = try await nextAnswer(link, timeout: timeout, notified: notified) } catch {
                    return .finding(kind: "link-dropped", detail: "the device dropped the link after opcode 0x\(String(opcode, radix: 16)) (a crash or reset)")
                }
                guard let answer else {
                    return .finding(kind: "no-answer", detail: "no answer to opcode 0x\(String(opcode, radix: 16)) within \(timeout / 1000) ms")
                }
                f.add(3, UInt64(answer.first ?? 0) << 8 | UInt64(answer.count > 4 ? answer[4] : 0))
                if let finding = DeviceTargets.notificationFinding(notified.values, oracles: state.oracles, valueHandle: { state.handles[$0] }) {
                    return finding
                }
                if answer.first == 0x03, answer.count >= 3, !exchanged {
                    // The MTU both sides use: the smaller of the two, at least 23, set by the
                    // first exchange of the connection (a later one changes nothing).
                    mtu = max(23, min(clientMTU, Int(UInt16(answer[1]) | UInt16(answer[2]) << 8)))
                    exchanged = true
                }
                if answer.count > max(mtu, 23) {
                    return .finding(kind: "answer-over-mtu", detail: "a \(answer.count)-byte answer on MTU \(mtu)")
                }
                if answer.first == 0x17 {
                    prepared += max(0, answer.count - 5)
                    if prepared > DeviceTargets.maxQueuedBytes {
                        return .finding(kind: "unbounded-prepare-queue", detail: "the device accepted \(prepared) bytes of Prepare Writes without Prepare Queue Full")
                    }
                }
                if answer.first == 0x19 || (answer.first == 0x01 && answer.count > 1 && answer[1] == 0x18) { prepared = 0 }
            }
        }
        // The last answer may have been the device's reset: give it a moment to show.
        if (try? await nextAnswer(link, timeout: 20_000)) == nil, !(await link.isConnected()) {
            return .finding(kind: "link-dropped", detail: "the device dropped the link at the end of the exchange (a crash or reset)")
        }
        return .ok
    }

    /// The next request's answer; notifications and indications on the way are checked and
    /// confirmed. Nil on timeout; throws when the link drops.
    static func nextAnswer(_ link: RecordingLink, timeout: Int64, notified: Notified? = nil) async throws(BearerError) -> [UInt8]? {
        let deadline = await link.now() + timeout
        while true {
            let left = deadline - (await link.now())
            guard left > 0 else { return nil }
            guard let pdu = try await link.receive(within: left) else { return nil }
            switch pdu.first {
            case 0x1B:
                notified?.add(pdu)
                continue
            case 0x1D:
                notified?.add(pdu)
                try await link.send([0x1E])
                continue
            default: return pdu
            }
        }
    }

    /// MTU exchange, subscription and SCAN, joined as the phone joins it; failure carries a finding.
    static func scanNetworks(_ link: RecordingLink, mtu: UInt16, timeout: Int64, invariant: MTUInvariant,
                             handle: UInt16) async -> Result<(Int, Set<String>?), FuzzOutcomeError> {
        do {
            try await link.send(ATTPDU.exchangeMTURequest(clientRxMTU: mtu).encode())
            guard let m = try await nextAnswer(link, timeout: timeout) else { return .failure(.init(.finding(kind: "no-answer", detail: "no Exchange MTU answer"))) }
            let agreed = m.count >= 3 && m[0] == 0x03 ? max(23, min(Int(mtu), Int(UInt16(m[1]) | UInt16(m[2]) << 8))) : 23
            // The characteristic where the emulated device keeps it, its CCCD next; a real
            // device is found by discovery in the replay tool, not here.
            try await link.send(ATTPDU.writeRequest(handle: handle + 1, value: [1, 0]).encode())
            _ = try await nextAnswer(link, timeout: timeout)
            try await link.send(ATTPDU.writeRequest(handle: handle, value: invariant.request).encode())
            _ = try await nextAnswer(link, timeout: timeout)
            var joiner = invariant.joiner()
            let deadline = await link.now() + 15_000_000
            while await link.now() < deadline {
                guard let pdu = try await link.receive(within: deadline - (await link.now())) else { break }
                guard pdu.count >= 3, pdu[0] == 0x1B else { continue }
                if joiner.add(Array(pdu.dropFirst(3))) { break }
            }
            return .success((agreed, joiner.items))
        } catch {
            return .failure(.init(.finding(kind: "link-dropped", detail: "the device dropped the link during SCAN (a crash or reset)")))
        }
    }

    /// Notifications and indications that came while waiting for answers: (handle, value).
    final class Notified: @unchecked Sendable {
        // Used by one session task at a time.
        var values: [(UInt16, [UInt8])] = []
        func add(_ pdu: [UInt8]) {
            guard pdu.count >= 3, values.count < 4096 else { return }
            values.append((UInt16(pdu[1]) | UInt16(pdu[2]) << 8, Array(pdu.dropFirst(3))))
        }
    }

    /// Where the emulated device of device target `kind` keeps each protocol's characteristics.
    static func emulatedHandles(_ kind: String, _ protocols: ProtocolSet) -> [BluetoothUUID: UInt16] {
        guard let name = FuzzTargets.devices(protocols).first(where: { $0.name == kind })?.device,
              let spec = EmulatedDeviceSpec.named(name, protocols: protocols) else { return [:] }
        let server = DeviceTargets.Bench(spec, protocols: protocols).device.server
        var handles: [BluetoothUUID: UInt16] = [:]
        for p in protocols.conforming(to: (any FuzzableProtocol.Type).self) {
            for uuid in p.characteristics { handles[uuid] = server.valueHandle(of: uuid) }
        }
        return handles
    }

    struct FuzzOutcomeError: Error {
        let outcome: FuzzOutcome
        init(_ o: FuzzOutcome) { outcome = o }
    }
}

