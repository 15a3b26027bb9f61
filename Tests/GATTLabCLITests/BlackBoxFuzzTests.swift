import Foundation
import Fuzz
import TestSupport
import XCTest

/// `gattlab fuzz device --target unix:PATH`: black-box campaigns against devices in other
/// processes. The devices under test are gattlab's own emulator with its planted quirks and,
/// more to the point, devices written independently in Python (Tests/IndependentDevices: their
/// own handle layouts, extra services, limits and planted bugs the fuzzer is not told about).
/// Every campaign runs from seed 1 with no device-specific flag.
final class BlackBoxFuzzTests: XCTestCase {
    /// A device process serving a Unix socket, stopped at the end of the test.
    final class DeviceProcess {
        let process = Process()
        let socket: String
        let log: URL

        init(_ arguments: [String], executable: URL, socket: String, log: URL) throws {
            self.socket = socket
            self.log = log
            process.executableURL = executable
            process.arguments = arguments
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let handle = try FileHandle(forWritingTo: log)
            process.standardOutput = handle
            process.standardError = handle
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let deadline = Date().addingTimeInterval(20)
            while !FileManager.default.fileExists(atPath: socket), Date() < deadline, process.isRunning { usleep(20_000) }
            guard FileManager.default.fileExists(atPath: socket) else {
                throw TestSetupError("the device did not listen on \(socket): \(String(decoding: (try? Data(contentsOf: log)) ?? Data(), as: UTF8.self))")
            }
        }

        func stop() {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }

        var output: String { String(decoding: (try? Data(contentsOf: log)) ?? Data(), as: UTF8.self) }
    }

    static let python = URL(fileURLWithPath: "/usr/bin/python3")
    static let independent = Harness.root.appendingPathComponent("Tests/IndependentDevices/device.py")

    static func independentDevice(_ kind: String, bugs: [String] = [], options: [String] = [], in dir: URL, name: String? = nil) throws -> DeviceProcess {
        guard FileManager.default.isExecutableFile(atPath: Self.python.path) else { throw XCTSkip("python3 is not installed") }
        let socket = dir.appendingPathComponent("\(name ?? kind).sock").path
        return try DeviceProcess([Self.independent.path, kind, "--listen", socket, "--quiet"] + bugs.flatMap { ["--bug", $0] } + options,
                                 executable: Self.python, socket: socket, log: dir.appendingPathComponent("\(name ?? kind).log"))
    }

    static func emulator(_ kind: String, quirks: [String] = [], in dir: URL, speed: Int = 100) throws -> DeviceProcess {
        let socket = dir.appendingPathComponent("emu-\(kind).sock").path
        return try DeviceProcess(["emulate", kind, "--listen", "unix:\(socket)", "--speed", String(speed), "--quiet"] + quirks.flatMap { ["--quirk", $0] },
                                 executable: try Harness.gattlab, socket: socket, log: dir.appendingPathComponent("emu-\(kind).log"))
    }

    struct Campaign {
        var result: Harness.Result
        var summary: [String: Any]
        var findings: [[String: Any]] { summary["findings"] as? [[String: Any]] ?? [] }
        var blackBox: [String: Any] { summary["blackBox"] as? [String: Any] ?? [:] }
    }

