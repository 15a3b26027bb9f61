import TestSupport
import ATT
import HCI
import XCTest

@testable import GATT

final class GATTMalformedTests: XCTestCase {
    func testATTTooShortForItsFieldsIsMalformedWithoutPDU() throws {
        let feed = GATTFeed()
        feed.connect()
        let shorts: [[UInt8]] = [
            [0x0A, 0x14],              // Read Request: handle needs 2 bytes
            [0x12, 0x12],              // Write Request: handle cut
            [0x02],                    // Exchange MTU Request without MTU
            [0x16, 0x12, 0x00, 0x00],  // Prepare Write Request: offset cut
            [0x01, 0x0C, 0x14],        // Error Response cut
            [0x09, 0x07, 0x02, 0x00],  // Read By Type Response: entry of 7 cut
        ]
        for bytes in shorts {
            let events = feed.rawATT(bytes)
            XCTAssertEqual(events.atts.count, 1, "\(bytes)")
            let e = try XCTUnwrap(events.atts.first)
            XCTAssertNotNil(e.malformed, "\(bytes)")
            XCTAssertFalse(e.malformed?.isEmpty ?? true)
            XCTAssertNil(e.pdu, "\(bytes)")
            XCTAssertNil(e.handle)
            XCTAssertEqual(e.opcode, bytes[0])
            XCTAssertEqual(e.length, bytes.count - 1)
            XCTAssertEqual(e.connection, key(0x40))
            XCTAssertTrue(events.operations.isEmpty)
        }
        // Decoding goes on with the next record.
        let next = try XCTUnwrap(feed.send(.readRequest(handle: 3)).atts.first)
        XCTAssertNil(next.malformed)
        XCTAssertEqual(next.pdu, .readRequest(handle: 3))
    }

    func testMalformedResponseDoesNotConsumeTheRequest() {
        let feed = GATTFeed()
        feed.connect()
        feed.send(Device.services[0].0)
        feed.rawATT([0x11, 0x06, 0x01, 0x00, 0x05], .received)  // entry of 6 cut short
        XCTAssertEqual(feed.table()?.isEmpty, true)
    }

    func testEmptyATTPayloadIsAMalformedLinkEvent() throws {
        let feed = GATTFeed()
        feed.connect()
        let events = feed.rawATT([])
        XCTAssertTrue(events.atts.isEmpty)
        guard case .malformed(let k, let layer, let reason)? = events.links.first else {
            return XCTFail("expected a malformed link event, got \(events)")
        }
        XCTAssertEqual(k, key(0x40))
        XCTAssertEqual(layer, .att)
        XCTAssertTrue(reason.contains("empty"), reason)
    }

    func testUnknownOpcodeIsNotMalformed() throws {
        let feed = GATTFeed()
        feed.connect()
        let events = feed.rawATT([0x3F, 0x01, 0x02, 0x03])
        let e = try XCTUnwrap(events.atts.first)
        XCTAssertNil(e.malformed)
        XCTAssertEqual(e.pdu, .unknown(opcode: 0x3F, parameters: [1, 2, 3]))
        XCTAssertEqual(e.opcode, 0x3F)
        XCTAssertEqual(e.length, 3)
        XCTAssertNil(e.handle)
        XCTAssertTrue(events.malformedReasons.isEmpty)
    }

    func testOtherL2CAPChannelsAreNotATT() {
        let feed = GATTFeed()
        feed.connect()
        // A dynamic channel carrying bytes that would decode as ATT.
        let events = feed.feed(.acl, .sent, GATTFeed.aclATT(0x40, [0x0A, 0x03, 0x00], cid: 0x0040))
        XCTAssertTrue(events.atts.isEmpty)
    }

    func testHostileSequencesDoNotTrap() {
        // Responses and operations in every order, odd values, no table: nothing traps.
        let feed = GATTFeed()
        feed.connect()
        var generator = SplitMix(seed: 0x5EED)
        var pdus: [ATTPDU] = [
            .readBlobResponse(value: []), .readResponse(value: []), .executeWriteRequest(flags: 7),
            .prepareWriteRequest(handle: 0xFFFF, offset: 0xFFFF, value: [1]),
            .prepareWriteRequest(handle: 0, offset: 0xFFF0, value: [UInt8](repeating: 2, count: 40)),
            .readByTypeResponse(length: 5, entries: [ATTHandleValue(handle: 2, value: [0, 0, 0])]),
            .readByGroupTypeResponse(length: 5, entries: [ATTGroupData(handle: 9, endGroupHandle: 1, value: [1])]),
            .findInformationResponse(format: 1, entries: [ATTHandleUUID(handle: 0, uuid: UUIDs.cccd)]),
            .findByTypeValueResponse(entries: [ATTHandlesInformation(foundHandle: 5, groupEndHandle: 2)]),
            .errorResponse(requestOpcode: 0x0C, handle: 0, error: .invalidOffset),
            .writeRequest(handle: 0x15, value: [0xFF, 0xFF]),
            .exchangeMTUResponse(serverRxMTU: 0xFFFF),
            .readRequest(handle: 0x14), .readBlobRequest(handle: 0x14, offset: 3),
            .findByTypeValueRequest(startHandle: 1, endHandle: 2, type: 0x2800, value: [1, 2, 3]),
            .readByTypeRequest(startHandle: 1, endHandle: 2, type: BluetoothUUID(uuid16: 0x2802)),
        ]
        for (request, response) in Device.services + Device.characteristics + Device.descriptors {
            pdus.append(request)
            pdus.append(response)
        }
        for _ in 0..<3000 {
            let pdu = pdus[Int(generator.next() % UInt64(pdus.count))]
            if generator.next() & 1 == 0 { feed.send(pdu) } else { feed.receive(pdu) }
        }
        XCTAssertGreaterThan(feed.frame, 3000)
    }
}

extension GATTMalformedTests {
    /// ATT on thousands of connection handles (a hostile or corrupted capture) keeps sessions
    /// and tables bounded; a table stuffed with discovery entries stops growing at its cap.
    func testSessionsTablesAndEntriesStayBounded() {
        let feed = GATTFeed()
        var rng = SplitMix(seed: 5)
        for _ in 0..<20_000 {
            feed.send(.writeCommand(handle: 3, value: [1]), on: UInt16.random(in: 0...0x0EFF, using: &rng))
        }
        XCTAssertLessThanOrEqual(feed.decoder.sessions.count, 2 * LinkDecoder.maxConnections + 1)
        XCTAssertLessThanOrEqual(feed.decoder.tables.count, 2 * LinkDecoder.maxConnections + 1)

        var table = AttributeTable()
        for h in 1...UInt16(10_000) { table.addFoundInformation(handle: h, uuid: BluetoothUUID(uuid16: 0x2901)) }
        XCTAssertEqual(table.descriptors.count, AttributeTable.maxEntries)
    }
}
