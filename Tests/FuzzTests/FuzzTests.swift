import ATT
import Emulator
import Foundation
import Profiles
import Protocols
import TestSupport
import XCTest
@testable import Fuzz

/// The fuzzer proves itself: every planted firmware bug is found within its budget from a fixed
/// seed, in-process and through an emulator process; nothing is found without quirks; corpora
/// and findings survive a crash; regression inputs in Corpus/ stay clean.
final class FuzzTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try Files.temporaryDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    func campaign(_ name: String, quirks: [String] = [], runs: Int, seed: UInt64 = 1, corpus: Bool = false) throws -> CampaignSummary {
        var options = CampaignOptions()
        options.seed = seed
        options.runs = runs
        options.findings = dir.appendingPathComponent("findings").path
        options.corpus = corpus ? dir.appendingPathComponent("corpus-\(name)").path : nil
        options.progressEvery = 0
        return try Campaign(target: FuzzTargets.named(name, quirks: quirks, protocols: GATTLabProtocols.all), options: options, quirks: quirks).run()
    }

    /// Budgets: executions from seed 1 (each found in under a thousand here; the budget leaves room).
    static let planted: [(target: String, quirk: String, kind: String, budget: Int)] = [
        ("device-speaker", "ssid-overflow", "firmware-crash", 3000),
        ("device-speaker", "short-status-write", "firmware-crash", 3000),
        ("device-speaker", "unbounded-prepare-queue", "unbounded-prepare-queue", 5000),
        ("device-sensor", "split-line-loss", "scan-depends-on-mtu", 3000),
    ]

    func testEveryPlantedBugIsFoundWithinItsBudget() throws {
        for p in Self.planted {
            let summary = try campaign(p.target, quirks: [p.quirk], runs: p.budget)
            let finding = try XCTUnwrap(summary.findings.first, "\(p.quirk) not found in \(p.budget) runs")
            XCTAssertEqual(finding.kind, p.kind, p.quirk)
            // The reproducer replays the finding on its own, and the note names the quirk.
            let bytes = try XCTUnwrap(FileManager.default.contents(atPath: finding.file))
            XCTAssertEqual(bytes.count, finding.inputLength)
            XCTAssertTrue(try FuzzTargets.named(p.target, quirks: [p.quirk], protocols: GATTLabProtocols.all).run(Array(bytes)).isFinding)
            XCTAssertFalse(try FuzzTargets.named(p.target, protocols: GATTLabProtocols.all).run(Array(bytes)).isFinding, "without the quirk the input is harmless")
            let note = try String(contentsOfFile: finding.file + ".txt", encoding: .utf8)
            XCTAssertTrue(note.contains("quirks: \(p.quirk)"), note)
        }
    }

    func testNothingIsFoundWithoutQuirks() throws {
        for name in FuzzTargets.names(protocols: GATTLabProtocols.all) {
            let runs = name.hasPrefix("device-") ? 3000 : 5000
            let summary = try campaign(name, runs: runs)
            XCTAssertEqual(summary.findings, [], "\(name): \(summary.findings.map(\.detail))")
            XCTAssertEqual(summary.runs, runs)
            XCTAssertGreaterThan(summary.corpusEnd, summary.corpusStart, "\(name) found no new behaviour at all")
        }
    }

    func testAStatusInAStateTheProtocolLacksIsAFinding() {
        let good = SpeakerOTA.Status(state: .downloading, progress: 5).encode()
        var bad = good
        bad[0] = 0x42
        func at14(_ uuid: BluetoothUUID) -> UInt16? { uuid == SpeakerOTA.status ? 0x14 : nil }
        XCTAssertNil(SpeakerOTAProtocol.notificationFinding([(0x14, good)], valueHandle: at14))
        XCTAssertNil(SpeakerOTAProtocol.notificationFinding([(0x15, bad)], valueHandle: at14), "another characteristic")
        XCTAssertEqual(SpeakerOTAProtocol.notificationFinding([(0x14, good), (0x14, bad)], valueHandle: at14)?.isFinding, true)
        XCTAssertNil(SpeakerOTAProtocol.notificationFinding([(0x14, bad)], valueHandle: { _ in nil }), "a device without the status")
    }

    func testTheSameSeedGivesTheSameCampaign() throws {
        let a = try campaign("scan", runs: 2000, seed: 9)
        let b = try campaign("scan", runs: 2000, seed: 9)
        XCTAssertEqual(a.corpusEnd, b.corpusEnd)
        XCTAssertEqual(a.features, b.features)
    }

    func testACampaignResumesFromItsCorpus() throws {
        let first = try campaign("credentials", runs: 3000, corpus: true)
        let folder = dir.appendingPathComponent("corpus-credentials").path
        let files = try FileManager.default.contentsOfDirectory(atPath: folder)
        XCTAssertFalse(files.contains { $0.hasPrefix(".tmp") }, "only whole files")
        XCTAssertGreaterThanOrEqual(files.count, first.corpusEnd - 3)
        let second = try campaign("credentials", runs: 10, seed: 2, corpus: true)
        XCTAssertGreaterThanOrEqual(second.corpusStart, first.corpusEnd, "the second campaign starts where the first ended")
    }

    func testBlackBoxFindsAPlantedBugThroughAnEmulatorProcess() async throws {
        let path = dir.appendingPathComponent("speaker.sock").path
        let spec = try EmulatedDeviceSpec.named("speaker", quirks: ["ssid-overflow"], protocols: GATTLabProtocols.all)
        let emulator = try SocketEmulator(device: spec, seed: 1, path: path, speed: 100)
        let stop = StopSignal()
        let served = Task { await emulator.serve(stop: stop) }
        let findings = dir.appendingPathComponent("bb").path
        let summary = try await Task.detached {
            let target = try BlackBox.target("device-speaker", label: "unix:\(path)", timeout: 200_000_000, protocols: GATTLabProtocols.all) { UnixSocketLink(path: path, speed: 100) }
            var options = CampaignOptions()
            options.runs = 3000
            options.findings = findings
            options.progressEvery = 0
            return try Campaign(target: target, options: options).run()
        }.value
        stop.stop()
        _ = await served.value
        let finding = try XCTUnwrap(summary.findings.first, "the overflow was not found through the socket")
        XCTAssertEqual(finding.kind, "link-dropped")
        // The exchange is saved as a capture that decodes.
        let capture = finding.file + ".btsnoop"
        XCTAssertTrue(FileManager.default.fileExists(atPath: capture))
        let crashes = await emulator.counters.crashes
        XCTAssertGreaterThan(crashes, 0)
        // The note says where it was found and how to run it again there: the fault is the
        // device's, so an in-process `fuzz reproduce` without the quirk would not show it.
        let note = try String(contentsOfFile: finding.file + ".txt", encoding: .utf8)
        XCTAssertTrue(note.contains("device: unix:\(path) (black-box)"), note)
        XCTAssertTrue(note.contains("reproduce: gattlab replay run \(finding.file).btsnoop --target unix:\(path) --allow-writes"), note)
    }

    /// --max-pdus: an input of many repeated requests sends only as many PDUs as allowed, and
    /// the connection still ends cleanly.
    func testBlackBoxCapsThePDUsOfAnInput() async throws {
        let path = dir.appendingPathComponent("cap.sock").path
        let spec = try XCTUnwrap(EmulatedDeviceSpec.named("speaker", protocols: GATTLabProtocols.all))
        let emulator = try SocketEmulator(device: spec, seed: 1, path: path, speed: 100)
        let stop = StopSignal()
        let served = Task { await emulator.serve(stop: stop) }
        // Read Request of handle 0x0001, 100 times; then an Exchange MTU Request once.
        let input: [UInt8] = [99, 3, 0x0A, 0x01, 0x00, 0, 3, 0x02, 0x17, 0x00]
        let outcomes = try await Task.detached {
            let capped = try BlackBox.target("device-speaker", label: "unix:\(path)", timeout: 200_000_000, maxPDUs: 7, protocols: GATTLabProtocols.all) { UnixSocketLink(path: path, speed: 100) }
            let whole = try BlackBox.target("device-speaker", label: "unix:\(path)", timeout: 200_000_000, protocols: GATTLabProtocols.all) { UnixSocketLink(path: path, speed: 100) }
            return [capped.run(input), whole.run(input)]
        }.value
        stop.stop()
        _ = await served.value
        XCTAssertEqual(outcomes, [.ok, .ok])
        let counters = await emulator.counters
        XCTAssertEqual(counters.connections, 2)
        XCTAssertEqual(counters.pdusIn, 7 + 101, "7 PDUs under the cap, then all 100 reads and the MTU exchange")
    }

    func testRegressionInputsInCorpusStayClean() throws {
        let root = Files.root.appendingPathComponent("Corpus")
        var checked = 0
        for name in FuzzTargets.names(protocols: GATTLabProtocols.all) {
            let folder = root.appendingPathComponent(name).path
            guard FileManager.default.fileExists(atPath: folder) else { continue }
            let target = try FuzzTargets.named(name, protocols: GATTLabProtocols.all)
            for input in Storage.inputs(in: folder, maxLength: target.maxLength) {
                XCTAssertEqual(target.run(input), .ok, "\(name): a Corpus input gives a finding")
                checked += 1
            }
        }
        XCTAssertGreaterThan(checked, 0)
    }

    func testACrashInACampaignLeavesItsInputOnDisk() throws {
        let findings = dir.appendingPathComponent("crash").path
        let gattlab = Files.root.appendingPathComponent(".build/debug/gattlab")
        let process = Process()
        process.executableURL = gattlab
        process.arguments = ["fuzz", "selftest-crash", "--runs", "200000", "--findings", findings, "--quiet"]
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .uncaughtSignal, "the planted trap ends the process")
        let files = try FileManager.default.contentsOfDirectory(atPath: findings)
        let crash = try XCTUnwrap(files.first { $0.hasPrefix("selftest-crash-crash-") && !$0.hasSuffix(".txt") }, "\(files)")
        let input = try XCTUnwrap(FileManager.default.contents(atPath: (findings as NSString).appendingPathComponent(crash)))
        let bytes = Array(input)
        XCTAssertTrue(bytes.indices.dropLast().contains { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xFE }, "the file holds the input that trapped")
        XCTAssertTrue(files.contains(crash + ".txt"))
        XCTAssertFalse(files.contains { $0.hasSuffix(".tmp") })
    }

    func testASeedThatGivesAFaultIsAFinding() throws {
        // A device that crashes on a 64-byte passphrase, and a seed that carries one (a
        // protocol's boundary flow): the fault is reported from that seed, not passed over.
        let target = FuzzTarget(name: "boundary", summary: "crashes on 64 bytes", seeds: { [[UInt8](repeating: 0x70, count: 8), [UInt8](repeating: 0x70, count: 64)] },
                                execute: { input, _ in input.count == 64 ? .finding(kind: "link-dropped", detail: "64 bytes") : .ok })
        var options = CampaignOptions()
        options.runs = 0
        options.findings = dir.appendingPathComponent("findings").path
        options.progressEvery = 0
        var lines: [String] = []
        let summary = try Campaign(target: target, options: options).run { lines.append($0) }
        XCTAssertEqual(summary.findings.map(\.kind), ["link-dropped"])
        XCTAssertEqual(summary.findings.first?.afterRuns, 0)
        XCTAssertEqual(summary.findings.first?.inputLength, 64)
        XCTAssertTrue(lines.contains { $0.hasPrefix("finding link-dropped in input 2 of the 2 it started from") }, "\(lines)")
        XCTAssertTrue(FileManager.default.fileExists(atPath: summary.findings.first?.file ?? "/nonexistent"))
        // Without the seed the campaign's 0 runs find nothing: the finding was the seed's.
        let none = try Campaign(target: FuzzTarget(name: "boundary", summary: "", seeds: { [[0x70]] }, execute: target.execute), options: options).run()
        XCTAssertTrue(none.findings.isEmpty)
    }

    /// A device keeps what an input told it: minimising must not credit a candidate with a
    /// crash that only the state an earlier candidate left gave. Here 'U' stores a URL (kept
    /// across inputs), 'S' crashes the device when one is stored, and a crash resets it: "US"
    /// minimised by units, last first, tries "U" (no crash, the URL stays) and then "S", which
    /// crashes only thanks to that URL. It must stay "US", so confirming it on the rebooted
    /// device gives the crash again and the finding is reported.
    func testMinimisingAStatefulDeviceKeepsTheStepsItsStateNeeds() throws {
        final class Device: @unchecked Sendable { var url = false }
        let device = Device()
        let target = FuzzTarget(name: "stateful", summary: "a device that keeps a URL", seeds: { [] },
                                minimizeTries: 100,
                                execute: { input, _ in
            for byte in input {
                if byte == UInt8(ascii: "U") { device.url = true }
                if byte == UInt8(ascii: "S"), device.url {
                    device.url = false  // the crash reboots it to power-on
                    return .finding(kind: "link-dropped", detail: "START with a URL stored")
                }
            }
            return .ok
        }, units: { input in input.indices.map { $0..<$0 + 1 } }, confirmations: 2)
        // The campaign's input gave the crash (the device rebooted), and is minimised.
        let input = Array("US".utf8)
        guard case .finding = target.execute(input, Features()) else { return XCTFail("the input gives no crash") }
        let minimal = Campaign(target: target, options: CampaignOptions()).minimize(input, kind: "link-dropped")
        XCTAssertEqual(String(decoding: minimal, as: UTF8.self), "US")
        guard case .finding = target.execute(minimal, Features()) else { return XCTFail("the minimised input gives no crash on the rebooted device") }
    }
}
