import Capture

// How the audit's lists write their elements to a `SpillList` and read them back: every field,
// in declaration order, so that a report read back is the report made.

extension AuditFinding: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.string(id)
        w.string(severity.rawValue)
        w.string(title)
        w.string(evidence)
        w.string(fix)
        w.optional(connection) { $0.string($1) }
        w.array(records) { $0.int($1) }
        w.optional(time) { $0.int64($1) }
    }

    public init(unspilling r: inout SpillReader) {
        let id = r.string()
        guard let severity = Severity(rawValue: r.string()) else { preconditionFailure("spilled finding with an unknown severity") }
        self.init(id: id, severity: severity, title: r.string(), evidence: r.string(), fix: r.string(),
                  connection: r.optional { $0.string() }, records: r.array { $0.int() }, time: r.optional { $0.int64() })
    }
}

extension SecretSighting: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.string(kind.rawValue)
        w.secret(secret)
        w.array(records) { $0.int($1) }
        w.int64(time)
        w.optional(connection) { $0.string($1) }
        w.string(context)
        w.bool(overTheAir)
        w.optional(linkEncrypted) { $0.bool($1) }
        w.bool(alreadyRedacted)
    }

    public init(unspilling r: inout SpillReader) {
        guard let kind = SecretKind(rawValue: r.string()) else { preconditionFailure("spilled sighting of an unknown kind") }
        let secret = r.secret()
        self.init(kind: kind, secret: secret, records: r.array { $0.int() },
                  time: r.int64(), connection: r.optional { $0.string() }, context: r.string(), overTheAir: r.bool(),
                  linkEncrypted: r.optional { $0.bool() })
        alreadyRedacted = r.bool()
    }
}

extension AuditLink: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.string(connection)
        w.optional(peer) { $0.string($1) }
        w.int(firstRecord)
        w.optional(encryptedAtRecord) { $0.int($1) }
        w.optional(keySize) { $0.int($1) }
        w.array(pairings) { w, p in
            w.bool(p.secureConnections)
            w.bool(p.mitm)
            w.bool(p.bonding)
            w.string(p.method)
            w.int(p.keySize)
            w.array(p.records) { $0.int($1) }
            w.optional(p.failed) { $0.string($1) }
            w.optional(p.time) { $0.int64($1) }
            w.optional(p.ioCapabilities) { w, io in
                w.string(io.initiator)
                w.string(io.responder)
            }
        }
    }

    public init(unspilling r: inout SpillReader) {
        self.init(connection: r.string(), peer: r.optional { $0.string() }, firstRecord: r.int())
        encryptedAtRecord = r.optional { $0.int() }
        keySize = r.optional { $0.int() }
        pairings = r.array { r in
            PairingSummary(secureConnections: r.bool(), mitm: r.bool(), bonding: r.bool(), method: r.string(), keySize: r.int(),
                           records: r.array { $0.int() }, failed: r.optional { $0.string() }, time: r.optional { $0.int64() },
                           ioCapabilities: r.optional { r in (initiator: r.string(), responder: r.string()) })
        }
    }
}

extension SpillWriter {
    mutating func piece(_ p: ByteOrigin.Piece) {
        int(p.record)
        int(p.offset)
        int(p.count)
    }

    mutating func origin(_ o: ByteOrigin) {
        array(o.pieces) { $0.piece($1) }
    }
}

extension SpillReader {
    mutating func piece() -> ByteOrigin.Piece {
        ByteOrigin.Piece(record: int(), offset: int(), count: int())
    }

    mutating func origin() -> ByteOrigin {
        ByteOrigin(array { $0.piece() })
    }
}
