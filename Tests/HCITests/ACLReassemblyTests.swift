import XCTest

@testable import Capture
@testable import HCI

/// ACL reassembly, following Wireshark's bthci_acl rules (see the spec's section 6).
final class ACLReassemblyTests: XCTestCase {
    /// A Handle Value Notification (handle 0x002A, 8 value bytes) in an L2CAP PDU of 10 + 4 bytes.
    let notification: [UInt8] = [0x1B, 0x2A, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07]
    var pdu: [UInt8] { l2cap(cid: 0x0004, notification) }

    func testSingleFragmentPDU() {
        for pb: UInt16 in [0b10, 0b00, 0b11] {
            let d = LinkDecoder()
            // 0A 00 03 00 = Read Request for handle 3, in L2CAP 03 00 04 00.
            let out = d.feed(.acl, acl(handle: 0x040, pb: pb, l2cap(cid: 4, [0x0A, 0x03, 0x00])), direction: .sent)
            XCTAssertEqual(out.malformedLayers, [], out.summary)
            XCTAssertEqual(out.l2capEvents.count, 1, "PB \(pb): \(out.summary)")
            XCTAssertEqual(out.l2capEvents.first?.key, key(0x040))
            XCTAssertEqual(out.l2capEvents.first?.cid, 4)
            XCTAssertEqual(out.l2capEvents.first?.direction, .sent)
            XCTAssertEqual(out.payload, [0x0A, 0x03, 0x00])
            XCTAssertEqual(d.connections[key(0x040)]?.implicit, true, "data on an unknown handle creates an implicit connection")
        }
    }

    func testThreeFragmentsDeliveredAtTheLast() {
        let d = LinkDecoder()
        let bytes = pdu
        XCTAssertEqual(bytes.count, 14)
        // Start with 5 bytes, continuations of 4 and 5.
        let a = d.feed(.acl, acl(handle: 0x040, pb: 0b10, Array(bytes[0..<5])), number: 10)
        XCTAssertTrue(a.events.isEmpty, a.summary)
        XCTAssertTrue(a.payload.isEmpty)
        let b = d.feed(.acl, acl(handle: 0x040, pb: 0b01, Array(bytes[5..<9])), number: 11)
        XCTAssertTrue(b.events.isEmpty, b.summary)
        let c = d.feed(.acl, acl(handle: 0x040, pb: 0b01, Array(bytes[9..<14])), number: 12)
        XCTAssertEqual(c.events.count, 1, c.summary)
        XCTAssertEqual(c.l2capEvents.first?.cid, 4)
        XCTAssertEqual(c.l2capEvents.first?.direction, .received)
        XCTAssertEqual(c.payload, notification, "the reassembled SDU, without its L2CAP header, exactly")
        XCTAssertTrue(d.pending.isEmpty)
        // A continuation after completion has no start.
        let late = d.feed(.acl, acl(handle: 0x040, pb: 0b01, [0x99]), number: 13)
        XCTAssertEqual(late.malformedLayers, [.l2cap], late.summary)
    }

    func testStartWithOnlyTheL2CAPLengthWaitsForContinuations() {
        let d = LinkDecoder()
        XCTAssertTrue(d.feed(.acl, acl(handle: 0x040, pb: 0b00, Array(pdu[0..<2]))).events.isEmpty)
        let out = d.feed(.acl, acl(handle: 0x040, pb: 0b01, Array(pdu[2...])))
        XCTAssertEqual(out.payload, notification, out.summary)
    }

    func testCompletePDUBetweenFragmentsDoesNotAbandonThePendingOne() {
        let d = LinkDecoder()
        XCTAssertTrue(d.feed(.acl, acl(handle: 0x040, pb: 0b10, Array(pdu[0..<5])), number: 1).events.isEmpty)
        let whole = d.feed(.acl, acl(handle: 0x040, pb: 0b10, l2cap(cid: 4, [0x0A, 0x03, 0x00])), number: 2)
        XCTAssertEqual(whole.malformedLayers, [], whole.summary)
        XCTAssertEqual(whole.payload, [0x0A, 0x03, 0x00])
        XCTAssertTrue(d.feed(.acl, acl(handle: 0x040, pb: 0b01, Array(pdu[5..<9])), number: 3).events.isEmpty)
        let last = d.feed(.acl, acl(handle: 0x040, pb: 0b01, Array(pdu[9...])), number: 4)
        XCTAssertEqual(last.malformedLayers, [], last.summary)
        XCTAssertEqual(last.payload, notification)
    }

