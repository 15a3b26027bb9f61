import ATT
import Foundation
import GATT
import Profiles
@testable import Protocols
import TestSupport
import Transport
import XCTest
@testable import Emulator

/// The planted bugs (`--quirk`): each is met by a handcrafted input, the same input does nothing
/// bad to the device without the quirk, and a crash is an event (reset, disconnect 0x08, a line
/// in `crashes`), never a trap of the emulator.
final class QuirkTests: XCTestCase {
    // MARK: Helpers

    func speaker(_ quirks: Set<SpeakerQuirk>) -> SpeakerDevice {
        var c = SpeakerConfiguration()
        c.quirks = quirks
        return SpeakerDevice(scheduler: VirtualScheduler(start: 0), seed: 1, configuration: c)
    }

    func speakerLink(_ quirks: Set<SpeakerQuirk>) -> EmulatedLink {
        var c = SpeakerConfiguration()
        c.quirks = quirks
        return EmulatedLink(seed: 1, device: SpeakerDevice.factory(c))
    }

    /// Connects and exchanges MTU 247.
    func open(_ link: EmulatedLink) async throws {
        await link.connect()
        try await link.send(ATTPDU.exchangeMTURequest(clientRxMTU: 247).encode())
        _ = try await link.receive(within: 1_000_000)
    }

    /// A Write Request; the answer, or nil when none came (the link dropped or nothing answered).
    func write(_ link: EmulatedLink, _ handle: UInt16, _ value: [UInt8]) async throws -> ATTPDU? {
        try await link.send(ATTPDU.writeRequest(handle: handle, value: value).encode())
        guard let bytes = try? await link.receive(within: 2_000_000) else { return nil }
        return try? ATTPDU.decode(bytes)
    }

    static let ssid31 = Array(repeating: UInt8(ascii: "S"), count: 31)
    static let ssid32 = Array(repeating: UInt8(ascii: "S"), count: 32)

    // MARK: ssid-overflow

    func testSSIDOverflowCrashesTheQuirkedSpeakerOnly() async throws {
        let overflowing: [[UInt8]] = [
            Self.ssid32 + [0] + Array("pw".utf8),  // a 32-byte SSID: its NUL is the 33rd byte
            Array("HomeNet".utf8),                   // no NUL at all
            Array(repeating: 0x41, count: 60),       // a long SSID, no NUL
        ]
        for value in overflowing {
            let quirked = speakerLink([.ssidOverflow])
            try await open(quirked)
            let handle = await quirked.withDevice { ($0 as? SpeakerDevice)?.credentialsHandle ?? 0 }
            let answer = try await write(quirked, handle, value)
            XCTAssertNil(answer, "a crashed firmware does not answer (\(value.count) bytes)")
            let connected = await quirked.isConnected()
            XCTAssertFalse(connected, "the link drops")
            let crashes = await quirked.crashes
            XCTAssertEqual(crashes.count, 1)
            XCTAssertTrue(crashes.first?.hasPrefix("stack buffer overflow copying the SSID") == true, "\(crashes)")

            let normal = speakerLink([])
            try await open(normal)
            let answer2 = try await write(normal, handle, value)
            XCTAssertNotNil(answer2, "answered: accepted or refused")
            let stillConnected = await normal.isConnected()
            XCTAssertTrue(stillConnected)
            let none = await normal.crashes
            XCTAssertEqual(none, [])
        }
        // 31 bytes and the NUL fit the buffer: accepted, no crash.
        let quirked = speakerLink([.ssidOverflow])
        try await open(quirked)
        let handle = await quirked.withDevice { ($0 as? SpeakerDevice)?.credentialsHandle ?? 0 }
        let answer = try await write(quirked, handle, Self.ssid31 + [0] + Array("pw".utf8))
        XCTAssertEqual(answer, .writeResponse)
        let none = await quirked.crashes
        XCTAssertEqual(none, [])
    }

    func testSSIDOverflowThroughALongWrite() throws {
        let value = Array(repeating: UInt8(ascii: "A"), count: 98)
        for quirked in [true, false] {
            let device = speaker(quirked ? [.ssidOverflow] : [])
            let s = device.server
            for offset in stride(from: 0, to: value.count, by: 18) {
                let piece = Array(value[offset..<min(value.count, offset + 18)])
                let answer = s.handle(ATTPDU.prepareWriteRequest(handle: device.credentialsHandle, offset: UInt16(offset), value: piece).encode())
                XCTAssertEqual(answer.count, 1)
            }
            let executed = s.handle(ATTPDU.executeWriteRequest(flags: 1).encode())
            if quirked {
                XCTAssertEqual(executed, [], "no Execute Write Response from a crashed firmware")
                XCTAssertNotNil(device.crash)
                XCTAssertEqual(device.requestedDisconnect, 0x08)
            } else {
                XCTAssertEqual(executed.count, 1)
                XCTAssertNil(device.crash)
                XCTAssertNil(device.requestedDisconnect)
            }
        }
    }

