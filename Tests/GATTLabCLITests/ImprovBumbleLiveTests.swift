import Foundation
import XCTest

/// Issue 19: an Improv peripheral written with Bumble (Tests/Bumble/improv_device.py, on Bumble's
/// own ATT/GATT server: its handles, MTU handling and error codes) served live over the unix:
/// transport by Tests/Bumble/unix_peripheral.py, then replayed and fuzzed by GATTLab. Without the
/// venv they skip as BumbleCaptureTests do.
final class ImprovBumbleLiveTests: XCTestCase {
    typealias DeviceProcess = BlackBoxFuzzTests.DeviceProcess
    static let bridge = Harness.root.appendingPathComponent("Tests/Bumble/unix_peripheral.py").path
    static let emulated = Harness.root.appendingPathComponent("Captures/emulated")
    /// The Wi-Fi neighbourhood GATTLab's emulated recordings show (their scans, HomeNet's password).
    static let recordedWorld = Harness.root.appendingPathComponent("Tests/IndependentDevices/worlds/recorded-nrf7.json").path

    /// A Bumble Improv peripheral on a socket of `dir`, stopped by the caller.
    static func peripheral(_ arguments: [String], in dir: URL, name: String) throws -> DeviceProcess {
        let python = try BumbleCaptures.python()
        let socket = dir.appendingPathComponent("\(name).sock").path
        return try DeviceProcess([bridge, "--listen", socket, "--quiet"] + arguments, executable: python, socket: socket,
                                 log: dir.appendingPathComponent("\(name).log"))
    }

    struct Run {
        var status: Int32
        var report: [String: Any]
        var output: String
        var verdict: String { report["verdict"] as? String ?? "?" }
        var steps: [[String: Any]] { report["steps"] as? [[String: Any]] ?? [] }
        var diverged: [(step: Int, why: String)] {
            steps.filter { $0["status"] as? String == "diverged" }
                .map { ($0["step"] as? Int ?? 0, ($0["differences"] as? [String] ?? []).joined(separator: " | ")) }
        }
    }

