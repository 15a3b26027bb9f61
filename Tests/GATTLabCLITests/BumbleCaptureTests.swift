import Foundation
import TestSupport
import XCTest

/// Issue 16: captures made by an independent BLE stack. Google's Bumble (pinned in
/// Scripts/bumble-env.sh, a project-local venv) runs a peripheral written from PROTOCOLS.md and a
/// phone-like central on two virtual controllers; Tests/Bumble/make_capture.py writes every
/// capture and a manifest.json of what the peer sent, once per test run. These tests check that
/// decode, timeline, audit and redact read them right.
final class BumbleCaptureTests: XCTestCase {
    // MARK: expectations that are not in the manifest

    /// The marker style each sensor variant must be named by (`markerStyle` in scan.result).
    static let markerStyles: [String: String] = [
        "separate": "separate-notification",
        "suffix-newline": "suffix-newline",
        "suffix-crlf": "suffix-crlf",
        "suffix-semicolon": "suffix-semicolon",
        "suffix-glued": "suffix-glued",
        "prefix": "prefix",
        "split": "split-across-chunks",
        "one-per-notification": "suffix-newline",
        "single": "suffix-newline",
        "end-alone": "suffix-newline",
        // An empty scan is END alone: nothing to glue it to.
        "empty": "separate-notification",
        "truncated": "suffix-newline",
    ]

    static let protocolNames = ["sensor": "sensor-scan", "speaker": "speaker-ota", "nrf7": "nrf7", "esp": "esp-prov"]

    // MARK: tests

