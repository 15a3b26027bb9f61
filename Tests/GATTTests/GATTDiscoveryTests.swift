import ATT
import HCI
import XCTest

@testable import GATT

final class GATTDiscoveryTests: XCTestCase {
    override class func setUp() {
        super.setUp()
        UUIDs.registerNames()
    }

    func testFullDiscoveryRebuildsTheTable() {
        let feed = GATTFeed()
        feed.connect()
        let events = Device.discover(feed)
        Device.assertTable(feed.table())
        XCTAssertEqual(feed.source(), .discovered)
        // Every answer that taught the table something says so; error responses do not.
        XCTAssertEqual(events.tableUpdates, 2 + 3 + 2)
        XCTAssertTrue(events.malformedReasons.isEmpty, "\(events.malformedReasons)")
        XCTAssertTrue(events.atts.allSatisfy { $0.malformed == nil && $0.pdu != nil })

        // The per-device list has it too.
        let tables = feed.decoder.deviceTables
        XCTAssertEqual(tables.count, 1)
        XCTAssertEqual(tables.first?.device, "C0:11:22:33:44:55")
        XCTAssertEqual(tables.first?.source, .discovered)
        XCTAssertEqual(tables.first?.table, feed.table())
    }

    func testLaterPDUsCarryInfoWithUUIDAndRole() throws {
        let feed = GATTFeed()
        feed.connect()
        Device.discover(feed)

        let write = try XCTUnwrap(feed.send(.writeRequest(handle: 0x12, value: Array("ssid\0pw".utf8))).atts.first)
        XCTAssertEqual(write.handle, 0x12)
        XCTAssertEqual(write.info, HandleInfo(role: .value, uuid: UUIDs.otaCredentials, characteristic: UUIDs.otaCredentials))
        XCTAssertEqual(write.direction, .sent)
        XCTAssertEqual(write.connection, key(0x40))
        XCTAssertEqual(write.cid, 0x0004)
        XCTAssertEqual(write.opcode, 0x12)
        XCTAssertEqual(write.length, 2 + 7)

        let notify = try XCTUnwrap(feed.receive(.handleValueNotification(handle: 0x14, value: [1, 0, 0, 0, 0, 0, 0, 0])).atts.first)
        XCTAssertEqual(notify.direction, .received)
        XCTAssertEqual(notify.info?.role, .value)
        XCTAssertEqual(notify.info?.uuid, UUIDs.otaStatus)

        let battery = try XCTUnwrap(feed.send(.readRequest(handle: 0x18)).atts.first)
        XCTAssertEqual(battery.info?.uuid, UUIDs.batteryLevel)

        let description = try XCTUnwrap(feed.send(.readRequest(handle: 0x1A)).atts.first)
        XCTAssertEqual(description.info, HandleInfo(role: .descriptor, uuid: UUIDs.userDescription, characteristic: UUIDs.batteryLevel))

        let declaration = try XCTUnwrap(feed.send(.readRequest(handle: 0x13)).atts.first)
        XCTAssertEqual(declaration.info, HandleInfo(role: .declaration, uuid: UUIDs.characteristic, characteristic: UUIDs.otaStatus))

        let service = try XCTUnwrap(feed.send(.readRequest(handle: 0x10)).atts.first)
        XCTAssertEqual(service.info?.role, .service)
        XCTAssertEqual(service.info?.uuid, UUIDs.primaryService)

        let unknown = try XCTUnwrap(feed.send(.readRequest(handle: 0x30)).atts.first)
        XCTAssertNil(unknown.info)
        XCTAssertEqual(unknown.handle, 0x30)
    }

    func testLabelsNameTheOwningCharacteristic() {
        let feed = GATTFeed()
        feed.connect()
        Device.discover(feed)
        let t = feed.table()
        XCTAssertEqual(t?.label(for: 0x15), "Client Characteristic Configuration of OTA_STATUS")
        XCTAssertEqual(t?.label(for: 0x19), "Client Characteristic Configuration of Battery Level")
        XCTAssertEqual(t?.label(for: 0x12), "OTA_CREDENTIALS")
        XCTAssertEqual(t?.label(for: 0x02), "Characteristic of Device Name")
        XCTAssertNil(t?.label(for: 0x40))
    }

