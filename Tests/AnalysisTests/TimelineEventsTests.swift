import Capture
import Foundation
import Profiles
import Protocols
import Synchronization
import TestSupport
import XCTest
@testable import Analysis

/// A timeline's events kept encoded (`TimelineEvents`): every event read back is the event
/// appended, whether its bytes stayed in memory or went to the file, whatever it holds.
final class TimelineEventsTests: XCTestCase {
    /// A message of a type that cannot be spilled: it stays a value.
    struct Unspillable: ProfileMessage, Equatable {
        var text: String
    }

    /// Everything an event tells, as text, doubles and strings compared by their bits.
    static func describe(_ e: TimelineEvent) -> String {
        var each: [Int] = []
        e.forEachFrame { each.append($0) }
        let message = e.message.map { "\(type(of: $0)) \(String(reflecting: $0))" } ?? "none"
        return """
            \(e.time) \(String(describing: e.device)) \(String(describing: e.connection)) \(e.lane) \(Array(e.kind.utf8))
            summary \(Array(e.summary.utf8)) fields \(TimelineEventStorageTests.describe(e.fields))
            frames \(e.frames) \(e.frameCount) \(each) message \(message)
            problems \(e.problems.map { "\(Array($0.id.utf8)) \(Array($0.message.utf8))" })
            """
    }

    static func randomEvents(_ n: Int, seed: UInt64) -> [TimelineEvent] {
        var r = SplitMix(seed: seed)
        func pick(_ k: Int) -> Int { Int(r.next() % UInt64(k)) }
        func text() -> String { ["", "a", "Café ✓", "nul \u{0} inside", String(repeating: "x", count: pick(300)), "👩‍👩‍👧"][pick(6)] }
        let kinds = ["link.connected", "link.disconnected", "att.error", "ota.status", "scan.result", "nrf7.result", text()]
        return (0..<n).map { i in
            let time = [0, 1, -1, Int64.max, Int64.min, Int64(i) * 100][pick(6)]
            let device = [nil, 0, 1, 7, Int(Int32.max)][pick(5)]
            let connection = [nil, 0, 3, Int(Int32.max)][pick(4)]
            let lane: TimelineEvent.Lane = [.link, .ota, .scan, .provisioning][pick(4)]
            let frames = [[], [7], [1, 99], [1, 2, 3, 4], [Int.max, 0], [Int.min], [5, Int.min], [Int.min, Int.min, 1]][pick(8)]
            let problems = (0..<pick(3)).map { _ in ProtocolProblem(text(), text()) }
            let kind = kinds[pick(kinds.count)]
            switch pick(4) {
            case 0:
                // A link event: its summary and fields; one in three with a secret, which stays a value.
                var fields = (0..<pick(5)).map { _ in Field(text(), [.int(pick(1000)), .string(text()), .bool(true), .double(-0.0)][pick(4)]) }
                if pick(3) == 0 { fields.append(Field("key", .secret(Secret([1, 2, 3], label: "LTK")))) }
                return TimelineEvent(time: time, device: device, connection: connection, lane: lane, kind: kind, summary: text(),
                                     fields: fields, frames: frames)
            case 1:
                let message: any ProfileMessage = [
                    SpeakerOTA.Status(rawState: UInt8(pick(256)), rawError: UInt8(pick(256)), progress: 50, downloadedKB: .max,
                                      totalKB: 0, rssi: -128),
                    SpeakerOTA.Credentials(ssid: Array(text().utf8), password: Secret(Array(text().utf8), label: "Wi-Fi password")),
                    SpeakerOTA.FirmwareURL(text()),
                    SensorScan.Request(bytes: Array(text().utf8)),
                ][pick(4)]
                return TimelineEvent(time: time, device: device, connection: connection, lane: lane, kind: kind, frames: frames,
                                     message: message, problems: problems)
            case 2:
                return TimelineEvent(time: time, device: device, connection: connection, lane: lane, kind: kind, frames: frames,
                                     message: Unspillable(text: text()), problems: problems)
            default:
                return TimelineEvent(time: time, device: device, connection: connection, lane: lane, kind: kind, frames: frames,
                                     message: nil, problems: problems)
            }
        }
    }

