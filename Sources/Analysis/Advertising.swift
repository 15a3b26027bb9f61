import ATT
import GATT
import HCI
import Profiles

/// What one device's advertising looked like in a capture: when, how often, how strong, what it
/// said about itself. Bounded: the RSSI series is at most `AdvertisingTracker.maxSeries` points
/// (each a time bucket), names, services and companies are capped.
public struct DeviceAdvertising: Sendable {
    /// One bucket of the RSSI series: the reports between `time` and the next point.
    public struct RSSIPoint: Sendable, Hashable {
        public var time: Int64
        public var mean: Int
        public var min: Int
        public var max: Int
        public var count: Int
    }

    public var firstSeen: Int64
    public var lastSeen: Int64
    public var firstFrame: Int
    public var lastFrame: Int
    public var reports = 0
    public var rssiMin: Int?
    public var rssiMax: Int?
    public var rssiMedian: Int?
    public var rssi: [RSSIPoint] = []
    public var names: [String] = []
    public var services: [BluetoothUUID] = []
    public var companies: [UInt16] = []
    /// PDU names seen (ADV_IND, SCAN_RSP...).
    public var eventTypes: [String] = []
    public var connectable = false
    public var addressType: String?
    /// Device protocols recognised from the advertised services (`ProtocolSet.protocols(advertising:)`).
    public var protocols: [String] = []
    /// The advertised services that a registered protocol claims.
    public var protocolServices: [BluetoothUUID] = []
    /// The signal just before each failed connection (at most `AdvertisingTracker.maxFailureWindows`).
    public var failureWindows: [FailureWindow] = []
    /// What the device announced in service data that a protocol reads (a provisioning device's state and
    /// capabilities): the first report, then each change, in order (at most
    /// `AdvertisingTracker.maxAnnouncements`; `announcementsNotKept` counts the rest).
    public var announcements: [Announcement] = []
    public var announcementsNotKept = 0

    public struct Announcement: Sendable, Hashable {
        public var time: Int64
        public var frame: Int
        /// The protocol that read it (`improv`).
        public var `protocol`: String
        public var state: AdvertisedState
    }

    /// The reports heard in the window before one failed connection (a failed attempt, or a link
    /// that ended 0x3E or 0x08): at most the last `AdvertisingTracker.windowReports` within
    /// `AdvertisingTracker.windowLength` before it.
    public struct FailureWindow: Sendable, Hashable {
        /// The failure.
        public var time: Int64
        public var frame: Int
        /// The reports with an RSSI in the window: how many, from when, and their RSSI.
        public var reports = 0
        public var from: Int64?
        public var rssiMedian: Int?
        public var rssiMin: Int?
        public var rssiMax: Int?
    }
}

/// The advertising of a whole capture, beside the devices.
public struct AdvertisingOverview: Sendable {
    public var reports = 0
    /// Distinct advertisers followed.
    public var advertisers = 0
    /// Reports from advertisers beyond `AdvertisingTracker.maxAdvertisers` (not followed).
    public var untrackedReports = 0
    /// Devices seen only advertising: how many the timeline lists, and how many it only counts.
    public var shown = 0
    public var hidden = 0
    public var firstTime: Int64?
    public var lastTime: Int64?
}

/// Follows advertising per address, in bounded memory.
struct AdvertisingTracker {
    static let maxAdvertisers = 4096
    static let maxSeries = 64
    static let maxNames = 4
    static let maxServices = 16
    static let maxCompanies = 8
    /// Devices seen only advertising that the timeline lists; the rest are counted.
    static let maxShownAdvertisers = 20
    /// The window of reports judged before a failed connection: the last 10 s, at most 20 reports.
    static let windowLength: Int64 = 10_000_000
    static let windowReports = 20
    static let maxFailureWindows = 16
    static let maxAnnouncements = 16

    struct Track {
        var summary: DeviceAdvertising
        /// Count of reports per RSSI value (index = rssi + 128), for the median.
        var histogram: [UInt32]? = nil
        /// Width of a series bucket, doubled whenever the series would exceed `maxSeries`.
        var bucket: Int64 = 1_000_000
        /// The last `windowReports` reports with an RSSI, oldest first.
        var recent: [(time: Int64, rssi: Int)] = []
        /// The last service data per UUID a protocol reads, so that only a change is read again.
        var serviceData: [BluetoothUUID: [UInt8]] = [:]
    }

