import ATT
import Capture
import HCI
import Profiles
import Synchronization

/// What one capture tells: the devices in it, their connections, the protocol story of each
/// (events and phases) and the diagnoses. Times are microseconds since the Unix epoch, as
/// capture records carry them; renderers show them relative to `firstTime` unless asked for UTC.
public struct Timeline: Sendable {
    public var source: String
    public var format: String
    public var records: Int
    public var firstTime: Int64?
    public var lastTime: Int64?
    public var devices: [TimelineDevice] = []
    /// Connections, phases and progress grow with the capture (a rack's day has tens of
    /// thousands of each): they live encoded, past 64 KiB in an encrypted temporary file
    /// (`SpillList`), so that a timeline's memory stops growing at the event cap.
    public var connections: SpillList<TimelineConnection> = []
    public var phases: SpillList<Phase> = []
    public var progress: SpillList<ProgressPoint> = []
    /// Up to `TimelineBuilder.maxEvents`, kept encoded like the lists above (`TimelineEvents`).
    public var events: TimelineEvents = []
    public var findings: [Finding] = []
    /// Events not kept because the capture had more than `TimelineBuilder.maxEvents`.
    public var droppedEvents = 0
    /// The capture's advertising as a whole; nil when it has none.
    public var advertising: AdvertisingOverview?

    public init(source: String, format: String, records: Int) {
        self.source = source
        self.format = format
        self.records = records
    }

    public var duration: Int64 { (lastTime ?? 0) - (firstTime ?? 0) }
}

/// One peer device, across all its connections (a speaker that reboots and is reconnected is one
/// device): identified by its address, or by the connection when the capture has none.
public struct TimelineDevice: Sendable {
    public enum Outcome: String, Sendable { case succeeded, failed, interrupted, incomplete, unknown }

    public var id: Int
    public var address: String?
    public var name: String?
    /// Device protocols seen (`speaker-ota`, `sensor-scan`, `nrf7`, `esp-prov`).
    public var protocols: [String] = []
    /// Service UUIDs discovered on the device, in the order discovery found them.
    public var services: [BluetoothUUID] = []
    public var connections: [Int] = []
    public var outcome: Outcome = .unknown
    /// One line: what happened, for the summary.
    public var summary = ""
    /// The links, counted: attempts (connections plus attempts that failed or were cancelled),
    /// connections established, and how many of those were encrypted.
    public var linkCounts = LinkCounts()
    public var start: Int64
    public var end: Int64
    /// Its advertising, when the capture heard it advertise.
    public var advertising: DeviceAdvertising?
}

/// A device's links in numbers, for its headline and the JSON.
public struct LinkCounts: Sendable, Equatable {
    public var attempted = 0
    public var established = 0
    /// Connection Complete came, but the link failed to be established (0x3E).
    public var neverEstablished = 0
    /// Attempts that failed (not cancelled by the host) before any connection.
    public var failedAttempts = 0
    public var encrypted = 0
    public init() {}
}

/// One link to a device.
public struct TimelineConnection: Sendable {
    public var id: Int
    public var device: Int
    public var key: ConnectionKey
    public var start: Int64
    public var end: Int64?
    /// The ATT MTU agreed (23 until an exchange).
    public var mtu = 23
    public var encrypted = false
    public var encryptedAt: Int64?
    /// The encryption key's size in bytes, when the capture tells it (Encryption Change v2, Read
    /// Encryption Key Size).
    public var keySize: Int?
    /// SMP pairing seen on this link.
    public var paired = false
    public var disconnectReason: HCIStatus?
    /// This host ended the link (its HCI_Disconnect for the handle was accepted before the
    /// Disconnection Complete), with the reason it gave; `disconnectReason` is the event's code.
    public var hostDisconnectReason: HCIStatus?
    /// The capture started after the connection was made.
    public var implicit = false
    /// A BR/EDR (classic) link.
    public var classic = false
    /// ATT was seen on this link (so its MTU means something).
    public var carriedATT = false
    public var firstFrame: Int
    public var lastFrame: Int

    /// Why the link ended, in field terms: this host's own Disconnect when the capture has it,
    /// whatever code the controller put in the event; else the event's code.
    public var disconnectMeaning: String? {
        if let host = hostDisconnectReason {
            return Meanings.disconnectedByHost(host)
        }
        return disconnectReason.map(Meanings.disconnect)
    }
}

/// A stretch of a device's story with a name: an OTA state (`wifi-join`, `download`...), a
/// reboot, a scan, a provisioning join.
public struct Phase: Sendable {
    public enum Outcome: String, Sendable { case ok, failed, interrupted, open }
    public var device: Int
    public var connection: Int?
    public var name: String
    public var start: Int64
    public var end: Int64
    public var outcome: Outcome
    public var detail: String?
    public var firstFrame: Int
    public var lastFrame: Int

