import ATT
import GATT
import Profiles

/// How an emulated sensor answers SCAN in one run.
public struct SensorConfiguration: Sendable, Hashable {
    /// The networks it "sees"; nil takes a list made from the seed.
    public var networks: [SensorScan.Network]?
    /// Markers (`MORE`, `END`) as notifications of their own instead of inside the chunks.
    public var separateMarkers = false
    /// How long the Wi-Fi scan takes before the first notification.
    public var scanDuration: Int64 = 2_500_000
    /// Time between notifications of one answer.
    public var notificationGap: Int64 = 30_000
    /// The answer never ends with END (firmware bug, or a reset mid-answer).
    public var missingEnd = false
    /// Notifications (0-based index in the answer) that are never sent.
    public var droppedNotifications: Set<Int> = []
    /// Extra delay (µs) before particular notifications (0-based index).
    public var delayedNotifications: [Int: Int64] = [:]
    public init() {}

    /// A plausible neighbourhood, the same for the same seed.
    public static func networks(seed: UInt64) -> [SensorScan.Network] {
        var r = SeededRandom(seed: seed &+ 2)
        let names = ["HomeNet", "HomeNet-5G", "Office, 2nd floor", "Café Olé", "FRITZ!Box 7590 XY",
                     "eduroam", "Guest", "TP-Link_4F2A"]
        return names.map { SensorScan.Network($0, rssi: -35 - Int(r.below(55))) }.sorted { $0.rssi > $1.rssi }
    }
}

/// The sensor of PROTOCOLS.md §4: write `SCAN`, get the networks as chunked notifications.
public final class SensorDevice: DeviceModel {
    public let server: GATTServer
    public var requestedDisconnect: UInt8?
    public let configuration: SensorConfiguration
    public let networks: [SensorScan.Network]
    private let scheduler: VirtualScheduler
    private var random: SeededRandom
    private var generation = 0
    let scanHandle: UInt16
    /// Answers sent so far (each a list of notification values), for tests.
    public private(set) var answers: [[[UInt8]]] = []

    public init(scheduler: VirtualScheduler, seed: UInt64, configuration: SensorConfiguration = SensorConfiguration(),
                serverMTU: UInt16 = 247) {
        self.scheduler = scheduler
        self.configuration = configuration
        networks = configuration.networks ?? SensorConfiguration.networks(seed: seed)
        random = SeededRandom(seed: seed &+ 3)
        let table = BuiltInProfiles.table(named: "sensor")?.table ?? AttributeTable()
        server = GATTServer(table: table, serverMTU: serverMTU, values: [3: Array("Sensor-Scan".utf8), 5: [0x00, 0x05]])
        scanHandle = server.valueHandle(of: SensorScan.characteristic) ?? 12
        server.onWrite(scanHandle) { [weak self] _, w in
            guard let self else { return .unlikelyError }  // the server outlived its model
            return self.written(w.value)
        }
    }

    public static func factory(_ configuration: SensorConfiguration, serverMTU: UInt16 = 247) -> DeviceFactory {
        { scheduler, seed in SensorDevice(scheduler: scheduler, seed: seed, configuration: configuration, serverMTU: serverMTU) }
    }

    public func connected() {}
    public func disconnected() { generation += 1 }

    private func written(_ value: [UInt8]) -> ATTErrorCode? {
        guard value == SensorScan.request else { return nil }  // the firmware ignores anything else
        generation += 1
        let g = generation
        scheduler.schedule(after: configuration.scanDuration + random.below(500_000)) { [weak self] in
            guard let self, self.generation == g else { return }
            self.answer()
        }
        return nil
    }

    private func answer() {
        var chunks = SensorScan.encode(networks, chunkSize: Int(server.mtu) - 3, separateMarkers: configuration.separateMarkers)
        if configuration.missingEnd, var last = chunks.popLast() {
            let end = Array("END\n".utf8)
            if last.count >= end.count, Array(last.suffix(end.count)) == end { last.removeLast(end.count) }
            if !last.isEmpty { chunks.append(last) }
        }
        answers.append(chunks)
        let g = generation
        var at = scheduler.now
        for (i, chunk) in chunks.enumerated() {
            at += configuration.notificationGap + (configuration.delayedNotifications[i] ?? 0)
            if configuration.droppedNotifications.contains(i) { continue }
            scheduler.schedule(at: at) { [weak self] in
                guard let self, self.generation == g else { return }
                self.server.notify(self.scanHandle, chunk, setValue: false)
            }
        }
    }
}
