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

/// How a recorded device failed, where its protocol's model can fail so: the link it lost in a
/// protocol state (the speaker during a download, at its last reported progress; the nRF7 in a
/// connection state). `emu:recorded` and `emulate --from` serve it; a named device does not,
/// so a replay against it still tells whether a healthy device fails there too.
public struct RecordedFault: Sendable, Hashable {
    public var speakerLinkLoss: (state: SpeakerOTA.State, progress: UInt8)?
    public var nrf7LinkLoss: Int?
    public init() {}

    public static func == (a: RecordedFault, b: RecordedFault) -> Bool {
        a.speakerLinkLoss?.state == b.speakerLinkLoss?.state && a.speakerLinkLoss?.progress == b.speakerLinkLoss?.progress
            && a.nrf7LinkLoss == b.nrf7LinkLoss
    }

    public func hash(into h: inout Hasher) {
        h.combine(speakerLinkLoss?.state)
        h.combine(speakerLinkLoss?.progress)
        h.combine(nrf7LinkLoss)
    }

    /// What the emulated device will do, for its summary.
    var sentence: String? {
        if let (state, progress) = speakerLinkLoss {
            return state == .downloading ? "the link lost at \(progress) % of the download, as recorded" : "the link lost in \(state), as recorded"
        }
        if let raw = nrf7LinkLoss { return "the link lost in connection state \(NRF7.state(raw)), as recorded" }
        return nil
    }
}

extension EmulatedDeviceSpec {
    /// The same device model failing as the recorded device did (`RecordedFault`).
    public func withRecordedFault(_ fault: RecordedFault) -> EmulatedDeviceSpec {
        var spec = self
        switch configuration {
        case .speaker(var c)?:
            guard let (state, progress) = fault.speakerLinkLoss else { return self }
            c.disconnectAt = state
            c.disconnectAtProgress = state == .downloading ? progress : nil
            spec.set(.speaker(c))
        case .nrf7(var c)?:
            guard let raw = fault.nrf7LinkLoss else { return self }
            c.disconnectAt = raw
            spec.set(.nrf7(c))
        default:
            return self
        }
        if let s = fault.sentence { spec.summary += "; \(s)" }
        return spec
    }

    /// The same device model (its faults and quirks kept) serving a recorded device's database:
    /// its handles, extra services and read values, the MTU it accepted and its prepare-queue size.
    public func withRecordedTable(_ recorded: RecordedTable) -> EmulatedDeviceSpec {
        var spec = self
        if let mtu = recorded.serverMTU { spec.serverMTU = min(spec.serverMTU, max(23, mtu)) }
        switch configuration {
        case .speaker(var c)?:
            c.recordedTable = recorded
            spec.set(.speaker(c))
        case .sensor(var c)?:
            c.recordedTable = recorded
            spec.set(.sensor(c))
        case .nrf7(var c)?:
            c.recordedTable = recorded
            spec.set(.nrf7(c))
        case .esp(var c)?:
            c.recordedTable = recorded
            spec.set(.esp(c))
        case nil:
            return self
        }
        spec.summary += " (with the recorded GATT table)"
        return spec
    }

    /// The same device model keeping the recorded device's pace.
    public func withCadence(_ cadence: RecordedCadence) -> EmulatedDeviceSpec {
        var spec = self
        switch configuration {
        case .speaker(var c)?:
            if let v = cadence.firmwareKB { c.firmwareKB = max(1, v) }
            if let v = cadence.totalKBFromDownload { c.totalKBFromDownload = v }
            if let v = cadence.progressEveryKB { c.progressEveryKB = max(1, v) }
            if let v = cadence.downloadKBPerSecond { c.downloadKBPerSecond = max(1, v) }
            spec.set(.speaker(c))
        case .sensor(var c)?:
            if let v = cadence.scanDuration { c.scanDuration = max(0, v) }
            if let v = cadence.notificationGap { c.notificationGap = max(0, v) }
            if let v = cadence.separateMarkers { c.separateMarkers = v }
            spec.set(.sensor(c))
        case .nrf7(var c)?:
            if let v = cadence.scanDuration { c.scanDuration = max(0, v) }
            spec.set(.nrf7(c))
        case .esp(var c)?:
            if let v = cadence.scanDuration { c.scanDuration = max(0, v) }
            spec.set(.esp(c))
        case nil:
            return self
        }
        return spec
    }

    /// The same ESP-IDF device with its configuration changed (a replay shapes the security
    /// scheme, proto-ver answer and PoP like the recorded device's); other devices unchanged.
    public func withESP(_ change: (inout ESPConfiguration) -> Void) -> EmulatedDeviceSpec {
        guard case .esp(var c)? = configuration else { return self }
        change(&c)
        var spec = self
        spec.set(.esp(c))
        return spec
    }

    /// A clone of a recorded device whose protocol GATTLab does not model (`ClonedDevice`).
    public static func clone(name: String, recorded: RecordedTable, reactions: [RecordedReaction],
                             unsolicited: RecordedUnsolicited = RecordedUnsolicited(), answers: [[UInt8]: [[UInt8]]] = [:]) -> EmulatedDeviceSpec {
        EmulatedDeviceSpec(name: name, kind: "clone", summary: "a clone of the recorded device: its database, its answers as recorded",
                           serverMTU: recorded.serverMTU ?? 247,
                           make: { ClonedDevice.factory(recorded, reactions: reactions, unsolicited: unsolicited, answers: answers, serverMTU: $0) })
    }

    /// Puts a changed configuration in place, with the factory that builds it.
    mutating func set(_ c: DeviceConfiguration) {
        configuration = c
        switch c {
        case .speaker(let s): make = { SpeakerDevice.factory(s, serverMTU: $0) }
        case .sensor(let s): make = { SensorDevice.factory(s, serverMTU: $0) }
        case .nrf7(let s): make = { NRF7Device.factory(s, serverMTU: $0) }
        case .esp(let s): make = { ESPDevice.factory(s, serverMTU: $0) }
        }
    }
}
