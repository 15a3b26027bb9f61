import XCTest
import Profiles
@testable import Protocols
@testable import SensorScanCodec
import TestSupport

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
        XCTAssertEqual(SensorScan.parse(Array("A,-40\rB,-41\r\n".utf8)).0.map(\.ssidText), ["A", "B"])
        XCTAssertEqual(ids((0..<11).map { "n\($0),-\(40 + $0)\n" }.joined()), ["scan.too-many"])
        XCTAssertEqual(SensorScan.parse([0xFF, 0x2C, 0x2D, 0x34, 0x30]).1.map(\.id), ["scan.ssid-not-utf8"])
        // Duplicates on both sides of the 64 networks where the search turns to a dictionary:
        // n3 again at 70 (found in the dictionary built then), n71 again at 90.
        let many = (0..<100).map { i in i == 70 ? "n3,-50\n" : i == 90 ? "n71,-50\n" : "n\(i),-50\n" }.joined()
        let (networks, problems) = SensorScan.parse(Array(many.utf8))
        XCTAssertEqual(networks.count, 100)
        XCTAssertEqual(problems.filter { $0.id == "scan.duplicate" }.map(\.message), ["\"n3\" listed twice", "\"n71\" listed twice"])
        XCTAssertEqual(ids("A,-40\nB,-41\n\r\nA,-42"), ["scan.duplicate"])
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

    // MARK: Every marker placement firmware sends

    struct Variant {
        var name: String
        var notifications: [String]
        var networks: [(String, Int)]
        var style: String
        var complete = true
    }

    static let three = [("HomeNet", -45), ("Café, 2nd floor", -67), ("Neighbour 5G", -81)]

    /// Each variant: its notifications, the networks they mean, and the style name reported.
    static let variants: [Variant] = [
        // The documented style (PROTOCOLS.md section 4): MORE / END as the chunk's last line.
        Variant(name: "documented", notifications: ["HomeNet,-45\nCafé, 2nd floor,-67\nMORE\n", "Neighbour 5G,-81\nEND\n"],
                networks: three, style: "suffix-newline"),
        Variant(name: "documented, last chunk only END", notifications: ["HomeNet,-45\nMORE\n", "Café, 2nd floor,-67\nNeighbour 5G,-81\nMORE\n", "END\n"],
                networks: three, style: "suffix-newline"),
        Variant(name: "newline, no LF after the marker", notifications: ["HomeNet,-45\nCafé, 2nd floor,-67\nMORE", "Neighbour 5G,-81\nEND"],
                networks: three, style: "suffix-newline"),
        Variant(name: "CR LF", notifications: ["HomeNet,-45\r\nCafé, 2nd floor,-67\r\nMORE\r\n", "Neighbour 5G,-81\r\nEND\r\n"],
                networks: three, style: "suffix-crlf"),
        Variant(name: "separate notifications", notifications: ["HomeNet,-45\nCafé, 2n", "MORE", "d floor,-67\nNeighbour 5G,-81\n", "END"],
                networks: three, style: "separate-notification"),
        Variant(name: "separate, CR LF after", notifications: ["HomeNet,-45\nCafé, 2nd floor,-67\n", "MORE\r\n", "Neighbour 5G,-81\n", "END\r\n"],
                networks: three, style: "separate-notification"),
        Variant(name: "one network per notification, separate markers, no LF",
                notifications: ["HomeNet,-45", "MORE", "Café, 2nd floor,-67", "MORE", "Neighbour 5G,-81", "END"],
                networks: three, style: "separate-notification"),
        Variant(name: "one network per notification, no markers between", notifications: ["HomeNet,-45", "Café, 2nd floor,-67", "Neighbour 5G,-81", "END"],
                networks: three, style: "separate-notification"),
        Variant(name: "semicolon", notifications: ["HomeNet,-45;MORE", "Café, 2nd floor,-67;MORE", "Neighbour 5G,-81;END"],
                networks: three, style: "suffix-semicolon"),
        Variant(name: "semicolon, several per chunk", notifications: ["HomeNet,-45\nCafé, 2nd floor,-67;MORE\n", "Neighbour 5G,-81;END\n"],
                networks: three, style: "suffix-semicolon"),
        Variant(name: "comma", notifications: ["HomeNet,-45,MORE", "Café, 2nd floor,-67,MORE", "Neighbour 5G,-81,END"],
                networks: three, style: "suffix-comma"),
        Variant(name: "space", notifications: ["HomeNet,-45 MORE", "Café, 2nd floor,-67 MORE", "Neighbour 5G,-81 END"],
                networks: three, style: "suffix-space"),
        Variant(name: "glued", notifications: ["HomeNet,-45MORE", "Café, 2nd floor,-67MORE", "Neighbour 5G,-81END"],
                networks: three, style: "suffix-glued"),
        Variant(name: "glued, several per chunk", notifications: ["HomeNet,-45\nCafé, 2nd floor,-67MORE", "Neighbour 5G,-81END\n"],
                networks: three, style: "suffix-glued"),
        Variant(name: "prefix, newline", notifications: ["MORE\nHomeNet,-45\nCafé, 2nd floor,-67\n", "END\nNeighbour 5G,-81\n"],
                networks: three, style: "prefix"),
        Variant(name: "prefix, CR LF", notifications: ["MORE\r\nHomeNet,-45\r\n", "MORE\r\nCafé, 2nd floor,-67\r\n", "END\r\nNeighbour 5G,-81\r\n"],
                networks: three, style: "prefix"),
        Variant(name: "prefix, semicolon", notifications: ["MORE;HomeNet,-45\n", "MORE;Café, 2nd floor,-67\n", "END;Neighbour 5G,-81\n"],
                networks: three, style: "prefix"),
        Variant(name: "prefix, glued after the first", notifications: ["MORE\nHomeNet,-45\n", "MORECafé, 2nd floor,-67\n", "ENDNeighbour 5G,-81"],
                networks: three, style: "prefix"),
        Variant(name: "prefix, END alone at the end", notifications: ["MORE\nHomeNet,-45\nCafé, 2nd floor,-67\n", "MORE\nNeighbour 5G,-81\n", "END"],
                networks: three, style: "prefix"),
        Variant(name: "split MO|RE", notifications: ["HomeNet,-45\nCafé, 2nd floor,-67\nMO", "RE\nNeighbour 5G,-81\nEN", "D\n"],
                networks: three, style: "split-across-chunks"),
        Variant(name: "split M|ORE, CR LF", notifications: ["HomeNet,-45\r\nCafé, 2nd floor,-67\r\nM", "ORE\r\nNeighbour 5G,-81\r\nE", "ND\r\n"],
                networks: three, style: "split-across-chunks"),
        Variant(name: "split after semicolon", notifications: ["HomeNet,-45\nCafé, 2nd floor,-67;MOR", "E", "Neighbour 5G,-81;EN", "D"],
                networks: three, style: "split-across-chunks"),
        Variant(name: "split glued", notifications: ["HomeNet,-45\nCafé, 2nd floor,-67MO", "RE", "Neighbour 5G,-81E", "ND"],
                networks: three, style: "split-across-chunks"),
        Variant(name: "inline: two chunks in one notification", notifications: ["HomeNet,-45\nMORE\nCafé, 2nd floor,-67\nMORE\n", "Neighbour 5G,-81\nEND\n"],
                networks: three, style: "mixed"),
        Variant(name: "everything in one notification", notifications: ["HomeNet,-45\nCafé, 2nd floor,-67\nNeighbour 5G,-81\nEND\n"],
                networks: three, style: "suffix-newline"),
        Variant(name: "glued, then a lone END", notifications: ["HomeNet,-45;MORE", "Café, 2nd floor,-67\nNeighbour 5G,-81\n", "END"],
                networks: three, style: "suffix-semicolon"),
        Variant(name: "mixed", notifications: ["HomeNet,-45;MORE", "Café, 2nd floor,-67\nMORE\n", "Neighbour 5G,-81", "MORE", "END"],
                networks: three, style: "mixed"),
        Variant(name: "empty answer", notifications: ["END\n"], networks: [], style: "separate-notification"),
        Variant(name: "empty answer, END and CR LF", notifications: ["\r\nEND\r\n"], networks: [], style: "suffix-crlf"),
        // SSIDs that merely contain the words survive, wherever the chunker cuts them.
        Variant(name: "WEEKEND", notifications: ["WEEKEND,-50\nMOREHOUSE,-60\nEND\n"],
                networks: [("WEEKEND", -50), ("MOREHOUSE", -60)], style: "suffix-newline"),
        Variant(name: "WEEK|END cut", notifications: ["HomeNet,-45\nWEEK", "END,-50\n", "END"],
                networks: [("HomeNet", -45), ("WEEKEND", -50)], style: "separate-notification"),
        Variant(name: "WEEKEND| cut before the comma", notifications: ["HomeNet,-45\nWEEKEND", ",-50\nEND\n"],
                networks: [("HomeNet", -45), ("WEEKEND", -50)], style: "suffix-newline"),
        Variant(name: "MO|TEL cut after a line", notifications: ["HomeNet,-45\nMO", "TEL,-50\nEND\n"],
                networks: [("HomeNet", -45), ("MOTEL", -50)], style: "suffix-newline"),
        Variant(name: "E|ndless cut", notifications: ["HomeNet,-45\nE", "ndless,-52\nEND\n"],
                networks: [("HomeNet", -45), ("Endless", -52)], style: "suffix-newline"),
        Variant(name: "network called END", notifications: ["END,-40\nMORE,-41\nEND\n"],
                networks: [("END", -40), ("MORE", -41)], style: "suffix-newline"),
        Variant(name: "SSID ending in a space and MORE", notifications: ["HomeNet,-45\nMy MORE", ",-44\nEND"],
                networks: [("HomeNet", -45), ("My MORE", -44)], style: "suffix-newline"),
        Variant(name: "SSID with a semicolon and END", notifications: ["HomeNet,-45\nA;END", ",-44\nEND\n"],
                networks: [("HomeNet", -45), ("A;END", -44)], style: "suffix-newline"),
        // Truncated answers: what arrived, never a marker or half a line as a network.
        Variant(name: "truncated, never END", notifications: ["HomeNet,-45\nMORE\n", "Café, 2nd floor,-67\nMORE\n"],
                networks: [("HomeNet", -45), ("Café, 2nd floor", -67)], style: "suffix-newline", complete: false),
        Variant(name: "truncated mid-line", notifications: ["HomeNet,-45\nCafé, 2nd floor,-67\nNeigh"],
                networks: [("HomeNet", -45), ("Café, 2nd floor", -67)], style: "none", complete: false),
        Variant(name: "truncated, one network per notification", notifications: ["HomeNet,-45", "Café, 2nd floor,-67"],
                networks: [("HomeNet", -45), ("Café, 2nd floor", -67)], style: "none", complete: false),
        Variant(name: "truncated inside a marker", notifications: ["HomeNet,-45\nCafé, 2nd floor,-67\nMO"],
                networks: [("HomeNet", -45), ("Café, 2nd floor", -67)], style: "none", complete: false),
        Variant(name: "truncated inside a glued marker", notifications: ["HomeNet,-45;MORE", "Café, 2nd floor,-67;M"],
                networks: [("HomeNet", -45), ("Café, 2nd floor", -67)], style: "suffix-semicolon", complete: false),
    ]

    /// A line cut exactly at a chunk's end, then the marker as a notification of its own that
    /// starts with the line's newline (`\nMORE\n`): an independent sensor sends this at MTU 24,
    /// and the black-box fuzzer found the two lines glued into one.
    func testMarkerNotificationThatEndsTheOpenLine() {
        let chunks: [[UInt8]] = ["HomeNet,-47\nMORE\n", "FRITZ!Box 7530 QK,-58", "\nMORE\n", "Vodafone-Homespot-7F3", "A-Extended,-60\nEND\n"].map { Array($0.utf8) }
        let r = join(chunks)
        XCTAssertEqual(r.networks.map(\.ssidText), ["HomeNet", "FRITZ!Box 7530 QK", "Vodafone-Homespot-7F3A-Extended"])
        XCTAssertEqual(r.networks.map(\.rssi), [-47, -58, -60])
    }

    func testEveryMarkerPlacement() {
        for v in Self.variants {
            let r = join(v.notifications.map { Array($0.utf8) })
            XCTAssertEqual(r.networks.map(\.ssidText), v.networks.map(\.0), v.name)
            XCTAssertEqual(r.networks.map(\.rssi), v.networks.map(\.1), v.name)
            XCTAssertEqual(r.complete, v.complete, v.name)
            XCTAssertEqual(r.markerStyle, v.style, v.name + " (styles \(r.markerStyles))")
            XCTAssertEqual(r.chunks, v.notifications.count, v.name)
            // A valid variant is never malformed; a truncated one says only that it is truncated.
            XCTAssertEqual(r.problems.map(\.id), v.complete ? [] : ["scan.truncated"], v.name + ": \(r.problems)")
        }
    }

    func testTruncatedSaysHowManyAndThatEndNeverCame() {
        let r = join(["HomeNet,-45\nMORE\n", "Café, 2nd floor,-67\nNei"].map { Array($0.utf8) })
        XCTAssertEqual(r.problems.count, 1)
        XCTAssertTrue(r.problems[0].message.contains("END never came"), r.problems[0].message)
        XCTAssertTrue(r.problems[0].message.contains("2 networks arrived"), r.problems[0].message)
        XCTAssertTrue(r.problems[0].message.contains("unfinished line"), r.problems[0].message)
    }

    /// Every style at every split of the text: the same networks, whichever byte the chunker cut at.
    func testStylesAtEverySplit() {
        let lines = Self.three.map { "\($0.0),\($0.1)" }
        for sep in ["\n", "\r\n"] {
            let text = lines.joined(separator: sep) + sep
            let bytes = Array(text.utf8)
            for split in 1..<bytes.count {
                let a = Array(bytes[..<split]), b = Array(bytes[split...])
                for (name, chunks) in [("separate", [a, Array("MORE".utf8), b, Array("END".utf8)]),
                                       ("separate-lf", [a, Array("MORE\(sep)".utf8), b, Array("END\(sep)".utf8)]),
                                       ("end-suffix", [a, b + Array("END\(sep)".utf8)])] {
                    let r = join(chunks)
                    XCTAssertTrue(r.complete, "\(name) split \(split)")
                    XCTAssertEqual(r.networks.map(\.ssidText), Self.three.map(\.0), "\(name) split \(split) \(sep.debugDescription)")
                    XCTAssertEqual(r.problems, [], "\(name) split \(split)")
                }
            }
        }
    }

    func testEncoderStylesNameThemselves() {
        let plain = join(SensorScan.encode(networks, chunkSize: 20))
        XCTAssertEqual(plain.markerStyle, "suffix-newline", "\(plain.markerStyles) \(SensorScan.encode(networks, chunkSize: 20).map { String(decoding: $0, as: UTF8.self) })")
        let separate = join(SensorScan.encode(networks, chunkSize: 20, separateMarkers: true))
        XCTAssertEqual(separate.markerStyle, "separate-notification")
    }

    /// The RSSI read from bytes and the UTF-8 check without a String agree with what they
    /// replaced: Int(_:) on the field's text with its spaces trimmed, and the String round trip.
    func testByteLevelReadingsAgreeWithStrings() {
        var r = SplitMix(seed: 7)
        let alphabet = Array("0123456789+- ,x\u{e9}".utf8) + [0xFF, 0xC0, 0xC2, 0xED, 0xA0, 0xF0, 0xF4, 0x90, 0x80, 0xBF, 0xE2, 0x82]
        var fields = ["-40", "+5", "-", "+", "", " -41 ", "-0", "--1", "+-1", "-128", "127", "128", "-129", " ",
                      "00000000000000000000000000000042", "-99999999999999999999", "1 2", "\u{663}", " \u{301}5"].map { Array($0.utf8) }
        for _ in 0..<50_000 { fields.append((0..<Int(r.next() % 9)).map { _ in alphabet[Int(r.next() % UInt64(alphabet.count))] }) }
        for f in fields {
            let expected = Int(String(decoding: f, as: UTF8.self).trimmingSpaces).flatMap { (-128...127).contains($0) ? $0 : nil }
            XCTAssertEqual(SensorScan.rssi(f[...]), expected, "\(f)")
            XCTAssertEqual(ProtocolText.isValidUTF8(f), Array(String(decoding: f, as: UTF8.self).utf8) == f, "\(f)")
        }
    }

    /// A problem's quoted line, made in one allocation, is the text interpolation makes:
    /// invalid UTF-8 repaired the same way, whatever bytes the line ends or begins with.
    func testQuotedLinesAgreeWithInterpolation() {
        var r = SplitMix(seed: 11)
        let alphabet = Array("ab, -1\u{e9}".utf8) + [0xFF, 0xC0, 0xC2, 0xED, 0xA0, 0xF0, 0xF4, 0x90, 0x80, 0xBF, 0xE2, 0x82, 0x22]
        var lines = [[], Array("MORE".utf8), [0xE2, 0x82], [0x82], [0xF0, 0x9F, 0x98]] as [[UInt8]]
        for _ in 0..<20_000 { lines.append((0..<Int(r.next() % 12)).map { _ in alphabet[Int(r.next() % UInt64(alphabet.count))] }) }
        for line in lines {
            line.withUnsafeBufferPointer { p in
                XCTAssertEqual(SensorScan.quoting(p[...], after: "no comma in \"", before: "\""),
                               "no comma in \"\(String(decoding: line, as: UTF8.self))\"", "\(line)")
                XCTAssertEqual(SensorScan.quoting(p[...], after: "a ", before: " line inside the data"),
                               "a \(String(decoding: line, as: UTF8.self)) line inside the data", "\(line)")
            }
        }
    }

    /// The scan mutator's CR LF and many-networks edits, built byte by byte, give what the plain
    /// expressions give (a two-byte array per byte; a string per network).
    func testScanMutatorEditsMatchTheirPlainForm() {
        var r = SplitMix(seed: 5)
        for n in 0..<300 {
            let data = [UInt8(n % 256)] + (0..<(1 + n % 40)).map { _ in [0x0A, 0x0D, 0x41, 0x2C][Int(r.next() % 4)] }
            XCTAssertEqual(SensorScanProtocol.crlfLines(data), data.prefix(1) + data.dropFirst().flatMap { $0 == 0x0A ? [0x0D, 0x0A] : [$0] })
        }
        for count in 0..<60 {
            XCTAssertEqual(SensorScanProtocol.manyNetworks(count),
                           [0] + (0..<count).flatMap { Array("net\($0),-\(40 + $0)\n".utf8) } + Array("END".utf8))
        }
    }
}