    // MARK: A crash is a reset

    func testACrashResetsTheSpeakerAndIsRecorded() async throws {
        let link = speakerLink([.ssidOverflow])
        let central = ScriptedCentral(bearer: link)
        await central.connect()
        _ = try await central.exchangeMTU(247)
        try await central.discover()
        try await central.subscribe(SpeakerOTA.status)
        let accepted = try await central.write(SpeakerOTA.credentials, Scenario.credentials.encode())
        XCTAssertNil(accepted)
        try await central.write(SpeakerOTA.url, Scenario.firmwareURL.encode())
        let before = SpeakerOTA.Status.decode(try await central.read(SpeakerOTA.status)).0
        XCTAssertEqual(before?.state, .urlReceived)

        _ = try? await central.write(SpeakerOTA.credentials, Self.ssid32 + [0])
        let dropped = await central.waitForDisconnect(within: 10_000_000)
        XCTAssertTrue(dropped)
        let last = await link.recording().packets.last?.bytes
        XCTAssertEqual(last?.first, 0x05, "Disconnection Complete")
        XCTAssertEqual(last?.last, 0x08, "the phone sees a supervision timeout")

        await central.connect()
        try await central.discover()
        let after = SpeakerOTA.Status.decode(try await central.read(SpeakerOTA.status)).0
        XCTAssertEqual(after?.state, .idle, "power-on state after the watchdog reset")
        let kept = await link.withDevice { d -> Bool in
            guard let s = d as? SpeakerDevice else { return true }
            return s.credentials != nil || s.url != nil || s.crash != nil
        }
        XCTAssertFalse(kept, "nothing received before the crash survives it; the link took the report")
        // Serving goes on: the next valid session works, and the next crash is recorded too.
        let again = try await central.write(SpeakerOTA.credentials, Scenario.credentials.encode())
        XCTAssertNil(again)
        _ = try? await central.write(SpeakerOTA.credentials, Array("no NUL".utf8))
        _ = await central.waitForDisconnect(within: 10_000_000)
        let crashes = await link.crashes
        XCTAssertEqual(crashes.count, 2, "\(crashes)")
    }

    // MARK: short-status-write

    func testShortStatusWriteCrashesTheQuirkedSpeakerOnly() async throws {
        let quirked = speaker([.shortStatusWrite])
        let declaration = quirked.server.table.characteristics.values.first { $0.uuid == SpeakerOTA.status }
        XCTAssertEqual((declaration?.properties ?? 0) & 0x08, 0x08, "the declaration says Write")

        for length in [0, 1, 7] {
            let link = speakerLink([.shortStatusWrite])
            try await open(link)
            let handle = await link.withDevice { ($0 as? SpeakerDevice)?.statusHandle ?? 0 }
            let answer = try await write(link, handle, Array(repeating: 0, count: length))
            XCTAssertNil(answer, "\(length) bytes")
            let crashes = await link.crashes
            XCTAssertEqual(crashes.count, 1, "\(length) bytes")
            XCTAssertTrue(crashes.first?.contains("OTA_STATUS") == true, "\(crashes)")

            let normal = speakerLink([])
            try await open(normal)
            let refused = try await write(normal, handle, Array(repeating: 0, count: length))
            XCTAssertEqual(refused, .errorResponse(requestOpcode: 0x12, handle: handle, error: .writeNotPermitted))
            let none = await normal.crashes
            XCTAssertEqual(none, [])
        }
        // Eight bytes (or more) are the ack: accepted, the status goes back to IDLE.
        let link = speakerLink([.shortStatusWrite])
        let central = ScriptedCentral(bearer: link)
        await central.connect()
        _ = try await central.exchangeMTU(247)
        try await central.discover()
        try await central.write(SpeakerOTA.url, Scenario.firmwareURL.encode())  // no credentials: ERROR
        let error = SpeakerOTA.Status.decode(try await central.read(SpeakerOTA.status)).0
        XCTAssertEqual(error?.state, .error)
        for length in [8, 12] {
            let ack = try await central.write(SpeakerOTA.status, Array(repeating: 0, count: length))
            XCTAssertNil(ack)
            let idle = SpeakerOTA.Status.decode(try await central.read(SpeakerOTA.status)).0
            XCTAssertEqual(idle?.state, .idle)
        }
        let none = await link.crashes
        XCTAssertEqual(none, [])
    }

    // MARK: unbounded-prepare-queue