    /// Each advertiser's track, in the order first heard, beside its address; `index` finds a
    /// track by address, and `last` skips even that for the advertiser of the report before.
    /// (Tracks kept in a dictionary by the address's text made a 17-byte string per report,
    /// hashed it twice and updated the track through the dictionary: a quarter of a sniffer's
    /// timeline.)
    private(set) var tracks: [Track] = []
    private(set) var addresses: [BDAddr] = []
    private var index: [BDAddr: Int] = [:]
    private var last: (address: BDAddr, index: Int)?
    /// The protocols recognised by the services a device advertises.
    let protocols: ProtocolSet

    init(protocols: ProtocolSet) {
        self.protocols = protocols
    }
    var overview = AdvertisingOverview()

    mutating func add(_ r: AdvertisingReport, time t: Int64, frame f: Int) {
        overview.reports += 1
        if overview.firstTime == nil { overview.firstTime = t }
        overview.lastTime = max(overview.lastTime ?? t, t)
        guard let address = r.address else { return }
        let i: Int
        if let last, last.address == address {
            i = last.index
        } else if let found = index[address] {
            i = found
        } else {
            guard tracks.count < Self.maxAdvertisers else {
                overview.untrackedReports += 1
                return
            }
            i = tracks.count
            tracks.append(Track(summary: DeviceAdvertising(firstSeen: t, lastSeen: t, firstFrame: f, lastFrame: f)))
            addresses.append(address)
            index[address] = i
        }
        last = (address, i)
        tracks[i].update(r, time: t, frame: f, protocols: protocols)
    }

    /// Notes a failed connection of the device at `address` at `time`: the signal heard in the
    /// window before it. The recent reports are filtered by time, so a failure attributed late
    /// (an accept-list attempt, told when the device connects) still judges what came before it.
    mutating func noteFailure(address: String, time: Int64, frame: Int) {
        // Devices' addresses are `BDAddr` texts; only those can have been heard advertising.
        guard let a = BDAddr(string: address), a.description == address, let i = index[a] else { return }
        var track = tracks[i]
        guard track.summary.failureWindows.count < Self.maxFailureWindows else { return }
        let rssi = track.recent.filter { $0.time <= time && time - $0.time <= Self.windowLength }.suffix(Self.windowReports)
        var w = DeviceAdvertising.FailureWindow(time: time, frame: frame)
        w.reports = rssi.count
        w.from = rssi.first?.time
        let sorted = rssi.map(\.rssi).sorted()
        if !sorted.isEmpty {
            w.rssiMedian = sorted[(sorted.count - 1) / 2]
            w.rssiMin = sorted.first
            w.rssiMax = sorted.last
        }
        track.summary.failureWindows.append(w)
        tracks[i] = track
    }


    func summaries() -> [(address: String, advertising: DeviceAdvertising)] {
        zip(addresses, tracks).map { a, track in (a.description, track.finished()) }
    }
}

extension AdvertisingTracker.Track {
    /// Notes the protocols that claim an advertised service.
    private mutating func recognise(_ service: BluetoothUUID, _ protocols: ProtocolSet) {
        let names = protocols.protocols(advertising: service)
        guard !names.isEmpty else { return }
        summary.protocolServices.append(service)
        for p in names where !summary.protocols.contains(p) { summary.protocols.append(p) }
    }

