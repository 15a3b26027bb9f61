import Profiles
extension SensorScan {
    /// How a response's firmware placed its MORE/END markers (`Response.markerStyle`).
    public enum MarkerStyle: String, Sendable, Hashable, CaseIterable {
        /// `MORE` / `END` as notifications of their own (PROTOCOLS.md accepts it beside the lines).
        case separateNotification = "separate-notification"
        /// The documented style: the last line of a chunk, `...\nMORE\n` (LF after it or not).
        case suffixNewline = "suffix-newline"
        /// The same with CR LF line ends: `...\r\nMORE\r\n`.
        case suffixCRLF = "suffix-crlf"
        /// Glued to the last network with a separator: `Net,-45;MORE`, `Net,-45,MORE`, `Net,-45 MORE`.
        case suffixSemicolon = "suffix-semicolon"
        case suffixComma = "suffix-comma"
        case suffixSpace = "suffix-space"
        /// Glued to the last network without a separator: `Net,-45MORE`.
        case suffixGlued = "suffix-glued"
        /// At the start of a chunk: `MORE\nNet,-45\n`, `END;Net,-70`.
        case prefix
        /// A marker cut by the chunker: `...\nMO` + `RE`.
        case splitAcrossChunks = "split-across-chunks"
        /// A marker line in the middle of a notification (two chunks sent as one).
        case inline
    }

    /// Joins a response's notifications into its text, taking out the MORE/END markers wherever
    /// the firmware put them. Data chunks are joined as bytes before anything is decoded, so a
    /// chunk may end inside a line or a UTF-8 sequence.
    ///
    /// The recognition rule (docs/timeline.md, "Sensor scan markers"). Markers are the upper-case
    /// ASCII words `MORE` and `END`; a marker is only ever recognised at a notification's edge
    /// or as a whole line, never inside a line, so an SSID that merely contains the word
    /// ("WEEKEND", "MOREHOUSE", "Endless") stays a network. In order:
    /// 1. A notification that is only a marker (separators `;` `,` space, CR and LF around it
    ///    allowed) is a marker: `separate-notification`.
    /// 2. A notification whose start completes a marker fragment the previous one ended with
    ///    (`...\nMO` + `RE...`, the fragment after a line break or separator) is that marker:
    ///    `split-across-chunks`. Any other held fragment is data again, so `...\nMO` + `TEL,-50`
    ///    is the network MOTEL.
    /// 3. At a line start, a notification beginning with a marker followed by LF, CR LF or `;`
    ///    is a `prefix` marker; followed by `,` or space only when that line is not itself a
    ///    network line (`END,-40` is a network called END); glued to the data (`ENDNet,-70`)
    ///    only once this response has used prefix markers.
    /// 4. A notification ending (before any CR/LF) with a marker is a suffix marker when the
    ///    marker starts the notification or a line, or when it follows `;`, `,`, space or
    ///    nothing at all *and* the line before it is a complete `SSID,RSSI` network line
    ///    (so a chunk ending "...\nMy MORE" cut inside the SSID "My MORE" is data).
    /// 5. Whole lines `MORE` / `END` inside a notification are markers (`inline`).
    /// MORE only says more follows; END completes the response once its notification's data is
    /// joined (prefix `END\nlast,-80` keeps `last`). Where a glued marker carried the only line
    /// end, the line is ended for it. Between notifications a line break is added when the
    /// open line and the next notification's first line are each a complete network line
    /// (one network per notification without LF); otherwise the bytes join as they are.
    /// The one reading left ambiguous: a network whose SSID is exactly `MORE` or `END`, cut by
    /// the chunker right after the SSID, reads as a marker.
    public struct Joiner: Sendable {
        public private(set) var bytes: [UInt8] = []
        public private(set) var chunks = 0
        public private(set) var complete = false
        public private(set) var overflow = false
        /// Each marker placement seen, in order of first appearance.
        public private(set) var styles: [MarkerStyle] = []
        /// A marker fragment the last notification ended with (at most 3 bytes): data again
        /// unless the next notification completes it.
        private var pending: [UInt8] = []

        public init() {}

