import ATT
import Emulator
import Foundation
import Profiles
import Protocols
import TestSupport
import XCTest
@testable import Replay

/// Replay against the in-process emulator: every recording of Captures/ is equivalent against the
/// device it was made with, faults show as divergences at the step where they act, and a target
/// that disconnects or hangs ends the replay with the step named.
final class ReplayTests: XCTestCase {
    static func script(_ name: String, reveal: Bool = true) throws -> SessionScript {
        try ScriptExtractor.extract(path: Files.root.appendingPathComponent("Captures/emulated/\(name).btsnoop").path,
                                    options: ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: reveal))
    }

    static func replay(_ script: SessionScript, on device: String, timing: ReplayTiming = .recorded,
                       options: ReplayOptions = ReplayOptions(protocols: GATTLabProtocols.all)) async throws -> ReplayReport {
        let spec = try XCTUnwrap(EmulatedDeviceSpec.named(device, protocols: GATTLabProtocols.all), "no device \(device)")
        var options = options
        options.timing = timing
        // As `replay run --target emu:NAME` builds it: the plain `esp` shaped by an ESP script.
        let link = EmulatedLink(seed: 1, device: ESPSessionReplay.emulatedDevice(spec, for: script, settings: options.settings))
        return try await ReplayRunner(script: script, options: options).run(on: link, target: "emu:\(device)")
    }

    /// The step of the first notification whose recorded meaning contains `text`.
    static func step(_ script: SessionScript, notifying text: String) -> Int? {
        script.steps.firstIndex { $0.action == .notification && ($0.expect?.meaning ?? "").contains(text) }.map { $0 + 1 }
    }

    func testEveryProjectCaptureIsEquivalentAgainstItsDevice() async throws {
        let captures = try Files.projectCaptures().filter { $0.contains("/emulated/") }
        XCTAssertGreaterThanOrEqual(captures.count, 74)
        for path in captures {
            let spec = try XCTUnwrap(EmulatedDeviceSpec.forRecording(named: path, protocols: GATTLabProtocols.all), path)
            let script = try ScriptExtractor.extract(path: path, options: ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: true))
            XCTAssertGreaterThan(script.steps.count, 5, path)
            for comparison in ReplayComparison.allCases {
                // --strict is the step-by-step comparison from before progress comparison: the
                // project's own recordings stay equivalent under both.
                let link = EmulatedLink(seed: 1, device: spec.factory)
                let report = try await ReplayRunner(script: script, options: ReplayOptions(protocols: GATTLabProtocols.all, comparison: comparison))
                    .run(on: link, target: "emu:\(spec.name)")
                XCTAssertEqual(report.verdict, .equivalent, "\(path) (\(comparison)):\n\(report.text(verbose: false, color: false))")
            }
        }
    }

    func testAFaultIsADivergenceAtTheStepItActs() async throws {
        // Recorded with the wrong password, replayed against a speaker that joins: the ERROR
        // notification is where it differs.
        let wrong = try Self.script("speaker-wrong-password-mtu247")
        let report = try await Self.replay(wrong, on: "speaker")
        XCTAssertEqual(report.verdict, .diverged)
        let errorStep = try XCTUnwrap(Self.step(wrong, notifying: "ERROR"))
        XCTAssertEqual(report.firstProblem, errorStep, report.text(verbose: true, color: false))
        let first = try XCTUnwrap(report.steps.first { $0.step == errorStep })
        XCTAssertTrue(first.differences.joined().contains("where the recording reached status ERROR error WIFI_CONNECT"), "\(first.differences)")

        // The reverse: a normal session against the speaker with the wrong password.
        let normal = try Self.script("speaker-ota-mtu247")
        let reverse = try await Self.replay(normal, on: "speaker-wrong-password")
        XCTAssertEqual(reverse.verdict, .diverged)
        XCTAssertEqual(reverse.firstProblem, Self.step(normal, notifying: "WIFI_CONNECTED"), reverse.text(verbose: true, color: false))
    }

    func testScanWithoutEndAndDroppedNotificationsDiverge() async throws {
        let normal = try Self.script("sensor-scan-mtu247")
        let missingEnd = try await Self.replay(normal, on: "sensor-scan-missing-end")
        XCTAssertEqual(missingEnd.verdict, .diverged, missingEnd.text(verbose: true, color: false))
        let lastChunk = try XCTUnwrap(normal.steps.lastIndex { $0.action == .notification }) + 1
        XCTAssertEqual(missingEnd.firstProblem, lastChunk, "the chunk that carried END differs")

        let dropped = try await Self.replay(normal, on: "sensor-scan-dropped")
        XCTAssertEqual(dropped.verdict, .diverged)
        let firstChunk = try XCTUnwrap(normal.steps.firstIndex { $0.action == .notification }) + 1
        XCTAssertEqual(dropped.firstProblem, firstChunk, dropped.text(verbose: true, color: false))
        // Compared by protocol progress, a lost chunk is the networks it carried.
        XCTAssertTrue(dropped.steps[firstChunk - 1].differences.joined().contains("networks recorded but not observed"),
                      dropped.text(verbose: true, color: false))
        let strict = try await Self.replay(normal, on: "sensor-scan-dropped", options: ReplayOptions(protocols: GATTLabProtocols.all, comparison: .strict))
        XCTAssertTrue(strict.steps[firstChunk - 1].differences.joined().contains("no notification within"),
                      "--strict waits for each recorded notification: \(strict.text(verbose: true, color: false))")

        // And the reverse: the recording without END, against a sensor that sends it.
        let recordedMissing = try Self.script("sensor-scan-missing-end-mtu247")
        let withEnd = try await Self.replay(recordedMissing, on: "sensor")
        XCTAssertEqual(withEnd.verdict, .diverged, withEnd.text(verbose: true, color: false))
    }

    func testRSSIAndProgressDifferencesAreTolerated() {
        let a = Array("HomeNet,-41\nCafe,-70\nEN".utf8)
        let b = Array("HomeNet,-88\nCafe,-7\nEN".utf8)
        XCTAssertNil(ValueMeaning.difference(recorded: a, observed: b, characteristic: SensorScan.characteristic, protocols: GATTLabProtocols.all))
        XCTAssertNotNil(ValueMeaning.difference(recorded: a, observed: Array("HomeNet2,-41\nCafe,-70\nEN".utf8),
                                                characteristic: SensorScan.characteristic, protocols: GATTLabProtocols.all))
        let s1 = SpeakerOTA.Status(state: .downloading, progress: 10, downloadedKB: 100, totalKB: 1480, rssi: -50).encode()
        let s2 = SpeakerOTA.Status(state: .downloading, progress: 60, downloadedKB: 900, totalKB: 1480, rssi: -61).encode()
        let s3 = SpeakerOTA.Status(state: .error, error: .download, progress: 60).encode()
        XCTAssertNil(ValueMeaning.difference(recorded: s1, observed: s2, characteristic: SpeakerOTA.status, protocols: GATTLabProtocols.all))
        XCTAssertNotNil(ValueMeaning.difference(recorded: s1, observed: s3, characteristic: SpeakerOTA.status, protocols: GATTLabProtocols.all))
        XCTAssertNotNil(ValueMeaning.difference(recorded: s1, observed: s2, characteristic: nil, protocols: GATTLabProtocols.all), "other characteristics compare bytes")
    }

    func testADisconnectMidSessionEndsTheReplayAtThatStep() async throws {
        let normal = try Self.script("speaker-ota-mtu247")
        let report = try await Self.replay(normal, on: "speaker-disconnect-downloading")
        XCTAssertEqual(report.verdict, .targetFailed, report.text(verbose: true, color: false))
        let failed = try XCTUnwrap(report.failure)
        XCTAssertEqual(failed.differences.last, "the target disconnected")
        XCTAssertEqual(failed.action, "notification")
        XCTAssertTrue(report.steps.dropFirst(failed.step).allSatisfy { $0.status == .notRun })
        XCTAssertEqual(report.steps.count, normal.steps.count)
    }

    func testAHungDeviceEndsAtTheATTTimeoutWithTheStepNamed() async throws {
        // The speaker hangs as it starts downloading; the phone's next request gets no answer.
        var script = try Self.script("speaker-reboot-validate-mtu247")
        script.steps = Array(script.steps.prefix { $0.action != .linkLost })
        let report = try await Self.replay(script, on: "speaker-hangs-downloading")
        XCTAssertEqual(report.verdict, .targetFailed, report.text(verbose: true, color: false))
        let failed = try XCTUnwrap(report.failure)
        XCTAssertEqual(failed.action, "write", "REBOOT is the first request after the hang")
        XCTAssertTrue(failed.differences.last?.contains("ATT transaction timeout (30 s)") == true, "\(failed.differences)")
        XCTAssertGreaterThan(report.duration, 30_000_000, "the timeout runs on the emulator's virtual clock")
    }

    func testRedactedScriptsNeedSetAndSendWhatItGives() async throws {
        let script = try Self.script("speaker-ota-mtu23", reveal: false)
        XCTAssertTrue(script.redacted)
        let json = script.json()
        let password = "correct horse battery staple"
        XCTAssertFalse(json.contains(password))
        XCTAssertFalse(json.contains(Hex.string(Array(password.utf8))), "no password bytes in hex either")
        XCTAssertFalse(json.contains(Hex.string(Array(password.utf8.prefix(8)))))
        let credentialsStep = try XCTUnwrap(script.steps.firstIndex { $0.credentials?.format == "speaker-credentials" })
        XCTAssertEqual(script.steps[credentialsStep].credentials?.ssid, "HomeNet")

        do {
            _ = try ReplayRunner(script: script, options: ReplayOptions(protocols: GATTLabProtocols.all)).values()
            XCTFail("a redacted password must be given with --set")
        } catch {
            XCTAssertTrue(error.description.contains("--set password="), error.description)
            XCTAssertTrue(error.description.contains("step \(credentialsStep + 1)"), error.description)
        }

        let link = EmulatedLink(seed: 1, device: SpeakerDevice.factory(SpeakerConfiguration()))
        let options = ReplayOptions(protocols: GATTLabProtocols.all, timing: .recorded, settings: ["password": "lab-network-pass", "ssid": "LabNet"])
        let report = try await ReplayRunner(script: script, options: options).run(on: link, target: "emu:speaker")
        XCTAssertEqual(report.verdict, .equivalent, report.text(verbose: true, color: false))
        let sent = await link.withDevice { ($0 as? SpeakerDevice)?.credentials }
        XCTAssertEqual(sent?.ssidText, "LabNet")
        XCTAssertEqual(sent?.password.unsafeBytes, Array("lab-network-pass".utf8))

        let revealed = try Self.script("speaker-ota-mtu23", reveal: true)
        XCTAssertTrue(revealed.json().contains(Hex.string(Array(password.utf8))))
    }

    func testSecretsInReadsAndURLsAreRedactedToo() throws {
        let readback = try Self.script("speaker-credentials-readback-mtu23", reveal: false).json()
        XCTAssertFalse(readback.contains(Hex.string(Array("correct horse".utf8))), "the read-back password is redacted")
        let url = try Self.script("speaker-url-secrets-mtu247", reveal: false)
        let json = url.json()
        XCTAssertFalse(json.contains("hunter2"))
        XCTAssertFalse(json.contains(Hex.string(Array("hunter2".utf8))))
        XCTAssertFalse(json.contains("8c1f4e2ad9b7"))
        XCTAssertThrowsError(try ReplayRunner(script: url, options: ReplayOptions(protocols: GATTLabProtocols.all)).values(), "the URL's secrets need --set url=")
        let nrf7 = try Self.script("nrf7-provision-mtu247", reveal: false).json()
        XCTAssertFalse(nrf7.contains(Hex.string(Array(WiFiEnvironment.homePassphrase.utf8))))
        let esp = try Self.script("esp-sec0-provision-mtu247", reveal: false).json()
        XCTAssertFalse(esp.contains(Hex.string(Array(WiFiEnvironment.homePassphrase.utf8))))
    }

    func testSetRebuildsProvisioningMessages() async throws {
        let script = try Self.script("nrf7-provision-mtu247", reveal: false)
        let link = EmulatedLink(seed: 1, device: NRF7Device.factory(NRF7Configuration()))
        let options = ReplayOptions(protocols: GATTLabProtocols.all, settings: ["password": "not the right one"])
        let report = try await ReplayRunner(script: script, options: options).run(on: link, target: "emu:nrf7")
        // A wrong passphrase: the nRF7 fails to authenticate where the recording connected.
        XCTAssertEqual(report.verdict, .diverged, report.text(verbose: true, color: false))
    }

    func testReadOnlySkipsWritesAndSaysSo() async throws {
        let script = try Self.script("speaker-ota-mtu247")
        let report = try await Self.replay(script, on: "speaker", options: ReplayOptions(protocols: GATTLabProtocols.all, readOnly: true))
        XCTAssertEqual(report.verdict, .equivalent, report.text(verbose: true, color: false))
        let skipped = report.steps.filter { $0.status == .skipped }
        XCTAssertTrue(skipped.contains { $0.action == "write" })
        XCTAssertFalse(report.steps.contains { $0.action == "read" && $0.status == .skipped }, "reads still run")
        XCTAssertTrue(skipped.allSatisfy { !$0.differences.isEmpty })
    }

    func testScriptsRoundTripAndBadScriptsSayWhere() throws {
        let script = try Self.script("speaker-reboot-validate-mtu23")
        let parsed = try SessionScript.parse(Data(script.json().utf8), path: "s.json", protocols: GATTLabProtocols.all)
        XCTAssertEqual(parsed, script)
        XCTAssertEqual(script.device, "speaker")
        XCTAssertEqual(script.steps.filter { $0.action == .connect }.count, 2, "the reconnection after REBOOT is in the script")
        XCTAssertTrue(script.steps.contains { $0.action == .linkLost })

        func message(_ text: String) -> String {
            do {
                _ = try SessionScript.parse(Data(text.utf8), path: "s.json", protocols: GATTLabProtocols.all)
                return "parsed"
            } catch {
                return error.description
            }
        }
        XCTAssertTrue(message("{").hasPrefix("s.json: not JSON"), message("{"))
        XCTAssertTrue(message(#"{"schema":"other/1","source":{"capture":"x","connections":[],"start":0},"redacted":false,"steps":[]}"#)
            .contains("schema 'other/1'"))
        var bad = script
        bad.steps[3].value = "zz"
        bad.steps[3].action = .write
        XCTAssertTrue(message(bad.json()).contains("step 4 (write): 'value' is not hex bytes"), message(bad.json()))
        var missing = script
        missing.steps[1].mtu = nil
        XCTAssertTrue(message(missing.json()).contains("step 2 (exchange-mtu): needs 'mtu'"), message(missing.json()))
        XCTAssertTrue(message(#"{"schema":"gattlab.replay/1","source":{"capture":"x","connections":[],"start":0},"redacted":false,"steps":[{"at":0}]}"#)
            .contains("step 1 lacks 'action'"))
    }

    func testHandEditedExtremesNeitherTrapNorHang() async throws {
        var script = try Self.script("sensor-scan-mtu247")
        for i in script.steps.indices {
            script.steps[i].at = i.isMultiple(of: 2) ? Int64.max : Int64.min
            if script.steps[i].action == .notification { script.steps[i].timeout = Int64.max }
        }
        for timing in [ReplayTiming.recorded, .scaled(0.001), .fast] {
            let report = try await Self.replay(script, on: "sensor", timing: timing)
            XCTAssertEqual(report.steps.count, script.steps.count, "every step reported (\(timing))")
        }
    }

    func testExtractionErrorsNameWhatExists() throws {
        let path = Files.root.appendingPathComponent("Captures/emulated/sensor-scan-mtu247.btsnoop").path
        XCTAssertThrowsError(try ScriptExtractor.extract(path: path, options: ExtractOptions(protocols: GATTLabProtocols.all, connection: "0x0099"))) { error in
            XCTAssertTrue("\(error)".contains("it has: 0x0040"), "\(error)")
        }
        XCTAssertThrowsError(try ScriptExtractor.extract(path: path, options: ExtractOptions(protocols: GATTLabProtocols.all, peer: "00:11:22:33:44:55")))
        let one = try ScriptExtractor.extract(path: path, options: ExtractOptions(protocols: GATTLabProtocols.all, connection: "0x0040"))
        XCTAssertEqual(one.source.connections, ["0x0040"])
    }

    func testTimingScalesDelaysOnly() async throws {
        let script = try Self.script("sensor-scan-mtu247")
        let recorded = try await Self.replay(script, on: "sensor", timing: .recorded)
        let fast = try await Self.replay(script, on: "sensor", timing: .fast)
        let double = try await Self.replay(script, on: "sensor", timing: .scaled(2))
        XCTAssertEqual(recorded.verdict, .equivalent)
        XCTAssertEqual(fast.verdict, .equivalent, fast.text(verbose: true, color: false))
        XCTAssertEqual(double.verdict, .equivalent)
        XCTAssertLessThan(fast.duration, recorded.duration)
        XCTAssertLessThan(double.duration, recorded.duration)
        XCTAssertEqual(ReplayTiming("fast"), .fast)
        XCTAssertEqual(ReplayTiming("4"), .scaled(4))
        XCTAssertNil(ReplayTiming("-1"))
        XCTAssertNil(ReplayTiming("soon"))
    }
}

/// The same replays through an emulator served on a Unix socket: the emulator and the replay's
/// clock run at one speed, so recorded delays and device timers keep their order.
final class ReplayOverUnixSocketTests: XCTestCase {
    func testEveryProjectCaptureIsEquivalentThroughUnix() async throws {
        let dir = try Files.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let captures = try Files.projectCaptures().filter { $0.contains("/emulated/") }
        for (i, path) in captures.enumerated() {
            let spec = try XCTUnwrap(EmulatedDeviceSpec.forRecording(named: path, protocols: GATTLabProtocols.all), path)
            // ESP-IDF recordings with the scenario phone's key and PoP: the session runs live, so
            // a device that answers a poll sooner or later than recorded (a loaded machine) is
            // compared by meaning; the recorded ciphertext would desynchronise the CTR stream.
            let script = try ScriptExtractor.extract(path: path, options: ESPLiveReplayTests.liveOptions(for: path))
            if spec.kind == "esp" { XCTAssertEqual(script.esp?.live, true, path) }
            // About a fifth of a second of wall time each, whatever the session's length: fast
            // enough for CI, slow enough that a loaded machine's pauses stay small in device time.
            // Device time follows the wall clock in both processes: a loaded machine can stall one
            // long enough to change a race between a device timer and the phone's timeout. A run
            // that differs is tried again five times slower, and must then be equivalent.
            var speed = min(2000, max(50, (Double(script.steps.last?.at ?? 0) / 200_000).rounded()))
            var report = try await replay(script, spec, socket: dir.appendingPathComponent("e\(i).sock").path, speed: speed)
            if report.verdict != .equivalent {
                speed = max(10, (speed / 5).rounded())
                report = try await replay(script, spec, socket: dir.appendingPathComponent("r\(i).sock").path, speed: speed)
            }
            XCTAssertEqual(report.verdict, .equivalent, "\(path) at \(speed)x:\n\(report.text(verbose: false, color: false))")
        }
    }

    func replay(_ script: SessionScript, _ spec: EmulatedDeviceSpec, socket: String, speed: Double) async throws -> ReplayReport {
        let emulator = try SocketEmulator(device: spec, seed: 1, path: socket, speed: speed)
        let stop = StopSignal()
        let served = Task { await emulator.serve(stop: stop) }
        let report = try await ReplayRunner(script: script, options: ReplayOptions(protocols: GATTLabProtocols.all)).run(on: UnixSocketLink(path: socket, speed: speed), target: "unix:\(socket)")
        stop.stop()
        _ = await served.value
        return report
    }

    func testADeviceThatStopsAnsweringEndsAtTheATTTimeout() async throws {
        let dir = try Files.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = try ReplayTests.script("speaker-reboot-validate-mtu247")
        let spec = try XCTUnwrap(EmulatedDeviceSpec.named("speaker-hangs-downloading", protocols: GATTLabProtocols.all))
        let socket = dir.appendingPathComponent("hang.sock").path
        let emulator = try SocketEmulator(device: spec, seed: 1, path: socket, speed: 500)
        let stop = StopSignal()
        let served = Task { await emulator.serve(stop: stop) }
        let started = Date()
        let options = ReplayOptions(protocols: GATTLabProtocols.all, timing: .recorded, attTimeout: 30_000_000)
        let report = try await ReplayRunner(script: script, options: options).run(on: UnixSocketLink(path: socket, speed: 500), target: "unix")
        stop.stop()
        _ = await served.value
        XCTAssertEqual(report.verdict, .targetFailed, report.text(verbose: true, color: false))
        XCTAssertTrue(report.failure?.differences.last?.contains("ATT transaction timeout") == true)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "30 s of device time at 500x: nothing hangs")
    }

    func testNoEmulatorIsATargetFailureAtTheFirstStep() async throws {
        let script = try ReplayTests.script("sensor-scan-mtu247")
        let link = UnixSocketLink(path: "/nonexistent/gattlab.sock")
        var options = ReplayOptions(protocols: GATTLabProtocols.all)
        options.connectFailure = { await link.lastError?.description }
        let report = try await ReplayRunner(script: script, options: options).run(on: link, target: "unix")
        XCTAssertEqual(report.verdict, .targetFailed)
        XCTAssertEqual(report.failure?.step, 1)
        XCTAssertTrue(report.failure?.differences.last?.hasPrefix("cannot connect: cannot connect to unix:/nonexistent") == true,
                      "\(report.failure?.differences ?? [])")
    }
}
