extension SensorScan {
    /// Joins a response's notifications. Markers are recognised in both styles of the firmware:
    /// as the last line of a chunk (`...\nMORE\n`) and as notifications of their own (`MORE`).
    /// The line break before a marker ends the data line before it. Data chunks are joined as
    /// bytes before anything is decoded, so a chunk may end inside a line or a UTF-8 sequence.
    public struct Joiner: Sendable {
        public private(set) var bytes: [UInt8] = []
        public private(set) var chunks = 0
        public private(set) var complete = false
        public private(set) var overflow = false

        public init() {}

        enum Marker { case more, end }

        /// Adds one notification; returns true when it completed the response.
        @discardableResult
        public mutating func add(_ chunk: [UInt8]) -> Bool {
            guard !complete else { return true }
            chunks += 1
            var body = chunk[...]
            var marker: Marker?
            var trimmed = body
            while let last = trimmed.last, last == 0x0A || last == 0x0D { trimmed = trimmed.dropLast() }
            for (word, m) in [(Array("MORE".utf8), Marker.more), (Array("END".utf8), Marker.end)] {
                guard trimmed.count >= word.count, trimmed.suffix(word.count).elementsEqual(word) else { continue }
                let before = trimmed.dropLast(word.count)
                // Only a whole line is a marker: at the chunk's start or after a line break.
                if before.isEmpty || before.last == 0x0A {
                    marker = m
                    body = before
                }
            }
            if bytes.count + body.count > SensorScan.maxResponseBytes {
                overflow = true
                complete = true
                return true
            }
            bytes += body
            if marker == .end { complete = true }
            return complete
        }

        /// The response as it stands: complete if END arrived, else truncated with what came.
        public func response(truncatedBecause reason: String? = nil) -> Response {
            var (networks, problems) = SensorScan.parse(bytes)
            if overflow {
                problems.append(.init("scan.too-long", "more than \(SensorScan.maxResponseBytes) bytes without END; abandoned"))
            } else if !complete {
                problems.append(.init("scan.truncated", "no END\(reason.map { ": \($0)" } ?? ""); \(networks.count) networks arrived"))
            }
            return Response(networks: networks, complete: complete && !overflow, problems: problems, chunks: chunks)
        }
    }

    /// Parses joined response text: lines of `SSID,RSSI`, split at the last comma (SSIDs may
    /// contain commas), CR LF accepted, empty lines ignored.
    public static func parse(_ bytes: [UInt8]) -> ([Network], [ProtocolProblem]) {
        var networks: [Network] = []
        var problems: [ProtocolProblem] = []
        var seen = Set<[UInt8]>()
        for var line in bytes.split(separator: 0x0A, omittingEmptySubsequences: true) {
            if line.last == 0x0D { line = line.dropLast() }
            if line.isEmpty { continue }
            let text = Array(line)
            if text == Array("MORE".utf8) || text == Array("END".utf8) {
                problems.append(.init("scan.misplaced-marker", "a \(String(decoding: text, as: UTF8.self)) line inside the data"))
                continue
            }
            guard let comma = text.lastIndex(of: UInt8(ascii: ",")) else {
                problems.append(.init("scan.malformed-line", "no comma in \"\(ProtocolText.decode(text).text)\""))
                continue
            }
            let ssid = Array(text[..<comma])
            let rssiText = String(decoding: text[(comma + 1)...], as: UTF8.self).trimmingSpaces
            guard let rssi = Int(rssiText), (-128...127).contains(rssi) else {
                problems.append(.init("scan.bad-rssi", "RSSI \"\(rssiText)\" is not a dBm value"))
                continue
            }
            if ssid.isEmpty { problems.append(.init("scan.empty-ssid", "a network with an empty SSID")) }
            if ssid.count > maxSSIDLength {
                problems.append(.init("scan.ssid-too-long", "SSID of \(ssid.count) bytes; at most \(maxSSIDLength)"))
            }
            if !ProtocolText.decode(ssid).valid {
                problems.append(.init("scan.ssid-not-utf8", "SSID \"\(ProtocolText.decode(ssid).text)\" is not valid UTF-8"))
            }
            if rssi > 0 || rssi < -120 {
                problems.append(.init("scan.rssi-out-of-range", "RSSI \(rssi) dBm is outside what a radio reports"))
            }
            if !seen.insert(ssid).inserted {
                problems.append(.init("scan.duplicate", "\"\(ProtocolText.decode(ssid).text)\" listed twice"))
            }
            networks.append(Network(ssid: ssid, rssi: rssi))
        }
        if networks.count > intendedMaximumNetworks {
            problems.append(.init("scan.too-many", "\(networks.count) networks; the firmware means to send at most \(intendedMaximumNetworks)"))
        }
        return (networks, problems)
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
