import ATT
import Fuzz
import Profiles

/// The sensor's scan characteristic for the black-box fuzzer: SCAN and its near misses, a SCAN
/// at every MTU (the answer must not depend on it), and the scan followed from the request to
/// its complete answer.
extension SensorScanProtocol: BlackBoxFuzzable {
    static let scanRole = BlackBoxRole("sensor Wi-Fi scan", protocolName: "sensor Wi-Fi scan", documentedMaximum: SensorScan.request.count) { value, _, r in
        let variants = ["SCAN", "scan", "SCAN\n", "SCAN\r\n", "SCAN\u{0}", "SCA", "SCANSCAN", "SCAN,", " SCAN", "END", "MORE", "SCAN\u{0}junk"]
        if r.chance(60) { value = Array((r.pick(variants) ?? "SCAN").utf8) } else { GenericMutator.mutate(&value, &r, maxLength: 600) }
    }

    public static func blackBoxRole(of uuid: BluetoothUUID, userDescription: String?) -> BlackBoxRole? {
        uuid == SensorScan.characteristic ? scanRole : nil
    }

    /// MTU 247 first: the first complete scan is the reference the others must equal. Then a
    /// sweep: chunk boundaries fall on every byte of a line at MTUs 23 to 64, and at the sizes
    /// stacks use.
    public static func blackBoxFlows(_ map: DeviceMap) -> [[GATTOperation]] {
        guard let scan = map.index(of: scanRole) else { return [] }
        return ([247, 23, 185] + Array(24...64) + [100, 128, 158, 200, 244, 251, 255, 256, 512, 517]).map { m in
            [.mtu(m), GATTOperation(.subscribe, target: UInt8(truncatingIfNeeded: scan)), .write(scan, SensorScan.request), .wait(ms: 8000)]
        }
    }

    public static func blackBoxObserver() -> (any BlackBoxObserving)? { ScanObserver() }

    /// A complete scan stays; a scan asked for goes on by itself.
    public static func blackBoxStateKind(_ state: String) -> BlackBoxStateKind? {
        switch state {
        case "scan complete": .resting
        case "scan requested", "scanning": .inProgress
        default: nil
        }
    }

    /// Joins the scan's notifications as a phone does; a complete answer with no network that
    /// parses is a finding, and the input's first complete answer is kept for the MTU oracle.
    struct ScanObserver: BlackBoxObserving {
        var joiner = SensorScan.Joiner()

        mutating func saw(_ value: [UInt8], role: BlackBoxRole, mtu: Int, notified: Bool, progress: inout BlackBoxProgress) -> FuzzOutcome? {
            guard role == scanRole else { return nil }
            guard notified else { return .ok }
            if progress.state == "scan requested" { progress.state = "scanning" }
            if joiner.add(value) {
                progress.state = "scan complete"
                let (networks, problems) = SensorScan.parse(joiner.bytes)
                if networks.isEmpty, !problems.isEmpty {
                    return .finding(kind: "undecodable-notification", detail: "a complete scan answer with no network that parses: \(problems.first?.message ?? "")")
                }
                progress.answered(Set(networks.map(\.ssidText)), mtu: mtu)
                joiner = SensorScan.Joiner()
            }
            return .ok
        }

        /// A SCAN the device accepted starts a scan, and a fresh answer.
        mutating func accepted(_ value: [UInt8], role: BlackBoxRole, progress: inout BlackBoxProgress) {
            guard role == scanRole, value == SensorScan.request else { return }
            progress.state = "scan requested"
            joiner = SensorScan.Joiner()
        }
    }
}
