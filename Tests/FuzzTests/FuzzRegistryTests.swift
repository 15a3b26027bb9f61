import Foundation
import Fuzz
import Profiles
import Protocols
import TestSupport
import XCTest

/// The fuzz targets the protocols plug in keep the contract the tools rely on: one name each
/// (it names the corpus folder, the findings and the libFuzzer product) and a libFuzzer driver
/// (Sources/FuzzTargets/<Folder>/, product fuzz-<name>) for every one of them.
final class FuzzRegistryTests: XCTestCase {
    func testTargetNamesAreUniqueAndEachHasALibFuzzerDriver() throws {
        let names = FuzzTargets.names(protocols: GATTLabProtocols.all)
        XCTAssertEqual(Set(names).count, names.count, "\(names)")
        let root = Files.root.appendingPathComponent("Sources/FuzzTargets")
        var driven: Set<String> = []
        for folder in try FileManager.default.contentsOfDirectory(atPath: root.path) {
            let dir = root.appendingPathComponent(folder)
            for file in try FileManager.default.contentsOfDirectory(atPath: dir.path) where file.hasSuffix(".swift") {
                let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
                if let range = text.range(of: #"LibFuzzerHarness\.target\("([a-z0-9-]+)""#, options: .regularExpression) {
                    driven.insert(String(text[range].dropFirst("LibFuzzerHarness.target(\"".count).dropLast()))
                }
            }
        }
        XCTAssertEqual(Set(names), driven, "every target has a driver in Sources/FuzzTargets and a product in Package.swift")
    }

    func testEveryFuzzableProtocolIsRegisteredWithTargets() {
        for p in GATTLabProtocols.all.conforming(to: (any FuzzableProtocol.Type).self) {
            XCTAssertFalse(p.fuzzTargets.isEmpty && p.deviceFuzzTargets.isEmpty, "\(p.name) has no fuzz target")
        }
    }
}