    public init(device: Int, connection: Int?, name: String, start: Int64, end: Int64, outcome: Outcome, detail: String?,
                firstFrame: Int, lastFrame: Int) {
        self.device = device
        self.connection = connection
        self.name = name
        self.start = start
        self.end = end
        self.outcome = outcome
        self.detail = detail
        self.firstFrame = firstFrame
        self.lastFrame = lastFrame
    }

    public var duration: Int64 { end - start }
}

/// A download progress sample, for the curve.
public struct ProgressPoint: Sendable {
    public var device: Int
    public var time: Int64
    public var percent: Int
    public var kb: Int

    public init(device: Int, time: Int64, percent: Int, kb: Int) {
        self.device = device
        self.time = time
        self.percent = percent
        self.kb = kb
    }
}

/// A value of an event field: secrets stay `Secret` until a renderer decides (redacted unless
/// the user asked to see them).
public enum FieldValue: Sendable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case secret(Secret)
    /// Text with secrets inside (a URL with a password): `redacted` shows them as
    /// `<redacted:N bytes>`, `full` holds all of it for --reveal-secrets.
    case partlySecret(redacted: String, full: Secret)
    case strings([String])
    /// A list of objects, such as the networks of a scan: each a list of named fields.
    case objects([[Field]])
}

public struct Field: Sendable {
    public var name: String
    public var value: FieldValue
    public init(_ name: String, _ value: FieldValue) {
        self.name = name
        self.value = value
    }
}

/// One thing that happened, in one of the timeline's lanes.
///
/// A value type whose text, fields, frames and message sit in one shared box (copied on write):
/// the rules walk every event of a timeline, and a copy of six separately counted references per
/// event per rule was a third of `gattlab timeline` on a day's capture (all of it in
/// `swift_retain`); a copy is now one. A protocol event's summary and fields are not kept: its
/// message tells them when asked (`described`), as the writers ask once per event (kept, they were
/// a third of a large timeline's memory).
public struct TimelineEvent: Sendable {
    public enum Lane: String, Sendable { case link, ota, scan, provisioning }
    public var time: Int64
    /// Device and connection ids are small: kept in 4 bytes each (none is `Int32.min`), an event
    /// is 40 bytes instead of 56 in the timeline's largest array.
    private var deviceID: Int32
    private var connectionID: Int32
    public var device: Int? {
        get { deviceID == .min ? nil : Int(deviceID) }
        set { deviceID = Self.compact(newValue) }
    }
    public var connection: Int? {
        get { connectionID == .min ? nil : Int(connectionID) }
        set { connectionID = Self.compact(newValue) }
    }
    @inline(__always)
    private static func compact(_ id: Int?) -> Int32 { id.map { Int32(clamping: $0) } ?? .min }
    public var lane: Lane
    private var storage: Storage
    /// The message's type, for `message(as:)`: held beside the box, so that asking every event
    /// for one type reads the events' array and nothing else.
    @usableFromInline
    private(set) var messageType: ObjectIdentifier?

    private final class Storage: @unchecked Sendable {
        // Never changed once shared: a mutation of a shared box copies it first (`unique()`).
        var kind: String
        /// The event's own summary and fields (a link event's), encoded (`EventText`); nil: told
        /// by the message (`EventDescription`) when asked.
        var told: Told? {
            get { load(); return parts.told }
            set { load(); parts.told = newValue }
        }
        var message: (any ProfileMessage)? {
            get { load(); return parts.message }
            set { load(); parts.message = newValue }
        }
        var problems: [ProtocolProblem] {
            get { load(); return parts.problems }
            set { load(); parts.problems = newValue }
        }
        private var parts: Parts
        /// An event read back from `TimelineEvents` reads its parts when first asked: most events
        /// a rule or a summary is handed are passed over on their kind or their message's type,
        /// which the list holds in memory (decoding every event handed out made a timeline a third
        /// slower; reading on first ask, a fifth).
        private let source: (events: TimelineEvents.Source, lane: Lane, slot: UInt64, type: Int, inlineKind: Bool)?
        private let loaded = Atomic<Bool>(false)

        init(kind: String, told: Told?, frames: [Int], message: (any ProfileMessage)?, problems: [ProtocolProblem]) {
            self.kind = kind
            parts = Parts(told: told, message: message, problems: problems)
            source = nil
            self.frames = frames
        }

        init(kind: String, source: TimelineEvents.Source, lane: Lane, slot: UInt64, type: Int, inlineKind: Bool) {
            self.kind = kind
            parts = Parts(problems: [])
            self.source = (source, lane, slot, type, inlineKind)
        }

        init(copying o: Storage) {
            o.load()
            kind = o.kind
            parts = o.parts
            source = nil
        }

