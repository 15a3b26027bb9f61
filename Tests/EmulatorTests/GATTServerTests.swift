import ATT
import GATT
import Profiles
import Protocols
import TestSupport
import XCTest
@testable import Emulator

/// Known-answer ATT bytes for each request type, on the speaker's table (handles in its builtInTable).
final class GATTServerTests: XCTestCase {
    func speakerServer(mtu: UInt16 = 247) throws -> GATTServer {
        let table = try XCTUnwrap(GATTLabProtocols.all.builtInTable(named: "speaker")).table
        return GATTServer(table: table, serverMTU: mtu, values: [3: Array("CV-Speaker".utf8), 5: [0x41, 0x08]])
    }

    func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.filter { !$0.isWhitespace })
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }

    func assertAnswer(_ s: GATTServer, _ request: String, _ expected: [String], file: StaticString = #filePath, line: UInt = #line) {
        let got = s.handle(bytes(request))
        XCTAssertEqual(got, expected.map(bytes), "request \(request)", file: file, line: line)
    }

    let speakerServiceLE = "78563412f0debc9a7856341201000000"

    func testExchangeMTU() throws {
        let s = try speakerServer()
        assertAnswer(s, "02 0502", ["03 f700"])
        XCTAssertEqual(s.mtu, 247, "the smaller of 517 and 247")
        let small = try speakerServer()
        assertAnswer(small, "02 0a00", ["03 f700"])
        XCTAssertEqual(small.mtu, 23, "never below 23")
        let mid = try speakerServer()
        assertAnswer(mid, "02 4000", ["03 f700"])
        XCTAssertEqual(mid.mtu, 64)
        assertAnswer(mid, "02 f700", ["03 f700"])
        XCTAssertEqual(mid.mtu, 64, "only the first exchange counts")
    }

    func testDiscoveryAnswers() throws {
        let s = try speakerServer()
        assertAnswer(s, "10 0100 ffff 0028", ["11 06 0100 0500 0018 0600 0900 0118"])
        assertAnswer(s, "10 0a00 ffff 0028", ["11 14 0a00 1500 " + speakerServiceLE])
        assertAnswer(s, "10 1600 ffff 0028", ["01 10 1600 0a"])
        assertAnswer(s, "10 0100 ffff 0128", ["01 10 0100 0a"])
        assertAnswer(s, "10 0100 ffff 0328", ["01 10 0100 10"])
        assertAnswer(s, "08 0100 0500 0328", ["09 07 0200 020300 002a 0400 020500 012a"])
        assertAnswer(s, "08 1300 1500 0328", ["09 15 1300 121400 78563412f0debc9a7856341208000000"])
        assertAnswer(s, "08 0100 ffff 002a", ["09 0c 0300 " + Array("CV-Speaker".utf8).map { String(format: "%02x", $0) }.joined()])
        assertAnswer(s, "08 1400 1500 0328", ["01 08 1400 0a"])
        assertAnswer(s, "04 0900 0900", ["05 01 0900 0229"])
        assertAnswer(s, "04 0100 0300", ["05 01 0100 0028 0200 0328 0300 002a"])
        assertAnswer(s, "04 0c00 0c00", ["05 02 0c00 78563412f0debc9a7856341202000000"])
        assertAnswer(s, "04 1600 ffff", ["01 04 1600 0a"])
        assertAnswer(s, "06 0100 ffff 0028 0118", ["07 0600 0900"])
        assertAnswer(s, "06 0100 ffff 0028 " + speakerServiceLE, ["07 0a00 1500"])
        assertAnswer(s, "06 0100 ffff 0028 0f18", ["01 06 0100 0a"])
    }

    func testRangeErrors() throws {
        let s = try speakerServer()
        assertAnswer(s, "04 0000 ffff", ["01 04 0000 01"])
        assertAnswer(s, "04 0500 0400", ["01 04 0500 01"])
        assertAnswer(s, "08 0000 ffff 0328", ["01 08 0000 01"])
        assertAnswer(s, "10 0900 0100 0028", ["01 10 0900 01"])
        assertAnswer(s, "06 0000 0100 0028 0018", ["01 06 0000 01"])
    }

    func testReadsAndBlobs() throws {
        let s = try speakerServer()
        assertAnswer(s, "0a 0300", ["0b 43562d537065616b6572"])
        assertAnswer(s, "0a 0e00", ["01 0a 0e00 02"])          // OTA_CREDENTIALS is write-only
        assertAnswer(s, "0a 9900", ["01 0a 9900 01"])
        assertAnswer(s, "0c 0300 0200", ["01 0c 0300 0b"])     // fits a Read Response: not long
        assertAnswer(s, "0c 0300 0b00", ["01 0c 0300 07"])     // past the end
        s.setValue(Array(0..<30), for: 12)
        assertAnswer(s, "0a 0c00", ["0b " + (0..<22).map { String(format: "%02x", $0) }.joined()])
        assertAnswer(s, "0c 0c00 1600", ["0d " + (22..<30).map { String(format: "%02x", $0) }.joined()])
        assertAnswer(s, "0c 0c00 1e00", ["0d"])                 // offset == length: empty
        assertAnswer(s, "0c 0c00 1f00", ["01 0c 0c00 07"])
        assertAnswer(s, "0e 0300 0500", ["0f 43562d537065616b6572 4108"])
        assertAnswer(s, "0e 0300 0e00", ["01 0e 0e00 02"])
        assertAnswer(s, "0e 0300", ["01 0e 0000 04"])           // fewer than two handles
        assertAnswer(s, "20 0300 0500", ["21 0a00 43562d537065616b6572 0200 4108"])
    }

    func testWritesAndPermissions() throws {
        let s = try speakerServer()
        var seen: [AttributeWrite] = []
        s.onWrite(14) { _, w in seen.append(w); return nil }
        assertAnswer(s, "12 0300 41", ["01 12 0300 03"])        // read-only: Write Not Permitted
        assertAnswer(s, "12 9900 41", ["01 12 9900 01"])
        assertAnswer(s, "12 0e00 41 00 42", ["13"])
        XCTAssertEqual(seen.map(\.value), [[0x41, 0x00, 0x42]])
        XCTAssertEqual(s.value(of: 14), [0x41, 0x00, 0x42])
        s.setPermissions([.write, .writeEncrypted], for: 14)
        assertAnswer(s, "12 0e00 41", ["01 12 0e00 0f"])        // Insufficient Encryption
        assertAnswer(s, "16 0e00 0000 41", ["01 16 0e00 0f"])
        s.encrypted = true
        assertAnswer(s, "12 0e00 41", ["13"])
        assertAnswer(s, "52 0300 41", [])                       // commands never get an answer
        assertAnswer(s, "52 9900 41", [])
        assertAnswer(s, "12 1500 0100 00", ["01 12 1500 0d"])   // a CCCD is two bytes
        assertAnswer(s, "12 1500 0200", ["01 12 1500 fd"])      // indications on a notify-only value
        s.onWrite(18) { _, w in w.value.count == 2 ? nil : .invalidAttributeValueLength }
        assertAnswer(s, "12 1200 10", ["01 12 1200 0d"])        // the handler refuses
        XCTAssertEqual(s.value(of: 18), [], "a refused write is not stored")
    }

    func testPrepareAndExecute() throws {
        let s = try speakerServer()
        var seen: [[UInt8]] = []
        s.onWrite(14) { _, w in seen.append(w.value); XCTAssertEqual(w.kind, .executed); return nil }
        assertAnswer(s, "16 0e00 0000 486f6d65", ["17 0e00 0000 486f6d65"])
        assertAnswer(s, "16 0e00 0400 4e657400 7077", ["17 0e00 0400 4e657400 7077"])
        assertAnswer(s, "18 01", ["19"])
        XCTAssertEqual(seen, [Array("HomeNet".utf8) + [0] + Array("pw".utf8)])
        assertAnswer(s, "16 0e00 0000 41", ["17 0e00 0000 41"])
        assertAnswer(s, "18 00", ["19"])                        // cancel
        assertAnswer(s, "18 01", ["19"])                        // nothing queued any more
        XCTAssertEqual(seen.count, 1)
        assertAnswer(s, "16 0e00 0500 41", ["17 0e00 0500 41"])
        assertAnswer(s, "18 01", ["01 18 0e00 07"])             // a gap: Invalid Offset
        assertAnswer(s, "18 02", ["01 18 0000 04"])
        assertAnswer(s, "16 0300 0000 41", ["01 16 0300 03"])
        assertAnswer(s, "16 9900 0000 41", ["01 16 9900 01"])
        s.maxPreparedWrites = 2
        assertAnswer(s, "16 0e00 0000 41", ["17 0e00 0000 41"])
        assertAnswer(s, "16 0e00 0100 42", ["17 0e00 0100 42"])
        assertAnswer(s, "16 0e00 0200 43", ["01 16 0e00 09"])   // Prepare Queue Full
        assertAnswer(s, "18 01", ["19"])
        XCTAssertEqual(seen.last, [0x41, 0x42])
    }

    func testMalformedAndUnknown() throws {
        let s = try speakerServer()
        assertAnswer(s, "0a 03", ["01 0a 0000 04"])             // short Read Request
        assertAnswer(s, "0a 0300 00", ["01 0a 0000 04"])        // trailing byte
        assertAnswer(s, "08 0100 ffff 0328 00", ["01 08 0000 04"])  // a 3-byte type
        assertAnswer(s, "3f 0102", ["01 3f 0000 06"])           // unknown request
        assertAnswer(s, "7f 0102", [])                          // unknown command: ignored
        assertAnswer(s, "0b 0102", [])                          // a response sent to a server: ignored
        assertAnswer(s, "1b 1400 01", [])
        assertAnswer(s, "1e", [])                               // confirmation of nothing
        assertAnswer(s, "", [])
        assertAnswer(s, "d2 0c00 41 000102030405060708090a0b", [])
        assertAnswer(s, "12 0c00 " + String(repeating: "00", count: 30), ["01 12 0000 04"])  // longer than the MTU
    }

    func testNotificationsOnlyWhenTheCCCDAllowsThem() throws {
        let s = try speakerServer()
        XCTAssertFalse(s.notify(20, [1, 2, 3]))
        XCTAssertEqual(s.takeOutgoing(), [])
        XCTAssertEqual(s.value(of: 20), [1, 2, 3], "the value is set even when nobody listens")
        assertAnswer(s, "12 1500 0100", ["13"])
        XCTAssertTrue(s.notify(20, [1, 2, 3]))
        XCTAssertEqual(s.takeOutgoing(), [bytes("1b 1400 010203")])
        XCTAssertTrue(s.notify(20, Array(repeating: 7, count: 40)))
        XCTAssertEqual(s.takeOutgoing().first?.count, 23, "cut to MTU-3 bytes of value")
        assertAnswer(s, "12 1500 0000", ["13"])
        XCTAssertFalse(s.notify(20, [4]))
        // Indications: one in flight, the next after the confirmation.
        XCTAssertFalse(s.indicate(8, [1, 0, 0xff, 0xff]))
        assertAnswer(s, "12 0900 0200", ["13"])
        XCTAssertTrue(s.indicate(8, [1, 0, 0xff, 0xff]))
        XCTAssertTrue(s.indicate(8, [2, 0, 0xff, 0xff]))
        XCTAssertEqual(s.takeOutgoing(), [bytes("1d 0800 0100ffff")])
        XCTAssertTrue(s.awaitingConfirmation)
        XCTAssertEqual(s.handle([0x1E]), [bytes("1d 0800 0200ffff")])
        XCTAssertEqual(s.handle([0x1E]), [])
        XCTAssertFalse(s.awaitingConfirmation)
        s.resetConnection()
        XCTAssertFalse(s.isSubscribed(20), "CCCDs of an unbonded client end with the link")
    }

    /// Random requests, mostly near-valid: never a trap, and always the right kind of answer.
    func testRandomRequestsAlwaysGetAValidAnswer() throws {
        var rng = SplitMix(seed: 0xA77)
        let opcodes: [UInt8] = ATTOpcode.allCases.map(\.rawValue) + [0x3F, 0x7F, 0x00, 0xFF, 0x15, 0x55]
        let scheduler = VirtualScheduler(start: 0)
        // The models stay alive beside their servers: their write handlers are what is tested.
        let models: [any DeviceModel] = [
            SpeakerDevice(scheduler: scheduler, seed: 3), SensorDevice(scheduler: scheduler, seed: 4),
            NRF7Device(scheduler: scheduler, seed: 5), NRF7Device(scheduler: scheduler, seed: 6, serverMTU: 23),
            ESPDevice(scheduler: scheduler, seed: 7),
            ESPDevice(scheduler: scheduler, seed: 8, configuration: { var c = ESPConfiguration(); c.security = 0; return c }()),
        ]
        let servers: [GATTServer] = [try speakerServer(), try speakerServer(mtu: 23)] + models.map(\.server)
        var answered = 0
        for i in 0..<64_000 {
            let s = servers[i % servers.count]
            var request: [UInt8] = [opcodes[Int(rng.next() % UInt64(opcodes.count))]]
            let length = Int(rng.next() % 24)
            for _ in 0..<length {
                // Small handles most of the time, so requests hit real attributes.
                request.append(rng.next() % 3 == 0 ? UInt8(truncatingIfNeeded: rng.next()) : UInt8(rng.next() % 24))
            }
            if rng.next() % 50 == 0 { s.resetConnection() }
            if rng.next() % 7 == 0 { _ = s.notify(20, [1]); _ = s.indicate(8, [0, 0, 0, 0]) }
            _ = s.takeOutgoing()
            let out = s.handle(request)
            while scheduler.runNext() {}
            _ = s.takeOutgoing()
            let op = request[0]
            let expectsAnswer = ATTOpcode(rawValue: op).map { $0.kind == .request } ?? (op & 0x40 == 0)
            if expectsAnswer {
                guard let first = out.first, let pdu = try? ATTPDU.decode(first) else {
                    return XCTFail("no valid answer to \(request)")
                }
                if case .errorResponse(let r, _, _) = pdu {
                    XCTAssertEqual(r, op)
                } else {
                    XCTAssertEqual(pdu.opcode, ATTOpcode(rawValue: op)?.responseOpcode?.rawValue, "\(request) -> \(first)")
                }
                XCTAssertLessThanOrEqual(first.count, Int(s.mtu), "\(request)")
                answered += 1
            }
            for extra in out.dropFirst(expectsAnswer ? 1 : 0) {
                XCTAssertTrue(extra.first == 0x1B || extra.first == 0x1D, "only notifications follow: \(extra)")
            }
        }
        XCTAssertGreaterThan(answered, 24_000)
    }

    func testServerOverInMemoryBearer() async throws {
        let table = try XCTUnwrap(GATTLabProtocols.all.builtInTable(named: "sensor")).table
        let host = GATTServerHost { GATTServer(table: table, values: [3: Array("S".utf8)]) }
        let (client, server) = InMemoryBearerPair.make()
        async let served = host.serve(over: server)
        try await client.send([0x02, 0xF7, 0x00])
        let mtu = try await client.receive()
        XCTAssertEqual(mtu, [0x03, 0xF7, 0x00])
        try await client.send([0x12, 0x0D, 0x00, 0x01, 0x00])
        let written = try await client.receive()
        XCTAssertEqual(written, [0x13])
        try await host.update(over: server) { $0.notify(12, Array("END\n".utf8)) }
        let note = try await client.receive()
        XCTAssertEqual(note, [0x1B, 0x0C, 0x00] + Array("END\n".utf8))
        await client.close()
        let count = await served
        XCTAssertEqual(count, 2)
    }
}
