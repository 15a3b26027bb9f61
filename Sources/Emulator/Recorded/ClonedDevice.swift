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
    /// The device ended the link next: the HCI reason, microseconds after the write.
    public var linkLoss: (reason: UInt8, after: Int64)?

    public init(handle: UInt16, value: [UInt8]?, error: ATTErrorCode?, notifications: [(handle: UInt16, value: [UInt8], after: Int64)],
                linkLoss: (reason: UInt8, after: Int64)? = nil) {
        self.handle = handle
        self.value = value
        self.error = error
        self.notifications = notifications
        self.linkLoss = linkLoss
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.handle == b.handle && a.value == b.value && a.error == b.error
            && a.notifications.map(\.handle) == b.notifications.map(\.handle)
            && a.notifications.map(\.value) == b.notifications.map(\.value) && a.notifications.map(\.after) == b.notifications.map(\.after)
            && a.linkLoss?.reason == b.linkLoss?.reason && a.linkLoss?.after == b.linkLoss?.after
    }

    public func hash(into h: inout Hasher) {
        h.combine(handle)
        h.combine(value)
        h.combine(notifications.count)
    }
}

/// A device that answers as a recording did (a GATTacker-style clone), for a device protocol
/// GATTLab does not model: the recorded database, reads answered with the recorded values, and
/// each write answered as recorded and followed by the notifications that followed it, with the
/// recorded spacing, and the link ended where the recorded device ended it. A write the recording does not have (another value) gets the answer and
/// notifications of the last recorded write to that handle; a handle never written succeeds
/// silently.
public final class ClonedDevice: DeviceModel {
    public let server: GATTServer
    public var requestedDisconnect: UInt8?
    public var crash: String?
    private let scheduler: VirtualScheduler
    private let reactions: [RecordedReaction]
    private var generation = 0
    /// Writes answered from the recording, and writes it had no exact match for (tests, reports).
    public private(set) var matched = 0
    public private(set) var unmatched = 0

    public init(scheduler: VirtualScheduler, recorded: RecordedTable, reactions: [RecordedReaction], serverMTU: UInt16 = 247) {
        self.scheduler = scheduler
        self.reactions = reactions
        // Indexed once: a recording of many writes must not make each write a scan of them all.
        for r in reactions {
            if let value = r.value { byValue[HandleValue(handle: r.handle, value: value), default: []].append(r) }
            lastByHandle[r.handle] = r
            if r.value == nil { anyValueByHandle[r.handle] = r }
        }
        server = RecordedTable.server(recorded, builtIn: "", serverMTU: serverMTU, values: [:])
        for handle in Set(reactions.map(\.handle)) {
            server.onWrite(handle) { [weak self] _, w in
                guard let self else { return .unlikelyError }  // the server outlived its model
                return self.written(handle, w.value)
            }
        }
    }

    public static func factory(_ recorded: RecordedTable, reactions: [RecordedReaction], serverMTU: UInt16 = 247) -> DeviceFactory {
        { scheduler, _ in ClonedDevice(scheduler: scheduler, recorded: recorded, reactions: reactions, serverMTU: serverMTU) }
    }

    public func connected() {}
    public func disconnected() { generation += 1 }

    /// How many writes of each (handle, value) were answered: the n-th write of a value gets the
    /// n-th recorded reaction to it (the same command may have been answered differently over time).
    private var served: [HandleValue: Int] = [:]
    private struct HandleValue: Hashable { var handle: UInt16; var value: [UInt8] }
    private var byValue: [HandleValue: [RecordedReaction]] = [:]
    private var lastByHandle: [UInt16: RecordedReaction] = [:]
    private var anyValueByHandle: [UInt16: RecordedReaction] = [:]

    private func written(_ handle: UInt16, _ value: [UInt8]) -> ATTErrorCode? {
        let key = HandleValue(handle: handle, value: value)
        let same = byValue[key] ?? []
        let n = served[key, default: 0]
        if !same.isEmpty { served[key] = n + 1 }
        let exact = same.isEmpty ? nil : same[min(n, same.count - 1)]
        if exact != nil { matched += 1 } else { unmatched += 1 }
        guard let reaction = exact ?? anyValueByHandle[handle] ?? lastByHandle[handle] else { return nil }
        let g = generation
        for n in reaction.notifications {
            scheduler.schedule(after: max(0, n.after)) { [weak self] in
                guard let self, self.generation == g else { return }
                _ = self.server.notify(n.handle, n.value)
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
