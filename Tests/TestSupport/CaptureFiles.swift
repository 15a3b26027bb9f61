import Capture
import Foundation
import XCTest

/// The project's and the shared real captures, and the tools tests compare against.
public enum Files {
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    /// The real captures' folder, present or not (see `RealCaptures`).
    public static var realFolder: URL { RealCaptures.folder }

    /// Captures/ (the demo and every emulator scenario).
    public static func projectCaptures() throws -> [String] {
        let folders = [root.appendingPathComponent("Captures"), root.appendingPathComponent("Captures/emulated")]
        let found = folders.flatMap { dir in
            ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [])
                .filter { $0.hasSuffix(".btsnoop") }.map { dir.appendingPathComponent($0).path }
        }.sorted()
        guard found.count > 10 else { throw TestSetupError("Captures/ is missing its recordings") }
        return found
    }

    /// Every real capture, as listed in its MANIFEST.tsv; skips the test where there are none.
    public static func realCaptures() throws -> [String] {
        try RealCaptures.manifest().map { RealCaptures.folder.appendingPathComponent($0).path }
    }

    public static var tshark: String {
        get throws {
            for p in ["/usr/bin/tshark", "/usr/local/bin/tshark"] where FileManager.default.isExecutableFile(atPath: p) { return p }
            throw TestSetupError("tshark is not installed: run `make setup` (apt-get install tshark)")
        }
    }

    /// A new folder in the temporary directory, removed when the test process exits (as well as
    /// by the test's own `defer`, where it has one): a test that stops half-way leaves nothing
    /// behind. Hundreds of these, captures and test credentials in them, once piled up in /tmp.
    public static func temporaryDirectory() throws -> URL {
        try TemporaryFolders.make()
    }

    /// The connections a capture shows begin, counted from its bytes and not by GATTLab's
    /// decoder: HCI LE Connection Complete and LE Enhanced Connection Complete events (LE Meta
    /// 0x3E, subevent 0x01 or 0x0A) with status 0.
    public static func connectionsBegun(_ path: String) throws -> Int {
        let reader = try openCapture(path)
        var count = 0
        while let r = try reader.next() {
            let d = r.data
            if r.kind == .event, d.count > 3, d[0] == 0x3E, d[2] == 0x01 || d[2] == 0x0A, d[3] == 0x00 { count += 1 }
        }
        return count
    }

    /// Every record's data (after the format's headers), by record number: test captures are small.
    public static func recordData(_ path: String) throws -> [Int: [UInt8]] {
        let reader = try openCapture(path)
        var out: [Int: [UInt8]] = [:]
        while let r = try reader.next() { out[r.number] = Array(r.data) }
        return out
    }

    /// The bytes an origin points at.
    public static func bytes(at origin: ByteOrigin, in records: [Int: [UInt8]]) -> [UInt8]? {
        var out: [UInt8] = []
        for p in origin.pieces {
            guard let d = records[p.record], p.offset >= 0, p.offset + p.count <= d.count else { return nil }
            out += d[p.offset..<(p.offset + p.count)]
        }
        return out
    }
}

/// The real captures from public projects (`../shared/captures/real` beside the clone, or
/// `GATTLAB_REAL_CAPTURES`). They are never copied into the repository, so a user's plain clone
/// has none: tests that need them skip, each with `skipMessage`, which `Scripts/test.sh` counts
/// into one line at the end of `make test`. Under CI (CI=true) a missing folder is a failure, so
/// CI can never pass by skipping them.
public enum RealCaptures {
    public static let skipMessage = "needs real captures: set GATTLAB_REAL_CAPTURES=DIR or clone with ../shared beside it"

    public static let folder: URL = {
        if let dir = ProcessInfo.processInfo.environment["GATTLAB_REAL_CAPTURES"], !dir.isEmpty {
            return URL(fileURLWithPath: dir, isDirectory: true)
        }
        return Files.root.deletingLastPathComponent().appendingPathComponent("shared/captures/real", isDirectory: true)
    }()

    public static var isPresent: Bool {
        FileManager.default.fileExists(atPath: folder.appendingPathComponent("MANIFEST.tsv").path)
    }

    static var underCI: Bool {
        ["true", "1", "yes"].contains(ProcessInfo.processInfo.environment["CI"]?.lowercased() ?? "")
    }

    /// The folder, or the skip (a failure under CI) when it is absent.
    public static func require() throws -> URL {
        guard isPresent else {
            if underCI { throw TestSetupError("CI=true but \(folder.path)/MANIFEST.tsv is missing: CI must run the real-capture tests") }
            throw XCTSkip(skipMessage)
        }
        return folder
    }

    /// One real capture by its name in the manifest.
    public static func path(_ name: String) throws -> String {
        let path = try require().appendingPathComponent(name).path
        guard FileManager.default.fileExists(atPath: path) else {
            throw TestSetupError("\(path) is listed for the tests but missing from \(folder.path)")
        }
        return path
    }

    public static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path(name))))
    }

    /// The file names MANIFEST.tsv lists (its first column).
    public static func manifest() throws -> [String] {
        let manifest = try require().appendingPathComponent("MANIFEST.tsv")
        let text = try String(contentsOf: manifest, encoding: .utf8)
        return text.split(separator: "\n").dropFirst().compactMap { $0.split(separator: "\t").first.map(String.init) }
    }
}

public struct TestSetupError: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}

/// The folders `Files.temporaryDirectory()` made, removed at exit (XCTest's runner ends with
/// `exit`, which runs `atexit` handlers, whether tests passed or failed).
enum TemporaryFolders {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var made: [URL] = []
    private static let removedAtExit: Void = { atexit { TemporaryFolders.removeAll() } }()

    static func make() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gattlab-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        lock.withLock {
            _ = removedAtExit
            made.append(dir)
        }
        return dir
    }

    private static func removeAll() {
        let folders = lock.withLock { made }
        for dir in folders { try? FileManager.default.removeItem(at: dir) }
    }
}