    /// `capture` replayed against a freshly started peripheral (device state persists across
    /// links, as firmware's does: each capture starts at power-on).
    static func replay(_ capture: String, device arguments: [String], name: String, replay extra: [String] = []) throws -> Run {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let device = try peripheral(arguments, in: dir, name: name)
        defer { device.stop() }
        let r = try Harness.gattlab(["replay", "run", capture, "--target", "unix:\(device.socket)", "--allow-writes",
                                     "--format", "json", "--timing", "fast"] + extra, timeout: 120)
        let report = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any] ?? [:]
        return Run(status: r.status, report: report, output: r.stdout + r.stderr + "\ndevice: " + device.output)
    }

    // MARK: (a) the Bumble-made capture

    /// make_capture.py's Improv session (a Bumble phone and this same Bumble device on a
    /// LocalLink) replayed live by GATTLab: every step as recorded, the button press included.
    func testTheBumbleMadeCaptureReplaysEquivalentLive() throws {
        let capture = try ImprovBumbleTests.make("improv-provisioning")
        // As recorded: the user presses the button after the app read AUTHORIZATION_REQUIRED, and
        // the device reports identify and device info only.
        let run = try Self.replay(capture, device: ["--authorization", "button", "--capabilities", "0x03"], name: "as-recorded")
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.verdict, "equivalent", run.output)
        XCTAssertGreaterThanOrEqual(run.steps.count, 15, run.output)
        // The same session against a device that also scans: its Capabilities read differs.
        let other = try Self.replay(capture, device: ["--authorization", "button"], name: "scanning")
        XCTAssertEqual(other.verdict, "diverged", other.output)
        XCTAssertEqual(other.diverged.count, 1, other.output)
        XCTAssertTrue(other.diverged.first?.why.contains("recorded capabilities IDENTIFY,DEVICE_INFO, observed capabilities IDENTIFY,DEVICE_INFO,SCAN_WIFI") ?? false,
                      "\(other.diverged)")
    }

    /// `--set` on the Bumble phone's WIFI_SETTINGS, which it wrote in 20-byte pieces: the
    /// redacted script's command is rebuilt with a longer password and cut again (three writes
    /// where two were recorded). Bumble's device joins the pieces, checks the checksum and joins
    /// the network whose password is the new one; with another world it is unable to connect.
    func testSetRebuildsTheBumblePhonesCutWiFiSettingsLive() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = dir.appendingPathComponent("bumble-improv.json").path
        let e = try Harness.gattlab(["replay", "extract", try ImprovBumbleTests.make("improv-provisioning"), "-o", script])
        XCTAssertEqual(e.status, 0, e.stderr)
        let password = "a-new-and-much-longer-password-0042"
        let world = dir.appendingPathComponent("world.json")
        try Data(#"[{"ssid": "bumble-test-ssid", "rssi": -50, "auth": 3, "password": "\#(password)"}]"#.utf8).write(to: world)
        let device = ["--authorization", "button", "--capabilities", "0x03"]
        let run = try Self.replay(script, device: device + ["--world", world.path], name: "new-password", replay: ["--set", "password=\(password)"])
        XCTAssertEqual(run.verdict, "equivalent", run.output)
        let observed = run.steps.flatMap { $0["observed"] as? [String] ?? [] }
        XCTAssertTrue(observed.contains("the rebuilt value's last 2 pieces sent in this step"), "\(observed)")
        let refused = try Self.replay(script, device: device, name: "other-world", replay: ["--set", "password=\(password)"])
        XCTAssertEqual(refused.verdict, "diverged", refused.output)
        XCTAssertTrue(refused.output.contains("UNABLE_TO_CONNECT"), refused.output)
    }

    // MARK: (b) GATTLab's emulated recordings

    /// Each of Captures/emulated/improv-*: the device configured as the scenario's (who presses
    /// the button; the recorded Wi-Fi world), verdicts as observed. Healthy sessions are
    /// equivalent at both MTUs (at 23 the device info and URL are cut at another byte than the
    /// recorded device's); the device that reset while provisioning diverges at its link loss,
    /// which this one does not do (it provisions instead).
    func testEmulatedRecordingsReplayAgainstTheBumblePeripheral() throws {
        _ = try BumbleCaptures.python()
        let captures = try FileManager.default.contentsOfDirectory(atPath: Self.emulated.path)
            .filter { $0.hasPrefix("improv-") && $0.hasSuffix(".btsnoop") }.sorted()
        XCTAssertEqual(captures.count, 12, "\(captures)")
        func authorization(_ name: String) -> String {
            name.hasPrefix("improv-authorize-") ? "button" : name.hasPrefix("improv-not-authorized-") ? "never" : "none"
        }
        var cases: [(name: String, path: String, device: [String])] = captures.map { name in
            (name, Self.emulated.appendingPathComponent(name).path, ["--authorization", authorization(name), "--world", Self.recordedWorld])
        }
        // Controls that must diverge, so an equivalent verdict above means something: the app
        // that was never authorized meets a device without authorization, and the scanning
        // session meets a device with other networks (the built-in world).
        cases.append(("control:not-authorized-vs-authorized", Self.emulated.appendingPathComponent("improv-not-authorized-mtu247.btsnoop").path,
                      ["--authorization", "none", "--world", Self.recordedWorld]))
        cases.append(("control:provision-vs-other-world", Self.emulated.appendingPathComponent("improv-provision-mtu247.btsnoop").path,
                      ["--authorization", "none"]))
        let runs = try Self.concurrently(cases.enumerated().map { i, c in { try Self.replay(c.path, device: c.device, name: "d\(i)") } })
        var observed: [String] = []
        for (c, run) in zip(cases, runs) {
            observed.append("\(c.name): \(run.verdict)\(run.diverged.first.map { " at step \($0.step): \($0.why)" } ?? "")")
            switch c.name {
            case let n where n.hasPrefix("improv-reset-provisioning-"):
                XCTAssertEqual(run.verdict, "diverged", run.output)
                let step = try XCTUnwrap(run.steps.first { ($0["status"] as? String) == "diverged" && ($0["kind"] as? String ?? $0["action"] as? String ?? "").contains("link") }
                                             ?? run.steps.last { ($0["status"] as? String) == "diverged" }, run.output)
                let why = (step["differences"] as? [String] ?? []).joined(separator: " | ")
                XCTAssertTrue(why.contains("recorded: the device ended the link (0x08 Connection Timeout); observed: still connected"), "\(c.name): \(why)")
                XCTAssertTrue(why.contains("state PROVISIONED"), "\(c.name): the healthy device provisions instead: \(why)")
            case "control:not-authorized-vs-authorized":
                XCTAssertEqual(run.verdict, "diverged", run.output)
                XCTAssertTrue(run.diverged.contains { $0.why.contains("NOT_AUTHORIZED") }, "\(run.diverged)")
            case "control:provision-vs-other-world":
                XCTAssertEqual(run.verdict, "diverged", run.output)
                XCTAssertTrue(run.diverged.contains { $0.why.contains("FRITZ!Box 7590 XY") || $0.why.contains("network") }, "\(run.diverged)")
            default:
                XCTAssertEqual(run.status, 0, "\(c.name):\n\(run.output)")
                XCTAssertEqual(run.verdict, "equivalent", "\(c.name):\n\(run.output)")
            }
        }
        print("ImprovBumbleLiveTests replay verdicts:\n  " + observed.joined(separator: "\n  "))
    }

    /// Runs the closures on threads of their own, at most `width` at once (each mostly waits for
    /// its device; Harness.run reads pipes on Dispatch's pool, which concurrentPerform would fill).
    static func concurrently(_ jobs: [() throws -> Run], width: Int = 4) throws -> [Run] {
        final class Results: @unchecked Sendable {
            var values: [Int: Result<Run, any Error>] = [:]
            let lock = NSLock()
        }
        let results = Results()
        let slots = DispatchSemaphore(value: width)
        let done = DispatchGroup()
        for (i, job) in jobs.enumerated() {
            slots.wait()
            done.enter()
            nonisolated(unsafe) let job = job
            Thread {
                defer { slots.signal(); done.leave() }
                let r = Result { try job() }
                results.lock.withLock { results.values[i] = r }
            }.start()
        }
        done.wait()
        return try jobs.indices.map { try results.values[$0]!.get() }
    }

    // MARK: (c) black-box fuzzing

    /// The bridge runs the device 10 times faster than its firmware would (--time-scale 0.1):
    /// the campaign's waits and answer timeouts (5 s of device time: 500 ms) are in its time.
    static let speed = 10

    /// A campaign from seed 1 against a peripheral with one planted bug: the crash is found (the
    /// link dropped), within the bound, and the device's log names the bug that fired.
    func assertFound(_ bug: String, within runs: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let device = try Self.peripheral(["--bug", bug], in: dir, name: "buggy")
        defer { device.stop() }
        let started = Date()
        let c = try BlackBoxFuzzTests.campaign(device, runs: runs, speed: Self.speed, findings: dir.appendingPathComponent("findings"))
        let seconds = Date().timeIntervalSince(started)
        XCTAssertEqual(c.result.status, 1, "--bug \(bug): no finding in \(runs) inputs: \(c.result.stderr)\n\(device.output)", file: file, line: line)
        guard let finding = c.findings.first else { return }
        XCTAssertEqual(finding["kind"] as? String, "link-dropped", "\(finding)", file: file, line: line)
        XCTAssertLessThanOrEqual(finding["afterRuns"] as? Int ?? .max, runs, file: file, line: line)
        XCTAssertTrue(device.output.contains("CRASH bug=\(bug):"), "the device's log does not name \(bug):\n\(device.output)", file: file, line: line)
        XCTAssertEqual(c.blackBox["protocols"] as? [String] ?? [], ["Improv Wi-Fi"], "\(c.blackBox)", file: file, line: line)
        print("Bumble Improv --bug \(bug): \(finding["kind"] ?? "?") after \(finding["afterRuns"] ?? "?") inputs in \(String(format: "%.1f", seconds)) s: \(finding["detail"] ?? "")")
    }

    func testASSIDOfExactly32BytesIsFoundFromSeed1() throws {
        try assertFound("ssid-exact-32", within: 300)
    }

    func testStringLengthsPastTheFrameAreFoundFromSeed1() throws {
        try assertFound("settings-length-overrun", within: 300)
    }

    func testTheHealthyBumblePeripheralGivesNoFinding() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let device = try Self.peripheral([], in: dir, name: "healthy")
        defer { device.stop() }
        let started = Date()
        let c = try BlackBoxFuzzTests.campaign(device, runs: 200, speed: Self.speed, findings: dir.appendingPathComponent("findings"))
        XCTAssertEqual(c.result.status, 0, "healthy: \(c.findings)\n\(c.result.stderr)\n\(device.output)")
        XCTAssertEqual(c.summary["runs"] as? Int, 200)
        XCTAssertEqual(c.summary["unconfirmed"] as? [String] ?? [], [], "a stall of the bridge or of Bumble")
        XCTAssertFalse(device.output.contains("CRASH"), device.output)
        // The protocol was found by UUID on Bumble's handles and driven past its first state.
        XCTAssertEqual(c.blackBox["protocols"] as? [String] ?? [], ["Improv Wi-Fi"], "\(c.blackBox)")
        let states = Set((c.blackBox["coverage"] as? [[String: Any]] ?? []).compactMap { $0["state"] as? String }).subtracting(["start"])
        XCTAssertTrue(states.contains("PROVISIONED") || states.contains("UNABLE_TO_CONNECT"), "reached states: \(states)")
        print("healthy Bumble Improv: 200 inputs in \(String(format: "%.1f", Date().timeIntervalSince(started))) s, \(c.blackBox["operations"] ?? 0) ATT operations, states \(states.sorted())")
    }

    /// Bumble 0.0.236 as it is (unix_peripheral.py --bumble-as-is): its server leaves a request
    /// unanswered when it cannot parse it or when the attribute refuses it (it checks no
    /// permission); the fuzzer finds that on the healthy Improv device at once, as a stall.
    func testBumblesUnansweredRequestsAreFound() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let device = try Self.peripheral(["--bumble-as-is"], in: dir, name: "as-is")
        defer { device.stop() }
        let c = try BlackBoxFuzzTests.campaign(device, runs: 100, speed: Self.speed, findings: dir.appendingPathComponent("findings"))
        XCTAssertEqual(c.result.status, 1, "no finding in 100 inputs: \(c.result.stderr)")
        let finding = try XCTUnwrap(c.findings.first)
        XCTAssertEqual(finding["kind"] as? String, "no-answer", "\(finding)")
        XCTAssertFalse(device.output.contains("CRASH"), device.output)
        print("Bumble as it is: \(finding["kind"] ?? "?") after \(finding["afterRuns"] ?? "?") inputs: \(finding["detail"] ?? "")")
    }
}
