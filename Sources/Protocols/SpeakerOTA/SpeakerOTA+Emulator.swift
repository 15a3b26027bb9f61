import Emulator
import Profiles

/// The speaker in the emulator: its devices, quirks and configuration (scenarios in
/// SpeakerOTA+Scenarios.swift).
extension SpeakerOTAProtocol: EmulatedProtocol {
    public static var deviceKind: String { "speaker" }

    public static var devices: [EmulatedDeviceSpec] {
        [
            EmulatedDeviceSpec(name: "speaker", kind: "speaker", summary: "the ChaoticVolt speaker's OTA service, no faults",
                               configuration: SpeakerConfiguration()),
            EmulatedDeviceSpec(name: "speaker-hangs-downloading", kind: "speaker",
                               summary: "a speaker whose firmware hangs as the download starts: the link stays up, nothing answers",
                               configuration: Scenario.with { (c: inout SpeakerConfiguration) in c.hangAt = .downloading }),
        ]
    }

    public static var quirks: [(name: String, summary: String)] {
        SpeakerQuirk.allCases.map { ($0.rawValue, $0.summary) }
    }
}

extension SpeakerConfiguration: DeviceConfiguring {
    public func factory(serverMTU: UInt16) -> DeviceFactory {
        SpeakerDevice.factory(self, serverMTU: serverMTU)
    }

    public func planting(quirks names: [String]) -> SpeakerConfiguration {
        var c = self
        c.quirks.formUnion(names.compactMap(SpeakerQuirk.init(rawValue:)))
        return c
    }

    /// The link lost in the state the last status reported (during a download: at its progress).
    public func withFault(_ fault: RecordedFault) -> (configuration: SpeakerConfiguration, sentence: String)? {
        guard let status = fault.last(on: SpeakerOTA.status, { SpeakerOTA.Status.decode($0).0 }), let state = status.state else { return nil }
        let progress = status.progress
        var c = self
        c.disconnectAt = state
        c.disconnectAtProgress = state == .downloading ? progress : nil
        return (c, state == .downloading ? "the link lost at \(progress) % of the download, as recorded" : "the link lost in \(state), as recorded")
    }

    public func withCadence(_ cadence: RecordedCadence) -> SpeakerConfiguration {
        var c = self
        if let v = cadence.firmwareKB { c.firmwareKB = max(1, v) }
        if let v = cadence.totalKBFromDownload { c.totalKBFromDownload = v }
        if let v = cadence.progressEveryKB { c.progressEveryKB = max(1, v) }
        if let v = cadence.downloadKBPerSecond { c.downloadKBPerSecond = max(1, v) }
        return c
    }
}