    func testEventsComeBackAsTheyWentFromMemoryAndFromTheFile() {
        let events = Self.randomEvents(3_000, seed: 41)
        for limit in [0, 64 << 10, Int.max] {
            let list = TimelineEvents(events, memoryLimit: limit)
            XCTAssertEqual(list.count, events.count)
            for (i, e) in events.enumerated() {
                let back = list[i]
                XCTAssertEqual(Self.describe(back), Self.describe(e), "event \(i), memory limit \(limit)")
                // What the list answers without reading the event.
                XCTAssertEqual(list.time(at: i), e.time)
                XCTAssertEqual(list.device(at: i), e.device)
                XCTAssertEqual(list.kind(at: i), e.kind)
                XCTAssertEqual(list.hasProblems(at: i), !e.problems.isEmpty)
                XCTAssertEqual(list.messageType(at: i), e.message.map { ObjectIdentifier(type(of: $0)) })
                XCTAssertEqual(back.message(as: SpeakerOTA.Status.self), e.message(as: SpeakerOTA.Status.self))
                XCTAssertEqual(back.message(as: Unspillable.self), e.message(as: Unspillable.self))
                if let secret = e.message(as: SpeakerOTA.Credentials.self)?.password {
                    XCTAssertEqual(back.message(as: SpeakerOTA.Credentials.self)?.password.label, secret.label)
                }
            }
        }
    }

    func testKindsBeyondTheTableAreKeptInTheEvent() {
        let n = Int(UInt16.max) + 10
        var list = TimelineEvents(memoryLimit: 0)
        for i in 0..<n { list.append(TimelineEvent(time: Int64(i), device: 0, connection: nil, lane: .link, kind: "k\(i)", frames: [i], message: nil, problems: [])) }
        for i in [0, 1, 65_534, 65_535, 65_536, n - 1] {
            XCTAssertEqual(list[i].kind, "k\(i)")
            XCTAssertEqual(list.kind(at: i), "k\(i)")
            XCTAssertEqual(list.positions(ofKind: "k\(i)"), [i])
            XCTAssertEqual(list[i].frames, [i])
        }
    }

    func testSortingPickingAndFindingReadNoEventAndKeepTheOrder() {
        let events = Self.randomEvents(2_000, seed: 7)
        var list = TimelineEvents(events, memoryLimit: 0)
        list.sortByTime()
        // A stable sort of the values, for reference.
        let sorted = events.enumerated().sorted { $0.element.time != $1.element.time ? $0.element.time < $1.element.time : $0.offset < $1.offset }
        XCTAssertEqual(list.map(Self.describe), sorted.map { Self.describe($0.element) })

        let odd = list.picking(devices: { $0 % 2 == 1 })
        XCTAssertEqual(odd.map(Self.describe), list.filter { $0.device.map { $0 % 2 == 1 } ?? true }.map(Self.describe))
        XCTAssertEqual(list.positions(ofKind: "att.error"), list.indices.filter { list[$0].kind == "att.error" })
        // The picked list is a list of its own: appending to it leaves the first alone.
        var more = odd
        more.append(events[0])
        XCTAssertEqual(more.count, odd.count + 1)
        XCTAssertEqual(Self.describe(more[more.count - 1]), Self.describe(events[0]))
        XCTAssertEqual(list.count, events.count)
    }

    /// An event read from the list reads its parts when first asked; a change to it is its own.
    func testAnEventReadBackChangesAloneAndReadsOnceFromManyThreads() {
        let events = Self.randomEvents(200, seed: 3)
        let list = TimelineEvents(events, memoryLimit: 0)
        var e = list[5]
        e.summary = "changed"
        e.frames = [1, 2, 3]
        XCTAssertEqual(list[5].summary, events[5].summary)
        XCTAssertEqual(list[5].frames, events[5].frames)
        XCTAssertEqual(e.summary, "changed")

        // One event value shared by threads that all ask for it first at once.
        for i in 0..<events.count {
            let shared = list[i]
            let expected = Self.describe(events[i])
            let seen = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                let d = Self.describe(shared)
                seen.withLock { $0.append(d) }
            }
            XCTAssertEqual(seen.withLock { $0 }, Array(repeating: expected, count: 8), "event \(i)")
        }
    }
}
