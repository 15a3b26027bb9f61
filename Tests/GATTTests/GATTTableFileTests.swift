import ATT
import Foundation
import XCTest

@testable import GATT

final class GATTTableFileTests: XCTestCase {
    override class func setUp() {
        super.setUp()
        UUIDs.registerNames()
    }

    private func parse(_ json: String, source: String = "t.json") -> Result<(name: String?, table: AttributeTable), GATTTableError> {
        Result { () throws(GATTTableError) in try GATTTableFile.parse(Data(json.utf8), source: source) }
    }

    private func errorMessage(_ json: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        switch parse(json) {
        case .success: XCTFail("parsed without error: \(json)", file: file, line: line); return ""
        case .failure(let e): return e.message
        }
    }

    private func discoveredTable() throws -> AttributeTable {
        let feed = GATTFeed()
        feed.connect()
        Device.discover(feed)
        return try XCTUnwrap(feed.table())
    }

    // MARK: Round trips

    func testExportedDiscoveredTableParsesBackTheSame() throws {
        let table = try discoveredTable()
        let file = GATTTableFile(name: "my speaker", table: table)
        let json = file.json()
        let (name, parsed) = try GATTTableFile.parse(Data(json.utf8), source: "export")
        XCTAssertEqual(name, "my speaker")
        XCTAssertEqual(parsed, table)
        Device.assertTable(parsed)
        // Export again: stable text.
        XCTAssertEqual(GATTTableFile(name: "my speaker", table: parsed).json(), json)
    }

    func testExportShape() throws {
        let file = GATTTableFile(name: nil, table: try discoveredTable())
        XCTAssertEqual(file.services.map(\.startHandle), [1, 0x10])
        XCTAssertEqual(file.services[0].name, "Generic Access")
        let speaker = file.services[1]
        XCTAssertEqual(speaker.uuid, UUIDs.speakerService)
        XCTAssertEqual(speaker.endHandle, 0x1A)
        XCTAssertEqual(speaker.primary, true)
        XCTAssertEqual(speaker.characteristics?.map(\.handle), [0x11, 0x13, 0x17])
        let status = try XCTUnwrap(speaker.characteristics?[1])
        XCTAssertEqual(status.name, "OTA_STATUS")
        XCTAssertEqual(status.valueHandle, 0x14)
        XCTAssertEqual(status.properties, ["read", "notify"])
        XCTAssertEqual(status.descriptors?.map(\.handle), [0x15, 0x16])
        XCTAssertEqual(status.descriptors?.map(\.uuid), [UUIDs.cccd, UUIDs.userDescription])
        XCTAssertEqual(speaker.characteristics?[2].descriptors?.map(\.handle), [0x19, 0x1A])
        XCTAssertEqual(speaker.characteristics?[0].descriptors?.count, 0)

        let json = file.json()
        XCTAssertTrue(json.contains("\"00000008-1234-5678-9abc-def012345678\""), json)
        XCTAssertTrue(json.contains("\"0x2902\""), json)
        XCTAssertTrue(json.contains("\"valueHandle\" : 20"), json)
    }

    func testSecondaryServiceAndCharacteristicsWithoutServiceSurviveExport() throws {
        var t = AttributeTable()
        t.addService(start: 0x20, end: 0x24, uuid: BluetoothUUID(uuid16: 0x180F), primary: false)
        t.addCharacteristic(declaration: 0x21, properties: 0x12, valueHandle: 0x22, uuid: UUIDs.batteryLevel)
        t.addFoundInformation(handle: 0x23, uuid: UUIDs.cccd)
        // Characteristics seen without their service go under a placeholder.
        t.addCharacteristic(declaration: 0x40, properties: 0x08, valueHandle: 0x41, uuid: UUIDs.otaCredentials)
        t.addCharacteristic(declaration: 0x42, properties: 0x08, valueHandle: 0x43, uuid: UUIDs.otaURL)
        let file = GATTTableFile(name: nil, table: t)
        XCTAssertEqual(file.services.count, 2)
        XCTAssertEqual(file.services[1].name, "unknown service")
        XCTAssertEqual(file.services[1].characteristics?.map(\.handle), [0x40, 0x42])
        let parsed = try GATTTableFile.parse(Data(file.json().utf8), source: "x").table
        XCTAssertEqual(parsed, t)
        XCTAssertEqual(parsed.services[0x20]?.primary, false)
        XCTAssertNil(parsed.services[0x40], "the placeholder is not a service")
        XCTAssertEqual(parsed.info(for: 0x43)?.uuid, UUIDs.otaURL)
    }

    func testDescriptorsOfCharacteristicsWithoutServiceSurviveExport() throws {
        var t = AttributeTable()
        t.addCharacteristic(declaration: 0x13, properties: 0x12, valueHandle: 0x14, uuid: UUIDs.otaStatus)
        t.addFoundInformation(handle: 0x15, uuid: UUIDs.cccd)
        let parsed = try GATTTableFile.parse(Data(GATTTableFile(name: nil, table: t).json().utf8), source: "x").table
        XCTAssertEqual(parsed.descriptors, [0x15: UUIDs.cccd])
        XCTAssertEqual(parsed, t)
    }

    func testLoadFromAFile() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("gatt-table-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data(GATTTableFile(name: "disk", table: try discoveredTable()).json().utf8).write(to: url)
        let loaded = try GATTTableFile.load(path: url.path)
        XCTAssertEqual(loaded.name, "disk")
        Device.assertTable(loaded.table)

        let missing = url.path + ".missing"
        XCTAssertThrowsError(try GATTTableFile.load(path: missing)) { error in
            let message = (error as? GATTTableError)?.message ?? ""
            XCTAssertTrue(message.contains(missing), message)
            XCTAssertTrue(message.contains("cannot read"), message)
        }
    }

