import Emulator
import Profiles

/// The nRF7002 in the emulator: its device and configuration (scenarios in NRF7+Scenarios.swift).
extension NRF7Protocol: EmulatedProtocol {
    public static var deviceKind: String { "nrf7" }

    public static var devices: [EmulatedDeviceSpec] {
        [
            EmulatedDeviceSpec(name: "nrf7", kind: "nrf7", summary: "an nRF7002 with Nordic's Wi-Fi provisioning service (Zephyr)",
                               configuration: NRF7Configuration()),
        ]
    }
}

extension NRF7Configuration: DeviceConfiguring {
    public func factory(serverMTU: UInt16) -> DeviceFactory {
        NRF7Device.factory(self, serverMTU: serverMTU)
    }

    public func inEnvironment(_ environment: WiFiEnvironment) -> NRF7Configuration? {
        var c = self
        c.environment = environment
        return c
    }

    /// The link lost in the connection state the last result reported.
    public func withFault(_ fault: RecordedFault) -> (configuration: NRF7Configuration, sentence: String)? {
        guard let raw = fault.last(on: NRF7.dataOut, { NRF7.Result.decode($0).0?.state?.raw }) else { return nil }
        var c = self
        c.disconnectAt = raw
        return (c, "the link lost in connection state \(NRF7.state(raw)), as recorded")
    }

    public func withCadence(_ cadence: RecordedCadence) -> NRF7Configuration {
        var c = self
        if let v = cadence.scanDuration { c.scanDuration = max(0, v) }
        return c
    }
}
