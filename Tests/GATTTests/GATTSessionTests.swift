import ATT
import HCI
import XCTest

@testable import GATT

final class GATTSessionTests: XCTestCase {
    // MARK: MTU

    func testMTUIsTheSmallerOfClientAndServer() throws {
        let feed = GATTFeed()
        feed.connect()
        XCTAssertEqual(feed.send(.readRequest(handle: 3)).atts.first?.mtu, 23, "default MTU")
        feed.send(.exchangeMTURequest(clientRxMTU: 247))
        let events = feed.receive(.exchangeMTUResponse(serverRxMTU: 185))
        let exchange = try XCTUnwrap(events.mtuExchanges.first)
        XCTAssertEqual(exchange.key, key(0x40))
        XCTAssertEqual(exchange.client, 247)
        XCTAssertEqual(exchange.server, 185)
        XCTAssertEqual(exchange.mtu, 185)
        XCTAssertEqual(feed.send(.readRequest(handle: 3)).atts.first?.mtu, 185)

        // The client's value is the smaller one.
        feed.send(.exchangeMTURequest(clientRxMTU: 100))
        XCTAssertEqual(feed.receive(.exchangeMTUResponse(serverRxMTU: 517)).mtuExchanges.first?.mtu, 100)
        XCTAssertEqual(feed.receive(.handleValueNotification(handle: 0x14, value: [1])).atts.first?.mtu, 100)
    }

    func testMTUNeverBelow23() {
        let feed = GATTFeed()
        feed.connect()
        feed.send(.exchangeMTURequest(clientRxMTU: 517))
        XCTAssertEqual(feed.receive(.exchangeMTUResponse(serverRxMTU: 20)).mtuExchanges.first?.mtu, 23)
        feed.send(.exchangeMTURequest(clientRxMTU: 0))
        XCTAssertEqual(feed.receive(.exchangeMTUResponse(serverRxMTU: 0)).mtuExchanges.first?.mtu, 23)
        XCTAssertEqual(feed.send(.readRequest(handle: 3)).atts.first?.mtu, 23)
    }

    func testMTUResponseWithoutRequestAssumesDefaultClient() {
        let feed = GATTFeed()
        feed.connect()
        let exchange = feed.receive(.exchangeMTUResponse(serverRxMTU: 247)).mtuExchanges.first
        XCTAssertEqual(exchange?.client, 23)
        XCTAssertEqual(exchange?.mtu, 23)
    }

    func testEachConnectionKeepsItsOwnMTU() {
        let feed = GATTFeed()
        feed.connect(0x40, peer: peerA)
        feed.connect(0x41, peer: peerB)
        feed.send(.exchangeMTURequest(clientRxMTU: 247), on: 0x40)
        feed.receive(.exchangeMTUResponse(serverRxMTU: 185), on: 0x40)
        XCTAssertEqual(feed.send(.readRequest(handle: 3), on: 0x41).atts.first?.mtu, 23, "the second connection did not exchange")
        feed.send(.exchangeMTURequest(clientRxMTU: 64), on: 0x41)
        XCTAssertEqual(feed.receive(.exchangeMTUResponse(serverRxMTU: 517), on: 0x41).mtuExchanges.first?.mtu, 64)
        // Interleaved: each keeps its value.
        XCTAssertEqual(feed.send(.readRequest(handle: 3), on: 0x40).atts.first?.mtu, 185)
        XCTAssertEqual(feed.send(.readRequest(handle: 3), on: 0x41).atts.first?.mtu, 64)
        XCTAssertEqual(feed.send(.readRequest(handle: 3), on: 0x40).atts.first?.mtu, 185)
    }

    func testDisconnectionResetsTheMTU() {
        let feed = GATTFeed()
        feed.connect()
        feed.send(.exchangeMTURequest(clientRxMTU: 247))
        feed.receive(.exchangeMTUResponse(serverRxMTU: 247))
        XCTAssertEqual(feed.send(.readRequest(handle: 3)).atts.first?.mtu, 247)
        feed.disconnect()
        feed.connect()  // same handle, same peer
        XCTAssertEqual(feed.send(.readRequest(handle: 3)).atts.first?.mtu, 23)
    }

    func testConnectionCompleteAloneResetsTheSession() {
        // A capture that lost the Disconnection Complete: the new Connection Complete on the
        // same handle still starts a new session.
        let feed = GATTFeed()
        feed.connect()
        feed.send(.exchangeMTURequest(clientRxMTU: 247))
        feed.receive(.exchangeMTUResponse(serverRxMTU: 247))
        feed.connect()
        XCTAssertEqual(feed.send(.readRequest(handle: 3)).atts.first?.mtu, 23)
    }

    // MARK: Reconnection and disconnection