    func testUnboundedPrepareQueueGrowsWhereTheNormalOneIsFull() throws {
        let piece = Array(repeating: UInt8(0x55), count: 242)
        for quirked in [true, false] {
            let device = speaker(quirked ? [.unboundedPrepareQueue] : [])
            let s = device.server
            _ = s.handle(ATTPDU.exchangeMTURequest(clientRxMTU: 247).encode())
            var full = 0
            for i in 0..<300 {
                let request = ATTPDU.prepareWriteRequest(handle: device.urlHandle, offset: UInt16(i * 242 & 0xFFFF), value: piece)
                let answer = s.handle(request.encode())
                if answer == [ATTPDU.errorResponse(requestOpcode: 0x16, handle: device.urlHandle, error: .prepareQueueFull).encode()] {
                    full += 1
                }
            }
            if quirked {
                XCTAssertEqual(full, 0)
                XCTAssertGreaterThan(s.preparedBytes, 64 * 1024)
            } else {
                XCTAssertEqual(full, 300 - s.maxPreparedWrites)
                XCTAssertEqual(s.preparedBytes, s.maxPreparedWrites * 242, "the queue stays at its limit")
            }
            // Cancel empties it either way.
            _ = s.handle(ATTPDU.executeWriteRequest(flags: 0).encode())
            XCTAssertEqual(s.preparedBytes, 0)
        }
    }

    // MARK: split-line-loss

    /// SCAN at `mtu`: the networks joined from the notifications, and whether END arrived.
    func scan(_ configuration: SensorConfiguration, mtu: UInt16) async throws -> (networks: [SensorScan.Network], complete: Bool) {
        let link = EmulatedLink(seed: 5, device: SensorDevice.factory(configuration))
        let central = ScriptedCentral(bearer: link)
        await central.connect()
        _ = try await central.exchangeMTU(mtu)
        try await central.discover()
        try await central.subscribe(SensorScan.characteristic)
        try await central.write(SensorScan.characteristic, SensorScan.request)
        var joiner = SensorScan.Joiner()
        while let chunk = try await central.nextNotification(SensorScan.characteristic, within: 10_000_000) {
            if joiner.add(chunk) { break }
        }
        let response = joiner.response()
        return (response.networks, response.complete)
    }

    func testSplitLineLossMakesTheNetworksDependOnTheMTU() async throws {
        let all = SensorConfiguration.networks(seed: 5)
        var quirked = SensorConfiguration()
        quirked.quirks = [.splitLineLoss]
        let small = try await scan(quirked, mtu: 23)
        let large = try await scan(quirked, mtu: 247)
        XCTAssertTrue(small.complete && large.complete, "the loss is silent: END arrives")
        XCTAssertNotEqual(small.networks, large.networks)
        XCTAssertEqual(large.networks, all, "at MTU 247 every line fits one chunk")
        XCTAssertLessThan(small.networks.count, all.count)
        XCTAssertTrue(small.networks.allSatisfy(all.contains), "what arrives is whole lines")

        let normalSmall = try await scan(SensorConfiguration(), mtu: 23)
        let normalLarge = try await scan(SensorConfiguration(), mtu: 247)
        XCTAssertEqual(normalSmall.networks, all)
        XCTAssertEqual(normalLarge.networks, all)

        // Markers as notifications of their own: the same loss.
        quirked.separateMarkers = true
        let separate = try await scan(quirked, mtu: 23)
        XCTAssertTrue(separate.complete)
        XCTAssertLessThan(separate.networks.count, all.count)
        XCTAssertTrue(separate.networks.allSatisfy(all.contains))
    }

    func testLossyChunksFitAndKeepOnlyWholeLines() {
        let networks = SensorConfiguration.networks(seed: 9) + [SensorScan.Network(String(repeating: "L", count: 32), rssi: -90)]
        for size in [6, 20, 21, 50, 244] {
            for separate in [false, true] {
                let chunks = SensorDevice.lossyChunks(networks, chunkSize: size, separateMarkers: separate)
                XCTAssertTrue(chunks.allSatisfy { $0.count <= size }, "size \(size)")
                var joiner = SensorScan.Joiner()
                for c in chunks { joiner.add(c) }
                let r = joiner.response()
                XCTAssertTrue(r.complete, "size \(size) separate \(separate)")
                XCTAssertTrue(r.networks.allSatisfy(networks.contains), "size \(size) separate \(separate)")
            }
        }
    }

    // MARK: Names

