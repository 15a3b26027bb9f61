import Foundation
import Profiles

/// A timeline's events, kept encoded: in memory up to 64 KiB, then in an encrypted, unlinked
/// temporary file (`SpillStorage`, as a `SpillList` keeps its elements), one per lane. A day's
/// timeline holds up to 200,000 events (`TimelineBuilder.maxEvents`); kept as values, with their
/// messages, they were 43 MB of its 73 MB heap.
///
/// What the rules' index, the sort and the grouping by device ask of every event (its time,
/// device, connection, lane, kind, message type and whether it has problems) stays in memory
/// beside each event's place, 24 bytes an event, so that finding the events a rule is about reads
/// no event. An event read back (`self[i]`) carries those and reads the rest (its text, frames,
/// message and problems) when first asked.
///
/// A message is encoded when its type is a `SpillableMessage` (every protocol here); one of
/// another type, and a link event's fields that hold a secret, stay values in memory.
///
/// Copies share the storage and the tables, which only grow; each keeps its own places.
public struct TimelineEvents: RandomAccessCollection, ExpressibleByArrayLiteral, Sendable {
    /// What stays in memory of each event.
    struct Meta {
        var time: Int64
        /// `Int32.min`: none.
        var device: Int32
        var connection: Int32
        /// Index in `Tables.kinds`; `inlineIndex`: the kind is in the event's bytes.
        var kind: UInt16
        /// 0: no message; else 1 + index in `Tables.types`. The high bit: the event has problems.
        var typeAndProblems: UInt16
        var lane: TimelineEvent.Lane

        var messageType: Int { Int(typeAndProblems & 0x7FFF) }
        var hasProblems: Bool { typeAndProblems & 0x8000 != 0 }
    }

    static let inlineIndex: UInt16 = .max

    /// Kinds, message types and what is kept as values, shared by copies of the list.
    final class Tables: @unchecked Sendable {
        // Changed only by the list's appends, while a timeline is built on one thread; read by
        // its events as they load, after.
        var kinds: [String] = []
        var kindIndex: [String: UInt16] = [:]
        var types: [any ProfileMessage.Type] = []
        /// Each type as a `SpillableMessage`, nil for one that is not: asked once per type, not
        /// once per event (a conformance lookup per event was 4% of a timeline).
        var spillable: [(any SpillableMessage.Type)?] = []
        /// The last kind and message type appended, and their indices: events come in runs.
        var lastKind: (kind: String, index: UInt16)?
        var lastType: (id: ObjectIdentifier, index: Int)?
        var typeIndex: [ObjectIdentifier: Int] = [:]
        /// Messages of types that are not `SpillableMessage`, and link events' fields with secrets.
        var keptMessages: [any ProfileMessage] = []
        var keptTexts: [TimelineEvent.Told.Values] = []
    }

    /// The encoded events and the tables, shared by copies of the list and by the events read
    /// from it until they have read their parts.
    final class Source: @unchecked Sendable {
        /// One storage per lane: the rules read the events of one kind or message type, and the
        /// link events (disconnections, errors...), a fifth of a day's events, spread over one
        /// file made each such rule read and decrypt most of the file.
        let storages: [SpillStorage]
        let tables = Tables()
        init(memoryLimit: Int) { storages = (0..<4).map { _ in SpillStorage(memoryLimit: memoryLimit) } }

        static func index(_ lane: TimelineEvent.Lane) -> Int {
            switch lane {
            case .link: 0
            case .ota: 1
            case .scan: 2
            case .provisioning: 3
            }
        }

        func storage(_ lane: TimelineEvent.Lane) -> SpillStorage { storages[Self.index(lane)] }

        /// Reads the parts of the event of `lane` at `slot` (message type `type`, 0 for none; its
        /// kind in its bytes when `inlineKind`) and hands them to `take`, under the storage's lock.
        func read(lane: TimelineEvent.Lane, slot: UInt64, type: Int, inlineKind: Bool, _ take: (() -> TimelineEvent.Parts) -> Void) {
            storage(lane).read(slot: slot) { r in
                take {
                    if inlineKind { _ = r.string() }
                    return decode(&r, type: type)
                }
            }
        }