        /// A notification's bytes, read where they lie. The rules take many slices of each
        /// notification; slices of an array retain and release its buffer every time, which was
        /// most of the scan fuzz target's time, and slices of a pointer cost nothing.
        typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>

        enum Marker {
            case more, end

            /// The word, in the binary's constant data (read through a pointer, never retained).
            var word: Bytes {
                let s: StaticString = self == .more ? "MORE" : "END"
                return UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount)[...]
            }
        }
        /// The markers in the order the rules try them.
        @inline(__always) static var markers: [Marker] { [.more, .end] }
        static let lf: UInt8 = 0x0A, cr: UInt8 = 0x0D
        /// Separators firmware puts between a marker and the data.
        static func isSeparator(_ b: UInt8) -> Bool { b == 0x3B || b == 0x2C || b == 0x20 || b == 0x09 }
        static func isBreak(_ b: UInt8) -> Bool { b == lf || b == cr }
        static func startsWithCRLF(_ c: Bytes) -> Bool { c.count >= 2 && c[c.startIndex] == cr && c[c.startIndex + 1] == lf }
        static func endsWithCRLF(_ c: Bytes) -> Bool { c.count >= 2 && c[c.endIndex - 2] == cr && c[c.endIndex - 1] == lf }

        /// Adds one notification; returns true when it completed the response.
        @discardableResult
        public mutating func add(_ chunk: [UInt8]) -> Bool {
            chunk.withUnsafeBufferPointer { add(inPlace: $0[...]) }
        }

        /// The same for a notification that is a slice of a larger buffer (the scan fuzz
        /// target's input), read where it is.
        @discardableResult
        public mutating func add(_ chunk: ArraySlice<UInt8>) -> Bool {
            chunk.withUnsafeBufferPointer { add(inPlace: $0[...]) }
        }

        /// Rules 1 and 2, then the rest.
        private mutating func add(inPlace chunk: Bytes) -> Bool {
            guard !complete else { return true }
            chunks += 1
            var c = chunk
            let holdsMarker = Self.mayHoldMarker(c)

            // 1. A notification that is only a marker.
            if holdsMarker, let m = Self.onlyMarker(c) {
                if !pending.isEmpty {
                    let held = takePending()
                    guard held.withUnsafeBufferPointer({ append($0[...]) }) else { return true }
                }
                if let first = c.first, Self.isBreak(first) {
                    // `\nMORE\n`: the end of a line and the marker line, the line style's chunk.
                    // Its line end ends the line the last chunk left open (found by fuzzing an
                    // independent sensor that cut `SSID,RSSI` exactly at the chunk's end).
                    endLine()
                    note(Self.startsWithCRLF(c) ? .suffixCRLF : .suffixNewline)
                } else {
                    note(.separateNotification)
                    if m == .more { separateMore = true }
                }
                if m == .end { complete = true }
                return complete
            }
            // 2. The rest of a marker the last notification began.
            var sawEnd = false
            if !pending.isEmpty {
                let fragment = pending
                var completed: (length: Int, marker: Marker)?
                for m in Self.markers {
                    let w = m.word
                    let k = w.count - fragment.count
                    guard k > 0, w.starts(with: fragment), c.starts(with: w.dropFirst(fragment.count)) else { continue }
                    if c.count > k {
                        let next = c[c.startIndex + k]
                        guard Self.isBreak(next) || Self.isSeparator(next) else { continue }
                    }
                    completed = (w.count, m)
                    break
                }
                if let (length, m) = completed {
                    let endsLine = pendingEndsLine
                    pending = []
                    pendingRestore = []
                    pendingEndsLine = false
                    if endsLine { endLine() }
                    c = Self.dropLeadingSeparators(c.dropFirst(length - fragment.count))
                    note(.splitAcrossChunks)
                    if m == .end { sawEnd = true }
                } else {
                    // The held fragment was data: it and this notification are read as one (the
                    // fragment holds an M or an E).
                    let joined = takePending() + c
                    return joined.withUnsafeBufferPointer { addRest($0[...], sawEnd: false, mayHoldMarker: true) }
                }
            }
            return addRest(c, sawEnd: sawEnd, mayHoldMarker: holdsMarker)
        }

