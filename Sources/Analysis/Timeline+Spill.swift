import Capture
import Profiles
import HCI

// How a timeline's growing lists (connections, phases, progress) write their elements to a
// `SpillList` and read them back: every field, in declaration order, so that a timeline read back
// is the timeline made. A day's capture has tens of thousands of each: kept as values they were
// the only part of a timeline that grew past the event cap (29 MB at 4 million records).

extension Phase: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.int(device)
        w.optional(connection) { $0.int($1) }
        w.string(name)
        w.int64(start)
        w.int64(end)
        w.string(outcome.rawValue)
        w.optional(detail) { $0.string($1) }
        w.int(firstFrame)
        w.int(lastFrame)
    }

    public init(unspilling r: inout SpillReader) {
        let device = r.int(), connection = r.optional { $0.int() }, name = r.string(), start = r.int64(), end = r.int64()
        guard let outcome = Outcome(rawValue: r.string()) else { preconditionFailure("spilled phase with an unknown outcome") }
        self.init(device: device, connection: connection, name: name, start: start, end: end, outcome: outcome,
                  detail: r.optional { $0.string() }, firstFrame: r.int(), lastFrame: r.int())
    }
}

extension ProgressPoint: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.int(device)
        w.int64(time)
        w.int(percent)
        w.int(kb)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(device: r.int(), time: r.int64(), percent: r.int(), kb: r.int())
    }
}

extension TimelineConnection: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.int(id)
        w.int(device)
        w.int(Int(key.controller))
        w.int(Int(key.id))
        w.int64(start)
        w.optional(end) { $0.int64($1) }
        w.int(mtu)
        w.bool(encrypted)
        w.optional(encryptedAt) { $0.int64($1) }
        w.optional(keySize) { $0.int($1) }
        w.bool(paired)
        w.optional(disconnectReason) { $0.int(Int($1.rawValue)) }
        w.optional(hostDisconnectReason) { $0.int(Int($1.rawValue)) }
        w.bool(implicit)
        w.bool(classic)
        w.bool(carriedATT)
        w.int(firstFrame)
        w.int(lastFrame)
    }

    public init(unspilling r: inout SpillReader) {
        let id = r.int(), device = r.int()
        var key = ConnectionKey(controller: UInt16(truncatingIfNeeded: r.int()), handle: 0)
        key.id = UInt32(truncatingIfNeeded: r.int())
        self.init(id: id, device: device, key: key, start: r.int64(), firstFrame: 0, lastFrame: 0)
        end = r.optional { $0.int64() }
        mtu = r.int()
        encrypted = r.bool()
        encryptedAt = r.optional { $0.int64() }
        keySize = r.optional { $0.int() }
        paired = r.bool()
        disconnectReason = r.optional { HCIStatus(rawValue: UInt8(truncatingIfNeeded: $0.int())) }
        hostDisconnectReason = r.optional { HCIStatus(rawValue: UInt8(truncatingIfNeeded: $0.int())) }
        implicit = r.bool()
        classic = r.bool()
        carriedATT = r.bool()
        firstFrame = r.int()
        lastFrame = r.int()
    }
}

// Building blocks for the protocols' messages (`SpillableMessage`).

extension ProtocolProblem: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.string(id)
        w.string(message)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(r.string(), r.string())
    }
}

extension ProtoEnumValue: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.int(raw)
        w.optional(name) { $0.string($1) }
    }

    public init(unspilling r: inout SpillReader) {
        self.init(raw: r.int(), name: r.optional { $0.string() })
    }
}

extension SpillWriter {
    /// Any `Spillable` value, in place.
    public mutating func value(_ v: some Spillable) { v.spill(into: &self) }

    /// A secret whole: its label, bytes and location. (Spilled bytes are encrypted on disk.)
    public mutating func secret(_ s: Secret) {
        string(s.label)
        bytes(s.unsafeBytes)
        optional(s.location) { w, l in
            w.origin(l.origin)
            w.optional(l.mask) { $0.bytes($1) }
            w.array(l.copies) { w, c in
                w.int(c.index)
                w.piece(c.piece)
            }
            w.array(l.dependents) { w, d in
                w.origin(d.origin)
                w.bytes(d.bytes)
            }
        }
    }
}

extension SpillReader {
    /// Any `Spillable` value, in place.
    public mutating func value<T: Spillable>(_ type: T.Type = T.self) -> T { T(unspilling: &self) }

    public mutating func secret() -> Secret {
        let label = string()
        let bytes = bytes()
        let location: SecretLocation? = optional { r in
            let origin = r.origin()
            let mask = r.optional { $0.bytes() }
            let copies = r.array { r in SecretLocation.Copy(index: r.int(), piece: r.piece()) }
            let dependents = r.array { r in SecretLocation.Dependent(origin: r.origin(), bytes: r.bytes()) }
            return SecretLocation(origin: origin, mask: mask, copies: copies, dependents: dependents)
        }
        return Secret(bytes, label: label, location: location)
    }
}
