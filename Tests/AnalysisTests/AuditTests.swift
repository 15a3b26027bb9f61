import ATT
import Capture
import Foundation
import GATT
import HCI
import Profiles
import Protocols
import TestSupport
import XCTest
@testable import Analysis
@testable import Emulator

/// Every audit finding fires on a capture made to trigger it and not on its clean twin: the
/// exact findings and secret inventory of every recording in Captures/ are fixed here, so a rule
/// that starts firing where it should not, or stops firing, fails this test.
final class AuditTests: XCTestCase {
    static let espKeys = ProtocolKeys(["esp-pop": Secret(Array("abcd1234".utf8), label: "PoP"), "esp-client-key": Secret(Scenario.espClientPrivateKey, label: "client key")])

    static func audit(_ path: String, configuration: ProtocolKeys = espKeys, table: AttributeTable? = nil,
                      memoryLimit: Int = SpillList<AuditFinding>.defaultMemoryLimit) throws -> AuditReport {
        let reader = try openCapture(path)
        let decoder = GATTDecoder()
        decoder.tracksOrigins = true
        decoder.defaultTable = table
        let profiles = ProfileDecoder(protocols: GATTLabProtocols.all, keys: configuration)
        let auditor = Auditor(source: path, format: reader.format.description, protocols: GATTLabProtocols.all, memoryLimit: memoryLimit)
        while let record = try reader.next() {
            decoder.consume(record)
            profiles.consume(decoder, record: record)
            auditor.consume(record, gatt: decoder.events, profile: profiles.events)
        }
        return auditor.finish()
    }

    /// Scenario -> (finding ids, secret kinds). Both MTUs give the same answer except where the
    /// MTU 23 recording says otherwise (a long write cut short leaves a part behind).
    static let expected: [String: (findings: Set<String>, secrets: [String])] = {
        let speaker: Set<String> = ["capture.holds-secrets", "credentials.unencrypted-link", "ota.open-control"]
        var t: [String: (Set<String>, [String])] = [:]
        for s in ["speaker-ota", "speaker-wrong-password", "speaker-5ghz-ssid", "speaker-http-connect", "speaker-http-status",
                  "speaker-download-stall", "speaker-verify-failure", "speaker-reboot-validate", "speaker-short-status",
                  "speaker-disconnect-downloading", "speaker-mtu23-only", "speaker-rollback"] {
            t[s] = (speaker, ["wifi-password"])
        }
        t["speaker-encrypted-credentials"] = (["capture.holds-secrets", "credentials.before-encryption"], ["wifi-password", "wifi-password"])
        t["speaker-encrypted-credentials@23"] = (["capture.holds-secrets", "credentials.before-encryption"], ["credential-value", "wifi-password"])
        t["speaker-credentials-readback"] = (speaker.union(["secrets.readable"]), ["wifi-password", "wifi-password"])
        t["speaker-url-secrets"] = (speaker.union(["ota.url-plain-http", "ota.url-credentials", "ota.url-token"]),
                                    ["url-password", "url-token", "wifi-password"])
        t["speaker-secure-ota"] = (["capture.holds-secrets"], ["irk", "irk", "ltk", "wifi-password"])
        t["speaker-sc-justworks"] = (["capture.holds-secrets", "pairing.just-works", "pairing.no-mitm"], ["irk", "irk", "ltk", "wifi-password"])
        t["speaker-legacy-pairing"] = (["capture.holds-secrets", "pairing.just-works", "pairing.legacy", "pairing.no-mitm", "encryption.short-key"],
                                       // Mconfirm, Sconfirm, Mrand and Srand give the TK (0 here), the STK and the LTKs.
                                       ["irk", "irk", "ltk", "ltk", "pairing-value", "pairing-value", "pairing-value", "pairing-value", "wifi-password"])
        for s in ["sensor-scan", "sensor-scan-separate-markers", "sensor-scan-missing-end", "sensor-scan-dropped", "sensor-scan-delayed",
                  "sensor-mtu23-only"] {
            t[s] = ([], [])
        }
        for s in ["nrf7-provision", "nrf7-wrong-password", "nrf7-network-not-found", "nrf7-dhcp-failure", "nrf7-invalid-passphrase",
                  "nrf7-disconnect-obtaining-ip"] {
            t[s] = (["capture.holds-secrets"], ["wifi-password"])
        }
        t["nrf7-open-control-point"] = (["capture.holds-secrets", "credentials.unencrypted-link", "nrf7.control-point-unencrypted"], ["wifi-password"])
        t["esp-sec0-provision"] = (["capture.holds-secrets", "credentials.unencrypted-link", "esp.security0"], ["wifi-password"])
        t["esp-sec0-5ghz-ssid"] = t["esp-sec0-provision"]
        t["esp-sec1-provision"] = (["capture.holds-secrets"], ["wifi-password"])
        t["esp-sec1-wrong-password"] = (["capture.holds-secrets"], ["wifi-password"])
        // The device's PoP is not abcd1234: the session cannot be decrypted, so nothing is seen.
        t["esp-sec1-wrong-pop"] = ([], [])
        t["esp-sec1-no-pop"] = (["capture.holds-secrets", "esp.security1-no-pop"], ["wifi-password"])
        t["speaker-ota-demo"] = (speaker.union(["ota.url-plain-http"]), ["wifi-password"])
        // Improv has no encryption: every session sends the password in plaintext.
        for s in ["improv-provision", "improv-authorize", "improv-wrong-password", "improv-not-authorized", "improv-split-rpc",
                  "improv-reset-provisioning"] {
            t[s] = (["capture.holds-secrets", "credentials.unencrypted-link", "improv.password-plaintext"], ["wifi-password"])
        }
        return t
    }()

