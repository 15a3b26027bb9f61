import ATT
import Capture
import Foundation
import GATT
import HCI
import Profiles
import Protocols
import XCTest
@testable import Emulator

/// Each scenario's recording through GATTLab's own pipeline (GATTDecoder + ProfileDecoder), with
/// the expected protocol messages in order; determinism; tshark agreeing on the ATT opcodes.
final class ScenarioTests: XCTestCase {
    struct Decoded {
        var summary: [String] = []
        var events: [ProfileEvent] = []
        var link: [String] = []
        var opcodes: [(frame: Int, opcode: UInt8)] = []
        var malformed: [String] = []
    }

    /// Decodes a recording and summarises its protocol events: `status:STATE[:ERROR]`,
    /// `credentials`, `url`, `control:CMD`, `scan.request`, `scan.result[:truncated]:N`; runs of
    /// DOWNLOADING statuses collapse to one.
    static func decode(_ recording: Recording, configuration: ProtocolKeys = .init()) -> Decoded {
        let gatt = GATTDecoder()
        let profiles = ProfileDecoder(protocols: GATTLabProtocols.all, keys: configuration)
        var d = Decoded()
        recording.forEachRecord { record in
            gatt.consume(record)
            for e in gatt.events {
                switch e {
                case .att(let a):
                    if let m = a.malformed { d.malformed.append(m) }
                    d.opcodes.append((record.number, a.opcode))
                case .link(.connectionComplete): d.link.append("connected")
                case .link(.disconnection(_, let reason)): d.link.append("disconnected:\(reason.name)")
                case .link(.encryptionChange(_, let on, _, _)): d.link.append("encrypted:\(on)")
                case .link(.malformed(_, _, let reason)): d.malformed.append(reason)
                default: break
                }
            }
            profiles.consume(gatt, record: record)
            for e in profiles.events {
                d.events.append(e)
                let s: String
                switch e.message {
                case let st as SpeakerOTA.Status:
                    s = "status:\(st.state?.description ?? "?")" + (st.state == .error ? ":\(st.error?.description ?? "?")" : "")
                case is SpeakerOTA.Credentials: s = "credentials"
                case is SpeakerOTA.FirmwareURL: s = "url"
                case let c as SpeakerOTA.ControlCommand: s = "control:\(c.command?.description ?? "?")"
                case is SensorScan.Request: s = "scan.request"
                case let r as SensorScan.Response: s = "scan.result" + (r.complete ? "" : ":truncated") + ":\(r.networks.count)"
                case let r as NRF7.Request: s = "nrf7.request:\(r.opCode?.description ?? "?")"
                case let r as NRF7.Response: s = "nrf7.response:\(r.requestOpCode?.description ?? "?"):\(r.status?.description ?? "?")"
                case let r as NRF7.Result where r.state != nil:
                    s = "nrf7.state:\(r.state?.description ?? "?")" + (r.reason.map { ":\($0)" } ?? "")
                case let r as NRF7.Result where r.scanRecord != nil: s = "nrf7.scan-record"
                case let m as ESPProvisioning.SessionMessage: s = "esp.session:\(m.messageType?.description ?? "?")"
                case let m as ESPProvisioning.ConfigMessage:
                    if case .status(let r) = m.payload { s = "esp.config:\(r.stationState)" } else { s = "esp.config:\(m.messageType)" }
                case let m as ESPProvisioning.ScanMessage: s = "esp.scan:\(m.messageType)"
                case let o as ESPProvisioning.OpaquePayload: s = "esp.opaque:\(o.endpoint)" + (o.encrypted ? ":encrypted" : "")
                default: s = e.kind + (e.problems.isEmpty ? "" : ":" + e.problems.map(\.id).joined(separator: ","))
                }
                if s == "status:DOWNLOADING" || s.hasPrefix("nrf7.scan-record") || s.hasPrefix("esp.opaque"), d.summary.last == s { continue }
                d.summary.append(s)
            }
        }
        return d
    }

    func run(_ name: String, seed: UInt64 = 1, mtu: UInt16 = 247) async throws -> ScenarioResult {
        let scenario = try XCTUnwrap(Scenario.named(name, protocols: GATTLabProtocols.all), name)
        return try await scenario.run(seed: seed, mtu: mtu)
    }

    static let update = ["status:IDLE", "credentials", "status:CREDS_RECEIVED", "url", "status:URL_RECEIVED",
                         "control:START", "status:WIFI_CONNECTING"]