    func testNewFragmentedStartAbandonsTheOldOne() {
        let d = LinkDecoder()
        XCTAssertTrue(d.feed(.acl, acl(handle: 0x040, pb: 0b10, Array(pdu[0..<5])), number: 1).events.isEmpty)
        // A Write Request (handle 0x002A, "ABC") of 6 + 4 bytes, starting with 5.
        let second = l2cap(cid: 4, [0x12, 0x2A, 0x00, 0x41, 0x42, 0x43])
        let start = d.feed(.acl, acl(handle: 0x040, pb: 0b10, Array(second[0..<5])), number: 2)
        XCTAssertEqual(start.malformedLayers, [.l2cap], start.summary)
        XCTAssertEqual(start.events.first?.malformed?.key, key(0x040))
        XCTAssertTrue(start.events.first?.malformed?.reason.contains("started at frame 1 was never completed (5 of 14 bytes)") ?? false, start.summary)
        let end = d.feed(.acl, acl(handle: 0x040, pb: 0b01, Array(second[5...])), number: 3)
        XCTAssertEqual(end.malformedLayers, [], end.summary)
        XCTAssertEqual(end.payload, [0x12, 0x2A, 0x00, 0x41, 0x42, 0x43])
    }

    func testOverflowingContinuationIsDroppedAndThePDUStillCompletes() {
        let d = LinkDecoder()
        XCTAssertTrue(d.feed(.acl, acl(handle: 0x040, pb: 0b10, Array(pdu[0..<5]))).events.isEmpty)
        // 9 bytes are missing; 10 overflow.
        let over = d.feed(.acl, acl(handle: 0x040, pb: 0b01, Array(pdu[5...]) + [0xEE]))
        XCTAssertEqual(over.malformedLayers, [.l2cap], over.summary)
        XCTAssertTrue(over.events.first?.malformed?.reason.contains("fragment dropped") ?? false, over.summary)
        XCTAssertTrue(over.l2capEvents.isEmpty)
        let right = d.feed(.acl, acl(handle: 0x040, pb: 0b01, Array(pdu[5...])))
        XCTAssertEqual(right.malformedLayers, [], right.summary)
        XCTAssertEqual(right.payload, notification)
    }

    func testContinuationWithoutStart() {
        let d = LinkDecoder()
        let out = d.feed(.acl, acl(handle: 0x040, pb: 0b01, [0x01, 0x02, 0x03]))
        XCTAssertEqual(out.malformedLayers, [.l2cap], out.summary)
        XCTAssertEqual(out.events.first?.malformed?.key, key(0x040))
        XCTAssertTrue(out.l2capEvents.isEmpty)
    }

    func testACLLengthLargerThanData() {
        let d = LinkDecoder()
        // The ACL header says 13 bytes (the whole L2CAP PDU of 9 + 4), only 7 are present.
        let bytes = acl(handle: 0x040, pb: 0b10, l2cap(cid: 4, [0x0A, 0x03, 0x00], length: 9), length: 13)
        let out = d.feed(.acl, bytes)
        XCTAssertEqual(out.malformedLayers.first, .acl, out.summary)
        XCTAssertTrue(out.events.first?.malformed?.reason.contains("ACL length 13 exceeds the 7 bytes present") ?? false, out.summary)
        // The same bytes cut by the capture (snap length) are not malformed at the ACL layer.
        let cut = LinkDecoder().feed(.acl, bytes, originalLength: 17)
        XCTAssertFalse(cut.malformedLayers.contains(.acl), cut.summary)
        XCTAssertFalse(cut.malformedLayers.contains(.l2cap), cut.summary)
        XCTAssertEqual(cut.l2capEvents.count, 1, cut.summary)
        XCTAssertEqual(cut.payload, [0x0A, 0x03, 0x00])
    }

    func testACLHeaderTooShort() {
        let d = LinkDecoder()
        XCTAssertEqual(d.feed(.acl, [0x40, 0x20, 0x00]).malformedLayers, [.acl])
        // A start with fewer than 2 bytes has no L2CAP length.
        XCTAssertEqual(d.feed(.acl, acl(handle: 0x040, pb: 0b10, [0x05])).malformedLayers, [.acl])
    }

    func testL2CAPLengthLargerThanBytesPresent() {
        let d = LinkDecoder()
        // PB 0b11 is dissected at once; the L2CAP length 9 covers more than the 1 byte present.
        let out = d.feed(.acl, acl(handle: 0x040, pb: 0b11, l2cap(cid: 4, [0x0A], length: 9)))
        XCTAssertEqual(out.malformedLayers, [.l2cap], out.summary)
        XCTAssertTrue(out.events.first?.malformed?.reason.contains("L2CAP length 9 exceeds the 1 bytes present") ?? false, out.summary)
        XCTAssertEqual(out.payload, [0x0A], "what is there is still passed on")
        // An L2CAP PDU shorter than its own header.
        let tiny = d.feed(.acl, acl(handle: 0x040, pb: 0b11, [0x00, 0x00, 0x04]))
        XCTAssertEqual(tiny.malformedLayers, [.l2cap], tiny.summary)
    }

    func testL2CAPLengthSmallerThanDataIsCutToIt() {
        let d = LinkDecoder()
        // PB 0b11 with trailing bytes after a 3-byte PDU.
        let out = d.feed(.acl, acl(handle: 0x040, pb: 0b11, l2cap(cid: 4, [0x0A, 0x03, 0x00, 0xEE, 0xEE], length: 3)))
        XCTAssertEqual(out.payload, [0x0A, 0x03, 0x00])
    }