    func testQuirksByName() throws {
        let spec = try EmulatedDeviceSpec.named("speaker", quirks: ["ssid-overflow", "unbounded-prepare-queue"], protocols: GATTLabProtocols.all)
        XCTAssertEqual(spec.quirks, ["ssid-overflow", "unbounded-prepare-queue"])
        let device = spec.factory(VirtualScheduler(start: 0), 1) as? SpeakerDevice
        XCTAssertEqual(device?.configuration.quirks, [.ssidOverflow, .unboundedPrepareQueue])
        XCTAssertEqual(device?.server.maxPreparedWrites, .max)

        let plain = try EmulatedDeviceSpec.named("speaker", quirks: [], protocols: GATTLabProtocols.all)
        XCTAssertEqual(plain.summary, EmulatedDeviceSpec.named("speaker", protocols: GATTLabProtocols.all)?.summary)
        XCTAssertEqual((plain.factory(VirtualScheduler(start: 0), 1) as? SpeakerDevice)?.configuration.quirks, [])

        // Scenario devices keep their faults and MTU and take quirks on top.
        let sensor = try EmulatedDeviceSpec.named("sensor-mtu23-only", quirks: ["split-line-loss"], protocols: GATTLabProtocols.all)
        XCTAssertEqual(sensor.serverMTU, 23)
        XCTAssertEqual((sensor.factory(VirtualScheduler(start: 0), 1) as? SensorDevice)?.configuration.quirks, [.splitLineLoss])
        let hangs = try EmulatedDeviceSpec.named("speaker-hangs-downloading", quirks: ["short-status-write"], protocols: GATTLabProtocols.all)
        XCTAssertEqual((hangs.factory(VirtualScheduler(start: 0), 1) as? SpeakerDevice)?.configuration.hangAt, .downloading)

        XCTAssertThrowsError(try EmulatedDeviceSpec.named("speaker", quirks: ["split-line-loss"], protocols: GATTLabProtocols.all)) { error in
            XCTAssertEqual("\(error)", "no quirk 'split-line-loss' for the speaker; known: ssid-overflow, short-status-write, unbounded-prepare-queue")
        }
        XCTAssertThrowsError(try EmulatedDeviceSpec.named("sensor", quirks: ["bogus"], protocols: GATTLabProtocols.all)) { error in
            XCTAssertEqual("\(error)", "no quirk 'bogus' for the sensor; known: split-line-loss")
        }
        XCTAssertThrowsError(try EmulatedDeviceSpec.named("nrf7", quirks: ["ssid-overflow"], protocols: GATTLabProtocols.all)) { error in
            XCTAssertTrue("\(error)".contains("has no quirks"), "\(error)")
        }
        XCTAssertThrowsError(try EmulatedDeviceSpec.named("toaster", quirks: [], protocols: GATTLabProtocols.all)) { error in
            XCTAssertTrue("\(error)".hasPrefix("no device 'toaster'; known: speaker"), "\(error)")
        }
    }

    // MARK: Over the socket

    func testSocketEmulatorCountsCrashesAndStopsOnOneWhenAsked() async throws {
        let dir = try Files.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let spec = try EmulatedDeviceSpec.named("speaker", quirks: ["ssid-overflow"], protocols: GATTLabProtocols.all)
        let overflow = ATTPDU.writeRequest(handle: 14, value: Array(repeating: 0x41, count: 16)).encode()
        let credentialsHandle = (spec.factory(VirtualScheduler(start: 0), 1) as? SpeakerDevice)?.credentialsHandle
        XCTAssertEqual(credentialsHandle, 14)

        for exitOnCrash in [true, false] {
            let path = dir.appendingPathComponent("q\(exitOnCrash).sock").path
            let emulator = try SocketEmulator(device: spec, seed: 1, path: path, speed: 200, exitOnCrash: exitOnCrash)
            let lines = LogLines()
            let task = Task { await emulator.serve(connections: exitOnCrash ? nil : 2, log: { lines.add($0) }) }

            let client = try UnixSocketBearer.connect(path: path)
            try await client.send(overflow)
            let answer = try? await client.receive(within: 5_000_000)
            XCTAssertNil(answer, "no answer: the link drops")
            await client.close()
            if !exitOnCrash {
                // The device reset and serves the next client.
                let next = try UnixSocketBearer.connect(path: path)
                try await next.send(ATTPDU.readRequest(handle: 20).encode())
                let status = try await next.receive(within: 5_000_000)
                XCTAssertEqual(status, ATTPDU.readResponse(value: SpeakerOTA.Status(state: .idle).encode()).encode())
                await next.close()
            }
            let counters = await task.value
            XCTAssertEqual(counters.crashes, 1)
            XCTAssertEqual(counters.connections, exitOnCrash ? 1 : 2)
            XCTAssertEqual(counters.deviceDisconnects, 1)
            let crashes = await emulator.crashes
            XCTAssertEqual(crashes.count, 1)
            XCTAssertEqual(lines.lines.filter { $0.hasPrefix("firmware crash: stack buffer overflow copying the SSID") }.count, 1, "\(lines.lines)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: path), "serving ended and removed the socket")
        }
    }
}