        /// Rules 3 to 5 and the data. `mayHoldMarker` false: the bytes are data, whatever the
        /// rules would look for (`mayHoldMarker(_:)`).
        private mutating func addRest(_ chunk: Bytes, sawEnd sawEndBefore: Bool, mayHoldMarker: Bool) -> Bool {
            guard mayHoldMarker else {
                guard append(chunk) else { return true }
                return finish(endsLine: false, sawEnd: sawEndBefore)
            }
            var c = chunk
            var sawEnd = sawEndBefore
            // 3. A marker at the start of the notification.
            if atLineStart, let (m, length) = prefixMarker(c) {
                c = c.dropFirst(length)
                note(.prefix)
                if m == .end { sawEnd = true }
            }
            // Trailing line ends are data unless a marker sits before them.
            var t = c
            while let last = t.last, Self.isBreak(last) { t = t.dropLast() }
            var body = c
            var endsLine = false
            if let (m, before, ends) = suffixMarker(t) {
                // 4. A marker at the end.
                body = before
                endsLine = ends
                if m == .end { sawEnd = true }
            } else if !sawEnd, t.count == c.count, let (fragment, before, restore, ends) = partialMarker(t) {
                // 4b. A marker fragment: held until the next notification says what it is.
                body = before
                pending = Array(fragment)
                pendingRestore = restore
                pendingEndsLine = ends
            }
            // 5. Marker lines inside.
            if let kept = removeInlineMarkers(body, sawEnd: &sawEnd) {
                guard kept.withUnsafeBufferPointer({ append($0[...]) }) else { return true }
            } else {
                guard append(body) else { return true }
            }
            return finish(endsLine: endsLine, sawEnd: sawEnd)
        }

        /// After a notification's data: its line end, if a marker carried it, and END.
        private mutating func finish(endsLine: Bool, sawEnd: Bool) -> Bool {
            if endsLine { endLine() }
            if sawEnd {
                pending = []
                pendingRestore = []
                complete = true
            }
            return complete
        }

        /// Every marker and every fragment of one holds an M or an E: bytes with neither hold
        /// none, and most data notifications skip the marker rules.
        static func mayHoldMarker(_ c: Bytes) -> Bool {
            for b in c where b == 0x4D || b == 0x45 { return true }
            return false
        }

        /// The placement, named: one style, `mixed` when the firmware used several, `none` when
        /// no marker arrived. A lone END notification closing chunks marked another way is that
        /// style's last (empty) chunk, not a second style.
        public var markerStyle: String { Self.name(of: effectiveStyles) }

        static func name(of styles: [MarkerStyle]) -> String {
            styles.isEmpty ? "none" : styles.count == 1 ? styles[0].rawValue : "mixed"
        }

        /// The styles behind `markerStyle` (several when it is `mixed`).
        public var effectiveStyles: [MarkerStyle] {
            var s = styles
            if s.count > 1, s.contains(.separateNotification), !separateMore {
                s.removeAll { $0 == .separateNotification }
            }
            return s
        }

        private var separateMore = false
        /// Bytes to put back before a held fragment that turns out to be data (its separator).
        private var pendingRestore: [UInt8] = []
        /// The held fragment followed a complete network glued to it: a marker ends that line.
        private var pendingEndsLine = false

        private mutating func note(_ s: MarkerStyle) {
            if !styles.contains(s) { styles.append(s) }
        }

        private mutating func takePending() -> [UInt8] {
            defer {
                pending = []
                pendingRestore = []
                pendingEndsLine = false
            }
            return pendingRestore + pending
        }

        private var atLineStart: Bool { bytes.last.map(Self.isBreak) ?? true }

        private mutating func endLine() {
            if let last = bytes.last, !Self.isBreak(last), bytes.count < SensorScan.maxResponseBytes {
                bytes.append(Self.lf)
                openLineStart = bytes.count
            }
        }