    func testMinimalHandWrittenTable() throws {
        let json = """
            {"services": [{"uuid": "180a", "startHandle": 1, "endHandle": 5, "characteristics": [
              {"uuid": "0x2A29", "handle": 2, "valueHandle": 3, "properties": []},
              {"uuid": "00002a24-0000-1000-8000-00805F9B34FB", "handle": 4, "valueHandle": 5, "properties": ["read", "extended-properties"]}]}]}
            """
        let (name, t) = try parse(json).get()
        XCTAssertNil(name)
        XCTAssertEqual(t.services[1]?.uuid, BluetoothUUID(uuid16: 0x180A))
        XCTAssertEqual(t.services[1]?.primary, true, "primary is the default")
        XCTAssertEqual(t.characteristics[2]?.properties, 0)
        XCTAssertEqual(t.characteristics[4]?.properties, 0x82)
        XCTAssertEqual(t.info(for: 5)?.uuid, BluetoothUUID(uuid16: 0x2A24))
        XCTAssertEqual(t.info(for: 5)?.uuid.bitWidth, 128, "kept as written")
    }

    // MARK: Errors that name the problem

    func testMissingKeyIsNamed() {
        let top = errorMessage(#"{"name": "x"}"#)
        XCTAssertTrue(top.contains("t.json"), top)
        XCTAssertTrue(top.contains("missing \"services\""), top)

        let nested = errorMessage(#"{"services": [{"uuid": "180a", "startHandle": 1}]}"#)
        XCTAssertTrue(nested.contains("missing \"endHandle\""), nested)
        XCTAssertTrue(nested.contains("services[0]"), nested)

        let deep = errorMessage(#"{"services": [{"uuid": "180a", "startHandle": 1, "endHandle": 3, "characteristics": [{"uuid": "2a29", "handle": 2, "properties": []}]}]}"#)
        XCTAssertTrue(deep.contains("missing \"valueHandle\""), deep)
        XCTAssertTrue(deep.contains("characteristics[0]"), deep)
    }

    func testBadUUIDStringIsNamed() {
        let message = errorMessage(#"{"services": [{"uuid": "not-a-uuid", "startHandle": 1, "endHandle": 3}]}"#)
        XCTAssertTrue(message.contains("'not-a-uuid' is not a UUID"), message)
        XCTAssertTrue(message.contains("services[0]"), message)

        let descriptor = errorMessage(#"{"services": [{"uuid": "180a", "startHandle": 1, "endHandle": 4, "characteristics": [{"uuid": "2a29", "handle": 2, "valueHandle": 3, "properties": [], "descriptors": [{"uuid": "0x29021", "handle": 4}]}]}]}"#)
        XCTAssertTrue(descriptor.contains("'0x29021' is not a UUID"), descriptor)
        XCTAssertTrue(descriptor.contains("descriptors[0]"), descriptor)
    }

    func testUnknownPropertyIsNamed() {
        let message = errorMessage(#"{"services": [{"uuid": "180a", "startHandle": 1, "endHandle": 3, "characteristics": [{"uuid": "2a29", "handle": 2, "valueHandle": 3, "properties": ["read", "reed"]}]}]}"#)
        XCTAssertTrue(message.contains("unknown property"), message)
        XCTAssertTrue(message.contains("reed"), message)
        XCTAssertTrue(message.contains("write-without-response"), "lists the valid names: \(message)")
        XCTAssertTrue(message.contains("t.json"), message)
    }

    func testValueHandleMustFollowTheDeclaration() {
        let same = errorMessage(#"{"services": [{"uuid": "180a", "startHandle": 1, "endHandle": 3, "characteristics": [{"uuid": "2a29", "handle": 2, "valueHandle": 2, "properties": ["read"]}]}]}"#)
        XCTAssertTrue(same.contains("valueHandle 2 must follow its declaration handle 2"), same)
        let before = errorMessage(#"{"services": [{"uuid": "180a", "startHandle": 1, "endHandle": 9, "characteristics": [{"uuid": "2a29", "handle": 5, "valueHandle": 4, "properties": ["read"]}]}]}"#)
        XCTAssertTrue(before.contains("valueHandle 4"), before)
        XCTAssertTrue(before.contains("0x2a29"), "names the characteristic: \(before)")
    }

    func testOtherBadInput() {
        let range = errorMessage(#"{"services": [{"uuid": "180a", "startHandle": 5, "endHandle": 3}]}"#)
        XCTAssertTrue(range.contains("5-3"), range)
        XCTAssertTrue(range.contains("not a range"), range)
        let zero = errorMessage(#"{"services": [{"uuid": "180a", "startHandle": 0, "endHandle": 3}]}"#)
        XCTAssertTrue(zero.contains("not a range"), zero)
        let notJSON = errorMessage("services: none")
        XCTAssertTrue(notJSON.contains("not a GATT table"), notJSON)
        let wrongType = errorMessage(#"{"services": [{"uuid": "180a", "startHandle": "one", "endHandle": 3}]}"#)
        XCTAssertTrue(wrongType.contains("startHandle"), wrongType)
        // A handle beyond 16 bits is refused (Foundation on Linux reports it without the key path).
        let tooBig = errorMessage(#"{"services": [{"uuid": "180a", "startHandle": 1, "endHandle": 70000}]}"#)
        XCTAssertTrue(tooBig.contains("not a GATT table"), tooBig)
        XCTAssertEqual(GATTTableError("m").description, "m")
    }
}