        private func decode(_ r: inout SpillReader, type: Int) -> TimelineEvent.Parts {
            let told: TimelineEvent.Told?
            switch r.int() {
            case 0: told = nil
            case 1: told = .encoded(r.bytes())
            default: told = .values(tables.keptTexts[r.int()])
            }
            // Up to two frames inline, as the event keeps them (no array to make).
            let frameCount = r.int()
            var frame0 = Int.min, frame1 = Int.min
            var moreFrames: [Int]?
            if frameCount > 0 { frame0 = r.int() }
            if frameCount > 1 { frame1 = r.int() }
            // As the event's setter keeps them: inline only when none is `Int.min`, which marks "none".
            if frameCount > 2 || (frameCount > 0 && frame0 == .min) || (frameCount > 1 && frame1 == .min) {
                var all = [frame0, frame1].prefix(frameCount).map { $0 }
                while all.count < frameCount { all.append(r.int()) }
                moreFrames = all
            }
            let message: (any ProfileMessage)?
            switch r.int() {
            case 0: message = nil
            case 1:
                guard type > 0, let spillable = tables.spillable[type - 1] else {
                    preconditionFailure("a spilled message of a type that cannot be read back")
                }
                message = spillable.init(unspilling: &r)
            default: message = tables.keptMessages[r.int()]
            }
            let problems = r.array { $0.value(ProtocolProblem.self) }
            return TimelineEvent.Parts(told: told, frame0: frame0, frame1: frame1, moreFrames: moreFrames, message: message,
                                       problems: problems)
        }
    }

    private let source: Source
    private var tables: Tables { source.tables }
    /// Each event's place in its lane's storage: offset << 24 | length.
    private var slots: [UInt64] = []
    private var meta: [Meta] = []

    public init(memoryLimit: Int = SpillList<Phase>.defaultMemoryLimit) {
        source = Source(memoryLimit: memoryLimit)
    }

    public init(arrayLiteral elements: TimelineEvent...) {
        self.init(elements)
    }

