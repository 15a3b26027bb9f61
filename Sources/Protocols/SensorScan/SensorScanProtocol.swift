import ATT
import HCI
import Profiles

/// Decodes scans per connection: a `SCAN` write opens a response, notifications join into it,
/// END closes it. A new SCAN or the end of the link before END reports it truncated.
public struct SensorScanProtocol: DeviceProtocol {
    public static let name = "sensor-scan"
    public static let characteristics: Set<BluetoothUUID> = [SensorScan.characteristic]

    private var joiner: SensorScan.Joiner?
    private var started: ProfileValue?

    public init() {}

    public mutating func decode(_ v: ProfileValue) -> [ProfileEvent] {
        var out: [ProfileEvent] = []
        switch v.operation {
        case .write:
            if joiner != nil { out += finish(at: v, reason: "a new request came first") }
            var problems: [ProtocolProblem] = []
            if v.bytes != SensorScan.request {
                problems.append(.init("scan.unknown-request", "write of \"\(ProtocolText.decode(v.bytes).text)\"; the sensor knows SCAN"))
            }
            out.append(ProfileEvent(v, protocolName: Self.name, kind: "scan.request", message: SensorScan.Request(bytes: v.bytes), problems: problems))
            joiner = SensorScan.Joiner()
            started = v
        case .notify, .indicate, .read:
            // An answer without a request seen (the capture began mid-scan) is joined anyway.
            var j = joiner ?? SensorScan.Joiner()
            if joiner == nil { started = v }
            let complete = j.add(v.bytes)
            joiner = j
            if complete { out += finish(at: v, reason: nil) }
        }
        return out
    }

    public mutating func connectionEnded(_ connection: ConnectionKey, frame: Int, time: Int64, reason: String) -> [ProfileEvent] {
        guard var end = started else { return [] }
        end.frame = frame
        end.time = time
        return finish(at: end, reason: reason)
    }

    private mutating func finish(at v: ProfileValue, reason: String?) -> [ProfileEvent] {
        guard let j = joiner else { return [] }
        var e = ProfileEvent(v, protocolName: Self.name, kind: "scan.result", message: nil, problems: [])
        let response = j.response(truncatedBecause: reason)
        e.message = response
        e.problems = response.problems
        e.firstFrame = started?.firstFrame ?? v.firstFrame
        joiner = nil
        started = nil
        return [e]
    }
}