    func testSpeakerOTA() async throws {
        let r = try await run("speaker-ota")
        let d = Self.decode(r.recording)
        XCTAssertEqual(d.summary, Self.update + ["status:WIFI_CONNECTED", "status:DOWNLOADING", "status:VERIFYING", "status:SUCCESS"])
        XCTAssertEqual(d.link, ["connected", "disconnected:Connection Terminated by Local Host"])
        XCTAssertEqual(d.malformed, [])
        let progress = d.events.compactMap { e -> UInt8? in
            if let s = e.message as? SpeakerOTA.Status, s.state == .downloading { return s.progress } else { return nil }
        }
        XCTAssertEqual(progress.first, 0)
        XCTAssertEqual(progress.last, 100)
        XCTAssertEqual(progress, progress.sorted(), "progress only grows")
        XCTAssertGreaterThanOrEqual(progress.count, 10, "a notification every 128 KB of 1480")
        // Credentials travel as one 36-byte Write Request: 40 bytes of L2CAP in two ACL fragments.
        let sent = r.recording.packets.filter { $0.kind == .acl && $0.direction == .sent }
        XCTAssertTrue(sent.allSatisfy { $0.bytes.count <= 4 + 27 }, "fragments at the 27-byte buffer size")
        XCTAssertTrue(sent.contains { $0.bytes[1] >> 4 == 0x1 }, "continuations use PB 0b01")
        XCTAssertTrue(r.recording.packets.contains { $0.kind == .event && $0.bytes[0] == 0x13 }, "Number of Completed Packets")
        let times = r.recording.packets.map(\.time)
        XCTAssertEqual(times, times.sorted(), "timestamps never go back")
    }

    func testSpeakerFaults() async throws {
        let cases: [(String, [String])] = [
            ("speaker-wrong-password", Self.update + ["status:ERROR:WIFI_CONNECT"]),
            ("speaker-5ghz-ssid", Self.update + ["status:ERROR:WIFI_CONNECT"]),
            ("speaker-http-connect", Self.update + ["status:WIFI_CONNECTED", "status:ERROR:HTTP_CONNECT"]),
            ("speaker-http-status", Self.update + ["status:WIFI_CONNECTED", "status:ERROR:HTTP_RESPONSE"]),
            ("speaker-download-stall", Self.update + ["status:WIFI_CONNECTED", "status:DOWNLOADING", "status:ERROR:DOWNLOAD"]),
            ("speaker-verify-failure", Self.update + ["status:WIFI_CONNECTED", "status:DOWNLOADING", "status:VERIFYING",
                                                      "status:ERROR:VERIFY"]),
            ("speaker-disconnect-downloading", Self.update + ["status:WIFI_CONNECTED", "status:DOWNLOADING"]),
        ]
        for (name, expected) in cases {
            let r = try await run(name)
            let d = Self.decode(r.recording)
            XCTAssertEqual(d.summary, expected, name)
            XCTAssertEqual(d.malformed, [], name)
        }
        let stall = Self.decode(try await run("speaker-download-stall").recording)
        guard let last = stall.events.last?.message as? SpeakerOTA.Status else { return XCTFail("stall status") }
        XCTAssertEqual(last.progress, 60, "stalled below 63 %")
        let dropped = Self.decode(try await run("speaker-disconnect-downloading").recording)
        XCTAssertEqual(dropped.link, ["connected", "disconnected:Connection Timeout"])
    }

    func testSpeakerRebootAndValidate() async throws {
        let d = Self.decode(try await run("speaker-reboot-validate").recording)
        XCTAssertEqual(d.summary, Self.update + ["status:WIFI_CONNECTED", "status:DOWNLOADING", "status:VERIFYING", "status:SUCCESS",
                                                 "control:REBOOT", "status:PENDING_VERIFY", "control:VALIDATE", "status:IDLE"])
        XCTAssertEqual(d.link, ["connected", "disconnected:Connection Timeout", "connected",
                                "disconnected:Connection Terminated by Local Host"])
    }

    func testCredentialsNeedingEncryption() async throws {
        let d = Self.decode(try await run("speaker-encrypted-credentials").recording)
        XCTAssertEqual(d.summary, ["status:IDLE", "credentials", "credentials", "status:CREDS_RECEIVED", "url", "status:URL_RECEIVED",
                                   "control:START", "status:WIFI_CONNECTING", "status:WIFI_CONNECTED", "status:DOWNLOADING",
                                   "status:VERIFYING", "status:SUCCESS"])
        XCTAssertEqual(d.link, ["connected", "encrypted:true", "disconnected:Connection Terminated by Local Host"])
        XCTAssertTrue(d.opcodes.contains { $0.opcode == 0x01 }, "the refused write's Error Response")
    }

    func testShortStatus() async throws {
        let d = Self.decode(try await run("speaker-short-status").recording)
        XCTAssertTrue(d.summary.contains("ota.status:status.short"), "\(d.summary)")
    }

