import ATT
import GATT
import HCI

/// Diagnoses from advertising, beside `Diagnoses`' rules: a provisioning device nobody connected
/// to, a connection to an address never heard advertising, a weak signal before failed
/// connections, a device that went quiet.
enum AdvertisingDiagnoses {
    /// A connection attempt: LE (Extended) Create Connection, or a CONNECT_IND a sniffer saw.
    struct Attempt {
        var peer: BDAddr
        /// HCI peer address type (2 and 3 are identity addresses the controller resolves).
        var peerType: UInt8?
        var time: Int64
        var frame: Int
    }

    /// Below this median RSSI a link is likely to fail to establish or drop.
    static let weakRSSI = -90
    /// Silence after the last report, at least, before a device "stopped advertising".
    static let quietAfter: Int64 = 30_000_000

    /// Frames once each, in the order given (a failure's frame is also its window's).
    static func distinct(_ frames: [Int]) -> [Int] {
        var seen = Set<Int>()
        return frames.filter { seen.insert($0).inserted }
    }

    static func run(on t: Timeline, attempts: [Attempt]) -> [Finding] {
        guard let overview = t.advertising, overview.reports > 0 else { return [] }
        var out: [Finding] = []
        let byAddress = Dictionary(t.devices.compactMap { d in d.address.map { ($0, d) } }, uniquingKeysWith: { a, _ in a })

        for d in t.devices {
            guard let a = d.advertising else { continue }
            let name = a.names.first.map { " \"\($0)\"" } ?? ""
            // 1. A provisioning device that advertised and was never connected to.
            if !a.protocols.isEmpty, d.connections.isEmpty {
                let services = a.protocolServices.map(\.description).joined(separator: ", ")
                out.append(Finding(id: "adv.provisioning-not-connected", severity: .warning,
                                   title: "A \(a.protocols.joined(separator: ", ")) device advertised but was never connected to",
                                   device: d.id, time: a.firstSeen, frames: [a.firstFrame, a.lastFrame],
                                   evidence: "\(d.address ?? "?")\(name) advertised \(services) \(a.reports) times"
                                       + (a.rssiMedian.map { " (RSSI median \($0) dBm)" } ?? "") + "; no connection to it in the capture",
                                   advice: "Check that the app scans for this service or name and picks this device; a weak signal or a device already bonded elsewhere also keeps phones from connecting."))
            }
            // 3. A weak signal before connections that failed: judged on the reports just before
            // each failure when there were any, on the whole capture otherwise.
            let failures = t.events.filter { $0.device == d.id && TimelineBuilder.isFailedConnection($0) }
            if let first = failures.first {
                let count = "\(failures.count) connection\(failures.count == 1 ? "" : "s") failed or dropped"
                let judged = a.failureWindows.filter { $0.rssiMedian != nil }
                let weak = judged.filter { ($0.rssiMedian ?? 0) < weakRSSI }
                let window = AdvertisingTracker.windowLength / 1_000_000
                if let w = weak.first, let median = w.rssiMedian {
                    out.append(Finding(id: "adv.weak-signal", severity: .warning,
                                       title: "Weak signal before failed connections",
                                       device: d.id, time: w.time, frames: Self.distinct(weak.prefix(5).map(\.frame) + failures.prefix(5).flatMap(\.frames)),
                                       evidence: "in the \(window) s before the failed connection at frame \(w.frame), \(d.address ?? "?")\(name) was heard \(w.reports) time\(w.reports == 1 ? "" : "s") at a median of \(median) dBm (\(w.rssiMin ?? median) to \(w.rssiMax ?? median))"
                                           + "; \(weak.count) of the \(judged.count) failures with advertising just before were below \(weakRSSI) dBm; \(count)"
                                           + (a.rssiMedian.map { " (whole capture: median \($0) dBm over \(a.reports) advertisements)" } ?? ""),
                                       advice: "Move the phone closer to the device (below \(weakRSSI) dBm links often fail to establish or time out), or check the device's antenna and TX power."))
                } else if judged.isEmpty, let median = a.rssiMedian, median < weakRSSI {
                    out.append(Finding(id: "adv.weak-signal", severity: .warning,
                                       title: "Weak signal before failed connections",
                                       device: d.id, time: first.time, frames: Self.distinct([a.firstFrame] + failures.prefix(5).flatMap(\.frames)),
                                       evidence: "over the whole capture (nothing heard in the \(window) s before the failures), \(d.address ?? "?")\(name) was heard at a median of \(median) dBm (\(a.rssiMin ?? median) to \(a.rssiMax ?? median)) over \(a.reports) advertisements; \(count)",
                                       advice: "Move the phone closer to the device (below \(weakRSSI) dBm links often fail to establish or time out), or check the device's antenna and TX power."))
                }
            }
            // 4. A device that stopped advertising: only for devices the story cares about
            // (a device protocol, or connected in the capture) and while the scan went on.
            if (!a.protocols.isEmpty || !d.connections.isEmpty), a.reports >= 10, let scanEnd = overview.lastTime,
               scanEnd - a.lastSeen > max(quietAfter, 20 * (a.lastSeen - a.firstSeen) / Int64(max(1, a.reports - 1))) {
                let reconnected = t.connections.contains { $0.device == d.id && $0.start >= a.lastSeen - 1_000_000 && $0.start <= a.lastSeen + quietAfter }
                if !reconnected {
                    out.append(Finding(id: "adv.stopped", severity: .info,
                                       title: "The device stopped advertising",
                                       device: d.id, time: a.lastSeen, frames: [a.lastFrame],
                                       evidence: "\(d.address ?? "?")\(name) was last heard \(TimelineBuilder.seconds(scanEnd - a.lastSeen)) before the last advertisement of the capture, after \(a.reports) reports",
                                       advice: "The device may have rebooted, slept, or changed its random address; check its power and advertising timeout."))
                }
            }
        }
        // 2. Connecting to an address that never advertised while the capture heard advertising.
        var reported: Set<BDAddr> = []
        // An all-zero peer is what LE Extended Create Connection sends with the filter accept list.
        let none = BDAddr((0, 0, 0, 0, 0, 0))
        for at in attempts where (at.peerType.map { $0 < 2 } ?? true) && at.peer != none {
            guard let firstAdv = overview.firstTime, at.time >= firstAdv, !reported.contains(at.peer) else { continue }
            if let d = byAddress[at.peer.description], d.advertising != nil { continue }
            reported.insert(at.peer)
            out.append(Finding(id: "adv.connect-unheard", severity: .info,
                               title: "A connection attempt to an address never heard advertising",
                               device: byAddress[at.peer.description]?.id, time: at.time, frames: [at.frame],
                               evidence: "the phone connected to \(at.peer), which sent none of the capture's \(overview.reports) advertisements",
                               advice: "The address may be a stale bond or a rotated random address; check the device is advertising and the app uses a fresh scan result."))
            if reported.count >= 20 { break }
        }
        return out
    }
}
