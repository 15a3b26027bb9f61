import ATT
import Foundation
import GATT
import Protocols
import TestSupport
import Transport
import XCTest
@testable import Emulator

/// The Unix SEQPACKET bearer: the same message semantics as the in-memory pair and a kernel L2CAP
/// ATT socket (one send, one receive, boundaries kept), timeouts, and a GATT server served through it.
final class UnixSocketBearerTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try Files.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    func pair() async throws -> (client: UnixSocketBearer, server: UnixSocketBearer, listener: UnixSocketListener) {
        let listener = try UnixSocketListener(path: dir.appendingPathComponent("emu.sock").path)
        async let accepted = listener.accept(within: 5_000_000)
        let client = try UnixSocketBearer.connect(path: listener.path)
        let maybe = await accepted
        let server = try XCTUnwrap(maybe)
        return (client, server, listener)
    }

    func testMessagesKeepOrderAndBoundaries() async throws {
        let (client, server, listener) = try await pair()
        _ = listener
        let big = (0..<65_535).map { UInt8(truncatingIfNeeded: $0) }
        try await client.send([0x02, 0xF7, 0x00])
        try await client.send([])
        try await client.send(big)
        let first = try await server.receive()
        let second = try await server.receive()
        let third = try await server.receive()
        XCTAssertEqual(first, [0x02, 0xF7, 0x00])
        XCTAssertEqual(second, [], "an empty PDU is still one message")
        XCTAssertEqual(third, big, "the largest SDU arrives whole")
        do {
            try await client.send(big + [0])
            XCTFail("a PDU above 65535 bytes must be refused")
        } catch {
            XCTAssertEqual(error, .tooLarge(65_536))
        }
        try await server.send([0x03, 0x17, 0x00])
        let back = try await client.receive()
        XCTAssertEqual(back, [0x03, 0x17, 0x00])
    }

    func testTimeoutAndClose() async throws {
        let (client, server, listener) = try await pair()
        _ = listener
        let start = Date()
        let nothing = try await server.receive(within: 200_000)
        XCTAssertNil(nothing)
        XCTAssertGreaterThan(Date().timeIntervalSince(start), 0.15)
        await client.close()
        do {
            _ = try await server.receive()
            XCTFail("the peer closed: receive must end")
        } catch {
            XCTAssertEqual(error, .closed)
        }
        do {
            try await client.send([0x0A, 0x03, 0x00])
            XCTFail("send on a closed bearer must throw")
        } catch {
            XCTAssertEqual(error, .closed)
        }
    }

    /// The blocking server side `emulate --listen` uses (no dispatch hop per PDU) keeps the same
    /// semantics: boundaries, empty and largest messages, timed receives, a hang-up told as
    /// `.closed`. Its client is a plain thread with the blocking socket, so no cooperative thread
    /// but this test's own is held.
    func testBlockingServerKeepsTheSameSemantics() async throws {
        let listener = try DirectUnixListener(path: dir.appendingPathComponent("direct.sock").path)
        XCTAssertEqual(listener.endpoint, "unix:\(listener.path)")
        let big = (0..<65_535).map { UInt8(truncatingIfNeeded: $0) }
        final class Client: @unchecked Sendable { var back: [UInt8]?; var error: String? }
        let client = Client()
        let done = DispatchSemaphore(value: 0)
        let path = listener.path
        Thread {
            defer { done.signal() }
            do {
                let socket = try BlockingUnixSocket.connect(path: path)
                try socket.send([0x02, 0xF7, 0x00])
                try socket.send([])
                try socket.send(big)
                client.back = try socket.receive(within: 5_000_000)
                usleep(300_000)
                socket.close()
            } catch {
                client.error = "\(error)"
            }
        }.start()
        let accepted = await listener.acceptClient(within: 5_000_000)
        let server = try XCTUnwrap(accepted)
        var got: [[UInt8]] = []
        for _ in 0..<3 { if let m = try await server.receive(within: 5_000_000) { got.append(m) } }
        XCTAssertEqual(got, [[0x02, 0xF7, 0x00], [], big], "boundaries kept, the empty PDU and the largest SDU whole")
        try await server.send([0x03, 0x17, 0x00])
        let nothing = try await server.receive(within: 100_000)
        XCTAssertNil(nothing, "a timed receive with nothing sent gives nil")
        do {
            _ = try await server.receive(within: 5_000_000)
            XCTFail("the client hung up: receive must end")
        } catch {
            XCTAssertEqual(error, .closed)
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertNil(client.error)
        XCTAssertEqual(client.back, [0x03, 0x17, 0x00])
        let nobody = await listener.acceptClient(within: 50_000)
        XCTAssertNil(nobody)
    }

    /// The fuzzer's blocking client link against the dispatch-based server: the same messages,
    /// its device clock scaled by `speed`, `.closed` once it hung up, and why a connect failed.
    func testBlockingClientLink() async throws {
        let listener = try UnixSocketListener(path: dir.appendingPathComponent("link.sock").path)
        async let accepted = listener.accept(within: 5_000_000)
        let link = DirectUnixLink(path: listener.path, speed: 2)
        link.connect()
        XCTAssertTrue(link.isConnected(), "\(String(describing: link.lastError))")
        let maybe = await accepted
        let server = try XCTUnwrap(maybe)
        try await link.send([0x0A, 0x03, 0x00])
        let request = try await server.receive(within: 5_000_000)
        XCTAssertEqual(request, [0x0A, 0x03, 0x00])
        try await server.send([0x0B, 0x01])
        let answer = try await link.receive(within: 5_000_000)
        XCTAssertEqual(answer, [0x0B, 0x01])
        // 400 ms of device time at speed 2 is 200 ms of wall time.
        let start = Date()
        let nothing = try await link.receive(within: 400_000)
        XCTAssertNil(nothing)
        let waited = Date().timeIntervalSince(start)
        XCTAssertTrue(waited > 0.15 && waited < 0.39, "took \(waited) s")
        await server.close()
        do {
            _ = try await link.receive(within: 5_000_000)
            XCTFail("the server hung up: receive must end")
        } catch {
            XCTAssertEqual(error, .closed)
        }
        XCTAssertFalse(link.isConnected(), "a hang-up drops the link")
        let missing = DirectUnixLink(path: dir.appendingPathComponent("nobody.sock").path)
        missing.connect()
        XCTAssertFalse(missing.isConnected())
        XCTAssertTrue("\(String(describing: missing.lastError))".contains("cannot connect"))
    }

    func testConnectAndListenErrorsSayWhy() async throws {
        let missing = dir.appendingPathComponent("nobody.sock").path
        XCTAssertThrowsError(try UnixSocketBearer.connect(path: missing)) { e in
            XCTAssertTrue("\(e)".contains("cannot connect to unix:\(missing)"), "\(e)")
        }
        let file = dir.appendingPathComponent("plain").path
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data([1])))
        XCTAssertThrowsError(try UnixSocketListener(path: file)) { e in XCTAssertTrue("\(e)".contains("not a socket"), "\(e)") }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: file)), Data([1]), "an existing file is never replaced")
        XCTAssertThrowsError(try UnixSocketListener(path: String(repeating: "x", count: 200)))
        // A listener in use is refused; a stale socket file (its emulator gone) is taken over.
        let path = dir.appendingPathComponent("busy.sock").path
        var first: UnixSocketListener? = try UnixSocketListener(path: path)
        XCTAssertThrowsError(try UnixSocketListener(path: path)) { e in XCTAssertTrue("\(e)".contains("already listens"), "\(e)") }
        _ = first
        first = nil
        XCTAssertNoThrow(try UnixSocketListener(path: path))
    }

    /// A GATT server on the far end of the socket answers as it does in memory, and outlives a
    /// client that vanishes mid-operation: the next client is served.
    func testGATTServerOverTheSocketServesOneClientAfterAnother() async throws {
        let listener = try UnixSocketListener(path: dir.appendingPathComponent("gatt.sock").path)
        let table = try XCTUnwrap(GATTLabProtocols.all.builtInTable(named: "sensor")).table
        for round in 0..<3 {
            async let accepted = listener.accept(within: 5_000_000)
            let client = try UnixSocketBearer.connect(path: listener.path)
            let maybe = await accepted
            let server = try XCTUnwrap(maybe)
            let host = GATTServerHost { GATTServer(table: table, values: [3: Array("S".utf8)]) }
            async let served = host.serve(over: server)
            try await client.send([0x02, 0xF7, 0x00])
            let mtu = try await client.receive()
            XCTAssertEqual(mtu, [0x03, 0xF7, 0x00], "round \(round)")
            try await client.send([0x0A, 0x03, 0x00])
            let name = try await client.receive()
            XCTAssertEqual(name, [0x0B] + Array("S".utf8))
            if round == 1 {
                // Vanish with a request in flight.
                try await client.send([0x0A, 0x03, 0x00])
            }
            await client.close()
            let count = await served
            XCTAssertGreaterThanOrEqual(count, 2)
        }
    }
}