        @inline(__always)
        private func load() {
            guard let source, !loaded.load(ordering: .acquiring) else { return }
            // Under the list's lock, so that an event read from two threads is read once.
            source.events.read(lane: source.lane, slot: source.slot, type: source.type, inlineKind: source.inlineKind) { read in
                guard !loaded.load(ordering: .relaxed) else { return }
                parts = read()
                loaded.store(true, ordering: .releasing)
            }
        }

        var frames: [Int] {
            get {
                load()
                if let moreFrames = parts.moreFrames { return moreFrames }
                return parts.frame0 == .min ? [] : parts.frame1 == .min ? [parts.frame0] : [parts.frame0, parts.frame1]
            }
            set {
                load()
                if newValue.count <= 2, !newValue.contains(.min) {
                    parts.frame0 = newValue.first ?? .min
                    parts.frame1 = newValue.count == 2 ? newValue[1] : .min
                    parts.moreFrames = nil
                } else {
                    parts.moreFrames = newValue
                }
            }
        }

        var frameCount: Int {
            load()
            return parts.moreFrames?.count ?? (parts.frame0 == .min ? 0 : parts.frame1 == .min ? 1 : 2)
        }

        func forEachFrame(_ body: (Int) throws -> Void) rethrows {
            load()
            if let moreFrames = parts.moreFrames {
                for f in moreFrames { try body(f) }
            } else {
                if parts.frame0 != .min { try body(parts.frame0) }
                if parts.frame1 != .min { try body(parts.frame1) }
            }
        }
    }

    /// A summary and fields the event keeps itself.
    enum Told {
        case encoded([UInt8])
        /// Fields with a secret, which are not encoded.
        case values(Values)

        final class Values: Sendable {
            let summary: String
            let fields: [Field]
            init(_ summary: String, _ fields: [Field]) {
                self.summary = summary
                self.fields = fields
            }
        }

        init(summary: String, fields: [Field]) {
            if let bytes = EventText.encode(summary: summary, fields: fields) { self = .encoded(bytes) } else { self = .values(Values(summary, fields)) }
        }

        var summary: String {
            switch self {
            case .encoded(let bytes): EventText.summary(bytes)
            case .values(let v): v.summary
            }
        }

        var described: (summary: String, fields: [Field]) {
            switch self {
            case .encoded(let bytes): EventText.decode(bytes)
            case .values(let v): (v.summary, v.fields)
            }
        }
    }

    init(time: Int64, device: Int?, connection: Int?, lane: Lane, kind: String, summary: String, fields: [Field], frames: [Int],
         message: (any ProfileMessage)? = nil, problems: [ProtocolProblem] = []) {
        self.init(time: time, device: device, connection: connection, lane: lane,
                  storage: Storage(kind: kind, told: Told(summary: summary, fields: fields), frames: frames, message: message, problems: problems))
    }

    /// A protocol's event, its summary and fields told by its message (and problems) when asked.
    init(time: Int64, device: Int?, connection: Int?, lane: Lane, kind: String, frames: [Int], message: (any ProfileMessage)?,
         problems: [ProtocolProblem]) {
        self.init(time: time, device: device, connection: connection, lane: lane,
                  storage: Storage(kind: kind, told: nil, frames: frames, message: message, problems: problems))
    }

    /// An event of `TimelineEvents`: its parts read from `source` when first asked.
    init(time: Int64, device: Int32, connection: Int32, lane: Lane, kind: String, messageType: ObjectIdentifier?,
         source: TimelineEvents.Source, slot: UInt64, type: Int, inlineKind: Bool) {
        self.time = time
        deviceID = device
        connectionID = connection
        self.lane = lane
        storage = Storage(kind: kind, source: source, lane: lane, slot: slot, type: type, inlineKind: inlineKind)
        self.messageType = messageType
    }

    /// Everything of an event but its kind and what `TimelineEvents` keeps in memory: what an
    /// event of the list reads back when first asked.
    struct Parts {
        var told: Told?
        /// Up to two frames inline (nearly every event has one or two: an array for them was
        /// 48 bytes and an allocation per event), `Int.min` where there is none; more in `moreFrames`.
        var frame0 = Int.min
        var frame1 = Int.min
        var moreFrames: [Int]?
        var message: (any ProfileMessage)?
        var problems: [ProtocolProblem]
    }

    /// The summary and fields the event keeps itself (a link event's), for `TimelineEvents`.
    var told: Told? { storage.told }

    private init(time: Int64, device: Int?, connection: Int?, lane: Lane, storage: Storage) {
        self.time = time
        deviceID = Self.compact(device)
        connectionID = Self.compact(connection)
        self.lane = lane
        self.storage = storage
        messageType = storage.message.map { ObjectIdentifier(type(of: $0)) }
    }

