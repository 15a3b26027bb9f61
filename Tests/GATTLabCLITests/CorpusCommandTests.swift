import Foundation
import Fuzz
import Protocols
import XCTest

/// `gattlab corpus`: import sorts a capture's values into the targets' folders with no secret
/// left in any file; minimize keeps every feature of a folder and never grows it.
final class CorpusCommandTests: XCTestCase {
    static let speaker = Harness.root.appendingPathComponent("Captures/emulated/speaker-ota-mtu23.btsnoop")
    static let sensor = Harness.root.appendingPathComponent("Captures/emulated/sensor-scan-mtu23.btsnoop")
    static let password = Array("correct horse battery staple".utf8)

    func temporaryDirectory() throws -> URL {
        let dir = try Harness.temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir
    }

    static func files(_ dir: URL) -> [URL] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted().map { dir.appendingPathComponent($0) }
    }

    static func contains(_ data: Data, _ needle: [UInt8]) -> Bool {
        let bytes = Array(data)
        guard bytes.count >= needle.count else { return false }
        return (0...(bytes.count - needle.count)).contains { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    func testImportSortsValuesAndLeavesNoPassword() throws {
        let root = try temporaryDirectory().appendingPathComponent("Corpus")
        let captures = [Self.speaker, Self.sensor].filter { FileManager.default.fileExists(atPath: $0.path) }
        XCTAssertFalse(captures.isEmpty)
        let r = try Harness.gattlab(["corpus", "import"] + captures.map(\.path) + ["--corpus", root.path], timeout: 120)
        XCTAssertEqual(r.status, 0, r.stderr)
        for folder in ["status", "credentials", "control", "att", "capture", "timeline"] {
            XCTAssertFalse(Self.files(root.appendingPathComponent(folder)).isEmpty, "nothing in \(folder): \(r.stdout)")
        }
        if captures.contains(Self.sensor) { XCTAssertFalse(Self.files(root.appendingPathComponent("scan")).isEmpty, r.stdout) }
        // Each file is named by its content's hash, and no file anywhere holds the password.
        for folder in Self.files(root) {
            for file in Self.files(folder) {
                let data = try Data(contentsOf: file)
                XCTAssertEqual(file.lastPathComponent, Storage.name(Array(data)))
                XCTAssertFalse(Self.contains(data, Self.password), "\(file.path) holds the Wi-Fi password")
            }
        }
        // A credentials value keeps its shape (SSID, NUL, the password's length in '*').
        let credentials = try Self.files(root.appendingPathComponent("credentials")).map { Array(try Data(contentsOf: $0)) }
        XCTAssertTrue(credentials.contains { $0.contains(0) && $0.last == 0x2A }, "\(credentials)")
        // Importing again adds nothing.
        let again = try Harness.gattlab(["corpus", "import"] + captures.map(\.path) + ["--corpus", root.path], timeout: 120)
        XCTAssertTrue(again.stdout.contains("0 new inputs"), again.stdout)
    }

    func testMinimizeKeepsCoverageAndDoesNotGrow() throws {
        let root = try temporaryDirectory().appendingPathComponent("Corpus")
        let r = try Harness.gattlab(["corpus", "import", Self.speaker.path, "--corpus", root.path], timeout: 120)
        XCTAssertEqual(r.status, 0, r.stderr)
        for name in ["status", "att", "credentials"] {
            let target = try FuzzTargets.named(name, protocols: GATTLabProtocols.all)
            let dir = root.appendingPathComponent(name)
            // More inputs than the import gave: the target's own seeds, so there is something to drop.
            for seed in target.seeds() where !seed.isEmpty { try Storage.writeInput(seed, to: dir.path) }
            func coverage() -> (files: Int, features: Int) {
                let f = Features()
                let inputs = Storage.inputs(in: dir.path, maxLength: target.maxLength)
                for i in inputs { _ = target.execute(i, f) }
                return (inputs.count, f.total)
            }
            let before = coverage()
            let m = try Harness.gattlab(["corpus", "minimize", name, "--corpus", root.path])
            XCTAssertEqual(m.status, 0, m.stderr)
            XCTAssertTrue(m.stdout.contains("\(before.files) -> "), m.stdout)
            let after = coverage()
            XCTAssertEqual(after.features, before.features, "\(name): minimize lost features")
            XCTAssertLessThanOrEqual(after.files, before.files, name)
            XCTAssertGreaterThan(after.files, 0, name)
            // A second pass keeps everything: the set is already minimal.
            let m2 = try Harness.gattlab(["corpus", "minimize", name, "--corpus", root.path])
            XCTAssertTrue(m2.stdout.contains("\(after.files) -> \(after.files) "), m2.stdout)
        }
    }
}
