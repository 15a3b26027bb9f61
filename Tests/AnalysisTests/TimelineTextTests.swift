import Capture
import Foundation
import GATT
import Profiles
import Protocols
import Report
import TestSupport
import XCTest
@testable import Analysis

/// The text timeline writes its event lines straight into the output, padding by hand: with
/// colours (a terminal) they must say what they say without, character for character.
final class TimelineTextTests: XCTestCase {
    static func timeline(_ path: String) throws -> Timeline {
        let reader = try openCapture(path)
        let decoder = GATTDecoder()
        let profiles = ProfileDecoder(protocols: GATTLabProtocols.all)
        let builder = TimelineBuilder(source: path, format: reader.format.description, protocols: GATTLabProtocols.all)
        while let record = try reader.next() {
            decoder.consume(record)
            profiles.consume(decoder, record: record)
            builder.consume(record, gatt: decoder.events, profile: profiles.events)
        }
        return builder.finish()
    }

    static func withoutColours(_ s: String) -> String {
        s.replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression)
    }

    func testEventLinesSayTheSameWithAndWithoutColours() throws {
        var timelines = try Files.projectCaptures().map(Self.timeline)
        // Lines the captures do not have: no device, no frames, three frames, a kind that is not
        // ASCII (padded by characters), a time before the capture's start, and a problem.
        var t = Timeline(source: "synthetic", format: "btsnoop", records: 3)
        t.firstTime = 1_000_000
        t.events = [
            TimelineEvent(time: 250, device: nil, connection: nil, lane: .link, kind: "link.x", summary: "before the start", fields: [], frames: []),
            TimelineEvent(time: 1_500_000, device: 12, connection: 3, lane: .provisioning, kind: "prov.réseau", summary: "SSID «café»",
                          fields: [], frames: [1, 2, 3]),
            TimelineEvent(time: 2_000_001, device: 0, connection: 0, lane: .ota, kind: "ota.a-kind-longer-than-twenty-two", summary: "",
                          fields: [], frames: [7, 9], problems: [ProtocolProblem("x.bad", "bad")]),
        ]
        timelines.append(t)
        var lines = 0
        for t in timelines where !t.events.isEmpty {
            let plain = TimelineText.render(t)
            let coloured = TimelineText.render(t, colors: .init(enabled: true))
            XCTAssertNotEqual(plain, coloured, t.source)
            XCTAssertEqual(plain, Self.withoutColours(coloured), t.source)
            lines += t.events.count
        }
        XCTAssertGreaterThan(lines, 1000)
        let synthetic = TimelineText.render(t).split(separator: "\n").suffix(3).map(String.init)
        XCTAssertEqual(synthetic, [
            "-0.999750    -   link         link.x                 before the start  #",
            "0.500000     d12 provisioning prov.réseau            SSID «café»  #1,2,3",
            "1.000001     d0  ota          ota.a-kind-longer-than-twenty-two   #7-9",
        ])
    }
}
