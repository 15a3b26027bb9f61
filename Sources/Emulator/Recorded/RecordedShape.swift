import ATT
import Profiles

/// The pace a recorded device kept, where its protocol has one: how large its firmware was and
/// how often it reported download progress, how long its Wi-Fi scan took, how far apart its scan
/// notifications came and whether MORE/END travelled on their own. Nil fields keep the model's.
public struct RecordedCadence: Sendable, Hashable {
    public var firmwareKB: UInt16?
    /// Whether the speaker's statuses before the download said 0 KB of 0 (the size came with it).
    public var totalKBFromDownload: Bool?
    public var progressEveryKB: Int?
    public var downloadKBPerSecond: Int?
    public var scanDuration: Int64?
    public var notificationGap: Int64?
    public var separateMarkers: Bool?
    public init() {}
}

/// How a recorded device failed: it lost the link (the device's side, not a phone hanging up)
/// after notifying these values. A protocol's model reads from them the state it failed in (the
/// speaker's last status, the nRF7's last connection state; `DeviceConfiguring.withFault`).
/// `emu:recorded` and `emulate --from` serve it; a named device does not, so a replay against it
/// still tells whether a healthy device fails there too.
public struct RecordedFault: Sendable, Hashable {
    /// One notification: its characteristic (as scripts write it) and value.
    public struct Notification: Sendable, Hashable {
        public var characteristic: String
        public var value: [UInt8]
        public init(characteristic: String, value: [UInt8]) {
            self.characteristic = characteristic
            self.value = value
        }
    }

    /// The device's notifications before it lost the link, oldest first; empty when it did not.
    public var notifiedBeforeLinkLoss: [Notification]

    public init(notifiedBeforeLinkLoss: [Notification] = []) {
        self.notifiedBeforeLinkLoss = notifiedBeforeLinkLoss
    }

    /// The newest value notified on `characteristic` that `read` understands.
    public func last<T>(on characteristic: BluetoothUUID, _ read: ([UInt8]) -> T?) -> T? {
        for n in notifiedBeforeLinkLoss.reversed() where n.characteristic == characteristic.canonicalString {
            if let value = read(n.value) { return value }
        }
        return nil
    }
}

extension EmulatedDeviceSpec {
    /// The same device model failing as the recorded device did (`RecordedFault`), where its
    /// model can fail so.
    public func withRecordedFault(_ fault: RecordedFault) -> EmulatedDeviceSpec {
        guard let (failing, sentence) = configuration?.withFault(fault) else { return self }
        var spec = self
        spec.set(failing)
        spec.summary += "; \(sentence)"
        return spec
    }

    /// The same device model (its faults and quirks kept) serving a recorded device's database:
    /// its handles, extra services and read values, the MTU it accepted and its prepare-queue size.
    public func withRecordedTable(_ recorded: RecordedTable) -> EmulatedDeviceSpec {
        guard var c = configuration else { return self }
        var spec = self
        if let mtu = recorded.serverMTU { spec.serverMTU = min(spec.serverMTU, max(23, mtu)) }
        c.recordedTable = recorded
        spec.set(c)
        spec.summary += " (with the recorded GATT table)"
        return spec
    }

    /// The same device model keeping the recorded device's pace.
    public func withCadence(_ cadence: RecordedCadence) -> EmulatedDeviceSpec {
        guard let c = configuration else { return self }
        var spec = self
        spec.set(c.withCadence(cadence))
        return spec
    }

    /// A clone of a recorded device whose protocol GATTLab does not model (`ClonedDevice`).
    public static func clone(name: String, recorded: RecordedTable, reactions: [RecordedReaction],
                             unsolicited: RecordedUnsolicited = RecordedUnsolicited(), answers: [[UInt8]: [[UInt8]]] = [:]) -> EmulatedDeviceSpec {
        EmulatedDeviceSpec(name: name, kind: "clone", summary: "a clone of the recorded device: its database, its answers as recorded",
                           serverMTU: recorded.serverMTU ?? 247,
                           make: { ClonedDevice.factory(recorded, reactions: reactions, unsolicited: unsolicited, answers: answers, serverMTU: $0) })
    }
}
