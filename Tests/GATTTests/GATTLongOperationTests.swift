import ATT
import HCI
import XCTest

@testable import GATT

final class GATTLongOperationTests: XCTestCase {
    /// A connected, discovered device (MTU 23).
    private func discoveredFeed() -> GATTFeed {
        let feed = GATTFeed()
        feed.connect()
        Device.discover(feed)
        return feed
    }

    private static let credentials: [UInt8] = Array("MyHomeNetwork-2.4GHz\0correct horse battery staple".utf8)  // 50 bytes

    // MARK: Long writes

    func testPreparedWritesJoinedByExecute() throws {
        let feed = discoveredFeed()
        let value = Self.credentials
        var firstFrame = 0
        for offset in stride(from: 0, to: value.count, by: 18) {
            let part = Array(value[offset..<min(offset + 18, value.count)])
            let events = feed.send(.prepareWriteRequest(handle: 0x12, offset: UInt16(offset), value: part))
            if offset == 0 { firstFrame = feed.frame }
            XCTAssertTrue(events.operations.isEmpty, "nothing is reported before Execute")
            feed.receive(.prepareWriteResponse(handle: 0x12, offset: UInt16(offset), value: part))
        }
        let events = feed.send(.executeWriteRequest(flags: 1))
        XCTAssertEqual(events.longWrites.count, 1)
        let write = try XCTUnwrap(events.longWrites.first)
        XCTAssertEqual(write.key, key(0x40))
        XCTAssertEqual(write.handle, 0x12)
        XCTAssertEqual(write.value, value)
        XCTAssertEqual(write.parts, 3)
        XCTAssertEqual(write.firstFrame, firstFrame)
        XCTAssertEqual(write.info?.uuid, UUIDs.otaCredentials)
        XCTAssertEqual(write.info?.role, .value)
        // The queue is spent: a second Execute reports nothing.
        feed.receive(.executeWriteResponse)
        XCTAssertTrue(feed.send(.executeWriteRequest(flags: 1)).longWrites.isEmpty)
    }