    func testPairingValuesAreSecretsWhereTheyGiveAKeyAway() async throws {
        // Legacy: with the randoms, the confirm values give the TK, then the STK and the keys.
        // Secure Connections Passkey Entry: each of the 20 rounds gives a bit of the passkey.
        // Other Secure Connections values give nothing without the Diffie-Hellman keys.
        let cases: [(PairingOptions, Int)] = [
            (PairingOptions(method: .legacy, association: .passkeyEntry, mitm: true), 4),
            (PairingOptions(method: .secureConnections, association: .passkeyEntry, mitm: true), 80),
            (PairingOptions(method: .secureConnections, association: .numericComparison, mitm: true), 0),
            (PairingOptions(method: .secureConnections, association: .justWorks, mitm: false), 0),
        ]
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gattlab-pairing-values-\(getpid()).btsnoop").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        for (options, values) in cases {
            let link = EmulatedLink(seed: 1, device: SpeakerDevice.factory(SpeakerConfiguration()))
            await link.connect()
            await link.pair(options)
            try await link.recording().write(to: path)
            let report = try Self.audit(path)
            let found = report.secrets.filter { $0.kind == .pairingValue }
            XCTAssertEqual(found.count, values, "\(options.method) \(options.association)")
            XCTAssertTrue(found.allSatisfy { $0.locatable && !$0.alreadyRedacted }, "\(options.method) \(options.association)")
        }
    }

    func testEveryCaptureHasExactlyItsFindingsAndSecrets() throws {
        let captures = try Files.projectCaptures()
        var seen = Set<String>()
        for path in captures {
            let file = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
            var scenario = file
            var mtu = ""
            for suffix in ["-mtu23", "-mtu247"] where file.hasSuffix(suffix) {
                scenario = String(file.dropLast(suffix.count))
                mtu = suffix == "-mtu23" ? "@23" : ""
            }
            guard let want = Self.expected[scenario + mtu] ?? Self.expected[scenario] else {
                XCTFail("\(file): no expected audit in the table; add one")
                continue
            }
            seen.insert(scenario)
            let report = try Self.audit(path)
            XCTAssertEqual(Set(report.findings.map(\.id)), want.findings, "\(file) findings")
            XCTAssertEqual(report.secrets.map(\.kind.rawValue).sorted(), want.secrets.sorted(), "\(file) secrets")
            for s in report.secrets {
                XCTAssertTrue(s.locatable, "\(file): \(s.kind) (\(s.context)) cannot be located for redaction")
                XCTAssertFalse(s.alreadyRedacted, "\(file): \(s.kind)")
            }
            for f in report.findings {
                XCTAssertFalse(f.records.isEmpty, "\(file) \(f.id): a finding names its records")
                XCTAssertFalse(f.evidence.isEmpty || f.fix.isEmpty, "\(file) \(f.id)")
            }
        }
        // Every rule of the catalogue that concerns these devices fires somewhere and is absent somewhere.
        let fired = Set(captures.flatMap { (try? Self.audit($0))?.findings.map(\.id) ?? [] })
        for rule in AuditCatalogue.rules(protocols: GATTLabProtocols.all).map(\.id) where rule != "audit.unknown-handles" {
            XCTAssertTrue(fired.contains(rule), "rule \(rule) fires on no capture in Captures/")
        }
        XCTAssertGreaterThan(seen.count, 35)
    }

    /// The speaker's own evidence: where and how, without the secret.
    func testFindingsNameRecordsAndNeverTheSecret() throws {
        let path = Files.root.appendingPathComponent("Captures/emulated/speaker-url-secrets-mtu247.btsnoop").path
        let report = try Self.audit(path)
        let text = report.findings.map { "\($0.title) \($0.evidence) \($0.fix)" }.joined(separator: "\n")
        for secret in ["hunter2", "8c1f4e2ad9b7", "correct horse battery staple"] {
            XCTAssertFalse(text.contains(secret), "finding text shows \(secret)")
        }
        let url = try XCTUnwrap(report.findings.first { $0.id == "ota.url-credentials" })
        XCTAssertTrue(url.evidence.contains("<redacted:7 bytes>"), url.evidence)
        let open = try XCTUnwrap(report.findings.first { $0.id == "ota.open-control" })
        XCTAssertTrue(open.evidence.contains("OTA_CONTROL"), open.evidence)
    }

    /// Without discovery the credential characteristic has no name: the audit says so instead of
    /// claiming the capture holds nothing; with the built-in table it finds the password again.
    func testUnknownHandlesAreReported() throws {
        let path = try XCTUnwrap(Files.projectCaptures().first { $0.hasSuffix("speaker-ota-demo.btsnoop") })
        // Decode from the first record after discovery: rewrite as a capture without its first 35 records.
        let reader = try openCapture(path)
        var recording = Recording()
        while let r = try reader.next() {
            guard r.number > 35 else { continue }
            recording.packets.append(RecordedPacket(time: r.timestamp, kind: r.kind, direction: r.direction, bytes: Array(r.data)))
        }
        let dir = try Files.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cut = dir.appendingPathComponent("cut.btsnoop").path
        try recording.write(to: cut)
        let blind = try Self.audit(cut)
        XCTAssertTrue(blind.findings.contains { $0.id == "audit.unknown-handles" }, "\(blind.findings.map(\.id))")
        XCTAssertTrue(blind.secrets.isEmpty)
        let table = try XCTUnwrap(GATTLabProtocols.all.builtInTable(named: "speaker")).table
        let named = try Self.audit(cut, table: table)
        XCTAssertFalse(named.findings.contains { $0.id == "audit.unknown-handles" })
        XCTAssertEqual(named.secrets.map(\.kind), [.wifiPassword])
    }

    /// The association model table of Core Vol 3 Part H 2.3.5.1.
    func testPairingMethodFollowsTheSpecificationTable() {
        func f(_ io: UInt8, mitm: Bool = true, oob: Bool = false) -> SMPPDU.PairingFeatures {
            SMPPDU.PairingFeatures(ioCapability: io, oobDataPresent: oob, authReq: mitm ? 0x0D : 0x09, maxKeySize: 16,
                                   initiatorKeyDistribution: 0, responderKeyDistribution: 0)
        }
        let displayOnly: UInt8 = 0, yesNo: UInt8 = 1, keyboard: UInt8 = 2, none: UInt8 = 3, keyboardDisplay: UInt8 = 4
        XCTAssertEqual(PairingMethod.of(initiator: f(keyboardDisplay), responder: f(none), secureConnections: true), "Just Works")
        XCTAssertEqual(PairingMethod.of(initiator: f(yesNo), responder: f(yesNo), secureConnections: true), "Numeric Comparison")
        XCTAssertEqual(PairingMethod.of(initiator: f(yesNo), responder: f(yesNo), secureConnections: false), "Just Works")
        XCTAssertEqual(PairingMethod.of(initiator: f(keyboardDisplay), responder: f(displayOnly), secureConnections: true), "Passkey Entry")
        XCTAssertEqual(PairingMethod.of(initiator: f(keyboard), responder: f(keyboard), secureConnections: false), "Passkey Entry")
        XCTAssertEqual(PairingMethod.of(initiator: f(keyboardDisplay), responder: f(keyboardDisplay), secureConnections: false), "Passkey Entry")
        XCTAssertEqual(PairingMethod.of(initiator: f(keyboardDisplay), responder: f(keyboardDisplay), secureConnections: true), "Numeric Comparison")
        XCTAssertEqual(PairingMethod.of(initiator: f(keyboard, mitm: false), responder: f(keyboard, mitm: false), secureConnections: true), "Just Works")
        XCTAssertEqual(PairingMethod.of(initiator: f(keyboard, oob: true), responder: f(none), secureConnections: true), "Out of Band")
        XCTAssertEqual(PairingMethod.of(initiator: f(keyboard, oob: true), responder: f(none), secureConnections: false), "Just Works")
        XCTAssertEqual(PairingMethod.of(initiator: f(9), responder: f(keyboard), secureConnections: true), "Just Works")
    }

    /// URL secret parts: what counts, what does not, and displays that never show them.
    func testFirmwareURLSecrets() {
        func parts(_ s: String) -> [String] {
            let u = SpeakerOTA.FirmwareURL(s)
            return u.secretParts.map { String(decoding: u.bytes[$0.range], as: UTF8.self) }
        }
        XCTAssertEqual(parts("https://fw.example.com/a.bin"), [])
        XCTAssertEqual(parts("https://user@fw.example.com/a.bin"), [])
        XCTAssertEqual(parts("http://u:p4ss@h/x?sig=abc&v=2&X-Amz-Signature=ff#frag"), ["p4ss", "abc", "ff"])
        XCTAssertEqual(parts("http://h/x?token="), [])
        XCTAssertEqual(parts("not a url ?token=x"), [])
        XCTAssertEqual(parts("http://h/x?a@b=c&access_key=k1"), ["k1"])
        let u = SpeakerOTA.FirmwareURL("http://admin:hunter2@h:8080/fw?token=t0k")
        XCTAssertEqual(u.display(reveal: false), "http://admin:<redacted:7 bytes>@h:8080/fw?token=<redacted:3 bytes>")
        XCTAssertEqual(u.display(reveal: true), "http://admin:hunter2@h:8080/fw?token=t0k")
        XCTAssertEqual(u.host, "h:8080")
        XCTAssertTrue(u.hasUserInfo)
    }

    /// A connection whose end the capture never showed (its Disconnection Complete lost) ends when
    /// a new connection takes its handle: its link and findings read as they do when the capture
    /// ends there instead, and the new connection is audited on its own.
    func testAConnectionWithoutItsEndEndsWhenANewOneTakesItsHandle() throws {
        let source = Files.root.appendingPathComponent("Captures/emulated/speaker-legacy-pairing-mtu247.btsnoop").path
        let dir = try Files.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let once = dir.appendingPathComponent("no-disconnection.btsnoop").path
        let twice = dir.appendingPathComponent("then-again.btsnoop").path
        // `once`: the source without its Disconnection Complete; `twice`: that, then the whole source.
        var kept = 0
        for (path, copies) in [(once, 1), (twice, 2)] {
            let writer = try CaptureWriter(path: path, format: .btsnoopH4)
            // The copy starts a second after the first ends.
            var number = 0, shift: Int64 = 0, first: Int64?, last: Int64 = 0
            for copy in 0..<copies {
                let reader = try openCapture(source)
                while var r = try reader.next() {
                    if copy == 0, r.kind == .event, r.data.first == 0x05 { continue }
                    if first == nil { first = r.timestamp }
                    number += 1
                    r.number = number
                    r.timestamp += shift
                    last = r.timestamp
                    XCTAssertTrue(try writer.write(r, sourceIsMonitor: false))
                }
                shift = last + 1_000_000 - (first ?? 0)
                if copy == 0, copies == 1 { kept = number }
            }
            try writer.finish()
        }
        let alone = try Self.audit(once)
        let both = try Self.audit(twice)
        XCTAssertEqual(alone.links.count, 1)
        XCTAssertEqual(both.links.count, 2)
        XCTAssertTrue(SpillListTests.same(both.links[0], alone.links[0]), "the first link as the capture's end left it")
        XCTAssertFalse(alone.links[0].pairings.isEmpty, "the source pairs: its pairing must be closed when the link ends")
        let first = both.findings.filter { $0.connection != nil && ($0.records.first ?? 0) <= kept && $0.id != "capture.holds-secrets" }
        let expected = alone.findings.filter { $0.connection != nil && $0.id != "capture.holds-secrets" }
        XCTAssertFalse(expected.isEmpty)
        XCTAssertEqual(first.count, expected.count)
        for (a, b) in zip(first, expected) { XCTAssertTrue(SpillListTests.same(a, b), "\(a.id) / \(b.id)") }
        // The second connection: the same findings, on its own records.
        let second = both.findings.filter { $0.connection != nil && ($0.records.first ?? 0) > kept && $0.id != "capture.holds-secrets" }
        XCTAssertEqual(second.map(\.id), expected.map(\.id))
    }

    /// What a protocol says as its link ends belongs to that link. Improv's command cut short by
    /// the disconnection is only reported then; the audit once gave it a new link of its own,
    /// never encrypted: one connection listed twice, and on an encrypted link a false "Wi-Fi
    /// credentials sent over an unencrypted link".
    func testWhatAProtocolSaysAsItsLinkEndsBelongsToThatLink() throws {
        let source = Files.root.appendingPathComponent("Captures/emulated/improv-split-rpc-mtu247.btsnoop").path
        let dir = try Files.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // The source encrypted (an Encryption Change, written here byte by byte, after its
        // Connection Complete), cut after the first of the two writes of its WIFI_SETTINGS
        // command, and then disconnected.
        let path = dir.appendingPathComponent("encrypted-cut.btsnoop").path
        let writer = try CaptureWriter(path: path, format: .btsnoopH4)
        let encryptionChange: [UInt8] = [0x08, 0x04, 0x00, 0x40, 0x00, 0x01]  // status 0, handle 0x0040, on
        var improvWrites = 0, number = 0
        let reader = try openCapture(source)
        while var r = try reader.next() {
            let isDisconnection = r.kind == .event && r.data.first == 0x05
            // ACL: handle, length, L2CAP length, CID 0x0004, then the ATT PDU: Write Request on 0x0012.
            if r.kind == .acl, r.data.count > 10, r.data[6] == 0x04, r.data[8] == 0x12, r.data[9] == 0x12, r.data[10] == 0x00 {
                improvWrites += 1
            }
            guard improvWrites < 3 || isDisconnection else { continue }
            number += 1
            r.number = number
            XCTAssertTrue(try writer.write(r, sourceIsMonitor: false))
            if r.kind == .event, r.data.first == 0x3E {
                try encryptionChange.withUnsafeBytes { bytes in
                    number += 1
                    let change = CaptureRecord(number: number, fileOffset: 0, timestamp: r.timestamp, direction: .received, kind: .event,
                                               originalLength: bytes.count, data: bytes)
                    XCTAssertTrue(try writer.write(change, sourceIsMonitor: false))
                }
            }
        }
        try writer.finish()
        let connections = try Files.connectionsBegun(path)
        XCTAssertEqual(connections, 1)
        XCTAssertGreaterThanOrEqual(improvWrites, 3, "GET_DEVICE_INFO, then WIFI_SETTINGS in two writes")

        let report = try Self.audit(path)
        XCTAssertEqual(report.links.count, connections, "one link per connection the capture shows")
        XCTAssertEqual(report.links.first?.encryptedAtRecord, 2)
        let unfinished = report.secrets.filter { $0.context.contains("did not decode") }
        XCTAssertEqual(unfinished.count, 1, "the WIFI_SETTINGS command cut short is a credential value still")
        XCTAssertEqual(unfinished.first?.linkEncrypted, true)
        XCTAssertEqual(report.findings.map(\.id).filter { $0.hasPrefix("credentials.") }, [], "every credential went over the encrypted link")
    }

    /// Links are listed in the order their connections began, however their ends interleave: a
    /// link that ends while one that began before it is still open waits for it. Two long
    /// connections that overlap, 3,000 that come and go meanwhile, and pairs that end in the
    /// reverse order of their start, all read back from the audit's temporary files.
    func testLinksAreInTheOrderTheirConnectionsBeganHoweverTheyEnd() {
        let auditor = Auditor(source: "test", format: "test", protocols: GATTLabProtocols.all, memoryLimit: 0)
        var number = 0
        var began: [String] = []
        func info(_ handle: UInt16) -> ConnectionInfo {
            ConnectionInfo(key: ConnectionKey(controller: 0, handle: handle), frame: number, time: Int64(number))
        }
        func feed(_ event: LinkEvent) {
            number += 1
            [UInt8](repeating: 0, count: 1).withUnsafeBytes { bytes in
                let record = CaptureRecord(number: number, fileOffset: 0, timestamp: Int64(number), direction: .received, kind: .event,
                                           originalLength: 1, data: bytes)
                auditor.consume(record, gatt: [.link(event)], profile: [])
            }
        }
        func begin(_ handle: UInt16) {
            feed(.connectionComplete(info(handle)))
            began.append("\(ConnectionKey(controller: 0, handle: handle)) from \(number)")
        }
        begin(1)
        for i in 0..<3_000 {
            // The first ends two thirds in, while another that began half-way stays to the end.
            if i == 1_500 { begin(50) }
            if i == 2_000 { feed(.disconnection(info(1), reason: HCIStatus(rawValue: 0x13))) }
            let handle = UInt16(2 + i % 7)
            begin(handle)
            if i % 3 == 0 {
                // Two at once, ending in reverse order.
                begin(100)
                feed(.disconnection(info(100), reason: HCIStatus(rawValue: 0x13)))
            }
            feed(.disconnection(info(handle), reason: HCIStatus(rawValue: 0x13)))
        }
        let report = auditor.finish()
        XCTAssertEqual(report.links.count, began.count)
        XCTAssertEqual(report.links.map { "\($0.connection) from \($0.firstRecord)" }, began)
    }
}
