import Foundation
import XCTest

/// The libFuzzer driver (product gattlab-fuzz) in the normal build: a standalone driver that
/// runs the files and folders given once each (the committed corpus passes), serves every
/// in-process target of `gattlab fuzz list` by its name (a link fuzz-<target>, as in
/// ClusterFuzzLite's $OUT), GATTLAB_FUZZ_TARGET or --target, and refuses an unknown one.
final class LibFuzzerDriverTests: XCTestCase {
    static func driver() throws -> URL {
        let url = try Harness.gattlab.deletingLastPathComponent().appendingPathComponent("gattlab-fuzz")
        guard FileManager.default.isExecutableFile(atPath: url.path) else { throw XCTSkip("gattlab-fuzz not built") }
        return url
    }

    /// A folder with links fuzz-<target> to the driver, as build.sh's copies.
    static func links(_ names: [String]) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gattlab-fuzz-links-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for name in names {
            try FileManager.default.createSymbolicLink(at: dir.appendingPathComponent("fuzz-\(name)"), withDestinationURL: try driver())
        }
        return dir
    }

    /// The in-process targets of `gattlab fuzz list --format json` (not the black-box device).
    static func listed() throws -> [(name: String, maxLength: Int, modules: String)] {
        let r = try Harness.run(Harness.gattlab, ["fuzz", "list", "--format", "json"])
        let rows = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        return rows.filter { $0["blackBox"] as? Bool != true }.compactMap { row in
            (row["name"] as? String).map { ($0, row["maxLength"] as? Int ?? -1, (row["instrumentedModules"] as? [String])?.joined(separator: ",") ?? "*") }
        }
    }

    func testEveryListedTargetIsServedByName() throws {
        let listed = try Self.listed()
        XCTAssertGreaterThanOrEqual(listed.count, 13)
        // --list agrees with gattlab fuzz list: names, order and -max_len.
        let list = try Harness.run(try Self.driver(), ["--list"])
        XCTAssertEqual(list.status, 0, list.stderr)
        let rows = list.stdout.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        XCTAssertEqual(rows.map { $0[0] }, listed.map(\.name))
        XCTAssertEqual(rows.map { Int($0[1]) ?? 0 }, listed.map(\.maxLength))
        // and the modules build.sh instruments for each: a codec's targets their codec's module
        // alone, the whole-capture and device targets every module (*).
        XCTAssertEqual(rows.map { $0.count > 3 ? $0[3] : "" }, listed.map(\.modules))
        XCTAssertEqual(listed.first { $0.name == "status" }?.modules, "SpeakerOTACodec")
        XCTAssertEqual(listed.first { $0.name == "scan" }?.modules, "SensorScanCodec")
        XCTAssertEqual(listed.first { $0.name == "capture" }?.modules, "*")
        let dir = try Self.links(listed.map(\.name))
        defer { try? FileManager.default.removeItem(at: dir) }
        for (name, _, _) in listed {
            // Its codec-made seeds (build.sh zips them with Corpus/<name>), then those and the
            // committed corpus run once each.
            let exe = dir.appendingPathComponent("fuzz-\(name)")
            let seeds = dir.appendingPathComponent("seeds-\(name)")
            let written = try Harness.run(exe, ["--seeds=\(seeds.path)"])
            XCTAssertEqual(written.status, 0, "\(name): \(written.stderr)")
            XCTAssertFalse(try FileManager.default.contentsOfDirectory(atPath: seeds.path).isEmpty, name)
            let corpus = Harness.root.appendingPathComponent("Corpus/\(name)")
            let inputs = [seeds.path] + (FileManager.default.fileExists(atPath: corpus.path) ? [corpus.path] : [])
            let r = try Harness.run(exe, inputs + ["-runs=0"], timeout: 300)
            XCTAssertEqual(r.status, 0, "\(name): \(r.stdout) \(r.stderr)")
            XCTAssertTrue(r.stdout.hasPrefix("fuzz-\(name): ") || r.stdout.contains("\nfuzz-\(name): "), "\(name): \(r.stdout)")
            XCTAssertTrue(r.stdout.contains(", 0 findings"), "\(name): \(r.stdout)")
        }
    }

    func testTargetByEnvironmentOrFlagAndRefusals() throws {
        let corpus = Harness.root.appendingPathComponent("Corpus/scan").path
        let env = try Harness.run(try Self.driver(), [corpus], environment: ["GATTLAB_FUZZ_TARGET": "scan"])
        XCTAssertEqual(env.status, 0, env.stderr)
        XCTAssertTrue(env.stdout.contains("fuzz-scan: "), env.stdout)
        let flag = try Harness.run(try Self.driver(), ["--target", "scan", corpus])
        XCTAssertEqual(flag.status, 0, flag.stderr)
        XCTAssertTrue(flag.stdout.contains("fuzz-scan: "), flag.stdout)
        let dict = try Harness.run(try Self.driver(), ["--target=scan", "--dictionary"])
        XCTAssertEqual(dict.status, 0, dict.stderr)
        XCTAssertTrue(dict.stdout.contains("\"END\\x0a\"\n"), dict.stdout)

        // Unknown and missing targets: one line naming the targets, exit 64.
        let dir = try Self.links(["nosuch"])
        defer { try? FileManager.default.removeItem(at: dir) }
        for r in [try Harness.run(dir.appendingPathComponent("fuzz-nosuch"), [corpus]),
                  try Harness.run(try Self.driver(), [corpus], environment: ["GATTLAB_FUZZ_TARGET": ""]),
                  try Harness.run(try Self.driver(), ["--target=device", corpus])] {
            XCTAssertEqual(r.status, 64, r.stdout + r.stderr)
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
            XCTAssertTrue(r.stderr.contains("targets: status, credentials"), r.stderr)
        }
    }

    func testMissingInputAndUnknownQuirk() throws {
        let missing = try Harness.run(try Self.driver(), ["--target=status", "/nonexistent/input"])
        XCTAssertEqual(missing.status, 2, missing.stderr)
        let quirk = try Harness.run(try Self.driver(), ["--target=device-speaker", Harness.root.appendingPathComponent("Corpus").path],
                                    environment: ["GATTLAB_FUZZ_QUIRKS": "no-such-quirk"])
        XCTAssertEqual(quirk.status, 2, quirk.stdout)
    }
}
