/// Byte patterns (at least 4 bytes each) found in one pass: each position is looked up by its
/// first four bytes, so a file is scanned once however many secrets and addresses there are.
struct PatternSet {
    let patterns: [(from: [UInt8], to: [UInt8])]
    private var byPrefix: [UInt32: [Int]] = [:]
    static let minimumLength = 4

    /// `to` must have `from`'s length; longer patterns win where two start at one position.
    init(_ list: [(from: [UInt8], to: [UInt8])]) {
        patterns = list.filter { $0.from.count >= Self.minimumLength && $0.from.count == $0.to.count }
            .sorted { $0.from.count > $1.from.count }
        for (i, p) in patterns.enumerated() { byPrefix[Self.prefix(p.from, 0), default: []].append(i) }
    }

    var isEmpty: Bool { patterns.isEmpty }

    @inline(__always)
    static func prefix(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }

    /// The pattern starting at `i`, if any.
    func match(_ data: [UInt8], at i: Int) -> Int? {
        guard i + Self.minimumLength <= data.count, let candidates = byPrefix[Self.prefix(data, i)] else { return nil }
        return candidates.first { p in
            let n = patterns[p].from.count
            return i + n <= data.count && data[i..<(i + n)].elementsEqual(patterns[p].from)
        }
    }

    /// Replaces every occurrence, left to right; returns how many.
    @discardableResult
    func replaceAll(in data: inout [UInt8]) -> Int {
        guard !patterns.isEmpty, data.count >= Self.minimumLength else { return 0 }
        var count = 0
        var i = 0
        while i <= data.count - Self.minimumLength {
            if let p = match(data, at: i) {
                let n = patterns[p].from.count
                data.replaceSubrange(i..<(i + n), with: patterns[p].to)
                count += 1
                i += n
            } else {
                i += 1
            }
        }
        return count
    }
}
