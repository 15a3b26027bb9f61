import XCTest
@testable import Profiles

/// The sensor's scan responses: parsing, both marker styles, and the joiner on every split.
final class SensorScanTests: XCTestCase {
    let networks = [SensorScan.Network("HomeNet", rssi: -45), SensorScan.Network("Café, 2nd floor", rssi: -67),
                    SensorScan.Network("Neighbour 5G", rssi: -81)]

    func join(_ chunks: [[UInt8]]) -> SensorScan.Response {
        var j = SensorScan.Joiner()
        for c in chunks where j.add(c) { break }
        return j.response(truncatedBecause: "test")
    }

    func testParseSplitsAtTheLastComma() {
        let (n, p) = SensorScan.parse(Array("HomeNet,-45\nCafé, 2nd floor,-67\r\n\nNeighbour 5G,-81\n".utf8))
        XCTAssertEqual(n, networks)
        XCTAssertEqual(p, [])
    }

    func testParseProblems() {
        func ids(_ text: String) -> [String] { SensorScan.parse(Array(text.utf8)).1.map(\.id) }
        XCTAssertEqual(ids("NoComma\n"), ["scan.malformed-line"])
        XCTAssertEqual(ids("Net,strong\n"), ["scan.bad-rssi"])
        XCTAssertEqual(ids("Net,-300\n"), ["scan.bad-rssi"])
        XCTAssertEqual(ids("Net,5\n"), ["scan.rssi-out-of-range"])
        XCTAssertEqual(ids(",-40\n"), ["scan.empty-ssid"])
        XCTAssertEqual(ids(String(repeating: "x", count: 33) + ",-40\n"), ["scan.ssid-too-long"])
        XCTAssertEqual(ids("A,-40\nA,-41\n"), ["scan.duplicate"])
        XCTAssertEqual(ids("A,-40\nMORE\nB,-41\n"), ["scan.misplaced-marker"])
        XCTAssertEqual(ids((0..<11).map { "n\($0),-\(40 + $0)\n" }.joined()), ["scan.too-many"])
        XCTAssertEqual(SensorScan.parse([0xFF, 0x2C, 0x2D, 0x34, 0x30]).1.map(\.id), ["scan.ssid-not-utf8"])
    }

    func testBothMarkerStylesAtEveryMTU() {
        for mtu in [23, 24, 30, 64, 185, 247, 517] {
            for separate in [false, true] {
                let chunks = SensorScan.encode(networks, chunkSize: mtu - 3, separateMarkers: separate)
                XCTAssertTrue(chunks.allSatisfy { $0.count <= mtu - 3 }, "chunks fit MTU \(mtu)")
                let r = join(chunks)
                XCTAssertTrue(r.complete, "MTU \(mtu) separate \(separate)")
                XCTAssertEqual(r.networks, networks, "MTU \(mtu) separate \(separate)")
                XCTAssertEqual(r.problems, [])
                XCTAssertEqual(r.chunks, chunks.count)
            }
        }
    }

    /// The text split at every byte position (inside lines and UTF-8 sequences too) joins to the
    /// same networks, with the marker in the last chunk or as a notification of its own.
    func testJoinerOnEverySplitPosition() {
        let text = Array("HomeNet,-45\nCafé, 2nd floor,-67\nNeighbour 5G,-81\n".utf8)
        for split in 1..<text.count {
            let a = Array(text[..<split]), b = Array(text[split...])
            let styles: [[[UInt8]]] = [
                [a, b + Array("END\n".utf8)],
                [a, b, Array("END".utf8)],
                [a, Array("MORE".utf8), b, Array("END\n".utf8)],
                [a, Array("MORE\r\n".utf8), b + Array("END\r\n".utf8)],
            ]
            for (i, chunks) in styles.enumerated() {
                let r = join(chunks)
                XCTAssertTrue(r.complete, "split \(split) style \(i)")
                XCTAssertEqual(r.networks, networks, "split \(split) style \(i)")
                XCTAssertEqual(r.problems, [], "split \(split) style \(i)")
            }
        }
    }

    func testTruncatedResponsesKeepWhatArrived() {
        let chunks = SensorScan.encode(networks, chunkSize: 20)
        let r = join(Array(chunks.dropLast()))
        XCTAssertFalse(r.complete)
        XCTAssertEqual(r.problems.map(\.id), ["scan.truncated"])
        XCTAssertTrue(r.problems[0].message.contains("test"))
        XCTAssertEqual(Array(r.networks.prefix(1)), [networks[0]])
        // An empty answer: END alone.
        let empty = join([Array("END\n".utf8)])
        XCTAssertTrue(empty.complete)
        XCTAssertEqual(empty.networks, [])
    }

    func testEndlessResponsesAreBounded() {
        var j = SensorScan.Joiner()
        let chunk = [UInt8](repeating: 0x41, count: 244)
        var completed = false
        for _ in 0..<1000 where !completed { completed = j.add(chunk) }
        XCTAssertTrue(completed)
        XCTAssertLessThanOrEqual(j.bytes.count, SensorScan.maxResponseBytes)
        XCTAssertEqual(j.response().problems.map(\.id).last, "scan.too-long")
    }
}