    private mutating func unique() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(copying: storage) }
        return storage
    }

    /// Stable kind: `link.connected`, `ota.status`, `scan.result`, `nrf7.result`...
    public var kind: String {
        get { storage.kind }
        set { unique().kind = newValue }
    }
    /// One line for people. Never holds a secret: secrets are fields.
    public var summary: String {
        get { storage.told?.summary ?? described.summary }
        set { let fields = self.fields; unique().told = Told(summary: newValue, fields: fields) }
    }
    public var fields: [Field] {
        get { described.fields }
        set { let summary = self.summary; unique().told = Told(summary: summary, fields: newValue) }
    }
    /// The summary and the fields at once (a protocol event's are made from its message, a link
    /// event's read from their encoding: a writer that wants both asks this once).
    public var described: (summary: String, fields: [Field]) {
        storage.told?.described ?? EventDescription.describe(kind: storage.kind, message: storage.message, problems: storage.problems)
    }
    /// Records it came from (several for a long write or a chunked scan answer).
    public var frames: [Int] {
        get { storage.frames }
        set { unique().frames = newValue }
    }
    /// How many frames, and each in turn, without making an array (the writers' way).
    public var frameCount: Int { storage.frameCount }
    public func forEachFrame(_ body: (Int) throws -> Void) rethrows { try storage.forEachFrame(body) }
    /// The decoded protocol message, for the rules.
    public var message: (any ProfileMessage)? {
        get { storage.message }
        set {
            unique().message = newValue
            messageType = newValue.map { ObjectIdentifier(type(of: $0)) }
        }
    }
    public var problems: [ProtocolProblem] {
        get { storage.problems }
        set { unique().problems = newValue }
    }

    /// The message, if it is a `T` (`e.message(as: MyProtocol.Status.self)`): what the rules ask
    /// of every event. A message of another type is told by its type's identity alone, where
    /// `e.message as? T` would copy the message out and ask the runtime to cast it.
    @inlinable
    public func message<T: ProfileMessage>(as type: T.Type) -> T? {
        guard messageType == ObjectIdentifier(type) else { return nil }
        return message as? T
    }
}

extension Timeline {
    /// Where each device's events are in `events` (indexed by device), in order: all of them, or
    /// those at `positions` (ascending). The finishing passes group positions, not copies of the
    /// events: the copies grouped by device were the peak of a large timeline's memory.
    func eventPositionsByDevice(among positions: [Int]? = nil) -> [[Int32]] {
        var byDevice = [[Int32]](repeating: [], count: devices.count)
        func add(_ i: Int) {
            guard let d = events.device(at: i), byDevice.indices.contains(d) else { return }
            byDevice[d].append(Int32(i))
        }
        if let positions { positions.forEach(add) } else { events.indices.forEach(add) }
        return byDevice
    }
}

/// Some of a timeline's events, in order, read where they are: one device's events without a
/// copy of them (a copy of the busiest device's was 12 MB of a day's timeline).
public struct TimelineEventSelection: RandomAccessCollection, Sendable {
    let events: TimelineEvents
    let positions: [Int32]

    init(_ events: TimelineEvents, at positions: [Int32]) {
        self.events = events
        self.positions = positions
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { positions.count }
    public subscript(position: Int) -> TimelineEvent { events[Int(positions[position])] }
}

extension TimelineEvent {
    /// A text field's value, if the event has it.
    public func string(_ name: String) -> String? {
        if case .string(let s)? = fields.first(where: { $0.name == name })?.value { return s }
        return nil
    }
}

/// A diagnosis: a rule that fired, with its evidence.
public struct Finding: Sendable {
    public enum Severity: String, Sendable, Comparable {
        case info, warning, error
        var rank: Int { self == .error ? 2 : self == .warning ? 1 : 0 }
        public static func < (a: Severity, b: Severity) -> Bool { a.rank < b.rank }
    }

    public var id: String
    public var severity: Severity
    public var title: String
    public var device: Int?
    public var time: Int64
    public var frames: [Int]
    /// What in the capture shows it.
    public var evidence: String
    /// What to do about it.
    public var advice: String
}

extension Timeline {
    /// The story of the devices that `keep` accepts: their connections, phases, progress,
    /// events and findings; events and findings that belong to no device stay.
    public func filtered(devices keep: (TimelineDevice) -> Bool) -> Timeline {
        var t = self
        t.devices = devices.filter(keep)
        let ids = Set(t.devices.map(\.id))
        t.connections = connections.picking { ids.contains($0.device) }
        t.phases = phases.picking { ids.contains($0.device) }
        t.progress = progress.picking { ids.contains($0.device) }
        t.events = events.picking(devices: ids.contains)
        t.findings = findings.filter { $0.device.map(ids.contains) ?? true }
        return t
    }
}