    func testPreparedWritesOutOfOrderAreJoinedByOffset() throws {
        let feed = discoveredFeed()
        let value = Self.credentials
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 36, value: Array(value[36...])))
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 0, value: Array(value[0..<18])))
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 18, value: Array(value[18..<36])))
        let write = try XCTUnwrap(feed.send(.executeWriteRequest(flags: 1)).longWrites.first)
        XCTAssertEqual(write.value, value)
        XCTAssertEqual(write.parts, 3)
    }

    func testExecuteWithFlagZeroCancels() {
        let feed = discoveredFeed()
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 0, value: Array(Self.credentials[0..<18])))
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 18, value: Array(Self.credentials[18..<36])))
        let events = feed.send(.executeWriteRequest(flags: 0))
        XCTAssertTrue(events.longWrites.isEmpty)
        let cancelled = events.operations.compactMap { op -> (ConnectionKey, Int)? in
            if case .longWriteCancelled(let k, let parts) = op { return (k, parts) } else { return nil }
        }
        XCTAssertEqual(cancelled.count, 1)
        XCTAssertEqual(cancelled.first?.0, key(0x40))
        XCTAssertEqual(cancelled.first?.1, 2)
        // The cancelled parts do not leak into the next long write.
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 0, value: [9, 9]))
        let next = feed.send(.executeWriteRequest(flags: 1)).longWrites
        XCTAssertEqual(next.first?.value, [9, 9])
        XCTAssertEqual(next.first?.parts, 1)
    }

    func testExecuteWithEmptyQueueReportsNothing() {
        let feed = discoveredFeed()
        XCTAssertTrue(feed.send(.executeWriteRequest(flags: 1)).operations.isEmpty)
        XCTAssertTrue(feed.send(.executeWriteRequest(flags: 0)).operations.isEmpty)
    }

    func testTwoHandlesInOneQueueGiveTwoLongWrites() {
        let feed = discoveredFeed()
        let url = Array("https://example.com/firmware/v2.bin".utf8)  // 35 bytes
        let creds = Self.credentials
        let firstFrame = feed.frame + 1
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 0, value: Array(creds[0..<18])))
        feed.send(.prepareWriteRequest(handle: 0x18, offset: 0, value: Array(url[0..<18])))
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 18, value: Array(creds[18...])))
        feed.send(.prepareWriteRequest(handle: 0x18, offset: 18, value: Array(url[18...])))
        let writes = feed.send(.executeWriteRequest(flags: 1)).longWrites
        XCTAssertEqual(writes.count, 2)
        XCTAssertEqual(writes.map(\.handle), [0x12, 0x18], "in the order the handles first appear")
        XCTAssertEqual(writes.first?.value, creds)
        XCTAssertEqual(writes.first?.parts, 2)
        XCTAssertEqual(writes.first?.firstFrame, firstFrame)
        XCTAssertEqual(writes.first?.info?.uuid, UUIDs.otaCredentials)
        XCTAssertEqual(writes.last?.value, url)
        XCTAssertEqual(writes.last?.parts, 2)
        XCTAssertEqual(writes.last?.firstFrame, firstFrame + 1)
        XCTAssertEqual(writes.last?.info?.uuid, UUIDs.batteryLevel)
    }

    func testLongWriteWithoutTableHasNoInfo() {
        let feed = GATTFeed()
        feed.connect()
        feed.send(.prepareWriteRequest(handle: 0x99, offset: 0, value: [1, 2]))
        let write = feed.send(.executeWriteRequest(flags: 1)).longWrites.first
        XCTAssertEqual(write?.handle, 0x99)
        XCTAssertNil(write?.info)
    }

    func testQueuesAreKeptPerConnection() {
        let feed = GATTFeed()
        feed.connect(0x40, peer: peerA)
        feed.connect(0x41, peer: peerB)
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 0, value: [1, 1]), on: 0x40)
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 0, value: [2, 2]), on: 0x41)
        let a = feed.send(.executeWriteRequest(flags: 1), on: 0x40).longWrites
        XCTAssertEqual(a.first?.value, [1, 1])
        XCTAssertEqual(a.first?.key, key(0x40))
        let b = feed.send(.executeWriteRequest(flags: 1), on: 0x41).longWrites
        XCTAssertEqual(b.first?.value, [2, 2])
        XCTAssertEqual(b.first?.key, key(0x41))
    }

    func testPrepareWriteQueueIsBounded() {
        let feed = discoveredFeed()
        let part = [UInt8](repeating: 0xA5, count: 1000)
        let limit = GATTDecoder.maxQueuedBytes
        var accepted = 0
        var abandoned: [GATTEvent] = []
        // Feed parts until the decoder gives up (at most twice the limit, so a missing bound fails).
        while abandoned.isEmpty && accepted * part.count <= 2 * limit {
            let offset = UInt16(truncatingIfNeeded: accepted * part.count)
            let events = feed.send(.prepareWriteRequest(handle: 0x12, offset: offset, value: part))
            if events.malformedReasons.isEmpty { accepted += 1 } else { abandoned = events }
        }
        XCTAssertFalse(abandoned.isEmpty, "the queue was never abandoned")
        XCTAssertLessThanOrEqual(accepted * part.count, limit, "more than maxQueuedBytes was queued")
        XCTAssertGreaterThanOrEqual(accepted * part.count, limit / 2, "the bound is far below maxQueuedBytes")
        // The part that crosses the limit abandons the queue, reported as malformed ATT; the PDU itself is still shown.
        XCTAssertEqual(abandoned.atts.count, 1)
        XCTAssertEqual(abandoned.malformedReasons.count, 1)
        XCTAssertTrue(abandoned.malformedReasons.first?.contains("\(limit)") ?? false, "\(abandoned.malformedReasons)")
        guard case .malformed(let k, let layer, _)? = abandoned.links.first else { return XCTFail("\(abandoned)") }
        XCTAssertEqual(k, key(0x40))
        XCTAssertEqual(layer, .att)
        // Nothing of the abandoned queue is written.
        XCTAssertTrue(feed.send(.executeWriteRequest(flags: 1)).longWrites.isEmpty)
        // And the connection goes on: a normal long write afterwards works.
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 0, value: [1, 2, 3]))
        XCTAssertEqual(feed.send(.executeWriteRequest(flags: 1)).longWrites.first?.value, [1, 2, 3])
    }

    func testEmptyPreparedWritesAreBoundedToo() {
        // Parts without bytes still take memory: the queue cannot grow without limit on them.
        let feed = discoveredFeed()
        var malformed = 0
        let count = 20_000
        for _ in 0..<count {
            malformed += feed.send(.prepareWriteRequest(handle: 0x12, offset: 0, value: [])).malformedReasons.count
        }
        let parts = feed.send(.executeWriteRequest(flags: 1)).longWrites.first?.parts ?? 0
        XCTAssertGreaterThan(malformed, 0)
        XCTAssertLessThan(parts, count)
    }

    func testHostileOffsetIsNotJoinedIntoAHugeValue() {
        let feed = discoveredFeed()
        // Offset 65 520 plus 40 bytes: the joined value would pass maxQueuedBytes though the queue holds 41 bytes.
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 0xFFF0, value: [UInt8](repeating: 1, count: 40)))
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 0, value: [2]))
        let events = feed.send(.executeWriteRequest(flags: 1))
        XCTAssertTrue(events.longWrites.isEmpty)
        XCTAssertEqual(events.malformedReasons.count, 1, "\(events)")
        // An offset that keeps the value within the bound is joined, zero-filled in between.
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 100, value: [7, 7]))
        let write = feed.send(.executeWriteRequest(flags: 1)).longWrites.first
        XCTAssertEqual(write?.value.count, 102)
        XCTAssertEqual(write?.value.suffix(2), [7, 7])
        XCTAssertEqual(write?.value.prefix(100), ArraySlice(repeating: 0, count: 100))
    }

    // MARK: Long reads

    func testReadThenBlobsUntilAShortOneIsALongRead() throws {
        let feed = discoveredFeed()
        let value = (0..<49).map { UInt8($0) }
        feed.send(.readRequest(handle: 0x14))
        let firstFrame = feed.frame
        XCTAssertTrue(feed.receive(.readResponse(value: Array(value[0..<22]))).longReads.isEmpty)
        feed.send(.readBlobRequest(handle: 0x14, offset: 22))
        XCTAssertTrue(feed.receive(.readBlobResponse(value: Array(value[22..<44]))).longReads.isEmpty)
        feed.send(.readBlobRequest(handle: 0x14, offset: 44))
        let reads = feed.receive(.readBlobResponse(value: Array(value[44...]))).longReads
        XCTAssertEqual(reads.count, 1)
        let read = try XCTUnwrap(reads.first)
        XCTAssertEqual(read.key, key(0x40))
        XCTAssertEqual(read.handle, 0x14)
        XCTAssertEqual(read.value, value)
        XCTAssertEqual(read.parts, 3)
        XCTAssertEqual(read.firstFrame, firstFrame)
        XCTAssertEqual(read.info?.uuid, UUIDs.otaStatus)
    }

    func testLongReadFollowsTheNegotiatedMTU() throws {
        let feed = discoveredFeed()
        feed.send(.exchangeMTURequest(clientRxMTU: 64))
        feed.receive(.exchangeMTUResponse(serverRxMTU: 64))
        // 22 bytes is short at MTU 64: a plain read.
        feed.send(.readRequest(handle: 0x14))
        XCTAssertTrue(feed.receive(.readResponse(value: [UInt8](repeating: 1, count: 22))).operations.isEmpty)
        // 63 bytes is full.
        feed.send(.readRequest(handle: 0x14))
        feed.receive(.readResponse(value: [UInt8](repeating: 2, count: 63)))
        feed.send(.readBlobRequest(handle: 0x14, offset: 63))
        let read = try XCTUnwrap(feed.receive(.readBlobResponse(value: [3, 3])).longReads.first)
        XCTAssertEqual(read.value, [UInt8](repeating: 2, count: 63) + [3, 3])
        XCTAssertEqual(read.parts, 2)
    }

    func testShortReadIsNotALongRead() {
        let feed = discoveredFeed()
        feed.send(.readRequest(handle: 0x14))
        XCTAssertTrue(feed.receive(.readResponse(value: [1, 2, 3])).operations.isEmpty)
        // A stray blob response without its request is not joined either.
        XCTAssertTrue(feed.receive(.readBlobResponse(value: [4])).operations.isEmpty)
    }

    func testErrorResponseToABlobEndsTheLongReadWithWhatWasRead() throws {
        let feed = discoveredFeed()
        let first = [UInt8](repeating: 0x11, count: 22)
        let second = [UInt8](repeating: 0x22, count: 22)

        // Invalid Offset after two full parts.
        feed.send(.readRequest(handle: 0x14))
        feed.receive(.readResponse(value: first))
        feed.send(.readBlobRequest(handle: 0x14, offset: 22))
        feed.receive(.readBlobResponse(value: second))
        feed.send(.readBlobRequest(handle: 0x14, offset: 44))
        let a = feed.receive(.errorResponse(requestOpcode: 0x0C, handle: 0x14, error: .invalidOffset)).longReads
        XCTAssertEqual(a.count, 1)
        XCTAssertEqual(a.first?.value, first + second)
        XCTAssertEqual(a.first?.parts, 2)
        XCTAssertEqual(a.first?.info?.uuid, UUIDs.otaStatus)

        // Attribute Not Long after exactly MTU-1 bytes.
        feed.send(.readRequest(handle: 0x1A))
        feed.receive(.readResponse(value: first))
        feed.send(.readBlobRequest(handle: 0x1A, offset: 22))
        let b = try XCTUnwrap(feed.receive(.errorResponse(requestOpcode: 0x0C, handle: 0x1A, error: .attributeNotLong)).longReads.first)
        XCTAssertEqual(b.handle, 0x1A)
        XCTAssertEqual(b.value, first)
        XCTAssertEqual(b.parts, 1)
        XCTAssertEqual(b.info?.uuid, UUIDs.userDescription)

        // The long read is over: a later error reports nothing more.
        XCTAssertTrue(feed.receive(.errorResponse(requestOpcode: 0x0C, handle: 0x1A, error: .invalidOffset)).longReads.isEmpty)
    }

    func testErrorToAnotherRequestDoesNotEndALongRead() throws {
        let feed = discoveredFeed()
        feed.send(.readRequest(handle: 0x14))
        feed.receive(.readResponse(value: [UInt8](repeating: 1, count: 22)))
        // A write fails in between (Write Request error): not the end of the read.
        feed.send(.writeRequest(handle: 0x12, value: [0]))
        XCTAssertTrue(feed.receive(.errorResponse(requestOpcode: 0x12, handle: 0x12, error: .writeNotPermitted)).longReads.isEmpty)
        feed.send(.readBlobRequest(handle: 0x14, offset: 22))
        let read = try XCTUnwrap(feed.receive(.readBlobResponse(value: [2])).longReads.first)
        XCTAssertEqual(read.value, [UInt8](repeating: 1, count: 22) + [2])
    }

    func testLongReadIsBounded() {
        let feed = GATTFeed()
        feed.connect()
        feed.send(.exchangeMTURequest(clientRxMTU: 517))
        feed.receive(.exchangeMTUResponse(serverRxMTU: 517))
        let full = [UInt8](repeating: 7, count: 516)
        feed.send(.readRequest(handle: 0x14))
        feed.receive(.readResponse(value: full))
        var total = full.count
        var malformed: [String] = []
        var reads = 0
        while malformed.isEmpty && total <= GATTDecoder.maxQueuedBytes + full.count {
            feed.send(.readBlobRequest(handle: 0x14, offset: UInt16(truncatingIfNeeded: total)))
            let events = feed.receive(.readBlobResponse(value: full))
            malformed += events.malformedReasons
            reads += events.longReads.count
            total += full.count
        }
        XCTAssertEqual(reads, 0)
        XCTAssertEqual(malformed.count, 1)
        XCTAssertTrue(malformed.first?.contains("long read") ?? false, "\(malformed)")
        XCTAssertLessThanOrEqual(total - full.count, GATTDecoder.maxQueuedBytes + full.count)
    }

    // MARK: Subscriptions

    func testCCCDWritesAreSubscriptions() throws {
        let feed = discoveredFeed()
        let cases: [([UInt8], Bool, Bool)] = [([0x01, 0x00], true, false), ([0x02, 0x00], false, true),
                                               ([0x03, 0x00], true, true), ([0x00, 0x00], false, false)]
        for (value, notify, indicate) in cases {
            let subs = feed.send(.writeRequest(handle: 0x15, value: value)).subscriptions
            XCTAssertEqual(subs.count, 1, "\(value)")
            let sub = try XCTUnwrap(subs.first)
            XCTAssertEqual(sub.key, key(0x40))
            XCTAssertEqual(sub.cccd, 0x15)
            XCTAssertEqual(sub.characteristic, UUIDs.otaStatus)
            XCTAssertEqual(sub.notify, notify, "\(value)")
            XCTAssertEqual(sub.indicate, indicate, "\(value)")
        }
        // The other CCCD names its own characteristic; Write Command counts too.
        let battery = feed.send(.writeCommand(handle: 0x19, value: [0x01, 0x00])).subscriptions
        XCTAssertEqual(battery.first?.characteristic, UUIDs.batteryLevel)
        XCTAssertEqual(battery.first?.cccd, 0x19)
    }

    func testWritesThatAreNotCCCDWritesAreNotSubscriptions() {
        let feed = discoveredFeed()
        XCTAssertTrue(feed.send(.writeRequest(handle: 0x16, value: [0x01, 0x00])).subscriptions.isEmpty, "user description")
        XCTAssertTrue(feed.send(.writeRequest(handle: 0x14, value: [0x01, 0x00])).subscriptions.isEmpty, "value handle")
        XCTAssertTrue(feed.send(.writeRequest(handle: 0x12, value: [0x01, 0x00])).subscriptions.isEmpty, "value handle")
        XCTAssertTrue(feed.send(.writeRequest(handle: 0x15, value: [0x01])).subscriptions.isEmpty, "too short for a CCCD value")
        // Without a table the decoder cannot know a CCCD.
        let bare = GATTFeed()
        bare.connect()
        XCTAssertTrue(bare.send(.writeRequest(handle: 0x15, value: [0x01, 0x00])).subscriptions.isEmpty)
    }
}
