import ATT
import Capture
import Profiles

/// The sensor's Wi-Fi scan (PROTOCOLS.md section 4): the central writes `SCAN`, the sensor
/// answers with notifications whose joined text is one `SSID,RSSI` line per network, in chunks
/// marked `MORE` and closed by `END`.
public enum SensorScan {
    /// Keyed on the characteristic: the service UUID differs between firmware versions.
    public static let characteristic = BluetoothUUID(high: 0x1234_5678_9ABC_DEF0, low: 0x1234_0000_0000_0008)
    public static let request: [UInt8] = Array("SCAN".utf8)
    /// The firmware means to send at most this many networks; more happen in the field.
    public static let intendedMaximumNetworks = 10
    public static let maxSSIDLength = 32
    /// A response larger than this is abandoned: no real scan comes near it.
    public static let maxResponseBytes = 16_384

    public struct Network: Sendable, Hashable {
        public var ssid: [UInt8]
        public var rssi: Int
        public var ssidText: String { ProtocolText.decode(ssid).text }

        public init(ssid: [UInt8], rssi: Int) {
            self.ssid = ssid
            self.rssi = rssi
        }

        public init(_ ssid: String, rssi: Int) { self.init(ssid: Array(ssid.utf8), rssi: rssi) }
    }

    /// A write to the scan characteristic, as written: the sensor knows only `SCAN` (`request`);
    /// anything else is kept so the decoders can show it.
    public struct Request: ProfileMessage, Hashable {
        public var bytes: [UInt8]

        public init(bytes: [UInt8]) { self.bytes = bytes }
    }

    /// A response: its networks, whether END arrived, and what was wrong with it.
    public struct Response: ProfileMessage, Hashable {
        public var networks: [Network]
        public var complete: Bool
        public var problems: [ProtocolProblem]
        /// Notifications it was joined from (markers included).
        public var chunks: Int
        /// Where the firmware put its markers (`Joiner.MarkerStyle`): one style's name, `mixed`
        /// or `none`.
        public var markerStyle: String = "none"
        /// The styles seen, in order (several when `markerStyle` is `mixed`).
        public var markerStyles: [String] = []

        /// Every field as given (a timeline reads its responses back this way).
        public init(networks: [Network], complete: Bool, problems: [ProtocolProblem], chunks: Int,
                    markerStyle: String = "none", markerStyles: [String] = []) {
            self.networks = networks
            self.complete = complete
            self.problems = problems
            self.chunks = chunks
            self.markerStyle = markerStyle
            self.markerStyles = markerStyles
        }
    }

    /// Encodes networks as the firmware does: lines `SSID,RSSI\n`, split into chunks of at most
    /// `chunkSize` bytes (MTU - 3), each chunk of whole lines ending with a `MORE` line and the
    /// last with `END` (a line too long for a chunk goes in raw pieces); with `separateMarkers`
    /// the text is cut at any byte and the markers travel as notifications of their own.
    public static func encode(_ networks: [Network], chunkSize: Int, separateMarkers: Bool = false) -> [[UInt8]] {
        var text: [UInt8] = []
        for n in networks { text += n.ssid + Array(",\(n.rssi)\n".utf8) }
        let more = Array("MORE\n".utf8), end = Array("END\n".utf8)
        if separateMarkers {
            let size = max(1, chunkSize)
            var chunks: [[UInt8]] = stride(from: 0, to: text.count, by: size).map { Array(text[$0..<min($0 + size, text.count)]) }
            var out: [[UInt8]] = []
            for (i, c) in chunks.enumerated() {
                out.append(c)
                if i < chunks.count - 1 { out.append(more) }
            }
            chunks = out
            chunks.append(end)
            return chunks
        }
        // Markers inside chunks: a chunk holds whole lines and its marker line.
        let room = max(1, chunkSize - more.count)
        var chunks: [[UInt8]] = []
        var current: [UInt8] = []
        var lines: [[UInt8]] = []
        var start = 0
        for (i, b) in text.enumerated() where b == 0x0A {
            lines.append(Array(text[start...i]))
            start = i + 1
        }
        for line in lines {
            if !current.isEmpty, current.count + line.count > room {
                chunks.append(current + more)
                current = []
            }
            var line = line[...]
            // A line longer than a chunk travels in raw pieces without markers (the joiner
            // joins bytes); only its last piece shares a chunk with what follows.
            while line.count > room {
                chunks.append(Array(line.prefix(chunkSize)))
                line = line.dropFirst(chunkSize)
            }
            current += line
        }
        if current.count + end.count > chunkSize, !current.isEmpty {
            chunks.append(current + more)
            current = []
        }
        chunks.append(current + end)
        return chunks
    }
}