    func testDiscoveryInReverseOrderGivesTheSameTable() {
        let inOrder = GATTFeed()
        inOrder.connect()
        Device.discover(inOrder)

        // Descriptors first (Find Information over everything, declarations and values included),
        // then characteristics (the 16-bit one before the 128-bit ones), then services.
        let reversed = GATTFeed()
        reversed.connect()
        Device.run(Device.everythingByFindInformation, reversed)
        // Before characteristic discovery a descriptor has no owner yet.
        XCTAssertEqual(reversed.table()?.info(for: 0x15)?.role, .descriptor)
        XCTAssertNil(reversed.table()?.info(for: 0x15)?.characteristic)
        Device.run(Device.characteristics.reversed(), reversed)
        Device.run(Device.services, reversed)

        Device.assertTable(reversed.table())
        XCTAssertEqual(reversed.table(), inOrder.table())
        XCTAssertEqual(reversed.source(), .discovered)
    }

    func testCharacteristicsBeforeServicesStillGiveOwners() {
        let feed = GATTFeed()
        feed.connect()
        Device.run(Device.characteristics, feed)
        Device.run(Device.descriptors, feed)
        XCTAssertEqual(feed.table()?.services.count, 0)
        XCTAssertEqual(feed.table()?.info(for: 0x15)?.characteristic, UUIDs.otaStatus)
        XCTAssertEqual(feed.table()?.info(for: 0x19)?.characteristic, UUIDs.batteryLevel)
        Device.run(Device.services, feed)
        Device.assertTable(feed.table())
    }

    func testDescriptorsBeforeCharacteristicsGetTheirOwners() {
        let feed = GATTFeed()
        feed.connect()
        Device.run(Device.services, feed)
        Device.run(Device.descriptors, feed)
        XCTAssertNil(feed.table()?.info(for: 0x16)?.characteristic)
        // The 128-bit characteristics come last: 0x19 must stay with Battery Level, 0x15 move to OTA_STATUS.
        Device.run([Device.characteristics[0], Device.characteristics[2], Device.characteristics[1]], feed)
        Device.assertTable(feed.table())
    }

    func testSecondaryServicesAreNotPrimary() {
        let feed = GATTFeed()
        feed.connect()
        feed.send(.readByGroupTypeRequest(startHandle: 1, endHandle: 0xFFFF, type: BluetoothUUID(uuid16: 0x2801)))
        feed.receive(.readByGroupTypeResponse(length: 6, entries: [ATTGroupData(handle: 0x20, endGroupHandle: 0x24, value: [0x0F, 0x18])]))
        let s = feed.table()?.services[0x20]
        XCTAssertEqual(s?.uuid, BluetoothUUID(uuid16: 0x180F))
        XCTAssertEqual(s?.primary, false)
        XCTAssertEqual(feed.table()?.info(for: 0x20)?.uuid, BluetoothUUID(uuid16: 0x2801))
    }

    func testResponsesWithoutTheirRequestTeachNothing() {
        let feed = GATTFeed()
        feed.connect()
        // A capture that starts between request and response: the answer cannot be interpreted.
        let events = feed.receive(Device.services[0].1) + feed.receive(Device.characteristics[0].1)
            + feed.receive(Device.descriptors[0].1)
        XCTAssertEqual(events.tableUpdates, 0)
        XCTAssertEqual(feed.table()?.isEmpty, true)
        XCTAssertEqual(feed.source(), TableSource.none)
        // The request sent by the device side does not pair with a response in the same direction.
        feed.receive(Device.services[0].0)
        feed.receive(Device.services[0].1)
        XCTAssertEqual(feed.table()?.isEmpty, true)
    }

    func testFindByTypeValueDiscoversServices() {
        let feed = GATTFeed()
        feed.connect()
        let events = feed.send(.findByTypeValueRequest(startHandle: 1, endHandle: 0xFFFF, type: 0x2800,
                                                       value: UUIDs.speakerService.littleEndianBytes128))
            + feed.receive(.findByTypeValueResponse(entries: [ATTHandlesInformation(foundHandle: 0x10, groupEndHandle: 0x1A)]))
        XCTAssertEqual(events.tableUpdates, 1)
        let s = feed.table()?.services[0x10]
        XCTAssertEqual(s?.uuid, UUIDs.speakerService)
        XCTAssertEqual(s?.endHandle, 0x1A)
        XCTAssertEqual(s?.primary, true)
        XCTAssertEqual(feed.table()?.service(containing: 0x15)?.uuid, UUIDs.speakerService)

        // A 16-bit service UUID, two instances.
        feed.send(.findByTypeValueRequest(startHandle: 0x1B, endHandle: 0xFFFF, type: 0x2800, value: [0x0A, 0x18]))
        feed.receive(.findByTypeValueResponse(entries: [ATTHandlesInformation(foundHandle: 0x20, groupEndHandle: 0x28),
                                                        ATTHandlesInformation(foundHandle: 0x30, groupEndHandle: 0x33)]))
        XCTAssertEqual(feed.table()?.services[0x20]?.uuid, BluetoothUUID(uuid16: 0x180A))
        XCTAssertEqual(feed.table()?.services[0x30]?.uuid, BluetoothUUID(uuid16: 0x180A))
        XCTAssertEqual(feed.table()?.services[0x30]?.endHandle, 0x33)
        XCTAssertEqual(feed.source(), .discovered)
    }

