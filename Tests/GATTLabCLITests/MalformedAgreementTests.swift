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

    /// Disagreements not fixed yet (issue 16 left them open), on damaged sniffed packets of the
    /// sweyntooth and crackle captures only: gattlab reports the LL length byte against the bytes
    /// present and a one-byte L2CAP start; tshark reads what is there (at most an "Unreassembled
    /// fragment" or "Retransmission" note). Listed so that they stay visible and nothing else joins them.
    static let knownDisagreements: [String: [String]] = [
        "crackle__known_ltk.pcap": ["LL length 132 exceeds"],
        "crackle__known_ltk_decrypted_expected_output.pcap": ["LL length 132 exceeds"],
        "sweyntooth__capture_microchip_ATSAMB11_invalid_fragment.pcap": ["L2CAP start of 1 byte has no length"],
        "sweyntooth__capture_microchip_ATSAMB11_invalid_fragment_2.pcap": ["L2CAP start of 1 byte has no length"],
        "sweyntooth__capture_nxp_ll_length_crash_capture.pcap": ["LL length 114 exceeds"],
        "sweyntooth__noncomplicance_telink_respond_invalid_control_pdu.pcapng": ["LL length 109 exceeds", "LL length 41 exceeds", "LL length 159 exceeds"],
    ]

    func testNoMalformedOnAFrameTsharkReadsWithoutError() throws {
        _ = try Harness.tshark
        let files = try Harness.manifest()
        XCTAssertGreaterThan(files.count, 60)
        let agreed = try EveryRealCapture.check(files) { name, path in
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
            var known = 0
            for (frame, reason) in mine.sorted(by: { $0.key < $1.key }) where !theirs.contains(frame) {
                if Self.reassemblyVerdicts.contains(where: { reason.contains($0) }) { explained += 1; continue }
                if Self.knownDisagreements[name, default: []].contains(where: { reason.hasPrefix($0) }) { known += 1; continue }
                problems.append("frame \(frame): \(reason)")
            }
            return .init(line: "\(mine.count) malformed (tshark \(theirs.count)); \(explained) reassembly verdicts tshark does not mark; \(known) known disagreements",
                         problems: Array(problems.prefix(5)))
        }
        print("malformed agreement: \(agreed) of \(files.count) real captures")
    }
}
