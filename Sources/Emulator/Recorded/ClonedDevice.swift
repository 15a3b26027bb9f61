import ATT
import GATT

/// What a recorded device did after one write: its answer, and the notifications that followed
/// before the phone's next request, with their delays.
public struct RecordedReaction: Sendable, Hashable {
    /// The characteristic (or descriptor) handle written, in the recorded table.
    public var handle: UInt16
    /// The value written; nil answers every write to `handle`.
    public var value: [UInt8]?
    /// The ATT error the device answered, nil for success.
    public var error: ATTErrorCode?
    /// Notifications (or indications) that followed: handle, value, microseconds after the write.
    public var notifications: [(handle: UInt16, value: [UInt8], after: Int64)]
    /// Indexes into `notifications` of those that were indications.
    public var indications: Set<Int>
    /// The device ended the link next: the HCI reason, microseconds after the write.
    public var linkLoss: (reason: UInt8, after: Int64)?

    public init(handle: UInt16, value: [UInt8]?, error: ATTErrorCode?, notifications: [(handle: UInt16, value: [UInt8], after: Int64)],
                linkLoss: (reason: UInt8, after: Int64)? = nil, indications: Set<Int> = []) {
        self.handle = handle
        self.indications = indications
        self.value = value
        self.error = error
        self.notifications = notifications
        self.linkLoss = linkLoss
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.handle == b.handle && a.value == b.value && a.error == b.error
            && a.notifications.map(\.handle) == b.notifications.map(\.handle)
            && a.notifications.map(\.value) == b.notifications.map(\.value) && a.notifications.map(\.after) == b.notifications.map(\.after)
            && a.linkLoss?.reason == b.linkLoss?.reason && a.linkLoss?.after == b.linkLoss?.after && a.indications == b.indications
    }

    public func hash(into h: inout Hasher) {
        h.combine(handle)
        h.combine(value)
        h.combine(notifications.count)
    }
}

/// What a recorded device did that no write caused: a notification or indication (a sensor's
/// value every second after the phone subscribed), or the end of the link, at a time after the
/// moment it is anchored to (`RecordedUnsolicited.Anchor`).
public struct RecordedEvent: Sendable, Hashable {
    public var handle: UInt16
    public var value: [UInt8]
    public var indication: Bool
    /// Microseconds after the anchor.
    public var after: Int64
    /// The device ended the link here, with this HCI reason (handle and value unused).
    public var linkLoss: UInt8?

    public init(handle: UInt16, value: [UInt8], indication: Bool = false, after: Int64, linkLoss: UInt8? = nil) {
        self.handle = handle
        self.value = value
        self.indication = indication
        self.after = after
        self.linkLoss = linkLoss
    }
}

/// A recorded device's unsolicited events and what each followed: the n-th connection, or the
/// n-th write to a CCCD (the subscription they followed), counted from 0 over the clone's life.
public struct RecordedUnsolicited: Sendable, Hashable {
    public enum Anchor: Sendable, Hashable {
        case connection(Int)
        case subscription(cccd: UInt16, Int)
    }

    /// At most this many events are kept: a hostile capture must not make a schedule without end.
    public static let limit = 10_000
    public private(set) var events: [Anchor: [RecordedEvent]] = [:]
    public private(set) var count = 0

    public init() {}

    /// Adds one, unless the limit is reached (false then).
    @discardableResult
    public mutating func add(_ event: RecordedEvent, after anchor: Anchor) -> Bool {
        guard count < Self.limit else { return false }
        events[anchor, default: []].append(event)
        count += 1
        return true
    }
}

/// A device that answers as a recording did (a GATTacker-style clone), for a device protocol
/// GATTLab does not model: the recorded database, reads answered with the recorded values, and
/// each write answered as recorded and followed by the notifications that followed it, with the
/// recorded spacing, and the link ended where the recorded device ended it. A write the recording does not have (another value) gets the answer and
/// notifications of the last recorded write to that handle; a handle never written succeeds
/// silently. What no write caused (periodic notifications after a subscription, a link the
/// device ended soon after connecting) follows the subscription or connection it followed in the
/// recording, with the recorded spacing; a request the server does not model (a Read By Type of
/// the device name, Find By Type Value) whose bytes the recording has gets the recorded answer, and the n-th read of a handle the
/// n-th recorded answer to it (a value that changed, an error before encryption).
/// Notifications go out as recorded: whatever the CCCD says, however long against the MTU.
public final class ClonedDevice: DeviceModel {
    public let server: GATTServer
    public var requestedDisconnect: UInt8?
    public var crash: String?
    private let scheduler: VirtualScheduler
    private let reactions: [RecordedReaction]
    private let unsolicited: RecordedUnsolicited
    private let answers: [[UInt8]: [[UInt8]]]
    private var answered: [[UInt8]: Int] = [:]
    private var connections = 0
    private var subscriptions: [UInt16: Int] = [:]
    private var generation = 0
    /// Writes answered from the recording, and writes it had no exact match for (tests, reports).
    public private(set) var matched = 0
    public private(set) var unmatched = 0