    func testReadByTypeOnACharacteristicUUIDNamesTheValueHandle() {
        let feed = GATTFeed()
        feed.connect()
        let events = feed.send(.readByTypeRequest(startHandle: 1, endHandle: 0xFFFF, type: UUIDs.deviceName))
            + feed.receive(.readByTypeResponse(length: 7, entries: [ATTHandleValue(handle: 3, value: Array("Hello".utf8))]))
        XCTAssertEqual(events.tableUpdates, 1)
        XCTAssertEqual(feed.table()?.info(for: 3), HandleInfo(role: .value, uuid: UUIDs.deviceName, characteristic: UUIDs.deviceName))
        XCTAssertEqual(feed.send(.readRequest(handle: 3)).atts.first?.info?.uuid, UUIDs.deviceName)

        // A 128-bit characteristic UUID read the same way.
        feed.send(.readByTypeRequest(startHandle: 1, endHandle: 0xFFFF, type: UUIDs.otaStatus))
        feed.receive(.readByTypeResponse(length: 10, entries: [ATTHandleValue(handle: 0x14, value: [0, 0, 0, 0, 0, 0, 0, 0])]))
        XCTAssertEqual(feed.table()?.info(for: 0x14)?.uuid, UUIDs.otaStatus)
        XCTAssertEqual(feed.table()?.info(for: 0x14)?.role, .value)
    }

    func testReadByTypeOnACharacteristicUUIDDoesNotOverrideWhatIsKnown() {
        let feed = GATTFeed()
        feed.connect()
        Device.discover(feed)
        // A wrong answer (handle 0x15 is the CCCD) must not turn a known descriptor into a value.
        feed.send(.readByTypeRequest(startHandle: 1, endHandle: 0xFFFF, type: UUIDs.deviceName))
        feed.receive(.readByTypeResponse(length: 4, entries: [ATTHandleValue(handle: 0x15, value: [1, 0])]))
        XCTAssertEqual(feed.table()?.info(for: 0x15)?.role, .descriptor)
        XCTAssertEqual(feed.table()?.info(for: 0x15)?.uuid, UUIDs.cccd)
    }

    func testDiscoveryIsPerDevice() {
        let feed = GATTFeed()
        feed.connect(0x40, peer: peerA)
        feed.connect(0x41, peer: peerB)
        Device.discover(feed, on: 0x40)
        feed.send(.readRequest(handle: 0x12), on: 0x41)
        XCTAssertEqual(feed.table(0x41)?.isEmpty, true)
        XCTAssertEqual(feed.source(0x41), TableSource.none)
        XCTAssertEqual(feed.decoder.deviceTables.count, 2)
        // Requests on one connection do not pair with answers on another.
        feed.send(Device.services[0].0, on: 0x40)
        feed.receive(Device.services[0].1, on: 0x41)
        XCTAssertEqual(feed.table(0x41)?.isEmpty, true)
    }
}

extension GATTDiscoveryTests {
    /// Reading a Characteristic User Description names its characteristic in the table (ESP-IDF
    /// provisioning finds its endpoints by these names), and the name survives export.
    func testUserDescriptionReadNamesTheCharacteristic() throws {
        let feed = GATTFeed()
        feed.connect()
        Device.discover(feed)
        feed.send(.readRequest(handle: 0x16))
        feed.receive(.readResponse(value: Array("prov-session".utf8)))
        let table = try XCTUnwrap(feed.table())
        XCTAssertEqual(table.userDescriptions[0x14], "prov-session")
        let file = GATTTableFile(name: nil, table: table)
        let back = try file.table
        XCTAssertEqual(back.userDescriptions[0x14], "prov-session")
        // A read of something that is not a 0x2901 descriptor names nothing.
        feed.send(.readRequest(handle: 0x03))
        feed.receive(.readResponse(value: Array("Speaker".utf8)))
        XCTAssertEqual(feed.table()?.userDescriptions.count, 1)
    }
}