    func testSensorScans() async throws {
        for mtu: UInt16 in [23, 247] {
            let ok = Self.decode(try await run("sensor-scan", mtu: mtu).recording)
            XCTAssertEqual(ok.summary, ["scan.request", "scan.result:8"], "MTU \(mtu)")
            let markers = Self.decode(try await run("sensor-scan-separate-markers", mtu: mtu).recording)
            XCTAssertEqual(markers.summary, ["scan.request", "scan.result:8"], "MTU \(mtu)")
            let cut = Self.decode(try await run("sensor-scan-missing-end", mtu: mtu).recording)
            XCTAssertEqual(cut.summary, ["scan.request", "scan.result:truncated:8"], "MTU \(mtu)")
            XCTAssertEqual(ok.malformed + markers.malformed + cut.malformed, [])
        }
        let small = Self.decode(try await run("sensor-scan", mtu: 23).recording)
        let notes = small.opcodes.filter { $0.opcode == 0x1B }.count
        XCTAssertGreaterThan(notes, 5, "20-byte chunks at MTU 23")
        let lost = Self.decode(try await run("sensor-scan-dropped").recording)
        XCTAssertEqual(lost.summary, ["scan.request", "scan.result:truncated:0"])
    }

    func testSensorFaultsOnTheModel() async throws {
        var config = SensorConfiguration()
        config.networks = [SensorScan.Network("A", rssi: -40), SensorScan.Network("B,with comma", rssi: -71)]
        config.delayedNotifications = [0: 1_000_000]
        let link = EmulatedLink(seed: 9, device: SensorDevice.factory(config))
        let central = ScriptedCentral(bearer: link)
        await central.connect()
        _ = try await central.exchangeMTU(247)
        _ = try await central.discover()
        try await central.subscribe(SensorScan.characteristic)
        try await central.write(SensorScan.characteristic, SensorScan.request)
        let before = await link.now()
        let chunk = try await central.nextNotification(SensorScan.characteristic, within: 10_000_000)
        let after = await link.now()
        XCTAssertEqual(chunk, Array("A,-40\nB,with comma,-71\nEND\n".utf8))
        XCTAssertGreaterThanOrEqual(after - before, 3_500_000, "scan time plus the delay")
    }

    func testSameSeedSameBytes() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gattlab-emu-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for name in ["speaker-reboot-validate", "sensor-scan", "nrf7-provision", "esp-sec1-provision"] {
            var files: [Data] = []
            for (i, seed) in [UInt64(5), 5, 6].enumerated() {
                let path = dir.appendingPathComponent("\(name)-\(i).btsnoop").path
                try (try await run(name, seed: seed)).recording.write(to: path)
                files.append(try Data(contentsOf: URL(fileURLWithPath: path)))
            }
            XCTAssertEqual(files[0], files[1], "\(name): same seed, same bytes")
            XCTAssertNotEqual(files[0], files[2], "\(name): another seed, other timing")
            XCTAssertEqual(Array(files[0].prefix(16)), Array("btsnoop\0".utf8) + [0, 0, 0, 1, 0, 0, 0x03, 0xEA])
        }
    }

    /// tshark reads every recording with the same ATT opcodes in the same frames as GATTLab.
    func testTsharkAgreesOnTheATTOpcodes() async throws {
        let tshark = "/usr/bin/tshark"
        guard FileManager.default.isExecutableFile(atPath: tshark) else { throw XCTSkip("tshark is not installed") }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gattlab-emu-ts-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for name in ["speaker-reboot-validate", "speaker-encrypted-credentials", "sensor-scan", "sensor-scan-missing-end",
                     "nrf7-provision", "esp-sec1-provision"] {
            for mtu: UInt16 in [23, 247] {
                let path = dir.appendingPathComponent("\(name)-\(mtu).btsnoop").path
                let r = try await run(name, mtu: mtu)
                try r.recording.write(to: path)
                let p = Process()
                p.executableURL = URL(fileURLWithPath: tshark)
                p.arguments = ["-r", path, "-T", "fields", "-e", "frame.number", "-e", "btatt.opcode", "-e", "_ws.malformed"]
                let pipe = Pipe()
                p.standardOutput = pipe
                p.standardError = FileHandle.nullDevice
                try p.run()
                let out = pipe.fileHandleForReading.readDataToEndOfFile()
                p.waitUntilExit()
                XCTAssertEqual(p.terminationStatus, 0)
                var theirs: [String] = []
                for line in String(decoding: out, as: UTF8.self).split(separator: "\n") {
                    let f = line.split(separator: "\t", omittingEmptySubsequences: false)
                    guard f.count >= 2, !f[1].isEmpty else { continue }
                    XCTAssertTrue(f.count < 3 || f[2].isEmpty, "tshark: malformed frame \(f[0]) in \(name)")
                    theirs.append("\(f[0]):\(UInt8(f[1].dropFirst(2), radix: 16) ?? 0)")
                }
                let ours = Self.decode(r.recording).opcodes.map { "\($0.frame):\($0.opcode)" }
                XCTAssertEqual(theirs, ours, "\(name) at MTU \(mtu)")
                XCTAssertGreaterThan(ours.count, 20)
            }
        }
    }
}
