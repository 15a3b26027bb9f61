import ATT
import Emulator
import Profiles
import Replay

/// The sensor's scan in replay: chunks compared without their RSSI, a run of chunks folded into
/// the set of networks it lists (however it was cut, whatever its markers), the scan's pace and
/// the networks it found read from a recording.
extension SensorScanProtocol: ReplayingProtocol {
    public static func describe(_ bytes: [UInt8], characteristic: BluetoothUUID, written: Bool) -> String? {
        characteristic == SensorScan.characteristic ? "\"\(ProtocolText.display(bytes))\"" : nil
    }

    public static func sameMeaning(recorded: [UInt8], observed: [UInt8], characteristic: BluetoothUUID, progress: Bool) -> Bool {
        characteristic == SensorScan.characteristic && maskRSSI(recorded) == maskRSSI(observed)
    }

    /// A scan chunk with the RSSI of each `SSID,RSSI` line replaced, so that signal strength
    /// (which changes with every scan) does not count as a difference.
    static func maskRSSI(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            out.append(bytes[i])
            if bytes[i] == UInt8(ascii: ",") {
                var j = i + 1
                if j < bytes.count, bytes[j] == UInt8(ascii: "-") { j += 1 }
                let digits = j
                while j < bytes.count, (0x30...0x39).contains(bytes[j]) { j += 1 }
                // A number that runs to the line's (or the chunk's) end is the RSSI.
                if j > digits, j == bytes.count || bytes[j] == 0x0A || bytes[j] == 0x0D {
                    out.append(UInt8(ascii: "#"))
                    i = j
                    continue
                }
            }
            i += 1
        }
        return out
    }

    public static func progressReader(for characteristic: BluetoothUUID) -> (any ProgressReading)? {
        characteristic == SensorScan.characteristic ? ScanProgress() : nil
    }

    /// Chunks joined as the timeline joins them: the networks so far, ended by END; where the
    /// markers stand is the device's variant, tolerated.
    struct ScanProgress: ProgressReading {
        private var joiner = SensorScan.Joiner()
        var style: ProgressStyle { .scan }
        var variant: (label: String, value: String)? { ("marker style", joiner.markerStyle) }

        mutating func read(_ value: [UInt8]) -> ProgressStep {
            joiner.add(value)
            return ProgressStep(networks: Set(joiner.response().networks.map(\.ssidText)), terminal: joiner.complete)
        }
    }

    /// The time from SCAN to the first chunk, the gap between chunks, the markers.
    public static func readCadence(_ steps: [ReplayStep], into c: inout RecordedCadence) {
        let id = SensorScan.characteristic.canonicalString
        guard let scan = steps.firstIndex(where: { $0.action == .write && $0.characteristic == id }) else { return }
        let chunks = steps[(scan + 1)...].prefix { $0.action == .notification && $0.characteristic == id }
        guard let first = chunks.first else { return }
        let gaps = zip(chunks, chunks.dropFirst()).map { $1.at - $0.at }
        c.notificationGap = RecordedDevice.median(gaps) ?? c.notificationGap
        c.scanDuration = max(0, first.at - steps[scan].at - (c.notificationGap ?? 0))
        var joiner = SensorScan.Joiner()
        for chunk in chunks { if let v = chunk.expect?.value.flatMap(Replay.Hex.bytes) { joiner.add(v) } }
        c.separateMarkers = joiner.markerStyle == SensorScan.MarkerStyle.separateNotification.rawValue
    }

    public static func worldReader() -> (any RecordedWorldReading)? { ScanWorld() }

    /// The networks of the first complete scan, added after every other protocol's (a scan
    /// lists them once it has ended).
    struct ScanWorld: RecordedWorldReading {
        private var joiner = SensorScan.Joiner()
        private var chunks = 0

        mutating func read(_ step: RecordedWorldStep, into world: inout RecordedWorld) -> Bool {
            guard step.characteristic == SensorScan.characteristic, step.step.action == .notification,
                  let answer = step.answer, !joiner.complete else { return false }
            joiner.add(answer)
            chunks += 1
            return false
        }

        mutating func finish(into world: inout RecordedWorld) -> Bool {
            guard chunks > 0 else { return false }
            for n in joiner.response().networks {
                world.add(ssid: n.ssid, bssid: nil, channel: nil, band: nil, auth: nil, rssi: Int32(clamping: n.rssi))
            }
            return true
        }
    }
}
