/// The emulated devices a user can name: the four device models with their default behaviour,
/// and the device of every scenario with that scenario's faults (`speaker-wrong-password` is a
/// speaker whose join fails). Replay targets (`emu:NAME`) and `gattlab emulate NAME --listen`
/// take these names.
public struct EmulatedDeviceSpec: Sendable {
    /// `speaker`, `sensor`, `nrf7`, `esp`, or a scenario name.
    public var name: String
    /// Which device model: `speaker`, `sensor`, `nrf7` or `esp`.
    public var kind: String
    public var summary: String
    /// The largest MTU the device's stack accepts.
    public var serverMTU: UInt16
    let make: @Sendable (UInt16) -> DeviceFactory

    /// The device model, built on a scheduler with a seed (the seed of the recording to replay:
    /// scan results, RSSI and ESP session keys follow it).
    public var factory: DeviceFactory { make(serverMTU) }

    public static let devices: [EmulatedDeviceSpec] = [
        EmulatedDeviceSpec(name: "speaker", kind: "speaker", summary: "the ChaoticVolt speaker's OTA service, no faults",
                           serverMTU: 247, make: { SpeakerDevice.factory(SpeakerConfiguration(), serverMTU: $0) }),
        EmulatedDeviceSpec(name: "speaker-hangs-downloading", kind: "speaker",
                           summary: "a speaker whose firmware hangs as the download starts: the link stays up, nothing answers",
                           serverMTU: 247, make: { mtu in
                               var c = SpeakerConfiguration()
                               c.hangAt = .downloading
                               return SpeakerDevice.factory(c, serverMTU: mtu)
                           }),
        EmulatedDeviceSpec(name: "sensor", kind: "sensor", summary: "the sensor's Wi-Fi scan service, no faults",
                           serverMTU: 247, make: { SensorDevice.factory(SensorConfiguration(), serverMTU: $0) }),
        EmulatedDeviceSpec(name: "nrf7", kind: "nrf7", summary: "an nRF7002 with Nordic's Wi-Fi provisioning service (Zephyr)",
                           serverMTU: 247, make: { NRF7Device.factory(NRF7Configuration(), serverMTU: $0) }),
        EmulatedDeviceSpec(name: "esp", kind: "esp", summary: "an ESP32 with ESP-IDF provisioning, security 1, PoP abcd1234",
                           serverMTU: 247, make: { ESPDevice.factory(ESPConfiguration(), serverMTU: $0) }),
    ]

    /// The four devices, then the device of each scenario.
    public static var all: [EmulatedDeviceSpec] {
        devices + Scenario.all.map { s in
            EmulatedDeviceSpec(name: s.name, kind: s.deviceKind, summary: s.summary, serverMTU: s.serverMTU, make: s.device)
        }
    }

    public static func named(_ name: String) -> EmulatedDeviceSpec? {
        devices.first { $0.name == name } ?? Scenario.named(name).map {
            EmulatedDeviceSpec(name: $0.name, kind: $0.deviceKind, summary: $0.summary, serverMTU: $0.serverMTU, make: $0.device)
        }
    }

    /// The device a scenario's recording was made against, from a capture's file name
    /// (`speaker-wrong-password-mtu23.btsnoop` -> `speaker-wrong-password`), if it names one.
    public static func forRecording(named fileName: String) -> EmulatedDeviceSpec? {
        var base = Substring(fileName.split(separator: "/").last ?? "")
        if let dot = base.firstIndex(of: ".") { base = base[..<dot] }
        let parts = base.split(separator: "-", omittingEmptySubsequences: false)
        if let last = parts.last, last.hasPrefix("mtu"), last.count > 3, last.dropFirst(3).allSatisfy(\.isNumber) {
            base = base.dropLast(last.count + 1)
        }
        return named(String(base))
    }
}

extension Scenario {
    /// The device model a scenario runs: the first word of its name.
    public var deviceKind: String {
        String(name.prefix { $0 != "-" })
    }
}
