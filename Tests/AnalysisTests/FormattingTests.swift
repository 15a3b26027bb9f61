@testable import Analysis
import Capture
import Profiles
import XCTest

/// The timeline's hand-made number formatting against `String(format:)`, which it replaced in
/// the hot path: the same text for every value, ties and extremes included.
final class FormattingTests: XCTestCase {
    func testSecondsMatchesPrintfRounding() {
        func reference(_ micros: Int64) -> String { TimelineBuilder.decimal(Double(micros) / 1e6, 1) + " s" }
        var edge: [Int64] = [0, 1, -1, 49_999, 50_000, 50_001, 99_999, 100_000, 149_999, 150_000, 150_001, 250_000, 950_000,
                             999_999, 1_000_000, -50_000, -49_999, -150_000, 1_234_567_890, 999_999_999_950_000,
                             1_000_000_000_000_000, -(1 << 61), 1 << 61]
        var rng = SplitMix64(seed: 20)
        for _ in 0..<20_000 {
            let magnitude = Int64(rng.next() % UInt64(1) << (rng.next() % 50))
            edge.append(rng.next() % 2 == 0 ? magnitude : -magnitude)
            edge.append((magnitude / 100_000) * 100_000 + 50_000)  // exact halves
        }
        for m in edge {
            XCTAssertEqual(TimelineBuilder.seconds(m), reference(m), "\(m) µs")
        }
    }

    /// Every interval HCI can give (16 bits of 1.25 ms units), and a few beyond.
    func testIntervalMillisecondsMatchesPrintf() {
        for units in Array(0...0xFFFF) + [-1, -3, -80, 1 << 20, 1 << 40] {
            XCTAssertEqual(TimelineBuilder.intervalMilliseconds(units), TimelineBuilder.decimal(Double(units) * 1.25, 2), "\(units) units")
        }
    }
}

/// A timeline event is a value though its text and message share a box: a changed copy leaves
/// the original as it was, and `message(as:)` answers as a cast would.
final class TimelineEventValueTests: XCTestCase {
    struct Ping: ProfileMessage, Equatable { var n: Int }
    struct Pong: ProfileMessage, Equatable { var n: Int }

    func testCopiesAreIndependentAndTypedAccessMatchesACast() {
        let original = TimelineEvent(time: 1, device: 0, connection: 0, lane: .link, kind: "a.kind", summary: "first",
                                     fields: [Field("x", .int(1))], frames: [7], message: Ping(n: 1))
        var copy = original
        copy.summary = "second"
        copy.frames.append(8)
        copy.message = Pong(n: 2)
        copy.problems = [ProtocolProblem("p.id", "a problem")]
        XCTAssertEqual(original.summary, "first")
        XCTAssertEqual(original.frames, [7])
        XCTAssertEqual(original.message(as: Ping.self), Ping(n: 1))
        XCTAssertNil(original.message(as: Pong.self))
        XCTAssertTrue(original.problems.isEmpty)
        XCTAssertEqual(copy.summary, "second")
        XCTAssertEqual(copy.frames, [7, 8])
        XCTAssertEqual(copy.message(as: Pong.self), Pong(n: 2))
        XCTAssertNil(copy.message(as: Ping.self))
        copy.message = nil
        XCTAssertNil(copy.message(as: Pong.self))
        XCTAssertEqual(original.fields.count, 1)
    }
}

/// A link event keeps its summary and fields encoded in one byte array (`EventText`) and up to
/// two frames inline: what is read back is what was given, to the bit, for every kind of field.
final class TimelineEventStorageTests: XCTestCase {
    static func describe(_ fields: [Field]) -> String {
        fields.map { f in
            switch f.value {
            case .string(let s): "\(f.name)=s:\(Array(s.utf8))"
            case .int(let i): "\(f.name)=i:\(i)"
            case .double(let d): "\(f.name)=d:\(d.bitPattern)"
            case .bool(let b): "\(f.name)=b:\(b)"
            case .secret(let s): "\(f.name)=secret:\(s.label):\(s.unsafeBytes)"
            case .partlySecret(let r, let s): "\(f.name)=partly:\(r):\(s.unsafeBytes)"
            case .strings(let list): "\(f.name)=strings:\(list.map { Array($0.utf8) })"
            case .objects(let objects): "\(f.name)=objects:[\(objects.map(describe).joined(separator: "|"))]"
            }
        }.joined(separator: ";")
    }

