import ATT
import Profiles

/// What a value means, for scripts and reports, and whether two values mean the same: the
/// protocol's meaning (`ReplayingProtocol`), with what legitimately differs between runs
/// (progress, downloaded KB, RSSI) left out.
enum ValueMeaning {
    /// A short description of a value on a device protocol's characteristic, nil for others.
    static func describe(_ bytes: [UInt8], characteristic: BluetoothUUID?, written: Bool, protocols: ProtocolSet) -> String? {
        guard let c = characteristic else { return nil }
        for type in protocols.replaying {
            if let text = type.describe(bytes, characteristic: c, written: written) { return text }
        }
        return nil
    }

    /// Whether an observed value is equivalent to the recorded one, and if not, why (one line).
    static func difference(recorded: [UInt8], observed: [UInt8], characteristic: BluetoothUUID?, progress: Bool = false,
                           protocols: ProtocolSet) -> String? {
        if recorded == observed { return nil }
        if let c = characteristic,
           protocols.replaying.contains(where: { $0.sameMeaning(recorded: recorded, observed: observed, characteristic: c, progress: progress) }) {
            return nil
        }
        let r = describe(recorded, characteristic: characteristic, written: false, protocols: protocols) ?? Hex.string(recorded)
        let o = describe(observed, characteristic: characteristic, written: false, protocols: protocols) ?? Hex.string(observed)
        return r == o ? "recorded \(Hex.string(recorded)), observed \(Hex.string(observed))" : "recorded \(r), observed \(o)"
    }

    /// A read whose value says what the device is rather than what the protocol did: a SIG
    /// characteristic (Device Name, firmware revision) or a descriptor.
    static func isInformational(_ characteristic: BluetoothUUID?) -> Bool {
        guard let c = characteristic else { return true }
        return c.uuid16 != nil
    }
}