    func testReconnectionToTheSamePeerKeepsTheTable() throws {
        let feed = GATTFeed()
        feed.connect(0x40, peer: peerA)
        Device.discover(feed, on: 0x40)
        let discovered = feed.table(0x40)
        let disconnection = feed.disconnect(0x40)
        XCTAssertEqual(disconnection.links.count, 1)

        // A new handle, the same device: no discovery this time.
        feed.connect(0x41, peer: peerA)
        let write = try XCTUnwrap(feed.send(.writeRequest(handle: 0x12, value: [1, 2, 3]), on: 0x41).atts.first)
        XCTAssertEqual(write.info?.uuid, UUIDs.otaCredentials)
        XCTAssertEqual(feed.table(0x41), discovered)
        XCTAssertEqual(feed.source(0x41), .discovered)
        let cccd = feed.send(.writeRequest(handle: 0x15, value: [1, 0]), on: 0x41)
        XCTAssertEqual(cccd.subscriptions.first?.characteristic, UUIDs.otaStatus)
        XCTAssertEqual(cccd.subscriptions.first?.key, key(0x41))
        XCTAssertEqual(feed.decoder.deviceTables.count, 1)
    }

    func testAnotherPeerOnTheSameHandleStartsEmpty() {
        let feed = GATTFeed()
        feed.connect(0x40, peer: peerA)
        Device.discover(feed, on: 0x40)
        feed.disconnect(0x40)
        feed.connect(0x40, peer: peerB)
        let write = feed.send(.writeRequest(handle: 0x12, value: [1]), on: 0x40).atts.first
        XCTAssertNotNil(write)
        XCTAssertNil(write?.info)
        XCTAssertEqual(feed.table(0x40)?.isEmpty, true)
        XCTAssertEqual(feed.source(0x40), TableSource.none)
        // And back to the first device: its table is still there.
        feed.disconnect(0x40)
        feed.connect(0x40, peer: peerA)
        XCTAssertEqual(feed.send(.writeRequest(handle: 0x12, value: [1]), on: 0x40).atts.first?.info?.uuid, UUIDs.otaCredentials)
    }

    func testDisconnectionDropsPendingOperations() {
        let feed = GATTFeed()
        feed.connect()
        feed.send(.prepareWriteRequest(handle: 0x12, offset: 0, value: [UInt8](repeating: 1, count: 18)))
        feed.send(.readRequest(handle: 0x14))
        feed.disconnect()
        feed.connect()
        // Neither the old queue nor the old request survive into the new session.
        XCTAssertTrue(feed.send(.executeWriteRequest(flags: 1)).longWrites.isEmpty)
        feed.receive(.readResponse(value: [UInt8](repeating: 2, count: 22)))
        XCTAssertTrue(feed.receive(.readBlobResponse(value: [3])).longReads.isEmpty)
    }

    func testDisconnectionAndConnectionAreReportedAsLinkEvents() {
        let feed = GATTFeed()
        let connected = feed.connect()
        guard case .connectionComplete(let info)? = connected.links.first else { return XCTFail("\(connected)") }
        XCTAssertEqual(info.key, key(0x40))
        XCTAssertEqual(info.peerAddress?.description, "C0:11:22:33:44:55")
        let disconnected = feed.disconnect()
        guard case .disconnection(let d, let reason)? = disconnected.links.first else { return XCTFail("\(disconnected)") }
        XCTAssertEqual(d.key, key(0x40))
        XCTAssertEqual(reason.rawValue, 0x13)
    }

    func testWithoutConnectionCompleteTheConnectionIsTheDevice() {
        // A capture that starts mid-connection: discovery still builds a table for that handle.
        let feed = GATTFeed()
        Device.discover(feed, on: 0x40)
        Device.assertTable(feed.table(0x40))
        XCTAssertEqual(feed.decoder.deviceTables.first?.device, "0x0040")
    }

    // MARK: Default tables

    func testBuiltInProfileNamesHandlesWithoutDiscovery() throws {
        let profile = (name: "speaker", table: FixtureTables.speaker)
        let decoder = GATTDecoder()
        decoder.defaultTable = profile.table
        decoder.defaultTableSource = .builtIn("speaker")
        let feed = GATTFeed(decoder)
        feed.connect()
        let write = try XCTUnwrap(feed.send(.writeRequest(handle: 14, value: Array("net\0pw".utf8))).atts.first)
        XCTAssertEqual(write.info, HandleInfo(role: .value, uuid: UUIDs.otaCredentials, characteristic: UUIDs.otaCredentials))
        XCTAssertEqual(feed.receive(.handleValueNotification(handle: 20, value: [5, 0, 40, 0, 0, 0, 0, 0])).atts.first?.info?.uuid,
                       UUIDs.otaStatus)
        XCTAssertEqual(feed.source(), .builtIn("speaker"))
        XCTAssertEqual(feed.table(), profile.table)
        XCTAssertEqual(decoder.deviceTables.first?.source, .builtIn("speaker"))
        // The profile's CCCD works for subscriptions.
        let sub = feed.send(.writeRequest(handle: 21, value: [1, 0])).subscriptions
        XCTAssertEqual(sub.first?.characteristic, UUIDs.otaStatus)
        XCTAssertEqual(sub.first?.notify, true)
    }

