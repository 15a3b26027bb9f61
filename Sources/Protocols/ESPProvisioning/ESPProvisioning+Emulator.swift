import Emulator
import Profiles

/// The ESP32 in the emulator: its device and configuration (scenarios in
/// ESPProvisioning+Scenarios.swift).
extension ESPProvisioningProtocol: EmulatedProtocol {
    public static var deviceKind: String { "esp" }

    public static var devices: [EmulatedDeviceSpec] {
        [
            EmulatedDeviceSpec(name: "esp", kind: "esp", summary: "an ESP32 with ESP-IDF provisioning, security 1, PoP abcd1234",
                               configuration: ESPConfiguration()),
        ]
    }
}

extension ESPConfiguration: DeviceConfiguring {
    public func factory(serverMTU: UInt16) -> DeviceFactory {
        ESPDevice.factory(self, serverMTU: serverMTU)
    }

    public func inEnvironment(_ environment: WiFiEnvironment) -> ESPConfiguration? {
        var c = self
        c.environment = environment
        return c
    }

    public func withCadence(_ cadence: RecordedCadence) -> ESPConfiguration {
        var c = self
        if let v = cadence.scanDuration { c.scanDuration = max(0, v) }
        return c
    }
}
