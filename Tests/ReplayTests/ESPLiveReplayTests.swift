import ATT
import Capture
import Emulator
import Foundation
import Profiles
import Protocols
import TestSupport
import XCTest
@testable import Replay

/// ESP-IDF provisioning replayed as a live protocomm client: scripts extracted with the phone's
/// key carry the session's plaintext, the replay makes its own session with the device and
/// compares the decrypted answers by meaning. That is what makes a recorded security 1 session
/// run against a device with other keys (another seed, another implementation); the recorded
/// ciphertext runs only against the recorded keys.
final class ESPLiveReplayTests: XCTestCase {
    // MARK: helpers

    /// The PoP the scenario's phone used: the device's, except in the wrong-PoP scenario.
    static func phonePoP(_ scenario: String) -> String {
        scenario == "esp-sec1-wrong-pop" ? "abcd1235" : ESPConfiguration().proofOfPossession
    }

    /// Extraction with the scenario phone's client key and PoP, so an ESP recording replays live.
    static func liveOptions(for path: String, reveal: Bool = true) -> ExtractOptions {
        var options = ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: reveal)
        guard let spec = EmulatedDeviceSpec.forRecording(named: path, protocols: GATTLabProtocols.all), spec.kind == "esp" else { return options }
        options.keys["esp-client-key"] = Secret(Scenario.espClientPrivateKey, label: "ESP client private key")
        options.keys["esp-pop"] = Secret(Array(phonePoP(spec.name).utf8), label: "ESP proof of possession")
        return options
    }

    static func path(_ name: String) -> String {
        Files.root.appendingPathComponent("Captures/emulated/\(name).btsnoop").path
    }

    static func live(_ name: String, reveal: Bool = true) throws -> SessionScript {
        try ScriptExtractor.extract(path: path(name), options: liveOptions(for: path(name), reveal: reveal))
    }

    static func run(_ script: SessionScript, _ device: @escaping DeviceFactory, seed: UInt64 = 1,
                    options: ReplayOptions = ReplayOptions(protocols: GATTLabProtocols.all)) async throws -> ReplayReport {
        try await ReplayRunner(script: script, options: options).run(on: EmulatedLink(seed: seed, device: device), target: "emu")
    }

    static func scenarioDevice(_ name: String) throws -> DeviceFactory {
        try XCTUnwrap(EmulatedDeviceSpec.named(name, protocols: GATTLabProtocols.all), name).factory
    }

    /// The plain `esp` device shaped by the script, as `replay run --target emu:esp` builds it.
    static func shapedESP(_ script: SessionScript, settings: [String: String] = [:]) throws -> DeviceFactory {
        ESPSessionReplay.emulatedDevice(try XCTUnwrap(EmulatedDeviceSpec.named("esp", protocols: GATTLabProtocols.all)), for: script, settings: settings)
    }

    /// The 1-based step of the first step matching `predicate`.
    static func step(_ script: SessionScript, _ predicate: (ReplayStep) -> Bool) throws -> Int {
        try XCTUnwrap(script.steps.firstIndex(where: predicate), "no such step") + 1
    }

    /// The recorded session message a step writes or reads.
    static func session(_ step: ReplayStep) -> ESPProvisioning.SessionMessage.Payload? {
        let hex = step.action == .write ? step.plain ?? step.value : step.expect?.plain ?? step.expect?.value
        guard step.characteristic == ESPProvisioning.Endpoint.session.defaultUUID.canonicalString,
              let bytes = hex.flatMap(Hex.bytes) else { return nil }
        return ESPProvisioning.SessionMessage.decode(bytes).0?.payload
    }

    static func isCommand1(_ step: ReplayStep) -> Bool {
        guard step.action == .write, case .sec1Command1? = session(step) else { return false }
        return true
    }

    /// The last read of the station's status (CmdGetStatus's answer).
    static func lastStatusRead(_ script: SessionScript) throws -> Int {
        try XCTUnwrap(script.steps.lastIndex { $0.action == .read && ($0.expect?.meaning ?? "").hasPrefix("RespGetStatus") }) + 1
    }

    static let homePassword = ["password": WiFiEnvironment.homePassphrase]

    // MARK: (a) every recording, live

    func testEveryESPCaptureReplaysLiveAgainstItsDeviceAndTheShapedESP() async throws {
        let captures = try Files.projectCaptures().filter { $0.contains("/emulated/esp-") }
        XCTAssertGreaterThanOrEqual(captures.count, 12)
        for path in captures {
            let spec = try XCTUnwrap(EmulatedDeviceSpec.forRecording(named: path, protocols: GATTLabProtocols.all), path)
            let script = try ScriptExtractor.extract(path: path, options: Self.liveOptions(for: path))
            let esp = try XCTUnwrap(script.esp, path)
            XCTAssertTrue(esp.live, "\(path): \(esp.note ?? "")")
            if !path.contains("wrong-pop") {
                XCTAssertTrue(script.steps.contains { $0.plain != nil }, "\(path): no plaintext")
                XCTAssertTrue(script.steps.contains { $0.expect?.plain != nil }, "\(path): no plaintext answers")
            }
            let report = try await Self.run(script, spec.factory)
            XCTAssertEqual(report.verdict, .equivalent, "\(path):\n\(report.text(verbose: true, color: false))")
            let text = report.text(verbose: true, color: false)
            if esp.security == 1, !path.contains("wrong-pop") {
                XCTAssertTrue(text.contains("session sec1 established live"), "\(path):\n\(text)")
                XCTAssertTrue(text.contains("Session_Command0 with the replay's own client key"), path)
            } else if esp.security == 0 {
                XCTAssertTrue(text.contains("session sec0 established live"), "\(path):\n\(text)")
            }
            // The plain emulated ESP, shaped by the recording (scheme, proto-ver, PoP), and with
            // another seed: other device keys, random, IP addresses and RSSIs.
            for seed: UInt64 in [1, 2] {
                let shaped = try await Self.run(script, try Self.shapedESP(script), seed: seed)
                XCTAssertEqual(shaped.verdict, .equivalent, "\(path) against emu:esp, seed \(seed):\n\(shaped.text(verbose: true, color: false))")
            }
        }
    }

    func testAWrongPoPAtRunTimeDivergesAtTheSessionStep() async throws {
        let script = try Self.live("esp-sec1-provision-mtu247")
        let command1 = try Self.step(script, Self.isCommand1)
        let report = try await Self.run(script, try Self.scenarioDevice("esp-sec1-provision"),
                                        options: ReplayOptions(protocols: GATTLabProtocols.all, settings: ["pop": "abcd9999"]))
        XCTAssertEqual(report.verdict, .diverged, report.text(verbose: true, color: false))
        XCTAssertEqual(report.firstProblem, command1, report.text(verbose: true, color: false))
        let refused = report.steps[command1 - 1]
        XCTAssertTrue(refused.differences.contains("recorded success, observed ATT error Invalid PDU (0x04)"), "\(refused.differences)")
        XCTAssertTrue(refused.observed.joined().contains("PoP from --set pop="), "\(refused.observed)")
        // Nothing is sent through a session that does not exist, and each step says so.
        let scanWrite = try XCTUnwrap(report.steps.first { $0.step > command1 + 1 && $0.action == "write" })
        XCTAssertTrue(scanWrite.differences.first?.hasPrefix("not sent: the device refused Session_Command1") == true, "\(scanWrite.differences)")

        // The recorded wrong-PoP session fails the same way (equivalent, in the test above); given
        // the device's PoP it succeeds where the recording failed: a divergence at that step.
        let wrong = try Self.live("esp-sec1-wrong-pop-mtu247")
        XCTAssertEqual(wrong.esp?.pop, "abcd1235", "the script carries the PoP the phone used")
        let right = try await Self.run(wrong, try Self.scenarioDevice("esp-sec1-wrong-pop"),
                                       options: ReplayOptions(protocols: GATTLabProtocols.all, settings: ["pop": ESPConfiguration().proofOfPossession]))
        XCTAssertEqual(right.verdict, .diverged)
        XCTAssertEqual(right.firstProblem, try Self.step(wrong, Self.isCommand1), right.text(verbose: true, color: false))
        XCTAssertTrue(right.steps.contains { $0.differences.contains { $0.hasPrefix("recorded ATT error 0x04") } })
    }

    // MARK: (b) the live client is real

    func testAnotherDeviceKeyWorksLiveAndNotWithTheRecordedBytes() async throws {
        for name in ["esp-sec1-provision-mtu23", "esp-sec1-no-pop-mtu247"] {
            let scenario = try XCTUnwrap(EmulatedDeviceSpec.forRecording(named: name, protocols: GATTLabProtocols.all)).name
            let live = try Self.live(name)
            // Seed 2: another X25519 device key and device_random, other scan RSSIs and IP address.
            let report = try await Self.run(live, try Self.scenarioDevice(scenario), seed: 2)
            XCTAssertEqual(report.verdict, .equivalent, "\(name):\n\(report.text(verbose: true, color: false))")

            let recorded = try ScriptExtractor.extract(path: Self.path(name), options: ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: true))
            XCTAssertEqual(recorded.esp?.live, false)
            XCTAssertFalse(recorded.steps.contains { $0.plain != nil || $0.expect?.plain != nil })
            let same = try await Self.run(recorded, try Self.scenarioDevice(scenario), seed: 1)
            XCTAssertEqual(same.verdict, .equivalent, "the recorded bytes still work against the recorded keys:\n\(same.text(verbose: true, color: false))")
            let other = try await Self.run(recorded, try Self.scenarioDevice(scenario), seed: 2)
            XCTAssertEqual(other.verdict, .diverged, "\(name): the recorded ciphertext against other keys")
            let response0 = try Self.step(recorded) {
                guard $0.action == .read, case .sec1Response0? = Self.session($0) else { return false }
                return true
            }
            XCTAssertEqual(other.firstProblem, response0, other.text(verbose: true, color: false))
            XCTAssertTrue(other.steps.contains { $0.action == "write" && $0.differences.contains("recorded success, observed ATT error Invalid PDU (0x04)") })
        }
    }

    func testWithoutTheClientKeyTheRecordedBytesAreSentAndTheReportSaysSo() async throws {
        let name = "esp-sec1-provision-mtu247"
        let recorded = try ScriptExtractor.extract(path: Self.path(name), options: ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: true))
        XCTAssertEqual(recorded.esp?.security, 1)
        XCTAssertTrue(recorded.esp?.note?.contains("no --esp-client-key") == true, "\(recorded.esp?.note ?? "")")
        let report = try await Self.run(recorded, try Self.scenarioDevice("esp-sec1-provision"))
        let command0 = try Self.step(recorded) {
            guard $0.action == .write, case .sec1Command0? = Self.session($0) else { return false }
            return true
        }
        let note = report.steps[command0 - 1].observed.joined(separator: "; ")
        XCTAssertTrue(note.contains("recorded ciphertext works only against the recorded device's keys"), note)
        XCTAssertTrue(note.contains("--esp-client-key"), note)
        XCTAssertEqual(report.steps.filter { $0.observed.joined().contains("recorded ciphertext") }.count, 1, "said once")

        // A key of another phone, and a PoP the phone did not use, say what is wrong.
        var options = Self.liveOptions(for: Self.path(name))
        options.keys["esp-client-key"] = Secret([UInt8](repeating: 7, count: 32), label: "key")
        let otherPhone = try ScriptExtractor.extract(path: Self.path(name), options: options)
        XCTAssertEqual(otherPhone.esp?.live, false)
        XCTAssertTrue(otherPhone.esp?.note?.contains("does not belong to this session's phone") == true, "\(otherPhone.esp?.note ?? "")")
        options = Self.liveOptions(for: Self.path(name))
        options.keys["esp-pop"] = Secret(Array("nope".utf8), label: "pop")
        let otherPoP = try ScriptExtractor.extract(path: Self.path(name), options: options)
        XCTAssertEqual(otherPoP.esp?.live, false)
        XCTAssertTrue(otherPoP.esp?.note?.contains("does not verify with --esp-pop") == true, "\(otherPoP.esp?.note ?? "")")
        XCTAssertFalse(otherPoP.steps.contains { $0.plain != nil })
    }

    // MARK: (c) a wrong password, by meaning

    func testAWrongPasswordDivergesAtTheStatusStepNamingTheFailure() async throws {
        let script = try Self.live("esp-sec1-provision-mtu247")
        let status = try Self.lastStatusRead(script)

        // The device's fault: its home network has another passphrase than the one recorded.
        var base = ESPConfiguration()
        var environment = WiFiEnvironment.neighbourhood(seed: 1)
        for i in environment.networks.indices where environment.networks[i].ssid == WiFiEnvironment.homeSSID {
            environment.networks[i].passphrase = "the router was reset"
        }
        base.environment = environment
        let device = ESPDevice.factory(ESPSessionReplay.deviceConfiguration(for: script, base: base))
        let report = try await Self.run(script, device)
        XCTAssertEqual(report.verdict, .diverged, report.text(verbose: true, color: false))
        XCTAssertEqual(report.firstProblem, status, report.text(verbose: true, color: false))
        XCTAssertEqual(report.steps[status - 1].differences,
                       ["recorded station Connected to \"HomeNet\" (\(Self.recordedIP(script, status))), observed station ConnectionFailed AuthError"])

        // The phone's: --set password= rebuilds the plaintext CmdSetConfig before it is encrypted.
        let phone = try await Self.run(script, try Self.scenarioDevice("esp-sec1-provision"),
                                       options: ReplayOptions(protocols: GATTLabProtocols.all, settings: ["password": "not the password"]))
        XCTAssertEqual(phone.firstProblem, status, phone.text(verbose: true, color: false))
        XCTAssertTrue(phone.steps[status - 1].differences.first?.hasSuffix("observed station ConnectionFailed AuthError") == true)

        // And the reverse: a recorded failure, replayed with the right password.
        let failed = try Self.live("esp-sec1-wrong-password-mtu247")
        let reverse = try await Self.run(failed, try Self.scenarioDevice("esp-sec1-wrong-password"), options: ReplayOptions(protocols: GATTLabProtocols.all, settings: Self.homePassword))
        let failedStatus = try Self.lastStatusRead(failed)
        XCTAssertEqual(reverse.firstProblem, failedStatus, reverse.text(verbose: true, color: false))
        XCTAssertTrue(reverse.steps[failedStatus - 1].differences.first?.hasPrefix("recorded station ConnectionFailed AuthError, observed station Connected to \"HomeNet\"") == true,
                      "\(reverse.steps[failedStatus - 1].differences)")
    }

    static func recordedIP(_ script: SessionScript, _ step: Int) -> String {
        let meaning = script.steps[step - 1].expect?.meaning ?? ""
        guard let open = meaning.lastIndex(of: "("), let close = meaning.lastIndex(of: ")"), open < close else { return "?" }
        return String(meaning[meaning.index(after: open)..<close])
    }

    // MARK: tolerances

    func testPollingCadenceAndPagesAreTolerances() async throws {
        let script = try Self.live("esp-sec0-provision-mtu247")
        // A scan that is done before the recorded "not finished" polls.
        var fast = ESPSessionReplay.deviceConfiguration(for: script)
        fast.scanDuration = 50_000
        let early = try await Self.run(script, ESPDevice.factory(fast))
        XCTAssertEqual(early.verdict, .equivalent, early.text(verbose: true, color: false))
        XCTAssertTrue(early.steps.contains { $0.observed.contains("finished where the recording polled 'not finished yet' (polling cadence is a tolerance)") })

        // One that is not done at the recorded "finished" poll: polled again.
        var slow = fast
        slow.scanDuration = 7_000_000
        let late = try await Self.run(script, ESPDevice.factory(slow))
        XCTAssertEqual(late.verdict, .equivalent, late.text(verbose: true, color: false))
        XCTAssertTrue(late.steps.contains { $0.observed.contains { $0.hasPrefix("not finished where the recording's scan was; polled") } })

        // The phone twice as fast: the station is still connecting at the recorded last poll.
        let hurried = try await Self.run(script, try Self.shapedESP(script), options: ReplayOptions(protocols: GATTLabProtocols.all, timing: .scaled(3)))
        XCTAssertEqual(hurried.verdict, .equivalent, hurried.text(verbose: true, color: false))
        XCTAssertTrue(hurried.steps.contains { $0.observed.contains { $0.hasPrefix("station Connecting where the recording's was Connected; polled") } },
                      hurried.text(verbose: true, color: false))

        // More networks than recorded: the pages the recording did not ask for are read, and the
        // networks no recording saw are named.
        var crowded = fast
        var environment = WiFiEnvironment.neighbourhood(seed: 1)
        environment.networks.append(.init(ssid: "Neighbour-Extra", passphrase: "x", bssid: [2, 0, 0, 0, 0, 1], band: .ghz2_4, channel: 3,
                                          auth: .wpa2PSK, rssi: -90))
        crowded.environment = environment
        let more = try await Self.run(script, ESPDevice.factory(crowded))
        XCTAssertEqual(more.verdict, .diverged)
        let page = try XCTUnwrap(more.steps.first { $0.status == .diverged })
        XCTAssertEqual(page.differences, ["the scan's networks differ from the recording's: not recorded \"Neighbour-Extra\" (WPA2_PSK)"])
        XCTAssertTrue(page.observed.contains("read 1 more result page the recording did not ask for"), "\(page.observed)")
    }

    // MARK: secrets

    func testThePasswordAndThePoPAreRedactedAndSetGivesThem() async throws {
        let script = try Self.live("esp-sec1-provision-mtu247", reveal: false)
        let json = script.json()
        let password = WiFiEnvironment.homePassphrase
        XCTAssertFalse(json.contains("abcd1234"))
        XCTAssertFalse(json.contains(Hex.string(Array("abcd1234".utf8))))
        XCTAssertFalse(json.contains(Hex.string(Array(password.utf8.prefix(8)))))
        XCTAssertEqual(script.esp?.pop, "********")
        XCTAssertEqual(script.esp?.popRedacted, true)
        let setConfig = try XCTUnwrap(script.steps.first { $0.credentials?.format == "esp-set-config" })
        XCTAssertEqual(setConfig.credentials?.redacted, true)
        XCTAssertEqual(setConfig.credentials?.ssid, WiFiEnvironment.homeSSID)
        XCTAssertNotNil(setConfig.plain)
        XCTAssertEqual(try SessionScript.parse(Data(json.utf8), path: "s.json", protocols: GATTLabProtocols.all), script, "the new fields round-trip")

        func usage(_ settings: [String: String]) -> String {
            do {
                _ = try ReplayRunner(script: script, options: ReplayOptions(protocols: GATTLabProtocols.all, settings: settings)).values()
                return "none"
            } catch {
                return error.description
            }
        }
        XCTAssertTrue(usage([:]).contains("--set password="), usage([:]))
        XCTAssertTrue(usage(Self.homePassword).contains("--set pop="), usage(Self.homePassword))
        XCTAssertEqual(usage(Self.homePassword.merging(["pop": "abcd1234"]) { $1 }), "none")

        let link = EmulatedLink(seed: 1, device: try Self.scenarioDevice("esp-sec1-provision"))
        let options = ReplayOptions(protocols: GATTLabProtocols.all, settings: ["password": password, "pop": "abcd1234"])
        let report = try await ReplayRunner(script: script, options: options).run(on: link, target: "emu")
        XCTAssertEqual(report.verdict, .equivalent, report.text(verbose: true, color: false))
        let station = await link.withDevice { ($0 as? ESPDevice)?.stationState }
        XCTAssertEqual(station, 0, "joined with the password --set gave")
        XCTAssertFalse(report.json().contains(Hex.string(Array(password.utf8.prefix(8)))))

        let revealed = try Self.live("esp-sec1-provision-mtu247", reveal: true)
        XCTAssertEqual(revealed.esp?.pop, "abcd1234")
        XCTAssertEqual(revealed.esp?.popRedacted, false)
        XCTAssertTrue(revealed.json().contains(Hex.string(Array(password.utf8))))

        var bad = script
        let i = try XCTUnwrap(bad.steps.firstIndex { $0.plain != nil })
        bad.steps[i].plain = "zz"
        XCTAssertThrowsError(try SessionScript.parse(Data(bad.json().utf8), path: "s.json", protocols: GATTLabProtocols.all)) { error in
            XCTAssertTrue("\(error)".contains("step \(i + 1) (write): 'plain' is not hex bytes"), "\(error)")
        }
    }

    // MARK: the emulated device shaped by the recording

    func testTheShapedESPFollowsTheRecording() throws {
        let sec0 = ESPSessionReplay.deviceConfiguration(for: try Self.live("esp-sec0-provision-mtu23"))
        XCTAssertEqual(sec0.security, 0)
        XCTAssertEqual(sec0.versionJSON, #"{"prov":{"ver":"v1.1","sec_ver":0,"cap":["wifi_scan","no_sec"]}}"#)
        let sec1 = try Self.live("esp-sec1-provision-mtu23")
        XCTAssertEqual(ESPSessionReplay.deviceConfiguration(for: sec1).security, 1)
        var other = ESPConfiguration()
        other.proofOfPossession = "label-on-the-box"
        XCTAssertEqual(ESPSessionReplay.deviceConfiguration(for: sec1, base: other).proofOfPossession, "abcd1234", "the recorded PoP")
        XCTAssertEqual(ESPSessionReplay.deviceConfiguration(for: sec1, pop: "from-set").proofOfPossession, "from-set")
        let redacted = try Self.live("esp-sec1-provision-mtu23", reveal: false)
        XCTAssertEqual(ESPSessionReplay.deviceConfiguration(for: redacted, base: other).proofOfPossession, "label-on-the-box",
                       "a redacted PoP is not the device's")
        XCTAssertEqual(ESPSessionReplay.deviceConfiguration(for: try Self.live("esp-sec1-no-pop-mtu247"), base: other).proofOfPossession, "")
        let wrongPoP = ESPSessionReplay.deviceConfiguration(for: try Self.live("esp-sec1-wrong-pop-mtu247"))
        XCTAssertNotEqual(wrongPoP.proofOfPossession, "abcd1235", "the device refused the phone's PoP: it has another")
        // A script of another device, or a sec1 script replayed as recorded, shape nothing they do not show.
        let speaker = try ReplayTests.script("speaker-ota-mtu247")
        XCTAssertEqual(ESPSessionReplay.deviceConfiguration(for: speaker, base: other), other)
        let recorded = try ScriptExtractor.extract(path: Self.path("esp-sec1-provision-mtu23"), options: ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: true))
        XCTAssertEqual(ESPSessionReplay.deviceConfiguration(for: recorded, base: other).proofOfPossession, "label-on-the-box")
        XCTAssertEqual(ESPSessionReplay.deviceConfiguration(for: recorded, base: other).security, 1)
    }

    // MARK: hostile scripts

    func testHandEditedESPScriptsNeitherTrapNorHang() async throws {
        let base = try Self.live("esp-sec1-provision-mtu23")
        var random = SplitMix64(seed: 17)
        let junk: [[UInt8]] = [[], [0xFF], [0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F], Array(repeating: 0x12, count: 600),
                               (0..<40).map { _ in UInt8(truncatingIfNeeded: random.next()) }]
        for (n, bytes) in junk.enumerated() {
            var script = base
            for i in script.steps.indices {
                if script.steps[i].plain != nil { script.steps[i].plain = Hex.string(bytes) }
                if script.steps[i].expect?.plain != nil { script.steps[i].expect?.plain = Hex.string(bytes.reversed()) }
                if n.isMultiple(of: 2), script.steps[i].action == .write { script.steps[i].value = Hex.string(bytes) }
            }
            script.steps = script.steps.map { var s = $0; s.credentials = nil; return s }
            script.esp?.pop = n == 3 ? "" : String(repeating: "\u{0}", count: n)
            script.esp?.popRedacted = false
            let report = try await Self.run(script, try Self.scenarioDevice("esp-sec1-provision"), options: ReplayOptions(protocols: GATTLabProtocols.all, timing: .fast))
            XCTAssertEqual(report.steps.count, script.steps.count, "every step reported (junk \(n))")
        }
        // A scheme the replay cannot run, and plaintext on a script that says it is not live.
        var other = base
        other.esp?.security = 7
        let seven = try await Self.run(other, try Self.scenarioDevice("esp-sec1-provision"), options: ReplayOptions(protocols: GATTLabProtocols.all, timing: .fast))
        XCTAssertEqual(seven.steps.count, other.steps.count)
        other.esp = nil
        let none = try await Self.run(other, try Self.scenarioDevice("esp-sec1-provision"), options: ReplayOptions(protocols: GATTLabProtocols.all, timing: .fast))
        XCTAssertEqual(none.steps.count, other.steps.count)
    }

    /// The `esp` member is the protocol's own (`ReplaySessionDriving`): the engine carries it as
    /// plain JSON under the protocol's script key. Scripts read and write back byte for byte, a
    /// malformed member is refused naming its field, and without the protocol it is kept as is.
    func testTheESPMemberRoundTripsAsTheProtocolsSessionData() throws {
        for name in ["esp-sec0-provision-mtu23", "esp-sec1-provision-mtu247", "esp-sec1-no-pop-mtu23"] {
            for reveal in [false, true] {
                let json = try Self.live(name, reveal: reveal).json()
                XCTAssertTrue(json.contains("\n  \"esp\" : {"), name)
                let parsed = try SessionScript.parse(Data(json.utf8), path: "s.json", protocols: GATTLabProtocols.all)
                XCTAssertEqual(parsed.json(), json, "\(name): written back byte for byte")
                let unknown = try SessionScript.parse(Data(json.utf8), path: "s.json", protocols: ProtocolSet([]))
                XCTAssertEqual(unknown.json(), json, "\(name): kept as is by a gattlab without the protocol")
            }
        }
        var script = try Self.live("esp-sec1-provision-mtu247")
        script.sessions["esp"] = .object(["live": .string("yes")])
        XCTAssertThrowsError(try SessionScript.parse(Data(script.json().utf8), path: "s.json", protocols: GATTLabProtocols.all)) { error in
            XCTAssertTrue("\(error)".contains("esp.live"), "\(error)")
        }
        XCTAssertNil(script.esp, "a member that does not decode is no session")
    }

    func testEndpointsAreFoundByTheirNames() throws {
        var script = try Self.live("esp-sec0-provision-mtu23")
        let custom = "8f3c0001-1111-2222-3333-444455556666"
        script.esp?.endpoints = [custom: "prov-config"]
        var step = ReplayStep(.write, at: 0)
        step.characteristic = custom
        XCTAssertEqual(ESPSessionReplay.endpoint(of: step, in: script), "prov-config", "a device with its own UUIDs, named by 0x2901")
        step.characteristic = "021aff54-0382-4aea-bff4-6b3f1c5adfb4"
        XCTAssertEqual(ESPSessionReplay.endpoint(of: step, in: script), "custom endpoint 021aff54-0382-4aea-bff4-6b3f1c5adfb4")
        step.characteristic = ESPProvisioning.Endpoint.session.defaultUUID.canonicalString
        XCTAssertEqual(ESPSessionReplay.endpoint(of: step, in: script), "prov-session")
        step.descriptor = "2901"
        XCTAssertNil(ESPSessionReplay.endpoint(of: step, in: script), "a descriptor is not an endpoint")
        step.descriptor = nil
        step.characteristic = SpeakerOTA.status.canonicalString
        XCTAssertNil(ESPSessionReplay.endpoint(of: step, in: script))
    }

    // MARK: (d) captures made by another implementation (Bumble)

    /// The Bumble peer's ESP-IDF device and phone (Tests/Bumble/make_capture.py): their own
    /// protobuf encoder, their own AES-CTR, their own keys (client key sha256("bumble-client"),
    /// PoP "bumble-pop-1234"), a blocking scan in one page and two status polls.
    func testBumbleESPCapturesReplayLiveAgainstTheShapedESP() async throws {
        let captures = try BumbleESP.shared()
        // sha256(b"bumble-client"), as make_capture.py derives the phone's key.
        let key = Secret(try XCTUnwrap(Hex.bytes("32d511dda02b38083d8c40e2ed4bdd73c5ae711afacad9d911332b7398f21f1b")), label: "ESP client private key")
        for name in ["esp-sec0", "esp-sec1"] {
            let path = captures.appendingPathComponent("\(name).btsnoop").path
            let options = ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: true, keys: ProtocolKeys(["esp-pop": Secret(Array("bumble-pop-1234".utf8), label: "PoP"),
                                                                                    "esp-client-key": key]))
            let script = try ScriptExtractor.extract(path: path, options: options)
            XCTAssertEqual(script.esp?.live, true, "\(name): \(script.esp?.note ?? "")")
            XCTAssertEqual(script.esp?.security, name == "esp-sec0" ? 0 : 1)
            let setConfig = try XCTUnwrap(script.steps.first { $0.credentials?.format == "esp-set-config" }, name)
            XCTAssertEqual(setConfig.meaning, "CmdSetConfig SSID \"bumble-test-ssid\", password of 18 bytes")
            XCTAssertTrue(script.steps.contains { ($0.expect?.meaning ?? "").contains("\"bumble-neighbour\"") }, "\(name): decrypted scan results")

            // Against `emu:esp` as the CLI shapes it. Session, set and apply are equivalent; what is
            // left differs when the emulated Wi-Fi is not the recorded one (the emulator's own
            // neighbourhood, as with --table emulator): the scan's networks, and the station
            // (NetworkNotFound, as the recorded SSID is not around).
            let report = try await Self.run(script, try Self.shapedESP(script))
            let text = report.text(verbose: true, color: false)
            XCTAssertTrue(text.contains(name == "esp-sec0" ? "session sec0 established live" : "session sec1 established live (PoP given)"), text)
            var expectedProblems: Set<String> = ["discover"]
            for (i, step) in script.steps.enumerated() where step.action == .read || step.action == .write {
                let outcome = report.steps[i]
                let meaning = (step.action == .read ? step.expect?.meaning : step.meaning) ?? ""
                if step.action == .read, meaning.hasPrefix("RespScanResult") || meaning.contains("station Connected") {
                    expectedProblems.insert("\(i + 1)")
                    continue
                }
                XCTAssertEqual(outcome.status, .ok, "\(name) step \(i + 1) \(meaning):\n\(text)")
            }
            let problems = Set(report.steps.filter { $0.status != .ok }.map { $0.action == "discover" ? "discover" : "\($0.step)" })
            XCTAssertTrue(problems.isSubset(of: expectedProblems), "\(name): \(problems.sorted()) beyond \(expectedProblems.sorted()):\n\(text)")
            let last = try Self.lastStatusRead(script)
            XCTAssertTrue(report.steps[last - 1].differences.first?.hasSuffix("observed station ConnectionFailed NetworkNotFound") == true, text)

            // In the recording's Wi-Fi world, as `RecordedWorld` reads it from the decrypted scan
            // and config (what `replay run` gives emu:esp), every step is equivalent: the scan as
            // a set, the polls against a slower join; the discovery's extra characteristics, which
            // the session never uses, are tolerated.
            let world = try XCTUnwrap(RecordedWorld.from(script, values: try ReplayRunner(script: script, options: ReplayOptions(protocols: GATTLabProtocols.all)).values(),
                                                          protocols: GATTLabProtocols.all), name)
            XCTAssertEqual(Set(world.networks.map(\.ssid)), Set(BumbleESP.environment.networks.map(\.ssid)), name)
            var base = ESPConfiguration()
            base.environment = world.environment
            let around = try await Self.run(script, ESPDevice.factory(ESPSessionReplay.deviceConfiguration(for: script, base: base)))
            let arounds = around.steps.filter { $0.status != .ok }
            XCTAssertEqual(arounds.map(\.action), [], "\(name):\n\(around.text(verbose: true, color: false))")
            XCTAssertTrue(around.tolerances.contains { $0.contains("Database Hash") }, "\(around.tolerances)")
        }
    }
}