    /// Bumble's speaker whose credentials need an encrypted link: the phone writes them first on
    /// the plain link and gets Insufficient Encryption, pairs, writes again. The device built from
    /// the recording asks for encryption there too; the speaker with GATTLab's own table takes the
    /// first write, and the replay diverges there.
    func testTheRecordedDeviceAsksForEncryptionWhereTheRecordingDid() throws {
        let python = try BumbleCaptures.python()
        let dir = try Harness.temporaryDirectory()
        let path = dir.appendingPathComponent("speaker-ota-pairing.btsnoop").path
        let made = try Harness.run(python, [Harness.root.appendingPathComponent("Tests/Bumble/make_capture.py").path,
                                            "--capture", "speaker-ota-pairing", "--out", path], timeout: 120)
        XCTAssertEqual(made.status, 0, made.stderr)
        let recorded = try Harness.gattlab(["replay", "run", path, "--target", "emu:recorded", "--format", "json"], timeout: 120)
        XCTAssertEqual(recorded.status, 0, recorded.stdout + recorded.stderr)
        let report = (try? JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8))) as? [String: Any]
        XCTAssertEqual(report?["verdict"] as? String, "equivalent", recorded.stdout)
        let own = try Harness.gattlab(["replay", "run", path, "--target", "emu:speaker", "--table", "emulator", "-v"], timeout: 120)
        XCTAssertNotEqual(own.status, 0)
        XCTAssertTrue(own.stdout.contains("recorded ATT error 0x0f Insufficient Encryption, observed success"), own.stdout)
    }

    func testDecodeShowsTheProtocolAndNothingMalformed() throws {
        let set = try BumbleCaptures.shared()
        for capture in set.manifest {
            let path = set.path(capture)
            let r = try Harness.gattlab(["decode", "--format", "json", path])
            XCTAssertEqual(r.status, 0, "\(capture.name): \(r.stderr)")
            XCTAssertFalse(r.stdout.lowercased().contains("malformed"), "\(capture.name): decode reports something malformed")
            let att = Harness.jsonLines(r.stdout, type: "att")
            XCTAssertTrue(att.contains { $0["opcodeName"] as? String == "Exchange MTU Request" } || capture.mtu == 23,
                          "\(capture.name): no MTU exchange decoded")
            XCTAssertTrue(att.contains { ($0["opcodeName"] as? String)?.hasPrefix("Write Request") == true }, "\(capture.name): no write")
            let wanted = Self.protocolNames[capture.proto] ?? capture.proto
            let events = Harness.jsonLines(r.stdout, type: "protocol").filter { $0["protocol"] as? String == wanted }
            XCTAssertFalse(events.isEmpty, "\(capture.name): no \(wanted) events")
        }
    }

    func testSensorTimelinesNameEveryNetworkAndTheOutcome() throws {
        let set = try BumbleCaptures.shared()
        for capture in set.manifest where capture.proto == "sensor" {
            let result = try sensorResult(set, capture)
            XCTAssertEqual(result.networks.map(\.ssid), capture.networks.map(\.ssid), "\(capture.name): SSIDs")
            XCTAssertEqual(result.networks.map(\.rssi), capture.networks.map(\.rssi), "\(capture.name): RSSIs")
            XCTAssertEqual(result.complete, capture.complete, "\(capture.name): complete")
            XCTAssertEqual(result.problems, capture.complete ? [] : ["scan.truncated"], "\(capture.name): problems")
            XCTAssertEqual(result.outcome, capture.complete ? "succeeded" : "failed", "\(capture.name): outcome")
            XCTAssertEqual(result.protocols, ["sensor-scan"], "\(capture.name): protocol")
            // The text timeline names every network with its RSSI as the peer sent it.
            let text = try Harness.gattlab(["timeline", "--no-color", set.path(capture)])
            for n in capture.networks {
                XCTAssertTrue(text.stdout.contains("\(n.ssid) \(n.rssi)"), "\(capture.name): text lacks \(n.ssid) \(n.rssi)")
            }
            XCTAssertTrue(text.stdout.contains(capture.complete ? "SUCCEEDED" : "truncated"), "\(capture.name): text outcome")
            XCTAssertEqual(result.markerStyle, Self.markerStyles[capture.variant], "\(capture.name): markerStyle")
            XCTAssertNotNil(Self.markerStyles[capture.variant], "\(capture.name): a variant without an expected markerStyle")
        }
    }

    /// Bumble's virtual controller reports 0x13 (Remote User Terminated) in the Disconnection
    /// Complete the central's host receives even when that host sent HCI_Disconnect: the
    /// timeline says this host ended those links (the command and its Command Status are in the
    /// capture) and keeps 0x13 as the event's code; sensor-truncated, whose peer hung up (no
    /// Disconnect from this host), is still the peer's doing.
    func testWhoEndedTheLinkFollowsTheHostsOwnDisconnect() throws {
        let set = try BumbleCaptures.shared()
        XCTAssertTrue(set.manifest.contains { $0.name == "sensor-truncated" })
        for capture in set.manifest {
            let r = try Harness.gattlab(["timeline", "--format", "json", set.path(capture)])
            XCTAssertEqual(r.status, 0, "\(capture.name): \(r.stderr)")
            let doc = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            let ends = try XCTUnwrap(doc["connections"] as? [[String: Any]]).compactMap { $0["disconnect"] as? [String: Any] }
            XCTAssertFalse(ends.isEmpty, capture.name)
            for end in ends {
                XCTAssertEqual(end["code"] as? Int, 0x13, "\(capture.name): Bumble's code")
                if capture.name == "sensor-truncated" {
                    XCTAssertNil(end["endedBy"], capture.name)
                    XCTAssertEqual(end["meaning"] as? String, "the peer hung up (the device or the app on the other side closed the link)", capture.name)
                } else {
                    XCTAssertEqual(end["endedBy"] as? String, "host", capture.name)
                    XCTAssertEqual(end["hostCode"] as? Int, 0x13, capture.name)
                    XCTAssertTrue((end["meaning"] as? String)?.hasPrefix("this host hung up") == true, "\(capture.name): \(end)")
                }
            }
        }
    }

    func testProvisioningTimelines() throws {
        let set = try BumbleCaptures.shared()
        for capture in set.manifest where capture.proto != "sensor" {
            var args = ["timeline", "--format", "json", set.path(capture)]
            if let pop = capture.pop, let key = capture.clientKey {
                args += ["--esp-pop", pop, "--esp-client-key", key]
            }
            let r = try Harness.gattlab(args)
            XCTAssertEqual(r.status, 0, "\(capture.name): \(r.stderr)")
            let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            let devices = json["devices"] as? [[String: Any]] ?? []
            XCTAssertEqual(devices.count, 1, "\(capture.name): devices")
            let device = devices.first ?? [:]
            XCTAssertEqual(device["protocols"] as? [String], [Self.protocolNames[capture.proto] ?? ""], "\(capture.name): protocol")
            let expected: String
            switch capture.variant {
            case "sec1-per-direction": expected = "unknown"  // not readable: the peer's CTR streams are not ESP-IDF's
            default: expected = capture.outcome == "success" ? "succeeded" : "failed"
            }
            XCTAssertEqual(device["outcome"] as? String, expected, "\(capture.name): outcome")
            let events = json["events"] as? [[String: Any]] ?? []
            let eventText = events.map { event -> String in
                let fields = (event["fields"] as? [String: Any]).map { f in "\(f)" } ?? ""
                return "\(event["summary"] as? String ?? "") \(fields)"
            }.joined(separator: "\n")
            if capture.variant != "sec1-per-direction" {
                XCTAssertTrue(eventText.contains(capture.ssid ?? "?"), "\(capture.name): SSID missing from the timeline")
                XCTAssertFalse(eventText.contains(capture.password ?? "?"), "\(capture.name): the password shows in the timeline")
                for n in capture.networks {
                    XCTAssertTrue(eventText.contains(n.ssid), "\(capture.name): scanned network \(n.ssid) missing")
                    if capture.proto == "nrf7" {
                        XCTAssertTrue(eventText.contains("\"\(n.ssid)\" \(n.rssi) dBm"), "\(capture.name): \(n.ssid) \(n.rssi) dBm missing")
                    }
                }
                if capture.proto == "esp" {
                    // RSSIs exactly as sent, from decode's RespScanResult entries.
                    var decodeArgs = ["decode", "--format", "json", set.path(capture)]
                    if let pop = capture.pop, let key = capture.clientKey { decodeArgs += ["--esp-pop", pop, "--esp-client-key", key] }
                    let d = try Harness.gattlab(decodeArgs)
                    let entries = Harness.jsonLines(d.stdout, type: "protocol").filter { $0["msgName"] as? String == "RespScanResult" }
                        .flatMap { $0["entries"] as? [[String: Any]] ?? [] }
                        .map { BumbleCaptures.Network(ssid: $0["ssid"] as? String ?? "", rssi: $0["rssi"] as? Int ?? 0) }
                    XCTAssertEqual(entries, capture.networks, "\(capture.name): scan entries")
                }
                if capture.proto == "esp" || capture.proto == "nrf7", !capture.networks.isEmpty {
                    // The timeline carries the scan as an array of network objects, RSSIs as the peer sent them.
                    // (nRF7 reports one network per scan record, ESP all in one result: gathered in order.)
                    var listed: [BumbleCaptures.Network] = []
                    for n in events.flatMap({ ($0["fields"] as? [String: Any])?["networks"] as? [[String: Any]] ?? [] }) {
                        let network = BumbleCaptures.Network(ssid: n["ssid"] as? String ?? "", rssi: n["rssi"] as? Int ?? 0)
                        if !listed.contains(network) { listed.append(network) }
                    }
                    XCTAssertEqual(listed, capture.networks, "\(capture.name): timeline networks")
                }
            } else {
                XCTAssertTrue(eventText.contains("device_verify_data") || r.stdout.contains("sec1-verify-failed")
                              || eventText.contains("encrypted"), "\(capture.name): says nothing about the unreadable session")
            }
        }
    }

    func testAuditFlagsTheCredentialWrite() throws {
        let set = try BumbleCaptures.shared()
        for capture in set.manifest where capture.credentials && capture.variant != "sec1-per-direction" {
            var args = ["audit", "--format", "json", set.path(capture)]
            if let pop = capture.pop, let key = capture.clientKey { args += ["--esp-pop", pop, "--esp-client-key", key] }
            let r = try Harness.gattlab(args)
            XCTAssertTrue([0, 1].contains(r.status), "\(capture.name): exit \(r.status) \(r.stderr)")
            let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], capture.name)
            let secrets = json["secrets"] as? [[String: Any]] ?? []
            let passwords = secrets.filter { ($0["label"] as? String)?.contains("Wi-Fi password") == true }
            XCTAssertFalse(passwords.isEmpty, "\(capture.name): the Wi-Fi password write is not among the secrets: \(secrets)")
            XCTAssertFalse(r.stdout.contains(capture.password ?? "?"), "\(capture.name): the audit prints the password")
            let ids = (json["findings"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            XCTAssertTrue(ids.contains("capture.holds-secrets"), "\(capture.name): \(ids)")
            if !capture.encrypted {
                XCTAssertTrue(ids.contains { $0.hasPrefix("credentials.") || $0.contains("security0") || $0.contains("cleartext") },
                              "\(capture.name): no finding on the password sent in the clear: \(ids)")
                XCTAssertTrue(passwords.contains { $0["linkEncrypted"] as? Bool == false }, "\(capture.name): \(passwords)")
            } else if capture.proto == "nrf7" {
                XCTAssertTrue(passwords.allSatisfy { $0["linkEncrypted"] as? Bool == true }, "\(capture.name): \(passwords)")
            }
        }
    }

    /// The audit lists one link per connection Bumble's controller reported, counted from the
    /// capture's bytes: what a protocol says as a link ends (a scan answer without END) once
    /// made a link of its own.
    func testAuditListsOneLinkPerConnection() throws {
        let set = try BumbleCaptures.shared()
        for capture in set.manifest {
            var args = ["audit", "--format", "json", set.path(capture)]
            if let pop = capture.pop, let key = capture.clientKey { args += ["--esp-pop", pop, "--esp-client-key", key] }
            let r = try Harness.gattlab(args)
            let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], capture.name)
            let links = json["links"] as? [[String: Any]] ?? []
            let begun = try Files.connectionsBegun(set.path(capture))
            XCTAssertGreaterThan(begun, 0, capture.name)
            XCTAssertEqual(links.count, begun, "\(capture.name): \(links)")
        }
    }

    func testRedactRemovesThePasswordAndStillDecodes() throws {
        let set = try BumbleCaptures.shared()
        for capture in set.manifest where capture.credentials {
            let password = try XCTUnwrap(capture.password)
            let hex = Data(password.utf8).map { String(format: "%02x", $0) }.joined()
            var keys: [String] = []
            if let pop = capture.pop, let key = capture.clientKey { keys = ["--esp-pop", pop, "--esp-client-key", key] }
            let out = set.directory.appendingPathComponent("redacted-\(capture.name).btsnoop").path
            let r = try Harness.gattlab(["redact", "--force"] + keys + [set.path(capture), "-o", out])
            XCTAssertEqual(r.status, 0, "\(capture.name): \(r.stderr)")
            let before = try Harness.gattlab(["decode", "--format", "json", "--reveal-secrets"] + keys + [set.path(capture)])
            let after = try Harness.gattlab(["decode", "--format", "json", "--reveal-secrets"] + keys + [out])
            XCTAssertEqual(after.status, 0, "\(capture.name): the redacted file does not decode: \(after.stderr)")
            XCTAssertFalse(after.stdout.lowercased().contains("malformed"), "\(capture.name): redacted file decodes malformed")
            if !capture.encrypted || capture.proto == "nrf7" {
                // In the clear at the ATT layer (sec1 hides it; nRF7 only encrypts the air).
                XCTAssertTrue(attValues(before.stdout).contains(hex), "\(capture.name): the password is not in the original's ATT values")
            }
            XCTAssertFalse(attValues(after.stdout).contains(hex), "\(capture.name): the password is still in the redacted ATT values")
            let bytes = try Data(contentsOf: URL(fileURLWithPath: out))
            XCTAssertNil(bytes.range(of: Data(password.utf8)), "\(capture.name): the password bytes remain in the file")
            XCTAssertEqual(Harness.jsonLines(after.stdout, type: "att").count, Harness.jsonLines(before.stdout, type: "att").count,
                           "\(capture.name): redaction changed the PDUs")
        }
    }

    // MARK: helpers

    struct SensorResult {
        var networks: [BumbleCaptures.Network]
        var complete: Bool?
        var problems: [String]
        var markerStyle: String?
        var outcome: String?
        var protocols: [String]
    }

    /// The one scan.result of a sensor capture, from decode (networks, problems, markerStyle) and
    /// the timeline (outcome).
    func sensorResult(_ set: BumbleCaptures, _ capture: BumbleCaptures.Capture) throws -> SensorResult {
        let decode = try Harness.gattlab(["decode", "--format", "json", set.path(capture)])
        let results = Harness.jsonLines(decode.stdout, type: "protocol").filter { $0["kind"] as? String == "scan.result" }
        XCTAssertEqual(results.count, 1, "\(capture.name): scan.result events")
        let result = results.first ?? [:]
        let networks = (result["networks"] as? [[String: Any]] ?? []).map {
            BumbleCaptures.Network(ssid: $0["ssid"] as? String ?? "", rssi: $0["rssi"] as? Int ?? Int.min)
        }
        let problems = (result["problems"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        let timeline = try Harness.gattlab(["timeline", "--format", "json", set.path(capture)])
        let json = try JSONSerialization.jsonObject(with: Data(timeline.stdout.utf8)) as? [String: Any]
        let device = (json?["devices"] as? [[String: Any]])?.first ?? [:]
        return SensorResult(networks: networks, complete: result["complete"] as? Bool, problems: problems,
                            markerStyle: result["markerStyle"] as? String, outcome: device["outcome"] as? String,
                            protocols: device["protocols"] as? [String] ?? [])
    }

    /// Every ATT value (hex) in decode's JSON, joined per PDU; long writes are checked per piece.
    /// Every ATT value, one per line, and then the values of each run of Prepare Write Requests
    /// joined (a long write, as at MTU 23, carries the password in pieces).
    func attValues(_ jsonl: String) -> String {
        let att = Harness.jsonLines(jsonl, type: "att")
        var lines = att.compactMap { $0["value"] as? String }
        var joined = ""
        for pdu in att {
            if pdu["opcode"] as? Int == 0x16 { joined += pdu["value"] as? String ?? "" }
            if pdu["opcode"] as? Int == 0x18, !joined.isEmpty {
                lines.append(joined)
                joined = ""
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// The Bumble-made captures of one test run: generated once, by one Python process.
final class BumbleCaptures: @unchecked Sendable {
    static let skipMessage = "needs Bumble: run Scripts/bumble-env.sh (make setup does; it needs PyPI) or set GATTLAB_BUMBLE_PYTHON"

    struct Network: Equatable { var ssid: String; var rssi: Int }

    struct Capture {
        var name, file, protocolName, variant: String
        var mtu: Int
        var networks: [Network]
        var complete: Bool
        var credentials, encrypted: Bool
        var ssid, password, outcome, pop, clientKey: String?
        var proto: String { protocolName }
    }

    let directory: URL
    let manifest: [Capture]

    func path(_ c: Capture) -> String { directory.appendingPathComponent(c.file).path }

    private init(directory: URL, manifest: [Capture]) {
        self.directory = directory
        self.manifest = manifest
    }

    /// One generation per test process, shared by the tests (XCTest runs them one at a time,
    /// the lock keeps it right if that changes).
    private final class Made: @unchecked Sendable {
        let lock = NSLock()
        var result: Result<BumbleCaptures, any Error>?
    }
    private static let made = Made()

    /// The venv's python, or the skip (a failure under CI=true).
    static func python() throws -> URL {
        let env = ProcessInfo.processInfo.environment
        let candidate = env["GATTLAB_BUMBLE_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
            ?? Harness.root.appendingPathComponent(".venv-bumble/bin/python").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return URL(fileURLWithPath: candidate) }
        if ["true", "1", "yes"].contains(env["CI"]?.lowercased() ?? "") {
            throw TestSetupError("CI=true but \(candidate) is missing: `make setup` must create .venv-bumble (Scripts/bumble-env.sh)")
        }
        throw XCTSkip(skipMessage)
    }

    static func shared() throws -> BumbleCaptures {
        made.lock.lock()
        defer { made.lock.unlock() }
        if let result = made.result { return try result.get() }
        let python = try python()  // a skip is not cached as a failure: every test skips alike
        let result = Result<BumbleCaptures, any Error> { try generate(python) }
        made.result = result
        return try result.get()
    }

    private static func generate(_ python: URL) throws -> BumbleCaptures {
        let dir = try Harness.temporaryDirectory()
        let script = Harness.root.appendingPathComponent("Tests/Bumble/make_capture.py").path
        let r = try Harness.run(python, [script, "--all", "--out-dir", dir.path], timeout: 120)
        guard r.status == 0 else {
            throw TestSetupError("make_capture.py --all failed (exit \(r.status)): \(r.stderr.suffix(2000))")
        }
        print("BumbleCaptureTests: \(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) in \(String(format: "%.1f", r.seconds)) s")
        let data = try Data(contentsOf: dir.appendingPathComponent("manifest.json"))
        guard let list = try JSONSerialization.jsonObject(with: data) as? [[String: Any]] else {
            throw TestSetupError("manifest.json is not a list")
        }
        let captures = list.map { o in
            Capture(
                name: o["capture"] as? String ?? "?", file: o["file"] as? String ?? "?",
                protocolName: o["protocol"] as? String ?? "?", variant: o["variant"] as? String ?? "?",
                mtu: o["mtu"] as? Int ?? 0,
                networks: (o["networks"] as? [[String: Any]] ?? []).map { Network(ssid: $0["ssid"] as? String ?? "", rssi: $0["rssi"] as? Int ?? 0) },
                complete: o["complete"] as? Bool ?? true, credentials: o["credentials"] as? Bool ?? false,
                encrypted: o["encrypted"] as? Bool ?? false, ssid: o["ssid"] as? String, password: o["password"] as? String,
                outcome: o["outcome"] as? String, pop: o["pop"] as? String, clientKey: o["clientKey"] as? String)
        }
        guard captures.count >= 19 else { throw TestSetupError("manifest.json lists \(captures.count) captures") }
        return BumbleCaptures(directory: dir, manifest: captures)
    }
}
