import ATT
import Emulator
import GATT
import Profiles

/// Bugs of classes real firmware has had, planted on purpose so a fuzzer can prove it finds
/// them (`gattlab emulate sensor --quirk NAME`). Off by default.
public enum SensorQuirk: String, CaseIterable, Sendable, Hashable {
    /// The response chunker fills each notification with bytes, and a line that would be split
    /// across a chunk boundary is lost from both chunks: which networks arrive depends on the MTU.
    case splitLineLoss = "split-line-loss"

    public var summary: String {
        switch self {
        case .splitLineLoss: "a scan line split across a notification boundary is lost (results depend on the MTU)"
        }
    }
}

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
    /// Planted bugs (see `SensorQuirk`); none by default.
    public var quirks: Set<SensorQuirk> = []
    /// A recorded device's database to serve instead of the built-in one (`emulate --from`).
    public var recordedTable: RecordedTable?
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
    public var crash: String?
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
        server = RecordedTable.server(configuration.recordedTable, builtIn: SensorScanProtocol.builtInAttributeTable?.table, serverMTU: serverMTU,
                                      values: [3: Array("Sensor-Scan".utf8), 5: [0x00, 0x05]])
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
        let chunkSize = Int(server.mtu) - 3
        var chunks = configuration.quirks.contains(.splitLineLoss)
            ? Self.lossyChunks(networks, chunkSize: chunkSize, separateMarkers: configuration.separateMarkers)
            : SensorScan.encode(networks, chunkSize: chunkSize, separateMarkers: configuration.separateMarkers)
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

    /// The split-line-loss chunker: the text is cut into chunks of `chunkSize` bytes (less room for
    /// the MORE/END line when markers travel inside chunks), but a line that would straddle a cut
    /// is dropped from both chunks while still using up its place, so each chunk keeps only the
    /// whole lines that fell inside it.
    static func lossyChunks(_ networks: [SensorScan.Network], chunkSize: Int, separateMarkers: Bool) -> [[UInt8]] {
        let more = Array("MORE\n".utf8), end = Array("END\n".utf8)
        let room = max(1, separateMarkers ? chunkSize : chunkSize - more.count)
        var data: [[UInt8]] = []
        var position = 0
        for n in networks {
            let line = n.ssid + Array(",\(n.rssi)\n".utf8)
            let first = position / room, last = (position + line.count - 1) / room
            while data.count <= last { data.append([]) }
            if first == last { data[first] += line }
            position += line.count
        }
        if data.isEmpty { data = [[]] }
        if separateMarkers {
            var out: [[UInt8]] = []
            for (i, c) in data.enumerated() {
                if !c.isEmpty { out.append(c) }
                out.append(i < data.count - 1 ? more : end)
            }
            return out
        }
        return data.enumerated().map { i, c in c + (i < data.count - 1 ? more : end) }
    }
}