/// The Bumble-made ESP-IDF captures (esp-sec0, esp-sec1), made once per test process by
/// Tests/Bumble/make_capture.py in the project's venv, as GATTLabCLITests' BumbleCaptures makes
/// all of them; the test skips in a plain clone without the venv (fails under CI=true).
final class BumbleESP: @unchecked Sendable {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var made: Result<URL, any Error>?

    /// The networks around the Bumble peer's device (make_capture.py's ESP_SCAN, SSID and PASSWORD).
    static let environment = WiFiEnvironment(networks: [
        .init(ssid: "bumble-test-ssid", passphrase: "bumble-secret-pass", bssid: [0x24, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5], band: .ghz2_4,
              channel: 6, auth: .wpa2PSK, rssi: -47),
        .init(ssid: "bumble-neighbour", passphrase: "neighbour", bssid: [0x24, 0xA1, 0xB2, 0xC3, 0xD4, 0xE6], band: .ghz2_4,
              channel: 1, auth: .wpaWPA2PSK, rssi: -69),
        .init(ssid: "bumble-open", passphrase: "", bssid: [0x24, 0xA1, 0xB2, 0xC3, 0xD4, 0xE7], band: .ghz2_4, channel: 11, auth: .open, rssi: -83),
    ])

    static func shared() throws -> URL {
        lock.lock()
        defer { lock.unlock() }
        if let made { return try made.get() }
        let env = ProcessInfo.processInfo.environment
        let python = env["GATTLAB_BUMBLE_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
            ?? Files.root.appendingPathComponent(".venv-bumble/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            if ["true", "1", "yes"].contains(env["CI"]?.lowercased() ?? "") {
                throw TestSetupError("CI=true but \(python) is missing: `make setup` must create .venv-bumble (Scripts/bumble-env.sh)")
            }
            throw XCTSkip("needs Bumble: run Scripts/bumble-env.sh (make setup does; it needs PyPI) or set GATTLAB_BUMBLE_PYTHON")
        }
        let result = Result<URL, any Error> {
            let dir = try Files.temporaryDirectory()
            for capture in ["esp-sec0", "esp-sec1"] {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: python)
                process.arguments = [Files.root.appendingPathComponent("Tests/Bumble/make_capture.py").path, "--capture", capture,
                                     "--out", dir.appendingPathComponent("\(capture).btsnoop").path]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                process.standardInput = FileHandle.nullDevice
                try process.run()
                let deadline = Date().addingTimeInterval(120)
                while process.isRunning, Date() < deadline { usleep(20_000) }
                if process.isRunning {
                    process.terminate()
                    throw TestSetupError("make_capture.py --capture \(capture) did not finish within 120 s")
                }
                guard process.terminationStatus == 0 else {
                    throw TestSetupError("make_capture.py --capture \(capture) failed (exit \(process.terminationStatus))")
                }
            }
            return dir
        }
        made = result
        return try result.get()
    }
}