        /// Appends data; false (and the response abandoned) past the size cap.
        private mutating func append(_ body: Bytes) -> Bool {
            guard !body.isEmpty else { return true }
            // One network per notification without a line end: both sides whole network lines.
            if let last = bytes.last, !Self.isBreak(last), let first = body.first, !Self.isBreak(first),
               openLineIsNetworkLine(), Self.isNetworkLine(body.prefix { !Self.isBreak($0) }) {
                bytes.append(Self.lf)
                openLineStart = bytes.count
            }
            if bytes.count + body.count > SensorScan.maxResponseBytes {
                overflow = true
                complete = true
                return false
            }
            // A scan answer is a few hundred bytes: room for them at once, not by doubling.
            if bytes.capacity == 0 { bytes.reserveCapacity(max(256, body.count)) }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: body))
            if let i = body.lastIndex(where: Self.isBreak) { openLineStart = bytes.count - (body.endIndex - i - 1) }
            return true
        }

        /// Where the last line of `bytes` starts (after its last CR or LF), kept as `bytes` grows.
        private var openLineStart = 0

        /// Whether the line left open at the end of the joined text is a complete network line.
        private func openLineIsNetworkLine() -> Bool {
            bytes.withUnsafeBufferPointer { Self.isNetworkLine($0[openLineStart...]) }
        }

        /// Whether the line that `extra` would leave open at the end of the joined text is a
        /// complete network line. Read in place, from `openLineStart`: the joiner asks at every
        /// notification, and copying the open line out (found by a search back through the text)
        /// was a good part of the scan fuzz target's time.
        private func openLineIsNetworkLine(plus extra: Bytes) -> Bool {
            if let i = extra.lastIndex(where: Self.isBreak) { return Self.isNetworkLine(extra[(i + 1)...]) }
            if extra.isEmpty { return openLineIsNetworkLine() }
            let headCount = bytes.count - openLineStart
            // Longer is no network line (isNetworkLine's first test), whatever the bytes.
            guard headCount + extra.count <= SensorScan.maxSSIDLength + 8 else { return false }
            return bytes.withUnsafeBufferPointer { all in
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: headCount + extra.count) { line in
                    _ = line.initialize(fromContentsOf: all[openLineStart...])
                    _ = line[headCount...].initialize(fromContentsOf: extra)
                    return Self.isNetworkLine(line)
                }
            }
        }

        /// A complete network line as radios report them: a non-empty SSID of at most 32 bytes, a
        /// comma, a negative dBm integer (`Café, 2` is half of `Café, 2nd floor,-67`, not a network).
        static func isNetworkLine(_ line: some BidirectionalCollection<UInt8>) -> Bool {
            guard line.count <= SensorScan.maxSSIDLength + 8, let comma = line.lastIndex(of: 0x2C), comma != line.startIndex else { return false }
            var digits = line[line.index(after: comma)...].drop { $0 == 0x20 }
            while digits.last == 0x20 { digits = digits.dropLast() }
            guard digits.first == 0x2D else { return false }
            digits = digits.dropFirst()
            return (1...3).contains(digits.count) && digits.allSatisfy { (0x30...0x39).contains($0) }
        }

        static func trimmed(_ c: Bytes) -> Bytes {
            var t = c
            while let f = t.first, isBreak(f) || isSeparator(f) { t = t.dropFirst() }
            while let l = t.last, isBreak(l) || isSeparator(l) { t = t.dropLast() }
            return t
        }

        static func onlyMarker(_ c: Bytes) -> Marker? {
            let t = trimmed(c)
            for m in markers where t.count == m.word.count && t.elementsEqual(m.word) { return m }
            return nil
        }

        static func dropLeadingSeparators(_ c: Bytes) -> Bytes {
            var c = c
            if let f = c.first, isSeparator(f) { c = c.dropFirst() }
            if c.first == cr { c = c.dropFirst() }
            if c.first == lf { c = c.dropFirst() }
            return c
        }

        /// Rule 3: the marker and the separator after it, as a length to drop.
        func prefixMarker(_ c: Bytes) -> (Marker, Int)? {
            for m in Self.markers {
                let w = m.word
                guard c.starts(with: w) else { continue }
                let rest = c.dropFirst(w.count)
                guard let next = rest.first else { return (m, w.count) }
                let line = c.prefix { !Self.isBreak($0) }
                switch next {
                case Self.lf, Self.cr, 0x3B:
                    return (m, c.count - Self.dropLeadingSeparators(rest).count)
                case 0x2C, 0x20, 0x09:
                    if Self.isNetworkLine(line) { return nil }
                    return (m, c.count - Self.dropLeadingSeparators(rest).count)
                default:
                    // Glued: only once this response has shown prefix markers.
                    if styles.contains(.prefix), Self.isNetworkLine(rest.prefix { !Self.isBreak($0) }) { return (m, w.count) }
                    return nil
                }
            }
            return nil
        }

        /// Rule 4: a marker at the end of `t` (line ends trimmed): the data before it and whether
        /// the marker carried that data's line end.
        mutating func suffixMarker(_ t: Bytes) -> (Marker, Bytes, Bool)? {
            for m in Self.markers {
                let w = m.word
                guard t.count >= w.count, t.suffix(w.count).elementsEqual(w) else { continue }
                let before = t.dropLast(w.count)
                guard let last = before.last else {
                    note(.separateNotification)
                    return (m, before, false)
                }
                if Self.isBreak(last) {
                    note(Self.endsWithCRLF(before) || last == Self.cr ? .suffixCRLF : .suffixNewline)
                    return (m, before, false)
                }
                if Self.isSeparator(last) {
                    let data = before.dropLast()
                    guard openLineIsNetworkLine(plus: data) else { continue }
                    note(last == 0x3B ? .suffixSemicolon : last == 0x2C ? .suffixComma : .suffixSpace)
                    return (m, data, true)
                }
                guard openLineIsNetworkLine(plus: before) else { continue }
                note(.suffixGlued)
                return (m, before, true)
            }
            return nil
        }

        /// Rule 4b: the notification ends with the start of a marker, placed where a marker may
        /// stand: the fragment, the data before it, the bytes to restore if it is data after
        /// all, and whether a completed marker ends the line before it.
        func partialMarker(_ t: Bytes) -> (Bytes, Bytes, [UInt8], Bool)? {
            // Every fragment (M, MO, MOR, E, EN) ends in one of these letters: most notifications
            // end in none of them.
            guard let end = t.last, end == 0x4D || end == 0x4F || end == 0x52 || end == 0x45 || end == 0x4E else { return nil }
            for k in stride(from: 3, through: 1, by: -1) where t.count >= k {
                let fragment = t.suffix(k)
                guard Self.markers.contains(where: { $0.word.count > k && $0.word.starts(with: fragment) }) else { continue }
                let before = t.dropLast(k)
                guard let last = before.last else { return atLineStart ? (fragment, before, [], false) : nil }
                if Self.isBreak(last) { return (fragment, before, [], false) }
                if Self.isSeparator(last) {
                    let data = before.dropLast()
                    guard openLineIsNetworkLine(plus: data) else { return nil }
                    return (fragment, data, [last], true)
                }
                guard openLineIsNetworkLine(plus: before) else { return nil }
                return (fragment, before, [], true)
            }
            return nil
        }

        /// Rule 5: whole `MORE` / `END` lines inside the notification, taken out: the bytes that
        /// are left, or nil when there were none to take.
        mutating func removeInlineMarkers(_ body: Bytes, sawEnd: inout Bool) -> [UInt8]? {
            guard body.contains(Self.lf) else { return nil }
            var out: [UInt8] = []
            var lineStart = body.startIndex
            var first = true
            var removed = false
            while lineStart < body.endIndex {
                guard let lf = body[lineStart...].firstIndex(of: Self.lf) else {
                    if removed { out += UnsafeBufferPointer(rebasing: body[lineStart...]) }
                    break
                }
                let line = body[lineStart..<lf]
                let whole = !first || atLineStart
                if whole, let m = Self.onlyMarker(line) {
                    if !removed {
                        // The first marker line: what came before it is kept as it was.
                        out.reserveCapacity(body.count)
                        out += UnsafeBufferPointer(rebasing: body[body.startIndex..<lineStart])
                        removed = true
                    }
                    if m == .end { sawEnd = true }
                } else if removed {
                    out += UnsafeBufferPointer(rebasing: body[lineStart...lf])
                }
                first = false
                lineStart = lf + 1
            }
            guard removed else { return nil }
            note(.inline)
            return out
        }

        /// The response as it stands: complete if END arrived, else truncated with what came.
        /// A truncated response's unfinished last line is dropped, not read as a network, unless
        /// it is a whole `SSID,RSSI` line.
        public func response(truncatedBecause reason: String? = nil) -> Response {
            var end = bytes.endIndex
            var partial = false
            // A held marker fragment glued to a whole network line would have ended that line.
            // A last line without its line end is kept when it reads as a whole network (firmware
            // that sends one network per notification without LF), else dropped.
            if !complete, !pendingEndsLine, let last = bytes.last, !Self.isBreak(last) {
                let cut = bytes.lastIndex(where: Self.isBreak).map { $0 + 1 } ?? 0
                if !Self.isNetworkLine(bytes[cut...]) {
                    end = cut
                    partial = true
                }
            }
            // The text up to `end`, parsed where it lies (not copied without its last line).
            var (networks, problems) = bytes.withUnsafeBufferPointer { SensorScan.parse(text: UnsafeBufferPointer(rebasing: $0[..<end])) }
            if overflow {
                problems.append(.init("scan.too-long", "more than \(SensorScan.maxResponseBytes) bytes without END; abandoned"))
            } else if !complete {
                let n = networks.count
                problems.append(.init("scan.truncated", "END never came\(reason.map { " (\($0))" } ?? ""); \(n) network\(n == 1 ? "" : "s") arrived"
                                      + (partial ? ", and an unfinished line was dropped" : "")))
            }
            let styles = effectiveStyles
            return Response(networks: networks, complete: complete && !overflow, problems: problems, chunks: chunks,
                            markerStyle: Self.name(of: styles),
                            markerStyles: styles.map(\.rawValue))
        }
    }

    /// Parses joined response text: lines of `SSID,RSSI`, split at the last comma (SSIDs may
    /// contain commas), LF, CR LF or CR line ends, empty lines ignored. A `MORE` or `END` line
    /// here means the joiner left one in: reported.
    public static func parse(_ bytes: [UInt8]) -> ([Network], [ProtocolProblem]) {
        // Read through a pointer: slices of it cost no reference counting (as in the joiner).
        bytes.withUnsafeBufferPointer { parse(text: $0) }
    }

    static func parse(text bytes: UnsafeBufferPointer<UInt8>) -> ([Network], [ProtocolProblem]) {
        var networks: [Network] = []
        var problems: [ProtocolProblem] = []
        // SSIDs seen: an FNV-1a hash of each → the first network with it. (The scan fuzz target
        // runs this per input; hashing the byte arrays in a Set cost a tenth of its time, and a
        // String and an Array per line, as lines were read before, most of it.)
        // Few networks (a scan lists about ten): their hashes are searched in order; a dictionary
        // only once there are many (a hostile answer of thousands of lines).
        var hashes: [UInt64] = []
        var seen: [UInt64: Int] = [:]
        // Room for every line at once, not by doubling (four reallocations of each list for a
        // ten-network answer): the lines are counted first, which costs less.
        var lines = 1
        // Both tests, not `||`: without the branch the loop runs over many bytes at a time.
        for b in bytes { lines &+= (b == 0x0A ? 1 : 0) &+ (b == 0x0D ? 1 : 0) }
        networks.reserveCapacity(min(lines, 256))
        hashes.reserveCapacity(min(lines, 64))
        // Lines found in place: `split` made an array of them per answer.
        var next = bytes.startIndex
        while next < bytes.endIndex {
            guard let start = bytes[next...].firstIndex(where: { $0 != 0x0A && $0 != 0x0D }) else { break }
            let end = bytes[start...].firstIndex(where: { $0 == 0x0A || $0 == 0x0D }) ?? bytes.endIndex
            next = end
            let line = bytes[start..<end]
            if line.elementsEqual(Joiner.Marker.more.word) || line.elementsEqual(Joiner.Marker.end.word) {
                problems.append(.init("scan.misplaced-marker", quoting(line, after: "a ", before: " line inside the data")))
                continue
            }
            guard let comma = line.lastIndex(of: UInt8(ascii: ",")) else {
                problems.append(.init("scan.malformed-line", quoting(line, after: "no comma in \"", before: "\"")))
                continue
            }
            guard let rssi = rssi(line[(comma + 1)...]) else {
                let rssiText = String(decoding: line[(comma + 1)...], as: UTF8.self).trimmingSpaces
                problems.append(.init("scan.bad-rssi", "RSSI \"\(rssiText)\" is not a dBm value"))
                continue
            }
            let ssid = Array(line[..<comma])
            if ssid.isEmpty { problems.append(.init("scan.empty-ssid", "a network with an empty SSID")) }
            if ssid.count > maxSSIDLength {
                problems.append(.init("scan.ssid-too-long", "SSID of \(ssid.count) bytes; at most \(maxSSIDLength)"))
            }
            if !ProtocolText.isValidUTF8(ssid) {
                problems.append(.init("scan.ssid-not-utf8", "SSID \"\(ProtocolText.decode(ssid).text)\" is not valid UTF-8"))
            }
            if rssi > 0 || rssi < -120 {
                problems.append(.init("scan.rssi-out-of-range", "RSSI \(rssi) dBm is outside what a radio reports"))
            }
            var hash: UInt64 = 0xCBF2_9CE4_8422_2325
            for b in ssid { hash = (hash ^ UInt64(b)) &* 0x100_0000_01B3 }
            let first: Int?
            if hashes.count < 64 {
                first = hashes.firstIndex(of: hash)
            } else {
                if seen.isEmpty { for (i, h) in hashes.enumerated() where seen[h] == nil { seen[h] = i } }
                first = seen[hash]
            }
            if let first {
                // The same hash: the same SSID, unless two SSIDs collide.
                if networks[first].ssid == ssid || networks.contains(where: { $0.ssid == ssid }) {
                    problems.append(.init("scan.duplicate", "\"\(ProtocolText.decode(ssid).text)\" listed twice"))
                }
            } else if !seen.isEmpty {
                seen[hash] = networks.count
            }
            hashes.append(hash)
            networks.append(Network(ssid: ssid, rssi: rssi))
        }
        if networks.count > intendedMaximumNetworks {
            problems.append(.init("scan.too-many", "\(networks.count) networks; the firmware means to send at most \(intendedMaximumNetworks)"))
        }
        return (networks, problems)
    }

    /// `prefix`, the line's text and `suffix` in one string, made in one allocation: what
    /// `"\(prefix)\(String(decoding: line, as: UTF8.self))\(suffix)"` makes (invalid UTF-8 in the
    /// line repaired the same way; the two ends are ASCII, so no sequence spans them) with two.
    /// A fuzzed answer is mostly lines without a comma, each quoted in its problem.
    static func quoting(_ line: Slice<UnsafeBufferPointer<UInt8>>, after prefix: StaticString, before suffix: StaticString) -> String {
        let count = prefix.utf8CodeUnitCount + line.count + suffix.utf8CodeUnitCount
        return String(unsafeUninitializedCapacity: count) { out in
            var at = 0
            func copy(_ part: UnsafeBufferPointer<UInt8>) {
                guard let base = part.baseAddress, !part.isEmpty else { return }
                (out.baseAddress! + at).initialize(from: base, count: part.count)
                at += part.count
            }
            copy(UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
            copy(UnsafeBufferPointer(rebasing: line))
            copy(UnsafeBufferPointer(start: suffix.utf8Start, count: suffix.utf8CodeUnitCount))
            return at
        }
    }

    /// The RSSI after a line's comma: what `Int(_:)` reads in that text with the spaces around
    /// it trimmed (an optional sign, ASCII digits), when it is a dBm value (-128...127); else nil.
    static func rssi(_ field: some BidirectionalCollection<UInt8>) -> Int? {
        var digits = field[...]
        while digits.first == 0x20 { digits = digits.dropFirst() }
        while digits.last == 0x20 { digits = digits.dropLast() }
        let negative = digits.first == UInt8(ascii: "-")
        if negative || digits.first == UInt8(ascii: "+") { digits = digits.dropFirst() }
        guard !digits.isEmpty else { return nil }
        var value = 0
        for b in digits {
            guard (0x30...0x39).contains(b) else { return nil }
            // Held at 1000: any larger value (or one Int cannot hold) is out of range alike.
            value = min(value * 10 + Int(b - 0x30), 1000)
        }
        let v = negative ? -value : value
        return (-128...127).contains(v) ? v : nil
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