    func testSummaryAndFieldsComeBackToTheBit() {
        var r = SplitMix64(seed: 33)
        func pick(_ k: UInt64) -> Int { Int(r.next() % k) }
        func text() -> String { ["", "a", "Café ✓", "nul \u{0} inside", String(repeating: "x", count: pick(400)), "👩‍👩‍👧 «réseau»", "\u{202e}"][pick(7)] }
        func value(_ depth: Int) -> FieldValue {
            switch pick(depth > 1 ? 5 : 6) {
            case 0: .string(text())
            case 1: .int([0, 1, -1, Int.max, Int.min, 4_000_000][pick(6)])
            case 2: .double([0.0, -0.0, 1.25, .nan, -.infinity, .greatestFiniteMagnitude, .leastNonzeroMagnitude, 37.5][pick(8)])
            case 3: .bool(pick(2) == 0)
            case 4: .strings((0..<pick(4)).map { _ in text() })
            default: .objects((0..<pick(3)).map { _ in (0..<pick(3)).map { _ in Field(text(), value(depth + 1)) } })
            }
        }
        var encoded = 0
        for i in 0..<3_000 {
            var fields = (0..<pick(8)).map { _ in Field(text(), value(0)) }
            if i % 10 == 0 {
                fields.insert(Field("password", pick(2) == 0 ? .secret(Secret(Array("hunter2".utf8), label: "Wi-Fi password"))
                                                             : .partlySecret(redacted: "u:<redacted>", full: Secret([1, 2], label: "URL"))),
                              at: pick(UInt64(fields.count + 1)))
            } else {
                encoded += EventText.encode(summary: "s", fields: fields) == nil ? 0 : 1
            }
            let summary = text()
            let frames = [[], [7], [1, 99], [1, 2, 3], [Int.max, 0], [Int.min], [5, Int.min]][pick(7)]
            let e = TimelineEvent(time: 1, device: 0, connection: 0, lane: .link, kind: "link.x", summary: summary, fields: fields, frames: frames)
            XCTAssertEqual(Array(e.summary.utf8), Array(summary.utf8), "event \(i)")
            XCTAssertEqual(Self.describe(e.fields), Self.describe(fields), "event \(i)")
            XCTAssertEqual(Array(e.described.summary.utf8), Array(summary.utf8), "event \(i)")
            XCTAssertEqual(Self.describe(e.described.fields), Self.describe(fields), "event \(i)")
            XCTAssertEqual(e.frames, frames, "event \(i)")
            XCTAssertEqual(e.frameCount, frames.count, "event \(i)")
            var each: [Int] = []
            e.forEachFrame { each.append($0) }
            XCTAssertEqual(each, frames, "event \(i)")
        }
        XCTAssertEqual(encoded, 2_700, "every event without a secret is encoded")
    }

    /// Changing the summary keeps the fields and the other way round, on a copy only.
    func testSettersChangeOneThingOfOneCopy() {
        let original = TimelineEvent(time: 1, device: 0, connection: 0, lane: .link, kind: "link.x", summary: "first",
                                     fields: [Field("a", .int(1)), Field("b", .string("two"))], frames: [3, 4])
        var copy = original
        copy.summary = "second"
        XCTAssertEqual(Self.describe(copy.fields), Self.describe(original.fields))
        copy.fields = [Field("c", .bool(true))]
        XCTAssertEqual(copy.summary, "second")
        copy.frames = [5, 6, 7]
        XCTAssertEqual(original.summary, "first")
        XCTAssertEqual(Self.describe(original.fields), "a=i:1;b=s:[116, 119, 111]")
        XCTAssertEqual(original.frames, [3, 4])
        XCTAssertEqual(copy.frames, [5, 6, 7])
        XCTAssertEqual(Self.describe(copy.fields), "c=b:true")
    }
}
