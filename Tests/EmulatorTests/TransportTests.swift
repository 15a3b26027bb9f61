import Transport
import XCTest

final class TransportTests: XCTestCase {
    func testPairKeepsOrderAndBoundaries() async throws {
        let (a, b) = InMemoryBearer.pair()
        try await a.send([0x02, 0xF7, 0x00])
        try await a.send([])
        try await a.send([0x0A, 0x14, 0x00])
        try await b.send([0x03, 0x17, 0x00])
        let first = try await b.receive()
        let second = try await b.receive()
        let third = try await b.receive()
        XCTAssertEqual(first, [0x02, 0xF7, 0x00])
        XCTAssertEqual(second, [], "an empty PDU is still one message")
        XCTAssertEqual(third, [0x0A, 0x14, 0x00])
        let back = try await a.receive()
        XCTAssertEqual(back, [0x03, 0x17, 0x00])
    }

    func testReceiveWaitsForTheSender() async throws {
        let (a, b) = InMemoryBearer.pair()
        async let received = b.receive()
        try await a.send([0x1B, 0x14, 0x00, 0x01])
        let value = try await received
        XCTAssertEqual(value, [0x1B, 0x14, 0x00, 0x01])
    }

    func testCloseEndsWaitersAndLaterSendsButDeliversWhatCameFirst() async throws {
        let (a, b) = InMemoryBearer.pair()
        try await a.send([0x01])
        async let waiting: Void = {
            do {
                _ = try await a.receive()
                XCTFail("receive on a closed link must throw")
            } catch {
                XCTAssertEqual(error as? BearerError, .closed)
            }
        }()
        await b.close()
        await waiting
        let pending = try await b.receive()
        XCTAssertEqual(pending, [0x01], "a PDU that arrived before the close is still delivered")
        do {
            _ = try await b.receive()
            XCTFail("nothing left: closed")
        } catch {
            XCTAssertEqual(error, .closed)
        }
        do {
            try await a.send([0x02])
            XCTFail("send on a closed link must throw")
        } catch {
            XCTAssertEqual(error, .closed)
        }
        let closed = await a.isClosed()
        XCTAssertTrue(closed)
    }

    func testOversizedPDUIsRefused() async {
        let (a, _) = InMemoryBearer.pair()
        do {
            try await a.send([UInt8](repeating: 0, count: 70_000))
            XCTFail("too large")
        } catch {
            XCTAssertEqual(error, .tooLarge(70_000))
        }
    }

    func testManyMessagesBothWaysConcurrently() async throws {
        let (a, b) = InMemoryBearer.pair()
        let count = 500
        async let sender: Void = {
            for i in 0..<count { try await a.send([UInt8(i & 0xFF), UInt8(i >> 8)]) }
        }()
        var got: [Int] = []
        for _ in 0..<count {
            let m = try await b.receive()
            got.append(Int(m[0]) | Int(m[1]) << 8)
        }
        try await sender
        XCTAssertEqual(got, Array(0..<count))
        let pending = await b.pending()
        XCTAssertEqual(pending, 0)
    }
}
