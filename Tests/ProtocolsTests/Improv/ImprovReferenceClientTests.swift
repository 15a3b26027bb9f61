import Foundation
import Profiles
@testable import Protocols
@testable import ImprovCodec
import TestSupport
import XCTest

/// An independent implementation of the packet format: Home Assistant's Improv client
/// (py-improv-ble-client, pinned in Scripts/bumble-env.sh, in the project's .venv-bumble) builds
/// RPC frames (Tests/Bumble/improv_frames.py) that GATTLab decodes, and parses the results
/// GATTLab encodes. Without the venv the tests skip on one line; with CI=true they fail.
final class ImprovReferenceClientTests: XCTestCase {
    static let skipMessage = "needs py-improv-ble-client in .venv-bumble: run Scripts/bumble-env.sh (make setup does; it needs PyPI) or set GATTLAB_BUMBLE_PYTHON"

    static func python() throws -> URL {
        let env = ProcessInfo.processInfo.environment
        let candidate = env["GATTLAB_BUMBLE_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ImprovTestSupport.root.appendingPathComponent(".venv-bumble/bin/python").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return URL(fileURLWithPath: candidate) }
        if ["true", "1", "yes"].contains(env["CI"]?.lowercased() ?? "") {
            throw TestSetupError("CI=true but \(candidate) is missing: `make setup` must create .venv-bumble (Scripts/bumble-env.sh)")
        }
        throw XCTSkip(skipMessage)
    }

    /// Runs improv_frames.py with `arguments`; one JSON object per line.
    static func frames(_ arguments: [String] = []) throws -> [[String: Any]] {
        let process = Process()
        process.executableURL = try python()
        process.arguments = [ImprovTestSupport.root.appendingPathComponent("Tests/Bumble/improv_frames.py").path] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            if errors.contains("not installed"), !["true", "1", "yes"].contains(ProcessInfo.processInfo.environment["CI"]?.lowercased() ?? "") {
                throw XCTSkip(skipMessage)
            }
            throw TestSetupError("improv_frames.py failed: \(errors)")
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    func testFramesBuiltByHomeAssistantsClientDecode() throws {
        let frames = try Self.frames()
        XCTAssertGreaterThanOrEqual(frames.count, 11)
        for f in frames {
            let name = f["name"] as? String ?? "?"
            let bytes = ImprovTestSupport.hex(f["hex"] as? String ?? "")
            let strings = (f["strings"] as? [String])?.map { Array($0.utf8) }
            if f["kind"] as? String == "command" {
                let (c, problems) = Improv.Command.decode(bytes)
                XCTAssertEqual(problems, [], name)
                let command = try XCTUnwrap(c, name)
                XCTAssertEqual(command.command.raw, f["command"] as? Int, name)
                XCTAssertNotNil(command.command.name, name)
                XCTAssertEqual(command.checksum, .valid, name)
                if let ssid = f["ssid"] as? String {
                    XCTAssertEqual(command.ssid, Array(ssid.utf8), name)
                    XCTAssertEqual(command.password?.unsafeBytes, Array((f["password"] as? String ?? "").utf8), name)
                    let layout = try XCTUnwrap(ImprovProtocol.credentials(in: bytes, characteristic: Improv.rpcCommand, endpoint: nil), name)
                    XCTAssertEqual(layout.secret.map { Array(bytes[$0]) }, [Array((f["password"] as? String ?? "").utf8)], name)
                    XCTAssertEqual(command.encode(), bytes, "\(name): GATTLab encodes the same bytes")
                } else {
                    XCTAssertEqual(command.strings, strings ?? [], name)
                    XCTAssertEqual(command.encode(), bytes, name)
                }
            } else {
                let (r, problems) = Improv.Result.decode(bytes)
                XCTAssertEqual(problems, [], name)
                XCTAssertEqual(r?.command.raw, f["command"] as? Int, name)
                XCTAssertEqual(r?.strings, strings ?? [], name)
                XCTAssertEqual(r?.encode(), bytes, name)
            }
        }
    }

    /// The client splits nothing itself, but a phone's stack may: its WIFI_SETTINGS cut into
    /// 20-byte writes joins back into the same command.
    func testTheClientsLongFrameJoinsFromWrites() throws {
        let frames = try Self.frames()  // a skip, outside XCTUnwrap, stays a skip
        let long = try XCTUnwrap(frames.first { $0["name"] as? String == "wifi-settings-long" })
        let bytes = ImprovTestSupport.hex(long["hex"] as? String ?? "")
        XCTAssertGreaterThan(bytes.count, 60)
        var p = ImprovProtocol()
        var events: [ProfileEvent] = []
        for (i, start) in stride(from: 0, to: bytes.count, by: 20).enumerated() {
            events += p.decode(ImprovTestSupport.value(Improv.rpcCommand, Array(bytes[start..<min(bytes.count, start + 20)]), frame: i + 1))
        }
        XCTAssertEqual(events.count, 1)
        let c = try XCTUnwrap(events.first?.message as? Improv.Command)
        XCTAssertEqual(c.writes, (bytes.count + 19) / 20)
        XCTAssertEqual(c.password?.count, 63)
    }

    /// The other way: results GATTLab encodes parse with the client's parser.
    func testResultsGATTLabEncodesParseInTheClient() throws {
        let results = [
            Improv.Result(command: 0x01, strings: [Array("http://improv-light.local".utf8)]),
            Improv.Result(command: 0x03, strings: ["ESPHome", "2024.6.0", "ESP32-C3", "Improv-Light"].map { Array($0.utf8) }),
            Improv.Result(command: 0x04, strings: ["HomeNet", "-52", "WPA2"].map { Array($0.utf8) }),
            Improv.Result(command: 0x04, strings: []),
        ]
        let hex = try results.map { ImprovTestSupport.hexString(try XCTUnwrap($0.encode())) }
        let parsed = try Self.frames(hex).filter { $0["parsed"] != nil }
        XCTAssertEqual(parsed.count, results.count)
        for p in parsed {
            XCTAssertEqual(p["ok"] as? Bool, true, "\(p)")
        }
        XCTAssertEqual(parsed.map { $0["type"] as? String ?? "" }, ["WiFiSettingsRes", "DeviceInfoRes", "ScanWifiRes", "ScanWifiRes"])
    }
}
