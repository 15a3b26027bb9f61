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
