import Emulator
import Profiles

/// The sensor's scenarios: SCAN and its answer in chunked notifications, with the ways the
/// firmware can get the answer wrong.
extension SensorScanProtocol {
    public static var scenarios: [Scenario] {
        Scenario.sensorScenarios
    }
}

extension Scenario {
    fileprivate static var sensorScenarios: [Scenario] {
        [
            sensor("sensor-scan", "SCAN answered with chunked notifications ending in END", SensorConfiguration()),
            sensor("sensor-scan-separate-markers", "SCAN answered with MORE/END as notifications of their own",
                   with { $0.separateMarkers = true }),
            sensor("sensor-scan-missing-end", "SCAN answer without END: the phone times out and disconnects",
                   with { $0.missingEnd = true }),
            sensor("sensor-scan-dropped", "the first notification of the answer is lost (at MTU 247 the whole answer)",
                   with { $0.droppedNotifications = [0] }),
            sensor("sensor-scan-delayed", "the answer is held back 8.5 s: the phone's 10 s scan timeout ends it first",
                   with { $0.delayedNotifications = [0: 8_500_000] }),
            sensor("sensor-mtu23-only", "a stack that stays at MTU 23: the answer in 20-byte chunks",
                   SensorConfiguration()).serving(mtu: 23),
        ]
    }

    static func sensor(_ name: String, _ summary: String, _ configuration: SensorConfiguration) -> Scenario {
        Scenario(name: name, summary: summary, configuration: configuration) {
            central, mtu, log async throws(CentralError) in
            try await open(central, mtu: mtu, log: log, subscribeTo: SensorScan.characteristic)
            try await central.write(SensorScan.characteristic, SensorScan.request)
            log.add("SCAN")
            var joiner = SensorScan.Joiner()
            var chunks = 0
            var complete = false
            // The app gives the scan 10 s, and 3 s between chunks once they flow.
            var window: Int64 = 10_000_000
            while let chunk = try await central.nextNotification(SensorScan.characteristic, within: window) {
                chunks += 1
                window = 3_000_000
                if joiner.add(chunk) {
                    complete = true
                    break
                }
            }
            log.add("\(chunks) notifications, \(complete ? "END received" : "no END: timed out")")
            await central.disconnect()
        }
    }
}