    public init(_ elements: some Sequence<TimelineEvent>, memoryLimit: Int = SpillList<Phase>.defaultMemoryLimit) {
        self.init(memoryLimit: memoryLimit)
        for e in elements { append(e) }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { slots.count }

    /// The event at `position`: what the list holds in memory now, the rest read when first asked.
    public subscript(position: Int) -> TimelineEvent {
        let m = meta[position]
        let type = m.messageType
        return TimelineEvent(time: m.time, device: m.device, connection: m.connection, lane: m.lane,
                             kind: m.kind == Self.inlineIndex ? inlineKind(position) : tables.kinds[Int(m.kind)],
                             messageType: type == 0 ? nil : ObjectIdentifier(tables.types[type - 1]), source: source,
                             slot: slots[position], type: type, inlineKind: m.kind == Self.inlineIndex)
    }

    /// A kind that did not fit the table, read from the event's bytes.
    private func inlineKind(_ position: Int) -> String {
        let slot = slots[position]
        return source.storage(meta[position].lane).read(slot: slot) { r in r.string() }
    }

    public var capacity: Int { slots.capacity }

    public mutating func reserveCapacity(_ n: Int) {
        slots.reserveCapacity(n)
        meta.reserveCapacity(n)
    }

    public mutating func append(_ e: TimelineEvent) {
        let kind = index(kind: e.kind)
        var type = 0
        if let message = e.message {
            type = index(type: Swift.type(of: message))
        }
        slots.append(source.storage(e.lane).append(slot: { w in encode(e, kind: kind, type: type, into: &w) }))
        meta.append(Meta(time: e.time, device: e.device.map { Int32(clamping: $0) } ?? .min,
                         connection: e.connection.map { Int32(clamping: $0) } ?? .min, kind: kind,
                         typeAndProblems: UInt16(type) | (e.problems.isEmpty ? 0 : 0x8000), lane: e.lane))
    }

    // MARK: What the index asks, without reading the event

    public func time(at i: Int) -> Int64 { meta[i].time }
    public func device(at i: Int) -> Int? { meta[i].device == .min ? nil : Int(meta[i].device) }
    public func hasProblems(at i: Int) -> Bool { meta[i].hasProblems }
    /// The identity of the type of the event's message, nil without one.
    public func messageType(at i: Int) -> ObjectIdentifier? {
        let t = meta[i].messageType
        return t == 0 ? nil : ObjectIdentifier(tables.types[t - 1])
    }
    /// The type of the event's message, nil without one.
    public func messageMetatype(at i: Int) -> (any ProfileMessage.Type)? {
        let t = meta[i].messageType
        return t == 0 ? nil : tables.types[t - 1]
    }
    public func kind(at i: Int) -> String {
        let k = meta[i].kind
        return k == Self.inlineIndex ? self[i].kind : tables.kinds[Int(k)]
    }
    /// The positions of the events of kind `kind`, in order, read without the events (unless
    /// the kinds outgrew the table).
    public func positions(ofKind kind: String) -> [Int] {
        let known = tables.kindIndex[kind]
        var found: [Int] = []
        for i in indices {
            let k = meta[i].kind
            if k == known || (k == Self.inlineIndex && self[i].kind == kind) { found.append(i) }
        }
        return found
    }

    // MARK: Reordering and picking, without reading the events

    /// Sorts by time, keeping the order of events with the same time.
    public mutating func sortByTime() {
        var order = Array(indices)
        let meta = self.meta
        order.sort { meta[$0].time != meta[$1].time ? meta[$0].time < meta[$1].time : $0 < $1 }
        picking(order, into: &self)
    }

    /// The events at `positions`, in that order, sharing this list's storage.
    public func picking(_ positions: [Int]) -> TimelineEvents {
        var list = self
        picking(positions, into: &list)
        return list
    }

    /// The events whose device `keep` accepts, and those of no device, read without the events.
    public func picking(devices keep: (Int) -> Bool) -> TimelineEvents {
        picking(indices.filter { device(at: $0).map(keep) ?? true })
    }

    private func picking(_ positions: [Int], into list: inout TimelineEvents) {
        let slots = self.slots, meta = self.meta
        list.slots = positions.map { slots[$0] }
        list.meta = positions.map { meta[$0] }
    }

    // MARK: Encoding

    private func index(kind: String) -> UInt16 {
        if let last = tables.lastKind, last.kind == kind { return last.index }
        if let k = tables.kindIndex[kind] {
            tables.lastKind = (kind, k)
            return k
        }
        guard tables.kinds.count < Int(Self.inlineIndex) else { return Self.inlineIndex }
        let k = UInt16(tables.kinds.count)
        tables.kinds.append(kind)
        tables.kindIndex[kind] = k
        return k
    }

    private func index(type: any ProfileMessage.Type) -> Int {
        let id = ObjectIdentifier(type)
        if let last = tables.lastType, last.id == id { return last.index }
        if let t = tables.typeIndex[id] {
            tables.lastType = (id, t + 1)
            return t + 1
        }
        // A protocol has a handful of types; 0x7FFF of them would be a bug.
        precondition(tables.types.count < 0x7FFE, "too many message types")
        tables.types.append(type)
        tables.spillable.append(type as? any SpillableMessage.Type)
        tables.typeIndex[id] = tables.types.count - 1
        return tables.types.count
    }

    /// The event's bytes: what `Meta` does not hold (`Source.decode` reads them). Tags: told 0
    /// none, 1 encoded, 2 kept; message 0 none, 1 encoded, 2 kept.
    private func encode(_ e: TimelineEvent, kind: UInt16, type: Int, into w: inout SpillWriter) {
        if kind == Self.inlineIndex { w.string(e.kind) }
        switch e.told {
        case nil: w.int(0)
        case .encoded(let bytes)?:
            w.int(1)
            w.bytes(bytes)
        case .values(let values)?:
            w.int(2)
            w.int(tables.keptTexts.count)
            tables.keptTexts.append(values)
        }
        w.int(e.frameCount)
        e.forEachFrame { w.int($0) }
        switch e.message {
        case nil: w.int(0)
        case let m? where tables.spillable[type - 1] != nil:
            w.int(1)
            tables.spillable[type - 1]!.spill(m, into: &w)
        case let m?:
            w.int(2)
            w.int(tables.keptMessages.count)
            tables.keptMessages.append(m)
        }
        w.array(e.problems) { $0.value($1) }
    }
}