    func testDirectionsAreReassembledSeparately() {
        let d = LinkDecoder()
        XCTAssertTrue(d.feed(.acl, acl(handle: 0x040, pb: 0b10, Array(pdu[0..<5])), direction: .sent).events.isEmpty)
        // The other direction's continuation does not join.
        let other = d.feed(.acl, acl(handle: 0x040, pb: 0b01, Array(pdu[5...])), direction: .received)
        XCTAssertEqual(other.malformedLayers, [.l2cap], other.summary)
        // A received PDU in between is independent.
        let received = d.feed(.acl, acl(handle: 0x040, pb: 0b10, l2cap(cid: 4, [0x0B, 0x01])), direction: .received)
        XCTAssertEqual(received.payload, [0x0B, 0x01])
        let mine = d.feed(.acl, acl(handle: 0x040, pb: 0b01, Array(pdu[5...])), direction: .sent)
        XCTAssertEqual(mine.l2capEvents.first?.direction, .sent, mine.summary)
        XCTAssertEqual(mine.payload, notification)
    }

    func testHandlesAndControllersAreReassembledSeparately() {
        let d = LinkDecoder()
        XCTAssertTrue(d.feed(.acl, acl(handle: 0x040, pb: 0b10, Array(pdu[0..<5]))).events.isEmpty)
        let second = l2cap(cid: 4, [0x12, 0x2A, 0x00, 0x41, 0x42, 0x43])
        XCTAssertTrue(d.feed(.acl, acl(handle: 0x041, pb: 0b10, Array(second[0..<3]))).events.isEmpty)
        XCTAssertTrue(d.feed(.acl, acl(handle: 0x040, pb: 0b10, Array(second[0..<3])), controller: 1).events.isEmpty)
        XCTAssertEqual(d.pending.count, 3)
        let a = d.feed(.acl, acl(handle: 0x041, pb: 0b01, Array(second[3...])))
        XCTAssertEqual(a.l2capEvents.first?.key, key(0x041))
        XCTAssertEqual(a.payload, [0x12, 0x2A, 0x00, 0x41, 0x42, 0x43])
        let b = d.feed(.acl, acl(handle: 0x040, pb: 0b01, Array(second[3...])), controller: 1)
        XCTAssertEqual(b.l2capEvents.first?.key, key(0x040, controller: 1))
        XCTAssertEqual(b.payload, [0x12, 0x2A, 0x00, 0x41, 0x42, 0x43])
        let c = d.feed(.acl, acl(handle: 0x040, pb: 0b01, Array(pdu[5...])))
        XCTAssertEqual(c.l2capEvents.first?.key, key(0x040))
        XCTAssertEqual(c.payload, notification)
        XCTAssertTrue(d.pending.isEmpty)
    }

    func testDisconnectionDropsPendingReassembly() {
        let d = LinkDecoder()
        XCTAssertTrue(d.feed(.acl, acl(handle: 0x040, pb: 0b10, Array(pdu[0..<5]))).events.isEmpty)
        d.feed(.event, [0x05, 0x04, 0x00, 0x40, 0x00, 0x13])
        XCTAssertTrue(d.pending.isEmpty)
        XCTAssertEqual(d.feed(.acl, acl(handle: 0x040, pb: 0b01, Array(pdu[5...]))).malformedLayers, [.l2cap])
    }

    func testLargestPDUReassembles() {
        // 65 535 bytes of SDU in fragments of 1021.
        let d = LinkDecoder()
        let sdu = (0..<65_531).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let whole = l2cap(cid: 0x0040, sdu)
        XCTAssertEqual(whole.count, 65_535)
        var offset = 0
        var last = Decoded(events: [], payload: [])
        while offset < whole.count {
            let n = min(1021, whole.count - offset)
            last = d.feed(.acl, acl(handle: 0x001, pb: offset == 0 ? 0b10 : 0b01, Array(whole[offset..<(offset + n)])))
            offset += n
            if offset < whole.count { XCTAssertTrue(last.events.isEmpty, last.summary) }
        }
        XCTAssertEqual(last.l2capEvents.first?.cid, 0x0040)
        XCTAssertEqual(last.payload, sdu)
    }

    func testSignallingChannel() {
        let d = LinkDecoder()
        // Connection Parameter Update Request, identifier 7.
        let out = d.feed(.acl, acl(handle: 0x040, pb: 0b10, l2cap(cid: 5, [0x12, 0x07, 0x08, 0x00, 0x06, 0x00, 0x0C, 0x00, 0x00, 0x00, 0xF4, 0x01])))
        guard case .signalling(let k, let dir, let code, let id) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(k, key(0x040))
        XCTAssertEqual(dir, .received)
        XCTAssertEqual(code, 0x12)
        XCTAssertEqual(id, 7)
        XCTAssertEqual(LinkEvent.signallingName(code), "Connection Parameter Update Request")
        XCTAssertEqual(d.feed(.acl, acl(handle: 0x040, pb: 0b10, l2cap(cid: 5, [0x12, 0x07, 0x08]))).malformedLayers, [.signalling])
    }
}
