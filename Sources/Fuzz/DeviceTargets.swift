import ATT
import Emulator
import Profiles

/// Emulated devices' request handling as fuzz targets. An input is a sequence of ATT PDUs, each
/// `[repeat][length][bytes]` (sent `repeat + 1` times, so a flood of Prepare Writes fits in a
/// small input), given to a device just powered on. Oracles: the firmware crashed (the device
/// reports it, as a watchdog reset would show), an answer longer than the MTU, a prepare queue
/// past 64 KiB (memory without bound), and the protocols' own oracles on what it notified. The
/// targets themselves are the protocols' (`FuzzableProtocol.deviceFuzzTargets`); these are the
/// parts they share.
public enum DeviceTargets {
    /// Prepare Writes queued past this are memory without bound.
    public static let maxQueuedBytes = 65_536

    /// Splits an input into PDUs (with their repeat counts).
    public static func pdus(_ input: [UInt8]) -> [(times: Int, pdu: [UInt8])] {
        var out: [(Int, [UInt8])] = []
        var i = 0
        while i + 1 < input.count {
            let times = Int(input[i]) + 1
            let n = Int(input[i + 1])
            i += 2
            let end = min(input.count, i + n)
            out.append((times, Array(input[i..<end])))
            i = end
        }
        return out
    }

    /// The input that sends these PDUs (each at most 255 bytes, repeated at most 256 times).
    public static func encode(_ pdus: [(times: Int, pdu: [UInt8])]) -> [UInt8] {
        pdus.flatMap { [UInt8(clamping: max(0, $0.times - 1)), UInt8(clamping: $0.pdu.count)] + $0.pdu.prefix(255) }
    }

    /// A device on its own clock, as the emulator runs it, for one input; the protocols in
    /// `protocols` check what it notifies.
    public final class Bench {
        let scheduler = VirtualScheduler(start: 1_748_772_000_000_000)
        public let device: any DeviceModel
        /// (handle, value) of every notification and indication, in order.
        public private(set) var notified: [(UInt16, [UInt8])] = []
        let oracles: [any FuzzableProtocol.Type]

        public init(_ spec: EmulatedDeviceSpec, protocols: ProtocolSet) {
            device = spec.factory(scheduler, 1)
            device.server.resetConnection()
            device.connected()
            oracles = protocols.conforming(to: (any FuzzableProtocol.Type).self)
        }

        /// Sends one PDU and lets the device's timers run for `settle` µs; nil when an oracle fired.
        public func send(_ pdu: [UInt8], f: Features, settle: Int64 = 50_000) -> FuzzOutcome {
            let answers = device.server.handle(pdu)
            let mtu = Int(device.server.mtu)
            for a in answers {
                guard a.count <= mtu else {
                    return .finding(kind: "answer-over-mtu", detail: "a \(a.count)-byte answer on MTU \(mtu) to opcode 0x\(String(pdu.first ?? 0, radix: 16))")
                }
                f.add(10, UInt64(a.first ?? 0) << 8 | UInt64(a.count > 4 ? a[4] : 0))
                if a.first == 0x1B || a.first == 0x1D { notified.append((UInt16(a[1]) | UInt16(a[2]) << 8, Array(a.dropFirst(3)))) }
            }
            return settleTimers(settle, f: f)
        }

        public func settleTimers(_ time: Int64, f: Features) -> FuzzOutcome {
            let until = scheduler.now + time
            var fired = 0
            while let next = scheduler.nextTime, next <= until, fired < 10_000 {
                scheduler.runNext()
                fired += 1
                for n in device.server.takeOutgoing() where n.count >= 3 {
                    notified.append((UInt16(n[1]) | UInt16(n[2]) << 8, Array(n.dropFirst(3))))
                }
            }
            scheduler.advance(to: until)
            return check(f)
        }

        func check(_ f: Features) -> FuzzOutcome {
            if let crash = device.crash { return .finding(kind: "firmware-crash", detail: crash) }
            if let finding = DeviceTargets.notificationFinding(notified, oracles: oracles, valueHandle: { device.server.valueHandle(of: $0) }) {
                return finding
            }
            if device.server.preparedBytes > DeviceTargets.maxQueuedBytes {
                return .finding(kind: "unbounded-prepare-queue", detail: "the device queued \(device.server.preparedBytes) bytes of Prepare Writes without Prepare Queue Full")
            }
            return .ok
        }
    }

    /// The first finding of the protocols' notification oracles.
    static func notificationFinding(_ notified: [(UInt16, [UInt8])], oracles: [any FuzzableProtocol.Type],
                                    valueHandle: (BluetoothUUID) -> UInt16?) -> FuzzOutcome? {
        for p in oracles {
            if let finding = p.notificationFinding(notified, valueHandle: valueHandle) { return finding }
        }
        return nil
    }

    /// Mutates one PDU of a session: its value by a protocol's structure (one of `values`, the
    /// protocols' value mutators) or generic, its repeat count, or a Prepare Write flood.
    public static func mutateSession(_ data: inout [UInt8], _ r: inout FuzzRandom, handles: [UInt16],
                              values: [@Sendable (inout [UInt8], inout FuzzRandom) -> Void]) {
        var list = pdus(data)
        if list.isEmpty { list = [(1, ATTPDU.exchangeMTURequest(clientRxMTU: 23).encode())] }
        let i = r.below(list.count)
        var (times, pdu) = list[i]
        var double = false
        switch r.below(6) {
        case 0:  // a structure-aware value for a write
            let handle = r.pick(handles) ?? 1
            var value = pdu.count > 3 ? Array(pdu.dropFirst(3)) : []
            let which = r.below(values.count + 1)
            if which < values.count { values[which](&value, &r) } else { GenericMutator.mutate(&value, &r, maxLength: 252) }
            pdu = ATTPDU.writeRequest(handle: handle, value: Array(value.prefix(252))).encode()
        case 1:  // a Prepare Write flood (twice, when it is to be larger than one entry carries)
            times = r.pick([32, 33, 64, 255]) ?? 255
            pdu = ATTPDU.prepareWriteRequest(handle: r.pick(handles) ?? 1, offset: UInt16(r.below(600)),
                                             value: [UInt8](repeating: 0x41, count: 1 + r.below(240))).encode()
            double = times == 255
        case 2:  // an MTU at a boundary
            pdu = ATTPDU.exchangeMTURequest(clientRxMTU: UInt16(clamping: (r.pick(ProtocolMutators.mtus) ?? 23) + r.below(5) - 2)).encode()
        case 3:
            times = 1 + r.below(4)
        case 4:  // a short write to one of the device's characteristics
            pdu = ATTPDU.writeRequest(handle: r.pick(handles) ?? 1, value: (0..<r.below(8)).map { _ in r.byte() }).encode()
        default:
            GenericMutator.mutate(&pdu, &r, maxLength: 255)
        }
        list[i] = (times, pdu)
        if double { list.insert((times, pdu), at: i) }
        if r.chance(20) { list.insert((1, pdu), at: r.below(list.count + 1)) }
        data = encode(Array(list.prefix(64)))
    }

    /// The emulated device named `kind` with `quirks` planted; a usage error when either is unknown.
    public static func device(_ kind: String, _ quirks: [String], _ protocols: ProtocolSet) throws(FuzzError) -> EmulatedDeviceSpec {
        do {
            return try EmulatedDeviceSpec.named(kind, quirks: quirks, protocols: protocols)
        } catch {
            throw .usage("\(error)")
        }
    }
}

