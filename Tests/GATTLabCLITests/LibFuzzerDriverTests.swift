import Foundation
import XCTest

/// The libFuzzer executables in the normal build: standalone drivers that run the files and
/// folders given once each (the committed corpus passes), and refuse what they cannot read.
final class LibFuzzerDriverTests: XCTestCase {
    static func driver(_ target: String) throws -> URL {
        let url = try Harness.gattlab.deletingLastPathComponent().appendingPathComponent("fuzz-\(target)")
        guard FileManager.default.isExecutableFile(atPath: url.path) else { throw XCTSkip("fuzz-\(target) not built") }
        return url
    }

    func testDriversRunTheCommittedCorpus() throws {
        for target in ["status", "scan", "att", "capture"] {
            let corpus = Harness.root.appendingPathComponent("Corpus/\(target)")
            let r = try Harness.run(try Self.driver(target), [corpus.path, "-runs=0"], timeout: 120)
            XCTAssertEqual(r.status, 0, "\(target): \(r.stdout) \(r.stderr)")
            XCTAssertTrue(r.stdout.contains(", 0 findings"), r.stdout)
        }
    }

    func testMissingInputAndUnknownQuirk() throws {
        let missing = try Harness.run(try Self.driver("status"), ["/nonexistent/input"])
        XCTAssertEqual(missing.status, 2, missing.stderr)
        let quirk = try Harness.run(try Self.driver("device-speaker"), [Harness.root.appendingPathComponent("Corpus").path],
                                    environment: ["GATTLAB_FUZZ_QUIRKS": "no-such-quirk"])
        XCTAssertEqual(quirk.status, 2, quirk.stdout)
    }
}
