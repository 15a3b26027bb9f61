import ATT
import Foundation
@testable import GATT
import Profiles
import Protocols
import XCTest

/// The registered protocols' built-in tables (`--profile NAME`) and secret-bearing characteristics.
final class BuiltInTablesTests: XCTestCase {
    let protocols = GATTLabProtocols.all

    func testBuiltInProfilesParse() throws {
        XCTAssertEqual(protocols.builtInNames, ["speaker", "sensor", "nrf7", "esp", "improv"])
        for name in protocols.builtInNames {
            let profile = try XCTUnwrap(protocols.builtInTable(named: name), name)
            XCTAssertNotNil(profile.name, name)
            XCTAssertFalse(profile.table.isEmpty, name)
            XCTAssertEqual(profile.table.services[1]?.uuid, BluetoothUUID(uuid16: 0x1800), name)
            XCTAssertEqual(profile.table.services[6]?.uuid, BluetoothUUID(uuid16: 0x1801), name)
            XCTAssertEqual(profile.table.info(for: 9)?.characteristic, BluetoothUUID(uuid16: 0x2A05), name)
            // Every profile round-trips through the exported JSON.
            let again = try GATTTableFile.parse(Data(GATTTableFile(name: profile.name, table: profile.table).json().utf8), source: name)
            XCTAssertEqual(again.table, profile.table, name)
            // Every characteristic's value handle follows its declaration and lies in a service.
            for c in profile.table.characteristics.values {
                XCTAssertEqual(c.valueHandle, c.declarationHandle + 1, name)
                XCTAssertNotNil(profile.table.service(containing: c.valueHandle), name)
            }
        }
        XCTAssertNil(protocols.builtInTable(named: "toaster"))
    }

    func testBuiltInProfileHandles() throws {
        let speaker = try XCTUnwrap(protocols.builtInTable(named: "speaker")).table
        XCTAssertEqual(speaker.info(for: 14)?.uuid, SpeakerOTA.credentials)
        XCTAssertEqual(speaker.info(for: 16)?.uuid, SpeakerOTA.url)
        XCTAssertEqual(speaker.info(for: 18)?.uuid, SpeakerOTA.control)
        XCTAssertEqual(speaker.info(for: 20)?.uuid, SpeakerOTA.status)
        XCTAssertEqual(speaker.info(for: 21), HandleInfo(role: .descriptor, uuid: BluetoothUUID(uuid16: 0x2902), characteristic: SpeakerOTA.status))
        XCTAssertEqual(speaker.characteristics[19]?.properties, 0x12)
        XCTAssertEqual(speaker.services[10]?.uuid, SpeakerOTA.service)

        let sensor = try XCTUnwrap(protocols.builtInTable(named: "sensor")).table
        XCTAssertEqual(sensor.info(for: 12)?.uuid, BluetoothUUID(string: "12345678-9ABC-DEF0-1234-000000000008"))
        XCTAssertEqual(sensor.characteristics[11]?.properties, 0x18)

        let nrf7 = try XCTUnwrap(protocols.builtInTable(named: "nrf7")).table
        XCTAssertEqual(nrf7.info(for: 15)?.characteristic, BluetoothUUID(string: "14387802-130c-49e7-b877-2881c89cb258"))
        XCTAssertEqual(nrf7.info(for: 18)?.characteristic, BluetoothUUID(string: "14387803-130c-49e7-b877-2881c89cb258"))

        let esp = try XCTUnwrap(protocols.builtInTable(named: "esp")).table
        XCTAssertEqual(esp.info(for: 16), HandleInfo(role: .descriptor, uuid: BluetoothUUID(uuid16: 0x2901),
                                                     characteristic: BluetoothUUID(string: "021aff51-0382-4aea-bff4-6b3f1c5adfb4")))
        XCTAssertEqual(esp.label(for: 15), "ESP prov-session")
    }

    func testSecretBearing() {
        XCTAssertTrue(protocols.isSecretBearing(BluetoothUUID(string: "00000005-1234-5678-9abc-def012345678")!))
        XCTAssertTrue(protocols.isSecretBearing(BluetoothUUID(string: "00000005-1234-5678-9ABC-DEF012345678")!))
        XCTAssertTrue(protocols.isSecretBearing(BluetoothUUID(string: "14387802-130c-49e7-b877-2881c89cb258")!))
        XCTAssertTrue(protocols.isSecretBearing(BluetoothUUID(string: "021aff52-0382-4aea-bff4-6b3f1c5adfb4")!))
        XCTAssertTrue(protocols.isSecretBearing(BluetoothUUID(uuid16: 0xFF52), endpointName: "prov-config"))
        XCTAssertFalse(protocols.isSecretBearing(SpeakerOTA.status))
        XCTAssertFalse(protocols.isSecretBearing(SpeakerOTA.url))
        XCTAssertFalse(ProtocolSet([]).isSecretBearing(SpeakerOTA.credentials), "only registered protocols count")
    }
}
