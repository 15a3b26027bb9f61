import Foundation
import XCTest

/// Issue 16: "no `malformed` event on a frame that tshark decodes without error", on every real
/// capture. The frames gattlab calls malformed and tshark does not are compared; the only ones
/// allowed are the reassembly verdicts below, where GATTLab says more than tshark's dissector
/// (which shows such a frame as a bare "L2CAP Fragment" or a frame it cannot place): each is named,
/// so a new kind of disagreement fails.
final class MalformedAgreementTests: XCTestCase {
    /// Reasons (prefixes) gattlab gives that tshark, by design, does not turn into `_ws.malformed`.
    static let reassemblyVerdicts = [
        "continuation fragment with no start",  // tshark: "L2CAP Fragment", unreassembled
        "L2CAP PDU started at frame",            // a start whose continuations never came
        "reserved LLID 0",                       // tshark shows the PDU with no payload dissector
    ]

    func testNoMalformedOnAFrameTsharkReadsWithoutError() throws {
        _ = try Harness.tshark
        let files = try Harness.manifest()
        XCTAssertGreaterThan(files.count, 60)
        let agreed = try EveryRealCapture.check(files) { _, path in
            let ours = try Harness.gattlab(["decode", "--format", "json", path], timeout: 120)
            var mine: [Int: String] = [:]
            for o in Harness.jsonLines(ours.stdout) {
                guard let frame = o["frame"] as? Int else { continue }
                if o["type"] as? String == "malformed" { mine[frame] = o["reason"] as? String ?? "" }
                if let reason = o["malformed"] as? String { mine[frame] = reason }
            }
            let r = try Harness.run(Harness.tshark, ["-r", path, "-o", Harness.tsharkUserDLT, "-Y", "_ws.malformed",
                                                     "-T", "fields", "-e", "frame.number"])
            let theirs = Set(r.stdout.split(separator: "\n").compactMap { Int($0) })
            var problems: [String] = []
            var explained = 0
            for (frame, reason) in mine.sorted(by: { $0.key < $1.key }) where !theirs.contains(frame) {
                if Self.reassemblyVerdicts.contains(where: { reason.contains($0) }) { explained += 1; continue }
                problems.append("frame \(frame): \(reason)")
            }
            return .init(line: "\(mine.count) malformed (tshark \(theirs.count)); \(explained) reassembly verdicts tshark does not mark",
                         problems: Array(problems.prefix(5)))
        }
        print("malformed agreement: \(agreed) of \(files.count) real captures")
    }
}
