import ATT
import Replay

/// A recorded session as a campaign's first input (`gattlab fuzz device --seeds-from CAPTURE`):
/// its writes, reads, subscriptions and MTU in their order, each aimed at the characteristic of
/// the same UUID on the device under test, with a wait where the recording waited for
/// notifications. A customer's failing session becomes the campaign's starting point. The
/// script is the redacted one: a password keeps its length (boundaries need it) but not its
/// bytes, so no secret of the capture reaches the corpus.
public enum GATTSessionSeeds {
    public struct Mapped: Sendable {
        public var operations: [GATTOperation]
        /// Steps that name a characteristic this device does not have.
        public var unmatched: Int
    }

    public static func operations(_ script: SessionScript, on map: DeviceMap) -> Mapped {
        var ops: [GATTOperation] = []
        var unmatched = 0
        var connected = false
        func index(_ step: ReplayStep) -> UInt8? {
            if let text = step.characteristic, let uuid = BluetoothUUID(string: text),
               let i = map.characteristics.firstIndex(where: { $0.uuid == uuid }) { return UInt8(truncatingIfNeeded: i) }
            if let h = step.handle, let i = map.characteristics.firstIndex(where: { $0.valueHandle == h }), step.characteristic == nil {
                return UInt8(truncatingIfNeeded: i)
            }
            unmatched += 1
            return nil
        }
        for step in script.steps {
            let value = step.value.flatMap(Replay.Hex.bytes) ?? []
            switch step.action {
            case .connect:
                if connected { ops.append(GATTOperation(.reconnect)) }
                connected = true
            case .disconnect, .linkLost:
                break
            case .exchangeMTU:
                let m = Int(step.mtu ?? 23)
                ops.append(GATTValues.mtu(m))
            case .subscribe:
                if let i = index(step) { ops.append(GATTOperation(.subscribe, target: i)) }
            case .read:
                if step.descriptor == nil, let i = index(step) { ops.append(GATTOperation(.read, target: i)) }
            case .write:
                guard step.descriptor == nil, let i = index(step) else { continue }
                switch step.method {
                case .command: ops.append(GATTOperation(.writeCommand, target: i, value: value))
                case .long: ops.append(GATTOperation(.longWrite, target: i, value: value))
                default: ops.append(GATTOperation(value.count > 20 ? .longWrite : .write, target: i, value: value))
                }
            case .notification:
                if ops.last?.kind != .wait { ops.append(GATTValues.wait(ms: 5000)) }
            case .pdu:
                if value.first.map({ $0 != 0 }) == true, value.count <= 255 { ops.append(GATTOperation(.raw, value: value)) }
            case .discover, .encrypt:
                break
            }
        }
        return Mapped(operations: Array(ops.prefix(48)), unmatched: unmatched)
    }
}