    public init(scheduler: VirtualScheduler, recorded: RecordedTable, reactions: [RecordedReaction],
                unsolicited: RecordedUnsolicited = RecordedUnsolicited(), answers: [[UInt8]: [[UInt8]]] = [:], serverMTU: UInt16 = 247) {
        self.scheduler = scheduler
        self.reactions = reactions
        self.unsolicited = unsolicited
        self.answers = answers
        // Indexed once: a recording of many writes must not make each write a scan of them all.
        for r in reactions {
            if let value = r.value { byValue[HandleValue(handle: r.handle, value: value), default: []].append(r) }
            lastByHandle[r.handle] = r
            if r.value == nil { anyValueByHandle[r.handle] = r }
        }
        // The clone answers each write and read as recorded, errors before encryption included
        // (and runs the write's recorded reaction): its server itself asks for no encryption.
        var served = recorded
        served.encryptedWrites = []
        served.encryptedReads = []
        served.unencryptedAccessError = nil
        server = RecordedTable.server(served, builtIn: nil, serverMTU: serverMTU, values: [:])
        let cccds = Set(recorded.table.descriptors.filter { $0.value.uuid16 == 0x2902 }.map(\.key))
        for handle in Set(reactions.map(\.handle)).subtracting(cccds) {
            server.onWrite(handle) { [weak self] _, w in
                guard let self else { return .unlikelyError }  // the server outlived its model
                return self.written(handle, w.value)
            }
        }
        let reacting = Set(reactions.map(\.handle))
        for cccd in cccds {
            server.onSubscriptionWrite(cccd) { [weak self] _, w in
                guard let self else { return .unlikelyError }
                let n = self.subscriptions[cccd, default: 0]
                self.subscriptions[cccd] = n + 1
                self.play(.subscription(cccd: cccd, n))
                return reacting.contains(cccd) ? self.written(cccd, w.value, exactOnly: true) : nil
            }
        }
        if !answers.isEmpty {
            server.answerAsRecorded { [weak self] request in self?.answer(request) }
        }
    }

    /// The recorded answer to these request bytes: the n-th time, the n-th answer (the last
    /// again after them).
    private func answer(_ request: [UInt8]) -> [UInt8]? {
        guard let list = answers[request], !list.isEmpty else { return nil }
        let n = answered[request, default: 0]
        answered[request] = n + 1
        let answer = list[min(n, list.count - 1)]
        // A read's value as recorded, cut to the MTU as a server cuts it; kept as the attribute's
        // value, so the Read Blobs of a long read continue it.
        if request.count == 3, request[0] == 0x0A, answer.first == 0x0B {
            let value = Array(answer.dropFirst())
            let handle = UInt16(request[1]) | UInt16(request[2]) << 8
            // A value the recording read whole, part by part, begins with what this read gave.
            if !(server.value(of: handle) ?? []).starts(with: value) { server.setValue(value, for: handle) }
            return Array(answer.prefix(Int(server.mtu)))
        }
        return answer
    }

    /// Schedules what followed `anchor` in the recording, on this connection.
    private func play(_ anchor: RecordedUnsolicited.Anchor) {
        guard let events = unsolicited.events[anchor] else { return }
        let g = generation
        for e in events {
            scheduler.schedule(after: max(0, e.after)) { [weak self] in
                guard let self, self.generation == g else { return }
                if let reason = e.linkLoss {
                    self.requestedDisconnect = reason
                } else {
                    self.server.sendAsRecorded(e.handle, e.value, indication: e.indication)
                }
            }
        }
    }

    public static func factory(_ recorded: RecordedTable, reactions: [RecordedReaction], unsolicited: RecordedUnsolicited = RecordedUnsolicited(),
                               answers: [[UInt8]: [[UInt8]]] = [:], serverMTU: UInt16 = 247) -> DeviceFactory {
        { scheduler, _ in
            ClonedDevice(scheduler: scheduler, recorded: recorded, reactions: reactions, unsolicited: unsolicited, answers: answers, serverMTU: serverMTU)
        }
    }

    public func connected() {
        let n = connections
        connections += 1
        play(.connection(n))
    }
    public func disconnected() { generation += 1 }

    /// How many writes of each (handle, value) were answered: the n-th write of a value gets the
    /// n-th recorded reaction to it (the same command may have been answered differently over time).
    private var served: [HandleValue: Int] = [:]
    private struct HandleValue: Hashable { var handle: UInt16; var value: [UInt8] }
    private var byValue: [HandleValue: [RecordedReaction]] = [:]
    private var lastByHandle: [UInt16: RecordedReaction] = [:]
    private var anyValueByHandle: [UInt16: RecordedReaction] = [:]

    /// `exactOnly`: a subscription answers only as the same subscription did (turning
    /// notifications off does not replay what turning them on did).
    private func written(_ handle: UInt16, _ value: [UInt8], exactOnly: Bool = false) -> ATTErrorCode? {
        let key = HandleValue(handle: handle, value: value)
        let same = byValue[key] ?? []
        let n = served[key, default: 0]
        if !same.isEmpty { served[key] = n + 1 }
        // A subscription past the recorded ones caused nothing recorded.
        let exact = same.isEmpty || (exactOnly && n >= same.count) ? nil : same[min(n, same.count - 1)]
        if exact != nil { matched += 1 } else { unmatched += 1 }
        guard let reaction = exact ?? (exactOnly ? nil : anyValueByHandle[handle] ?? lastByHandle[handle]) else { return nil }
        let g = generation
        for (i, n) in reaction.notifications.enumerated() {
            let indication = reaction.indications.contains(i)
            scheduler.schedule(after: max(0, n.after)) { [weak self] in
                guard let self, self.generation == g else { return }
                self.server.sendAsRecorded(n.handle, n.value, indication: indication)
            }
        }
        if let loss = reaction.linkLoss {
            scheduler.schedule(after: max(0, loss.after)) { [weak self] in
                guard let self, self.generation == g else { return }
                self.requestedDisconnect = loss.reason
            }
        }
        return reaction.error
    }
}
