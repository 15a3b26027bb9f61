import ATT
import Foundation
import Profiles
@testable import Protocols
import TestSupport
import Transport
import XCTest
#if canImport(Glibc)
import Glibc
#endif
@testable import Emulator

/// A device served on a Unix socket (`SocketEmulator`) driven by a phone over `UnixSocketLink`:
/// the same scenario steps as on the virtual link, state kept from client to client, and a host
/// that survives whatever a client does.
final class SocketEmulatorTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try Files.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    /// Device time runs this much faster than the wall clock in these tests: fast enough for a
    /// whole speaker update in about 70 ms, slow enough that a 10 ms stall of a loaded machine is
    /// 2 s of device time, inside the scripts' margins (see `everyScenario`).
    static let speed = 200.0

    func socketPath(_ name: String) -> String { dir.appendingPathComponent(name).path }

    /// Serves `name`'s device in a task; returns the emulator and the task that ends with its counters.
    func serve(_ name: String, path: String, connections: Int?, speed: Double = speed, stop: StopSignal? = nil,
               log: (@Sendable (String) -> Void)? = nil) throws -> (SocketEmulator, Task<SocketEmulatorCounters, Never>) {
        let spec = try XCTUnwrap(EmulatedDeviceSpec.named(name, protocols: GATTLabProtocols.all))
        let emulator = try SocketEmulator(device: spec, seed: 1, path: path, speed: speed)
        let task = Task { await emulator.serve(connections: connections, stop: stop, log: log) }
        return (emulator, task)
    }

    /// Runs one scenario over the socket; its log, or the error as the last line.
    func runOverSocket(_ scenario: Scenario, mtu: UInt16, speed: Double = speed) async throws -> [String] {
        // Short: a socket path has at most 107 bytes, and the temporary directory takes half.
        let path = socketPath("s\(Scenario.all(GATTLabProtocols.all).firstIndex { $0.name == scenario.name } ?? 0)-\(mtu)-\(Int(speed)).sock")
        let stop = StopSignal()
        let (_, task) = try serve(scenario.name, path: path, connections: nil, speed: speed, stop: stop)
        let link = UnixSocketLink(path: path, speed: speed)
        var lines: [String]
        do {
            lines = try await scenario.run(over: link, mtu: mtu)
        } catch {
            lines = ["stopped: \(error)"]
        }
        stop.stop()
        _ = await task.value
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "a stopped emulator removes its socket file")
        return lines
    }

    // MARK: (a) every scenario, as on the virtual link

    func testEveryScenarioOverTheSocketLogsAsInProcess() async throws {
        try await everyScenario(mtu: 247)
    }

    func testEveryScenarioOverTheSocketLogsAsInProcessAtMTU23() async throws {
        try await everyScenario(mtu: 23)
    }

    /// Each scenario runs at the speed that makes it last about a quarter of a second: device
    /// and phone follow the wall clock, so a stall of the machine (a loaded CI runner) is a stall
    /// of `speed` times as long in device time, and the scenarios' closest margins are about one
    /// second of device time (sensor-scan-delayed's answer 8.5 s late against a 10 s window). At
    /// 2000x that is half a millisecond of real time; a run that short gives its margins tens
    /// of milliseconds instead.
    func everyScenario(mtu: UInt16) async throws {
        var mismatches: [String] = []
        for scenario in Scenario.all(GATTLabProtocols.all) {
            let expected: [String]
            let duration: Int64
            do {
                let result = try await scenario.run(seed: 1, mtu: mtu)
                expected = result.log
                duration = (result.recording.packets.last?.time ?? 0) - (result.recording.packets.first?.time ?? 0)
            } catch {
                expected = ["stopped: \(error)"]
                duration = 0
            }
            XCTAssertFalse(expected.contains { $0.hasPrefix("stopped:") }, "\(scenario.name) at MTU \(mtu) stopped in process: \(expected)")
            // Device time runs on the wall clock in both processes: a loaded machine can stall
            // one long enough to change a race between a device timer and a phone timeout. A
            // mismatch is tried again five times slower, and must then match.
            var speed = min(2000, max(50, (Double(duration) / 250_000).rounded()))
            var got = try await runOverSocket(scenario, mtu: mtu, speed: speed)
            if got != expected {
                speed = max(10, (speed / 5).rounded())
                got = try await runOverSocket(scenario, mtu: mtu, speed: speed)
            }
            if ProcessInfo.processInfo.environment["GATTLAB_PRINT_LOGS"] != nil {
                print(scenario.name, mtu, "speed \(speed)", got)
            }
            if got != expected {
                mismatches.append("\(scenario.name) at MTU \(mtu), speed \(speed):\n  in process: \(expected)\n  socket:     \(got)")
            }
        }
        XCTAssertEqual(mismatches, [], mismatches.joined(separator: "\n"))
    }

    // MARK: (b) state kept from one client to the next

    func testTheNextClientFindsTheRebootedSpeakerPendingVerify() async throws {
        let path = socketPath("speaker.sock")
        let lines = LogLines()
        let (emulator, task) = try serve("speaker", path: path, connections: 3, log: { lines.add($0) })

        // Client 1: the whole update, then REBOOT; the device resets and hangs up.
        let first = UnixSocketLink(path: path, speed: Self.speed)
        let phone = ScriptedCentral(bearer: first)
        await phone.connect()
        _ = try await phone.exchangeMTU(247)
        try await phone.discover()
        try await phone.subscribe(SpeakerOTA.status)
        let refused = try await phone.write(SpeakerOTA.credentials, Scenario.credentials.encode())
        XCTAssertNil(refused)
        try await phone.write(SpeakerOTA.url, Scenario.firmwareURL.encode())
        try await phone.write(SpeakerOTA.control, SpeakerOTA.ControlCommand(.start).encode())
        var last: SpeakerOTA.State?
        while let bytes = try await phone.nextNotification(SpeakerOTA.status, within: 60_000_000) {
            last = SpeakerOTA.Status.decode(bytes).0?.state
            if last == .success || last == .error { break }
        }
        XCTAssertEqual(last, .success)
        try await phone.write(SpeakerOTA.control, SpeakerOTA.ControlCommand(.reboot).encode())
        let dropped = await phone.waitForDisconnect(within: 10_000_000)
        XCTAssertTrue(dropped, "the device hangs up as it reboots")

        // Client 2: a new phone reads PENDING_VERIFY, and the connection starts afresh (MTU 23).
        let second = ScriptedCentral(bearer: UnixSocketLink(path: path, speed: Self.speed))
        await second.connect()
        try await second.discover()
        let status = SpeakerOTA.Status.decode(try await second.read(SpeakerOTA.status)).0
        XCTAssertEqual(status?.state, .pendingVerify)
        // Subscriptions do not carry over: VALIDATE changes the state with no notification.
        try await second.write(SpeakerOTA.control, SpeakerOTA.ControlCommand(.validate).encode())
        let quiet = try await second.nextNotification(SpeakerOTA.status, within: 1_000_000)
        XCTAssertNil(quiet, "the CCCD of the first client is not the second's")
        await second.disconnect()

        // Client 3: IDLE, validated.
        let third = ScriptedCentral(bearer: UnixSocketLink(path: path, speed: Self.speed))
        await third.connect()
        try await third.discover()
        let validated = SpeakerOTA.Status.decode(try await third.read(SpeakerOTA.status)).0
        XCTAssertEqual(validated?.state, .idle)
        await third.disconnect()

        let counters = await task.value
        XCTAssertEqual(counters.connections, 3)
        XCTAssertEqual(counters.deviceDisconnects, 1)
        XCTAssertEqual(counters.clientHangups, 2)
        let history = await emulator.withDevice { ($0 as? SpeakerDevice)?.history ?? [] }
        XCTAssertEqual(history.suffix(2), [.pendingVerify, .idle])
        XCTAssertEqual(lines.lines.count, 3, "\(lines.lines)")
        XCTAssertTrue(lines.lines.first?.hasPrefix("client 1: ") == true, "\(lines.lines)")
        XCTAssertTrue(lines.lines.first?.hasSuffix("the device hung up (0x08)") == true, "\(lines.lines)")
        XCTAssertTrue(lines.lines.last?.hasSuffix("the client hung up") == true, "\(lines.lines)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "after its last connection the socket file is gone")
    }

    /// Encryption is per connection: `0x00 "encrypt"` opens encrypted-only characteristics until
    /// the client hangs up; other 0x00 messages change nothing.
    func testEncryptionControlMessageLastsOneConnection() async throws {
        let path = socketPath("enc.sock")
        let (_, task) = try serve("speaker-encrypted-credentials", path: path, connections: 2)
        for round in 0..<2 {
            let link = UnixSocketLink(path: path, speed: Self.speed)
            let phone = ScriptedCentral(bearer: link)
            await phone.connect()
            try await phone.discover()
            let refused = try await phone.write(SpeakerOTA.credentials, Scenario.credentials.encode())
            XCTAssertEqual(refused, .insufficientEncryption, "round \(round): a new connection is not encrypted")
            try await link.send([0x00] + Array("encryptx".utf8))
            try await link.send([0x00])
            let still = try await phone.write(SpeakerOTA.credentials, Scenario.credentials.encode())
            XCTAssertEqual(still, .insufficientEncryption, "other control messages are ignored")
            await phone.encrypt()
            let accepted = try await phone.write(SpeakerOTA.credentials, Scenario.credentials.encode())
            XCTAssertNil(accepted)
            await phone.disconnect()
        }
        let counters = await task.value
        XCTAssertEqual(counters.encryptions, 2)
        XCTAssertEqual(counters.ignoredControlMessages, 4)
    }

    // MARK: (c) clients that misbehave

    func testClientsThatVanishOrSendGarbageDoNotStopTheHost() async throws {
        let path = socketPath("rough.sock")
        let lines = LogLines()
        let (_, task) = try serve("speaker", path: path, connections: 5, log: { lines.add($0) })

        // 1: vanishes in the middle of a long write (prepare queue filled, no execute).
        do {
            let bearer = try UnixSocketBearer.connect(path: path)
            try await bearer.send(ATTPDU.exchangeMTURequest(clientRxMTU: 23).encode())
            _ = try await bearer.receive()
            try await bearer.send(ATTPDU.prepareWriteRequest(handle: 14, offset: 0, value: Array(repeating: 0x41, count: 18)).encode())
            _ = try await bearer.receive()
            try await bearer.send(ATTPDU.prepareWriteRequest(handle: 14, offset: 18, value: Array(repeating: 0x42, count: 18)).encode())
            await bearer.close()
        }
        // 2: vanishes with requests in flight, before reading any answer.
        do {
            let bearer = try UnixSocketBearer.connect(path: path)
            for _ in 0..<50 { try await bearer.send(ATTPDU.readRequest(handle: 3).encode()) }
            await bearer.close()
        }
        // 3: garbage, empty, the largest and over-long messages, every opcode with random bytes;
        // after each, the host still answers a Read on the same connection.
        do {
            let bearer = try UnixSocketBearer.connect(path: path)
            var random = SeededRandom(seed: 42)
            try await bearer.send([])
            try await Self.expectStillServed(bearer)
            for big: [UInt8] in [Array(repeating: 0xFF, count: maxBearerPDU),
                        [0x12] + Array(repeating: 0x00, count: maxBearerPDU - 1),
                        [0x16, 0x0E, 0x00, 0xFF, 0xFF] + Array(repeating: 0x41, count: maxBearerPDU - 5)] {
                try await bearer.send(big)
                try await Self.expectStillServed(bearer)
            }
            try Self.sendRaw(Array(repeating: 0x0A, count: 70_000), on: bearer)
            try await Self.expectStillServed(bearer)
            for opcode in 0...255 {
                let length = Int(random.below(40))
                try await bearer.send([UInt8(opcode)] + (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) })
                try await Self.expectStillServed(bearer)
            }
            await bearer.close()
        }
        // 4: vanishes while the device is busy sending notifications (a download in progress).
        do {
            let phone = ScriptedCentral(bearer: UnixSocketLink(path: path, speed: Self.speed))
            await phone.connect()
            try await phone.discover()
            try await phone.subscribe(SpeakerOTA.status)
            try await phone.write(SpeakerOTA.credentials, Scenario.credentials.encode())
            try await phone.write(SpeakerOTA.url, Scenario.firmwareURL.encode())
            try await phone.write(SpeakerOTA.control, SpeakerOTA.ControlCommand(.start).encode())
            _ = try await phone.nextNotification(SpeakerOTA.status, within: 5_000_000)
            await phone.disconnect()
        }
        // 5: a normal client is served as if nothing happened.
        let phone = ScriptedCentral(bearer: UnixSocketLink(path: path, speed: Self.speed))
        await phone.connect()
        let mtu = try await phone.exchangeMTU(247)
        XCTAssertEqual(mtu, 247)
        let table = try await phone.discover()
        XCTAssertEqual(table.characteristics.count, 8)
        let name = try await phone.read(handle: 3)
        XCTAssertEqual(name.map { String(decoding: $0, as: UTF8.self) }, "CV-Speaker")
        await phone.disconnect()

        let counters = await task.value
        XCTAssertEqual(counters.connections, 5)
        XCTAssertEqual(counters.clientHangups, 5)
        XCTAssertGreaterThanOrEqual(counters.emptyMessages, 1)
        XCTAssertEqual(counters.oversizedMessages, 1)
        XCTAssertGreaterThanOrEqual(counters.ignoredControlMessages, 1, "opcode 0x00 with bytes is a control message")
        XCTAssertEqual(lines.lines.count, 5, "\(lines.lines)")
    }

    /// A Read of the device name is still answered (skipping what earlier messages caused).
    static func expectStillServed(_ bearer: UnixSocketBearer, file: StaticString = #filePath, line: UInt = #line) async throws {
        try await bearer.send(ATTPDU.readRequest(handle: 3).encode())
        let name = [0x0B] + Array("CV-Speaker".utf8)
        for _ in 0..<8 {
            guard let answer = try await bearer.receive(within: 5_000_000) else { break }
            if answer == name { return }
        }
        XCTFail("the host stopped answering", file: file, line: line)
    }

    /// A client that sends and never reads: the host gives up on it after its send timeout and
    /// serves the next one.
    func testAClientThatNeverReadsIsDroppedAfterTheSendTimeout() async throws {
        let path = socketPath("flood.sock")
        let spec = try XCTUnwrap(EmulatedDeviceSpec.named("speaker", protocols: GATTLabProtocols.all))
        let emulator = try SocketEmulator(device: spec, seed: 1, path: path, speed: Self.speed, clientSendTimeout: 200_000)
        let lines = LogLines()
        let task = Task { await emulator.serve(connections: 2, log: { lines.add($0) }) }
        let flooder = try UnixSocketBearer.connect(path: path)
        flooder.setSendTimeout(3_000_000)
        var sent = 0
        do {
            for _ in 0..<20_000 {
                try await flooder.send(ATTPDU.readRequest(handle: 3).encode())
                sent += 1
            }
        } catch {}
        XCTAssertLessThan(sent, 20_000, "the host hung up on the flooding client")
        let phone = ScriptedCentral(bearer: UnixSocketLink(path: path, speed: Self.speed))
        await phone.connect()
        let name = try await phone.read(handle: 3)
        XCTAssertEqual(name.map { String(decoding: $0, as: UTF8.self) }, "CV-Speaker")
        await phone.disconnect()
        _ = await task.value
        XCTAssertTrue(lines.lines.first?.hasSuffix("the client vanished (a send failed)") == true, "\(lines.lines)")
        await flooder.close()
    }

    /// One message longer than any L2CAP SDU, which UnixSocketBearer refuses to send.
    static func sendRaw(_ bytes: [UInt8], on bearer: UnixSocketBearer) throws {
        // The bearer's descriptor is private; a second connection would be another client, so
        // find the descriptor through the bearer's mirror.
        guard let socket = Mirror(reflecting: bearer).children.first(where: { $0.label == "socket" })?.value,
              let fd = Mirror(reflecting: socket).children.first(where: { $0.label == "fd" })?.value as? Int32 else {
            throw XCTSkip("no descriptor to send an over-long message on")
        }
        var size: Int32 = 1 << 20
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        XCTAssertEqual(sent, bytes.count, String(cString: strerror(errno)))
    }

    // MARK: The link itself

    func testLinkConnectFailureIsKeptAndSendsThrowClosed() async throws {
        let link = UnixSocketLink(path: socketPath("nobody.sock"))
        await link.connect()
        let connected = await link.isConnected()
        XCTAssertFalse(connected)
        let error = await link.lastError
        XCTAssertNotNil(error)
        XCTAssertTrue("\(error.map { "\($0)" } ?? "")".contains("cannot connect"))
        do {
            try await link.send([0x02, 0x17, 0x00])
            XCTFail("a link that never connected cannot send")
        } catch {
            XCTAssertEqual(error, .closed)
        }
    }

    func testSpeedMakesDeviceTimersFireSooner() async throws {
        // The download-stall device fails 30 s of device time after the stall: at 1000x, 30 ms.
        let scenario = try XCTUnwrap(Scenario.named("speaker-download-stall", protocols: GATTLabProtocols.all))
        let start = Date()
        let lines = try await runOverSocket(scenario, mtu: 247, speed: 1000)
        XCTAssertTrue(lines.contains { $0.hasPrefix("update ended: ERROR") }, "\(lines)")
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
    }
}

/// Lines from the emulator's log callback, which runs on the emulator's actor.
final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func add(_ line: String) { lock.withLock { stored.append(line) } }
    var lines: [String] { lock.withLock { stored } }
}
