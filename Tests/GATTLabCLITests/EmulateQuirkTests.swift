import Foundation
import Transport
import XCTest

/// `gattlab emulate NAME --quirk ... [--exit-on-crash]`: planted bugs for fuzzers, by name; a
/// planted crash ends the process with status 70 and one line, the black-box "target died".
final class EmulateQuirkTests: XCTestCase {
    func connect(_ path: String, within seconds: Double = 20) throws -> UnixSocketBearer {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            do {
                return try UnixSocketBearer.connect(path: path)
            } catch {
                if Date() > deadline { throw error }
                usleep(20_000)
            }
        }
    }

    func testAnOverflowingSSIDEndsTheProcessWithStatus70() async throws {
        let gattlab = try Harness.gattlab
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("speaker.sock").path
        final class Box: @unchecked Sendable { var result: Harness.Result? }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            box.result = try? Harness.run(gattlab, ["emulate", "speaker", "--quirk", "ssid-overflow", "--exit-on-crash", "--quiet",
                                                    "--listen", "unix:\(path)", "--speed", "1000"], timeout: 30)
            done.signal()
        }
        let bearer = try connect(path)
        try await bearer.send([0x02, 0xF7, 0x00])
        let mtu = try await bearer.receive(within: 5_000_000)
        XCTAssertEqual(mtu, [0x03, 0xF7, 0x00])
        // Write Request to OTA_CREDENTIALS (0x000E): a 40-byte SSID, then the NUL and a password.
        try await bearer.send([0x12, 0x0E, 0x00] + Array(repeating: UInt8(ascii: "A"), count: 40) + [0x00, 0x70, 0x77])
        let answer = try? await bearer.receive(within: 5_000_000)
        XCTAssertNil(answer, "a crashed firmware does not answer")
        await bearer.close()
        done.wait()
        let r = try XCTUnwrap(box.result)
        XCTAssertEqual(r.status, 70, r.stderr)
        XCTAssertFalse(r.signalled)
        let lines = r.stderr.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "listening on unix:\(path): speaker (seed 1, speed 1000x, quirks ssid-overflow)")
        XCTAssertEqual(lines.count, 2, r.stderr)
        XCTAssertEqual(lines.last, "gattlab: firmware crash: stack buffer overflow copying the SSID (43-byte credentials, no NUL in the first 32 bytes); exiting (--exit-on-crash)")
        XCTAssertEqual(r.stdout, "")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "the socket file is removed")
    }

    func testUnknownQuirksAreUsageErrorsNamingTheKnownOnes() throws {
        let dir = try Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try Harness.gattlab(["emulate", "speaker", "--quirk", "split-line-loss", "--listen", "unix:\(dir.path)/q.sock"], timeout: 30)
        XCTAssertEqual(r.status, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("no quirk 'split-line-loss' for the speaker; known: ssid-overflow, short-status-write, unbounded-prepare-queue"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(dir.path)/q.sock"))

        let nrf = try Harness.gattlab(["emulate", "nrf7", "--quirk", "ssid-overflow", "--listen", "unix:\(dir.path)/n.sock"], timeout: 30)
        XCTAssertEqual(nrf.status, 64, nrf.stderr)
        XCTAssertTrue(nrf.stderr.contains("has no quirks"), nrf.stderr)

        let sensor = try Harness.gattlab(["emulate", "sensor", "--quirk", "bogus", "--listen", "unix:\(dir.path)/s.sock"], timeout: 30)
        XCTAssertEqual(sensor.status, 64, sensor.stderr)
        XCTAssertTrue(sensor.stderr.contains("no quirk 'bogus' for the sensor; known: split-line-loss"), sensor.stderr)
    }

    func testListNamesTheQuirks() throws {
        let r = try Harness.gattlab(["emulate", "list"])
        XCTAssertEqual(r.status, 0, r.stderr)
        for name in ["speaker ssid-overflow", "speaker short-status-write", "speaker unbounded-prepare-queue", "sensor split-line-loss"] {
            XCTAssertTrue(r.stdout.contains("\n  \(name) "), "\(name) listed:\n\(r.stdout)")
        }
    }
}