    func testDiscoveryReplacesTheDefaultTable() throws {
        let decoder = GATTDecoder()
        decoder.defaultTable = FixtureTables.speaker
        decoder.defaultTableSource = .builtIn("speaker")
        let feed = GATTFeed(decoder)
        feed.connect()
        XCTAssertEqual(feed.send(.readRequest(handle: 14)).atts.first?.info?.uuid, UUIDs.otaCredentials)
        Device.discover(feed)
        XCTAssertEqual(feed.source(), .discovered)
        // Nothing of the profile is mixed in: handles 13 and 14 (the profile's OTA_CREDENTIALS)
        // do not exist on this device, and 0x14 (20) is OTA_STATUS's value here.
        Device.assertTable(feed.table())
        XCTAssertNil(feed.send(.readRequest(handle: 14)).atts.first?.info)
        XCTAssertNil(feed.table()?.info(for: 13))
        XCTAssertNil(feed.table()?.characteristics[13])
        XCTAssertEqual(feed.send(.readRequest(handle: 0x14)).atts.first?.info?.uuid, UUIDs.otaStatus)
        XCTAssertEqual(decoder.deviceTables.first?.source, .discovered)
    }

    func testReadByCharacteristicUUIDKeepsTheDefaultTable() throws {
        let decoder = GATTDecoder()
        decoder.defaultTable = FixtureTables.speaker
        decoder.defaultTableSource = .builtIn("speaker")
        let feed = GATTFeed(decoder)
        feed.connect()
        feed.send(.readByTypeRequest(startHandle: 1, endHandle: 0xFFFF, type: UUIDs.deviceName))
        feed.receive(.readByTypeResponse(length: 7, entries: [ATTHandleValue(handle: 3, value: Array("Hello".utf8))]))
        XCTAssertEqual(feed.table()?.info(for: 14)?.uuid, UUIDs.otaCredentials)
        XCTAssertEqual(feed.source(), .builtIn("speaker"))
    }

    func testDefaultTableFromAFileIsReportedAsSuch() throws {
        let decoder = GATTDecoder()
        decoder.defaultTable = FixtureTables.sensor
        decoder.defaultTableSource = .file("sensor.json")
        let feed = GATTFeed(decoder)
        feed.connect()
        XCTAssertEqual(feed.send(.writeRequest(handle: 12, value: Array("SCAN".utf8))).atts.first?.info?.uuid,
                       BluetoothUUID(string: "12345678-9abc-def0-1234-000000000008"))
        XCTAssertEqual(feed.source(), .file("sensor.json"))
        XCTAssertTrue(TableSource.file("sensor.json").description.contains("sensor.json"))
    }

    func testNoTableBeforeTheFirstPDUAndNoneSourceWithoutDefault() {
        let feed = GATTFeed()
        feed.connect()
        XCTAssertNil(feed.decoder.table(for: key(0x40)))
        feed.send(.readRequest(handle: 3))
        XCTAssertEqual(feed.source(), TableSource.none)
        XCTAssertTrue(TableSource.none.description.contains("--gatt-table"))
    }
}

extension GATTSessionTests {
    /// A Read Response names the handle its request asked for (as Wireshark does), so output can
    /// name and, for credential characteristics, redact it; a response without a request does not.
    func testReadResponsesCarryTheRequestedHandle() throws {
        let decoder = GATTDecoder()
        decoder.defaultTable = FixtureTables.speaker
        decoder.defaultTableSource = .builtIn("speaker")
        let feed = GATTFeed(decoder)
        feed.connect()
        feed.send(.readRequest(handle: 14))
        let answer = feed.receive(.readResponse(value: Array("HomeNet\u{0}secret".utf8))).atts.first
        XCTAssertEqual(answer?.handle, 14)
        XCTAssertEqual(answer?.info?.uuid, BluetoothUUID(string: "00000005-1234-5678-9abc-def012345678"))
        feed.send(.readBlobRequest(handle: 20, offset: 22))
        XCTAssertEqual(feed.receive(.readBlobResponse(value: [1, 2])).atts.first?.handle, 20)
        XCTAssertNil(feed.receive(.readResponse(value: [9])).atts.first?.handle, "no request pending")
    }
}
