import Capture
import Foundation

/// The project's and the shared real captures, and the tools tests compare against.
public enum Files {
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    public static let realFolder = root.deletingLastPathComponent().appendingPathComponent("shared/captures/real")

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

    /// ../shared/captures/real, as listed in its MANIFEST.tsv.
    public static func realCaptures() throws -> [String] {
        let manifest = realFolder.appendingPathComponent("MANIFEST.tsv")
        guard let text = try? String(contentsOf: manifest, encoding: .utf8) else {
            throw TestSetupError("\(manifest.path) not found: the tests need ../shared beside the clone")
        }
        return text.split(separator: "\n").dropFirst().compactMap { $0.split(separator: "\t").first }
            .map { realFolder.appendingPathComponent(String($0)).path }
    }

    public static var tshark: String {
        get throws {
            for p in ["/usr/bin/tshark", "/usr/local/bin/tshark"] where FileManager.default.isExecutableFile(atPath: p) { return p }
            throw TestSetupError("tshark is not installed: run `make setup` (apt-get install tshark)")
        }
    }

    public static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gattlab-redact-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
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

public struct TestSetupError: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}
