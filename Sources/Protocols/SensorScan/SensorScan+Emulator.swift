import Emulator
import Profiles

/// The sensor in the emulator: its device, quirks and configuration (scenarios in
/// SensorScan+Scenarios.swift).
extension SensorScanProtocol: EmulatedProtocol {
    public static var deviceKind: String { "sensor" }

    public static var devices: [EmulatedDeviceSpec] {
        [
            EmulatedDeviceSpec(name: "sensor", kind: "sensor", summary: "the sensor's Wi-Fi scan service, no faults",
                               configuration: SensorConfiguration()),
        ]
    }

    public static var quirks: [(name: String, summary: String)] {
        SensorQuirk.allCases.map { ($0.rawValue, $0.summary) }
    }
}

extension SensorConfiguration: DeviceConfiguring {
    public func factory(serverMTU: UInt16) -> DeviceFactory {
        SensorDevice.factory(self, serverMTU: serverMTU)
    }

    public func planting(quirks names: [String]) -> SensorConfiguration {
        var c = self
        c.quirks.formUnion(names.compactMap(SensorQuirk.init(rawValue:)))
        return c
    }

    /// Its scan finds the world's networks (the sensor does not join).
    public func inEnvironment(_ environment: WiFiEnvironment) -> SensorConfiguration? {
        var c = self
        c.networks = environment.networks.map { SensorScan.Network(ssid: Array($0.ssid.utf8), rssi: Int($0.rssi)) }
        return c
    }

    public func withCadence(_ cadence: RecordedCadence) -> SensorConfiguration {
        var c = self
        if let v = cadence.scanDuration { c.scanDuration = max(0, v) }
        if let v = cadence.notificationGap { c.notificationGap = max(0, v) }
        if let v = cadence.separateMarkers { c.separateMarkers = v }
        return c
    }
}