    mutating func update(_ r: AdvertisingReport, time t: Int64, frame f: Int, protocols: ProtocolSet) {
        summary.reports += 1
        summary.lastSeen = max(summary.lastSeen, t)
        summary.lastFrame = f
        if r.connectable { summary.connectable = true }
        if summary.addressType == nil { summary.addressType = r.addressType?.description }
        if !summary.eventTypes.contains(r.eventName), summary.eventTypes.count < 12 { summary.eventTypes.append(r.eventName) }
        // A report whose data continues in the next ones: the chain's last report carries the
        // joined data, whose structures count once, whole.
        let structures = r.dataStatus == "incomplete" ? [] : r.data.structures
        for s in structures {
            switch s {
            case .localName(let n, _):
                if !summary.names.contains(n), summary.names.count < AdvertisingTracker.maxNames { summary.names.append(n) }
            case .serviceUUIDs(let us, _):
                for u in us where !summary.services.contains(u) && summary.services.count < AdvertisingTracker.maxServices {
                    summary.services.append(u)
                    recognise(u, protocols)
                }
            case .serviceData(let u, let data):
                if !summary.services.contains(u), summary.services.count < AdvertisingTracker.maxServices {
                    summary.services.append(u)
                    recognise(u, protocols)
                }
                if summary.protocolServices.contains(u) { announce(u, data, time: t, frame: f, protocols) }
            case .manufacturerData(let c, _):
                if !summary.companies.contains(c), summary.companies.count < AdvertisingTracker.maxCompanies { summary.companies.append(c) }
            default:
                break
            }
        }
        guard let rssi = r.rssi.map(Int.init) else { return }
        summary.rssiMin = min(summary.rssiMin ?? rssi, rssi)
        summary.rssiMax = max(summary.rssiMax ?? rssi, rssi)
        if histogram == nil { histogram = [UInt32](repeating: 0, count: 256) }
        histogram?[rssi + 128] &+= 1
        recent.append((t, rssi))
        if recent.count > AdvertisingTracker.windowReports { recent.removeFirst(recent.count - AdvertisingTracker.windowReports) }
        addToSeries(rssi, time: t)
    }

    /// Reads claimed service data when it differs from the last this device sent under that UUID,
    /// and keeps what a protocol read there when that changed.
    private mutating func announce(_ uuid: BluetoothUUID, _ data: [UInt8], time t: Int64, frame f: Int, _ protocols: ProtocolSet) {
        guard serviceData[uuid] != data else { return }
        serviceData[uuid] = data
        for (name, state) in protocols.advertisedStates(serviceData: data, uuid: uuid) {
            if summary.announcements.last(where: { $0.protocol == name })?.state == state { continue }
            guard summary.announcements.count < AdvertisingTracker.maxAnnouncements else {
                summary.announcementsNotKept += 1
                continue
            }
            summary.announcements.append(.init(time: t, frame: f, protocol: name, state: state))
        }
    }

    private mutating func addToSeries(_ rssi: Int, time t: Int64) {
        let origin = summary.firstSeen
        func index(_ time: Int64) -> Int64 { (time &- origin) / bucket }
        if var last = summary.rssi.last, index(last.time) == index(t) || t < last.time {
            last.mean = (last.mean * last.count + rssi) / (last.count + 1)
            last.min = min(last.min, rssi)
            last.max = max(last.max, rssi)
            last.count += 1
            summary.rssi[summary.rssi.count - 1] = last
            return
        }
        summary.rssi.append(DeviceAdvertising.RSSIPoint(time: t, mean: rssi, min: rssi, max: rssi, count: 1))
        while summary.rssi.count > AdvertisingTracker.maxSeries {
            // Coarser buckets: merge points that now share one.
            bucket = bucket > Int64.max / 4 ? Int64.max / 2 : bucket * 2
            var merged: [DeviceAdvertising.RSSIPoint] = []
            for p in summary.rssi {
                if var m = merged.last, index(m.time) == index(p.time) {
                    m.mean = (m.mean * m.count + p.mean * p.count) / (m.count + p.count)
                    m.min = min(m.min, p.min)
                    m.max = max(m.max, p.max)
                    m.count += p.count
                    merged[merged.count - 1] = m
                } else {
                    merged.append(p)
                }
            }
            summary.rssi = merged
        }
    }

    func finished() -> DeviceAdvertising {
        var s = summary
        if let h = histogram {
            let total = h.reduce(0) { $0 + Int($1) }
            var seen = 0
            for (i, n) in h.enumerated() where n > 0 {
                seen += Int(n)
                if seen * 2 >= total { s.rssiMedian = i - 128; break }
            }
        }
        return s
    }
}

extension DeviceAdvertising {
    /// How much the timeline should care about an advertiser it did not see connected: a device
    /// protocol's service first, then connectable ones, named ones and how often it was heard.
    var relevance: (Int, Int, Int, Int) {
        (protocols.isEmpty ? 0 : 1, connectable ? 1 : 0, names.isEmpty ? 0 : 1, reports)
    }
}
