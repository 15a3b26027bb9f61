import Foundation
import Transport
import XCTest

/// `gattlab emulate DEVICE --listen unix:PATH`: the built binary serves a device to a client over
/// the socket, stops after --connections or on SIGTERM, removes its socket, and reports errors
/// in one line.
final class EmulateServeTests: XCTestCase {
    func testServesOneClientThenExitsAndRemovesTheSocket() async throws {
        let gattlab = try Harness.gattlab
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("speaker.sock").path
        final class Box: @unchecked Sendable { var result: Harness.Result? }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            box.result = try? Harness.run(gattlab, ["emulate", "speaker", "--listen", "unix:\(path)", "--connections", "1", "--speed", "1000"],
                                          timeout: 30)
            done.signal()
        }
        let bearer = try Harness.connectWhenListening(path)
        try await bearer.send([0x02, 0xF7, 0x00])
        let answer = try await bearer.receive(within: 5_000_000)
        XCTAssertEqual(answer, [0x03, 0xF7, 0x00], "Exchange MTU answered with the speaker's 247")
        try await bearer.send([0x0A, 0x03, 0x00])
        let name = try await bearer.receive(within: 5_000_000)
        XCTAssertEqual(name, [0x0B] + Array("CV-Speaker".utf8))
        await bearer.close()
        done.wait()
        let r = try XCTUnwrap(box.result)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertFalse(r.signalled)
        let lines = r.stderr.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "listening on unix:\(path): speaker (seed 1, speed 1000x)")
        XCTAssertEqual(lines.dropFirst().first, "client 1: 2 PDUs in, 2 out; the client hung up", r.stderr)
        XCTAssertEqual(r.stdout, "")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "the socket file is removed")
    }

    func testSIGTERMStopsServingAndRemovesTheSocket() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("sensor.sock").path
        let process = Process()
        process.executableURL = try Harness.gattlab
        process.arguments = ["emulate", "serve", "sensor-scan", "--listen", "unix:\(path)", "--quiet"]
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // A client is connected when the signal comes.
        let bearer = try Harness.connectWhenListening(path)
        process.terminate()
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.interrupt()
            XCTFail("SIGTERM did not stop the emulator")
        }
        process.waitUntilExit()
        withExtendedLifetime(bearer) {}
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 0)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(stderr, "listening on unix:\(path): sensor-scan (seed 1, speed 1x)\n", "--quiet: no line per client")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "the socket file is removed")
    }

    func testErrorsAreOneLine() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("plain").path
        _ = FileManager.default.createFile(atPath: file, contents: Data("keep".utf8))
        let r = try Harness.gattlab(["emulate", "speaker", "--listen", "unix:\(file)"], timeout: 30)
        XCTAssertEqual(r.status, 73, r.stderr)
        XCTAssertEqual(r.stderr, "gattlab: error: \(file) exists and is not a socket; choose another path\n"
                       + "gattlab: hint: choose a socket path in a folder you can write to\n")
        XCTAssertEqual(try String(contentsOfFile: file, encoding: .utf8), "keep", "an existing file is never replaced")

        let long = try Harness.gattlab(["emulate", "speaker", "--listen", "unix:/tmp/" + String(repeating: "x", count: 120)], timeout: 30)
        XCTAssertEqual(long.status, 73, long.stderr)
        XCTAssertTrue(Harness.oneError(long.stderr), long.stderr)
        XCTAssertTrue(long.stderr.hasPrefix("gattlab: error: unix socket path of 125 bytes"), long.stderr)

        let unknown = try Harness.gattlab(["emulate", "toaster", "--listen", "unix:\(dir.path)/t.sock"], timeout: 30)
        XCTAssertEqual(unknown.status, 64)
        XCTAssertTrue(unknown.stderr.contains("no device 'toaster'; known: speaker, speaker-hangs-downloading, sensor, nrf7, esp, improv, speaker-ota"), unknown.stderr)

        let tcp = try Harness.gattlab(["emulate", "speaker", "--listen", "tcp:1234"], timeout: 30)
        XCTAssertEqual(tcp.status, 64)
        XCTAssertTrue(tcp.stderr.contains("--listen takes unix:PATH"), tcp.stderr)
    }

    func testListNamesDevicesAndScenarios() throws {
        let r = try Harness.gattlab(["emulate", "list"])
        XCTAssertEqual(r.status, 0, r.stderr)
        for name in ["speaker", "sensor", "nrf7", "esp", "improv", "speaker-ota", "sensor-scan-delayed", "improv-split-rpc"] {
            XCTAssertTrue(r.stdout.contains("\n  \(name) "), "\(name) listed:\n\(r.stdout)")
        }
    }
}
