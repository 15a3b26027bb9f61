import Foundation
import Fuzz
import Profiles
import Protocols
import TestSupport
import XCTest

/// The fuzz targets the protocols plug in keep the contract the tools rely on: one name each
/// (it names the corpus folder, the findings and the libFuzzer copy `fuzz-<name>`), and the one
/// libFuzzer driver (Sources/FuzzDriver/, product gattlab-fuzz) serves every one of them with no
/// file or Package.swift line per target.
final class FuzzRegistryTests: XCTestCase {
    func testTargetNamesAreUniqueAndTheDriverServesEveryOne() throws {
        let protocols = GATTLabProtocols.all
        let names = FuzzTargets.names(protocols: protocols)
        XCTAssertEqual(Set(names).count, names.count, "\(names)")
        XCTAssertEqual(LibFuzzerHarness.targetNames(protocols: protocols), names)
        for name in names {
            // By the executable's name (a copy in $OUT), by the environment, by --target.
            XCTAssertEqual(LibFuzzerHarness.choose(executable: "/out/fuzz-\(name)", arguments: ["-runs=10", "corpus"], environment: [:], protocols: protocols), .run(name))
            XCTAssertEqual(LibFuzzerHarness.choose(executable: "gattlab-fuzz", arguments: [], environment: [LibFuzzerHarness.targetVariable: name], protocols: protocols), .run(name))
            XCTAssertEqual(LibFuzzerHarness.choose(executable: "gattlab-fuzz", arguments: ["--target=\(name)"], environment: [:], protocols: protocols), .run(name))
            XCTAssertEqual(LibFuzzerHarness.choose(executable: "gattlab-fuzz", arguments: ["--target", name, "in"], environment: [:], protocols: protocols), .run(name))
            XCTAssertNoThrow(try FuzzTargets.named(name, protocols: protocols), name)
        }
        // No per-target folders any more: a protocol's target needs no file outside its folder.
        XCTAssertFalse(FileManager.default.fileExists(atPath: Files.root.appendingPathComponent("Sources/FuzzTargets").path))
        let listing = LibFuzzerHarness.listing(protocols: protocols).split(separator: "\n").map { $0.split(separator: "\t").first.map(String.init) ?? "" }
        XCTAssertEqual(listing, names)
    }

    /// Each protocol's targets are built instrumenting its codec's module alone, and that module
    /// is where its parsers are: a codec moved back into Protocols (or a protocol naming a type
    /// of another module) would give libFuzzer a build that sees none of the parsers' branches.
    func testEveryProtocolsTargetsInstrumentItsOwnCodecModule() throws {
        let protocols = GATTLabProtocols.all
        var codecs: [String] = []
        for p in protocols.conforming(to: (any FuzzableProtocol.Type).self) {
            let codec = try XCTUnwrap(p.codec, "\(p.name): no codec module named")
            let module = String(String(reflecting: codec).prefix { $0 != "." })
            XCTAssertTrue(module.hasSuffix("Codec") && module != "Protocols", "\(p.name): \(module)")
            codecs.append(module)
            for t in p.fuzzTargets {
                XCTAssertEqual(try FuzzTargets.named(t.name, protocols: protocols).instrumentedModules, [module], t.name)
            }
        }
        XCTAssertEqual(Set(codecs).count, codecs.count, "two protocols share a codec module: \(codecs)")
        // The codec folders are the modules Package.swift makes (Sources/Protocols/<folder>/Codec).
        let folders = try FileManager.default.contentsOfDirectory(atPath: Files.root.appendingPathComponent("Sources/Protocols").path)
            .filter { FileManager.default.fileExists(atPath: Files.root.appendingPathComponent("Sources/Protocols/\($0)/Codec").path) }
        XCTAssertEqual(Set(folders.map { $0 + "Codec" }), Set(codecs))
        // The whole-capture targets run every layer: every fuzzed module.
        XCTAssertNil(try FuzzTargets.named("capture", protocols: protocols).instrumentedModules)
        XCTAssertEqual(try FuzzTargets.named("att", protocols: protocols).instrumentedModules, ["ATT"])
    }

    func testUnknownOrMissingTargetIsRefusedWithTheList() {
        let protocols = GATTLabProtocols.all
        let known = LibFuzzerHarness.targetNames(protocols: protocols).joined(separator: ", ")
        for request in [
            LibFuzzerHarness.choose(executable: "/out/fuzz-nosuch", arguments: [], environment: [:], protocols: protocols),
            LibFuzzerHarness.choose(executable: "gattlab-fuzz", arguments: ["--target=device"], environment: [:], protocols: protocols),
            LibFuzzerHarness.choose(executable: "gattlab-fuzz", arguments: ["corpus"], environment: [:], protocols: protocols),
        ] {
            guard case .refused(let why) = request else { return XCTFail("\(request) was not refused") }
            XCTAssertFalse(why.contains("\n"), why)
            XCTAssertTrue(why.hasSuffix("targets: \(known)"), why)
        }
        // An explicit choice wins over the executable's name.
        XCTAssertEqual(LibFuzzerHarness.choose(executable: "fuzz-status", arguments: ["--target=scan"], environment: [:], protocols: protocols), .run("scan"))
        XCTAssertEqual(LibFuzzerHarness.inputs(["--target", "scan", "-runs=0", "a", "--target=x", "b"]), ["a", "b"])
    }

    func testDictionariesAreLibFuzzerSyntax() throws {
        let protocols = GATTLabProtocols.all
        var withTokens: [String] = []
        for name in FuzzTargets.names(protocols: protocols) {
            let t = try FuzzTargets.named(name, protocols: protocols)
            let text = LibFuzzerHarness.dictionaryFile(t)
            if t.dictionary.isEmpty { XCTAssertEqual(text, ""); continue }
            withTokens.append(name)
            let lines = text.split(separator: "\n").filter { !$0.hasPrefix("#") }
            XCTAssertEqual(lines.count, t.dictionary.count, name)
            for line in lines {
                XCTAssertTrue(line.hasPrefix("\"") && line.hasSuffix("\"") && line.count > 2, "\(name): \(line)")
                XCTAssertTrue(line.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F }, "\(name): \(line)")
            }
        }
        XCTAssertEqual(LibFuzzerHarness.dictionaryFile(try FuzzTargets.named("scan", protocols: protocols)).split(separator: "\n").dropFirst().first, "\"MORE\\x0a\"")
        XCTAssertEqual(Set(withTokens), ["url", "scan", "capture", "timeline"])
    }

    func testEveryFuzzableProtocolIsRegisteredWithTargets() {
        for p in GATTLabProtocols.all.conforming(to: (any FuzzableProtocol.Type).self) {
            XCTAssertFalse(p.fuzzTargets.isEmpty && p.deviceFuzzTargets.isEmpty, "\(p.name) has no fuzz target")
        }
    }
}