    static func campaign(_ device: DeviceProcess, runs: Int, speed: Int = 1, findings: URL, extra: [String] = []) throws -> Campaign {
        // 300 ms of device time for an answer: at --speed 100 that is 3 ms of wall time, which a
        // loaded CI machine misses (a false no-answer goes unconfirmed and hides the real
        // finding); the emulator's campaigns get 5 s of device time (50 ms).
        let answer = speed > 1 ? "5000" : "300"
        let r = try Harness.gattlab(["fuzz", "device", "--target", "unix:\(device.socket)", "--seed", "1", "--runs", String(runs),
                                     "--speed", String(speed), "--answer-timeout", answer, "--findings", findings.path, "--format", "json", "--quiet"] + extra,
                                    timeout: 600)
        let summary = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any] ?? [:]
        XCTAssertFalse(summary.isEmpty, "no JSON summary (exit \(r.status)): \(r.stderr)")
        return Campaign(result: r, summary: summary)
    }

    /// One planted bug: found within 2,500 inputs from seed 1, confirmed, minimised, with a
    /// capture and a replay script; the capture replays to the same fault on the buggy device
    /// and diverges on a healthy one.
    /// `options`: the buggy device's own behaviour (not the bug's), which the devices started
    /// afresh to replay the reproducer do not have.
    @discardableResult
    func assertFound(_ kind: String, bug: String, expecting kinds: Set<String>, options: [String] = [],
                     file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any]? {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let buggy = try Self.independentDevice(kind, bugs: [bug], options: options, in: dir, name: "buggy")
        defer { buggy.stop() }
        let c = try Self.campaign(buggy, runs: 2500, findings: dir.appendingPathComponent("findings"))
        XCTAssertEqual(c.result.status, 1, "\(kind) --bug \(bug): exit \(c.result.status), no finding in 2,500 inputs: \(c.result.stderr)", file: file, line: line)
        guard let finding = c.findings.first, let path = finding["file"] as? String else { return nil }
        let found = finding["kind"] as? String ?? ""
        XCTAssertTrue(kinds.contains(found), "\(kind) --bug \(bug): found \(found): \(finding["detail"] ?? "")", file: file, line: line)
        XCTAssertLessThanOrEqual(finding["afterRuns"] as? Int ?? .max, 2500, file: file, line: line)
        for ext in ["", ".txt", ".btsnoop", ".json"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: path + ext), "reproducer \(path)\(ext)", file: file, line: line)
        }
        let when = (finding["afterRuns"] as? Int).map { $0 == 0 ? "in an input it started from" : "after \($0) inputs" } ?? "?"
        print("\(kind) --bug \(bug): \(found) \(when): \(finding["detail"] ?? "")")
        // The reproducer replays to the same fault on the buggy device started afresh (it carries
        // the state it needs from power-on: a password an earlier input stored)...
        buggy.stop()
        let fresh = try Self.independentDevice(kind, bugs: [bug], in: dir, name: "fresh")
        defer { fresh.stop() }
        let again = try Harness.gattlab(["replay", "run", path + ".btsnoop", "--target", "unix:\(fresh.socket)", "--allow-writes", "--att-timeout", "3"], timeout: 120)
        // A drop or a hang "as recorded" is the same fault; a content finding (a password shown,
        // a notification over the MTU) replays equivalent, its bytes compared.
        let hangOrDrop = found == "link-dropped" || found == "no-answer"
        let same = again.status == 0 && (!hangOrDrop || again.stdout.contains("as recorded"))
        print("  reproducer on a fresh buggy device: exit \(again.status)\(same ? ", the same fault as recorded" : "")")
        XCTAssertTrue(same, "the reproducer does not replay to the same fault on a freshly started buggy device:\n\(again.stdout)\(again.stderr)", file: file, line: line)
        // ...and not on a healthy one.
        let healthy = try Self.independentDevice(kind, in: dir, name: "healthy")
        defer { healthy.stop() }
        let clean = try Harness.gattlab(["replay", "run", path + ".btsnoop", "--target", "unix:\(healthy.socket)", "--allow-writes", "--att-timeout", "3"], timeout: 120)
        XCTAssertEqual(clean.status, 1, "the reproducer replays equivalent on a healthy device too:\n\(clean.stdout)\(clean.stderr)", file: file, line: line)
        if hangOrDrop {
            XCTAssertFalse(clean.stdout.contains("as recorded"), "the healthy device shows the fault:\n\(clean.stdout)", file: file, line: line)
        }
        return finding
    }

    // MARK: Independent devices

    func testIndependentSpeakersBugsAreFoundFromSeed1() throws {
        try assertFound("speaker", bug: "ssid-exact-32", expecting: ["link-dropped"])
        try assertFound("speaker", bug: "start-slot-index", expecting: ["link-dropped"])
        try assertFound("speaker", bug: "status-cccd-index", expecting: ["no-answer"])
        try assertFound("speaker", bug: "preset-blob-leak", expecting: ["secret-disclosed", "memory-disclosure"])
    }

    func testIndependentSensorsBugsAreFoundFromSeed1() throws {
        try assertFound("sensor", bug: "end-marker-room", expecting: ["answer-over-mtu"])
        try assertFound("sensor", bug: "rescan-overflow", expecting: ["link-dropped"])
    }

    func testIndependentNRF7BugsAreFoundFromSeed1() throws {
        try assertFound("nrf7", bug: "pb-len-overrun", expecting: ["link-dropped"])
        try assertFound("nrf7", bug: "rescan-band-index", expecting: ["link-dropped"])
        try assertFound("nrf7", bug: "psk-64-overflow", expecting: ["link-dropped"])
    }

    func testAReproducerEndsAtTheFaultWhenTheDeviceTakesALinkWhileItResets() throws {
        // A device going down after a crash may still take a connection and drop it a moment
        // later (a controller accepts while its firmware resets): here for 30 ms. The check of
        // how the device came back meets that link first; it must try again, not report "it
        // accepted a connection again", and the reproducer's capture must end at the fault: a
        // capture with the dropped link in it expects a drop there that a device started afresh
        // does not make (a CI flake: "12 link-lost DIVERGED ... still connected after 5 s").
        let finding = try assertFound("speaker", bug: "start-slot-index", expecting: ["link-dropped"], options: ["--going-down", "30"])
        let detail = finding?["detail"] as? String ?? ""
        XCTAssertTrue(detail.contains("it came back in IDLE"), detail)
    }

    func testARawExchangeMTUHoldsTheDeviceToTheMTUItAsked() throws {
        // An input (in the corpus, as a campaign's mutations make them) that exchanges the MTU as
        // a raw PDU asking for 247, subscribes, and starts a scan: the healthy nRF7 device then
        // notifies 41-byte scan records on the MTU it agreed (244). The fuzzer once kept a fresh
        // link's MTU of 23 for it and reported those as answers over the MTU (a CI flake).
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let corpus = dir.appendingPathComponent("corpus")
        try FileManager.default.createDirectory(at: corpus, withIntermediateDirectories: true)
        // GATTInput: kind|extra<<4, target, length, value. raw 02 f7 00; subscribe the control
        // point (9) and data out (10); write START_SCAN (08 02) to the control point; wait 2.56 s.
        let input: [UInt8] = [0x08, 0, 3, 0x02, 0xF7, 0x00, 0x0B, 9, 0, 0x0B, 10, 0, 0x00, 9, 2, 0x08, 0x02, 0x77, 0, 0]
        try Data(input).write(to: corpus.appendingPathComponent("raw-mtu-then-scan"))
        let device = try Self.independentDevice("nrf7", in: dir)
        defer { device.stop() }
        let c = try Self.campaign(device, runs: 0, findings: dir.appendingPathComponent("findings"), extra: ["--corpus", corpus.path])
        XCTAssertEqual(c.result.status, 0, "a finding on a healthy device: \(c.findings.map { $0["detail"] ?? "" })\n\(c.result.stderr)")
        XCTAssertTrue(c.findings.isEmpty)
        // (With the old bookkeeping this input gave "answer-over-mtu: a 41-byte notification on
        // MTU 23" every time.)
    }

    func testHealthyIndependentDevicesGiveNoFindingIn1000Inputs() throws {
        // The three campaigns at once: each mostly waits for its device.
        final class Results: @unchecked Sendable { var campaigns: [String: Campaign] = [:]; var errors: [String] = []; let lock = NSLock() }
        let results = Results()
        let kinds = ["speaker", "sensor", "nrf7"]
        // Threads of their own: Harness.run reads pipes on Dispatch's pool, which concurrentPerform
        // would fill on a 2-core machine.
        let done = DispatchGroup()
        for kind in kinds {
            done.enter()
            Thread {
                defer { done.leave() }
                do {
                let dir = try Harness.temporaryDirectory()
                defer { try? FileManager.default.removeItem(at: dir) }
                let device = try Self.independentDevice(kind, in: dir)
                defer { device.stop() }
                let c = try Self.campaign(device, runs: 1000, findings: dir.appendingPathComponent("findings"))
                results.lock.withLock { results.campaigns[kind] = c }
                } catch {
                    results.lock.withLock { results.errors.append("\(kind): \(error)") }
                }
            }.start()
        }
        done.wait()
        XCTAssertEqual(results.errors, [])
        for kind in kinds {
            guard let c = results.campaigns[kind] else { continue }
            XCTAssertEqual(c.result.status, 0, "healthy \(kind): \(c.findings)")
            XCTAssertEqual(c.summary["runs"] as? Int, 1000)
            // The protocol was found by UUID on this device's own handles and driven past its first state.
            let protocols = c.blackBox["protocols"] as? [String] ?? []
            XCTAssertEqual(protocols.count, 1, "\(kind): \(protocols)")
            let rows = c.blackBox["coverage"] as? [[String: Any]] ?? []
            let states = Set(rows.compactMap { $0["state"] as? String }).subtracting(["start"])
            XCTAssertGreaterThanOrEqual(states.count, 2, "\(kind) reached states: \(states)")
            print("healthy \(kind): \(c.summary["runs"] ?? 0) inputs, \(c.blackBox["operations"] ?? 0) ATT operations, states \(states.sorted())")
        }
    }

    // MARK: gattlab's own emulator, its quirks

    func testEmulatorQuirksAreFoundByTheDeviceTarget() throws {
        // The unbounded queue either shows as such or, once the emulated firmware runs out of
        // memory, as its crash.
        let cases: [(String, String, Set<String>)] = [("speaker", "ssid-overflow", ["link-dropped"]), ("speaker", "short-status-write", ["link-dropped"]),
                                                      ("speaker", "unbounded-prepare-queue", ["unbounded-prepare-queue", "link-dropped"]),
                                                      ("sensor", "split-line-loss", ["scan-inconsistent"])]
        for (kind, quirk, expected) in cases {
            let dir = try Harness.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let device = try Self.emulator(kind, quirks: [quirk], in: dir)
            defer { device.stop() }
            // Up to 10,000 inputs: a campaign stops at its first finding, and the unbounded queue
            // needs a Prepare flood of more than 64 KiB, which seed 1 drew after 254 to 2,098
            // inputs in ten runs (the device's state between inputs depends on timing).
            let c = try Self.campaign(device, runs: 10_000, speed: 100, findings: dir.appendingPathComponent("findings"))
            XCTAssertTrue(expected.contains(c.findings.first?["kind"] as? String ?? "none"),
                          "\(kind) --quirk \(quirk): \(c.findings); unconfirmed: \(c.blackBox["unconfirmed"] ?? "none") \(c.result.stderr)")
        }
    }

    func testHealthyEmulatedDevicesGiveNoFinding() throws {
        for kind in ["speaker", "sensor", "nrf7"] {
            let dir = try Harness.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let device = try Self.emulator(kind, in: dir)
            defer { device.stop() }
            let c = try Self.campaign(device, runs: kind == "nrf7" ? 300 : 1000, speed: 100, findings: dir.appendingPathComponent("findings"))
            XCTAssertEqual(c.result.status, 0, "healthy emulated \(kind): \(c.findings)")
        }
    }

    // MARK: Seeds from a capture

    /// The campaign's first input is the recorded session's operations, aimed by UUID.
    func testSeedsFromACaptureStartWithThatSessionsWrites() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // An independent speaker: other handles than the capture's, so the seeds must go by UUID.
        let device = try Self.independentDevice("speaker", in: dir)
        defer { device.stop() }
        let capture = Harness.root.appendingPathComponent("Captures/speaker-ota-demo.btsnoop").path
        let corpus = dir.appendingPathComponent("corpus")
        let r = try Harness.gattlab(["fuzz", "device", "--target", "unix:\(device.socket)", "--seeds-from", capture, "--runs", "0",
                                     "--corpus", corpus.path, "--findings", dir.appendingPathComponent("f").path], timeout: 120)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("seeds from \(capture): "), r.stderr)
        // The seed written to the corpus: Exchange MTU, the subscription, then the credentials,
        // URL and START writes in the recorded order, each on the UUID's handle of this device.
        // The recorded URL is the capture's own (the flows write gattlab's).
        let inputs = Storage.inputs(in: corpus.path, maxLength: 4096).map(GATTInput.decode)
        let session = try XCTUnwrap(inputs.first { ops in
            let writes = ops.filter { $0.kind == .write || $0.kind == .longWrite }
            return writes.count == 3 && String(decoding: writes[1].value, as: UTF8.self).hasPrefix("http")
                && !String(decoding: writes[1].value, as: UTF8.self).contains("gattlab")
        }, "no seed with the session's three writes: \(inputs.map { $0.map(\.description) })")
        let writes = session.filter { $0.kind == .write || $0.kind == .longWrite }
        XCTAssertEqual(writes[2].value, [0x10, 0x00], "START")
        XCTAssertTrue(String(decoding: writes[1].value, as: UTF8.self).hasPrefix("http"), "the URL second")
        XCTAssertTrue(writes[0].value.contains(0), "the credentials first (SSID, NUL, password)")
        XCTAssertFalse(String(decoding: writes[0].value, as: UTF8.self).contains("correct"), "the recorded password is redacted")
    }

    // MARK: Errors

    func testAnUnreachableDeviceIsAnErrorNotAFinding() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try Harness.gattlab(["fuzz", "device", "--target", "unix:\(dir.path)/none.sock", "--runs", "10"], timeout: 60)
        XCTAssertEqual(r.status, 69, r.stderr)
        XCTAssertTrue(Harness.oneError(r.stderr), r.stderr)
        let usage = try Harness.gattlab(["fuzz", "device", "--runs", "10"], timeout: 60)
        XCTAssertEqual(usage.status, 64, usage.stderr)
        XCTAssertTrue(usage.stderr.contains("give the device with --target"), usage.stderr)
    }
}
