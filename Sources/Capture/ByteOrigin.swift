/// Where the bytes of a decoded value lie in a capture: pieces of record payloads, in order.
///
/// Decoding joins bytes from several records (ACL fragments into an L2CAP PDU, prepared writes
/// into one value); an origin remembers which record bytes each decoded byte came from, so that
/// `gattlab redact` can overwrite a secret exactly where it lies. Offsets count from the start of
/// `CaptureRecord.data` (after the file format's own headers).
public struct ByteOrigin: Sendable, Hashable {
    public struct Piece: Sendable, Hashable {
        /// 1-based record number.
        public var record: Int
        /// Offset into the record's `data`.
        public var offset: Int
        public var count: Int

        public init(record: Int, offset: Int, count: Int) {
            self.record = record
            self.offset = offset
            self.count = count
        }
    }

    public private(set) var pieces: [Piece]
    /// Total bytes described.
    public private(set) var count: Int

    public init(_ pieces: [Piece] = []) {
        // Filtered only when there is something to drop: the audit makes an origin for every
        // value it decodes, and the filter's copy was an allocation each time.
        self.pieces = pieces.contains { $0.count <= 0 } ? pieces.filter { $0.count > 0 } : pieces
        count = self.pieces.reduce(0) { $0 + $1.count }
    }

    public init(record: Int, offset: Int, count: Int) {
        pieces = count > 0 ? [Piece(record: record, offset: offset, count: count)] : []
        self.count = count > 0 ? count : 0
    }

    /// The origin of `data[from..<from+count]` of a record whose `data` starts at `base`, when
    /// `bytes` lies inside it (it always does unless a decoder copied the bytes elsewhere).
    public init?(record: Int, data: UnsafeRawBufferPointer, bytes: UnsafeRawBufferPointer) {
        guard let base = data.baseAddress, let start = bytes.baseAddress else {
            if bytes.isEmpty { self.init(); return }
            return nil
        }
        let offset = start - base
        guard offset >= 0, offset + bytes.count <= data.count else { return nil }
        self.init(record: record, offset: offset, count: bytes.count)
    }

    public mutating func append(_ other: ByteOrigin) {
        for p in other.pieces {
            // Adjacent bytes of one record stay one piece.
            if let last = pieces.last, last.record == p.record, last.offset + last.count == p.offset {
                pieces[pieces.count - 1].count += p.count
            } else {
                pieces.append(p)
            }
        }
        count += other.count
    }

    /// The origin of bytes `range` of the value this describes; nil when the range is outside it.
    public func slice(_ range: Range<Int>) -> ByteOrigin? {
        guard range.lowerBound >= 0, range.upperBound <= count else { return nil }
        var out: [Piece] = []
        var position = 0
        for p in pieces {
            let lo = max(range.lowerBound, position)
            let hi = min(range.upperBound, position + p.count)
            if lo < hi { out.append(Piece(record: p.record, offset: p.offset + lo - position, count: hi - lo)) }
            position += p.count
            if position >= range.upperBound { break }
        }
        return ByteOrigin(out)
    }

    /// Records the bytes came from, in order, without repeats.
    public var records: [Int] {
        var seen: [Int] = []
        for p in pieces where seen.last != p.record && !seen.contains(p.record) { seen.append(p.record) }
        return seen
    }
}

/// Where a secret's bytes lie in the capture, and how to overwrite them.
public struct SecretLocation: Sendable, Hashable {
    public var origin: ByteOrigin
    /// For a secret carried encrypted (ESP-IDF security 1, AES-CTR): the keystream over its
    /// bytes. Writing `filler ^ mask` makes the value decrypt to the filler. Nil for plaintext.
    public var mask: [UInt8]?
    /// Other places the same bytes were repeated: a Prepare Write Response echoes its request.
    public var copies: [Copy] = []
    /// Bytes beside the secret that follow from it (a frame's checksum): what they must hold
    /// once the secret is overwritten, so that the redacted value still checks.
    public var dependents: [Dependent] = []

    /// Bytes at `origin` that become `bytes` when the secret is overwritten.
    public struct Dependent: Sendable, Hashable {
        public var origin: ByteOrigin
        public var bytes: [UInt8]
        public init(origin: ByteOrigin, bytes: [UInt8]) {
            self.origin = origin
            self.bytes = bytes
        }

        /// Each piece of `origin` with the bytes it takes.
        public var patches: [(piece: ByteOrigin.Piece, bytes: [UInt8])] {
            var out: [(ByteOrigin.Piece, [UInt8])] = []
            var i = 0
            for p in origin.pieces where i + p.count <= bytes.count {
                out.append((p, Array(bytes[i..<(i + p.count)])))
                i += p.count
            }
            return out
        }
    }

    /// Bytes `index ..< index + piece.count` of the secret, again at `piece`.
    public struct Copy: Sendable, Hashable {
        public var index: Int
        public var piece: ByteOrigin.Piece
        public init(index: Int, piece: ByteOrigin.Piece) {
            self.index = index
            self.piece = piece
        }
    }

    public init(origin: ByteOrigin, mask: [UInt8]? = nil, copies: [Copy] = [], dependents: [Dependent] = []) {
        self.origin = origin
        self.mask = mask
        self.copies = copies
        self.dependents = dependents
    }

    /// Every place a byte of the secret lies: (index in the secret, piece), origin first.
    public var placements: [(index: Int, piece: ByteOrigin.Piece)] {
        var out: [(Int, ByteOrigin.Piece)] = []
        var i = 0
        for p in origin.pieces {
            out.append((i, p))
            i += p.count
        }
        return out + copies.map { ($0.index, $0.piece) }
    }
}
