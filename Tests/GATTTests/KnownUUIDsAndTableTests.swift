import ATT
import Capture
import XCTest

@testable import GATT

final class KnownUUIDsTests: XCTestCase {
    override class func setUp() {
        super.setUp()
        UUIDs.registerNames()
    }

    func testSIGNames() {
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x2902)), "Client Characteristic Configuration")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x2901)), "Characteristic User Description")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x2800)), "Primary Service")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x2803)), "Characteristic")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x180A)), "Device Information")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x1800)), "Generic Access")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x2A00)), "Device Name")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x2A19)), "Battery Level")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x2A05)), "Service Changed")
        XCTAssertNil(KnownUUIDs.name(BluetoothUUID(uuid16: 0xBEEF)))
    }

    /// Issue 16: what the hand-written table lacks comes from the SIG's assigned numbers and the
    /// vendor table; the device protocols' own names still win.
    func testFallbacks() {
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x184E)), "Audio Stream Control")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x1850)), "Published Audio Capabilities")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x2A37)), "Heart Rate Measurement")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x1827)), "Mesh Provisioning")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x1828)), "Mesh Proxy")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0x1801)), "Generic Attribute", "not the YAML's \"GATT\"")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0xFE59)), "Nordic Secure DFU", "the service, not the member")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid16: 0xFEE7)), "Tencent Holdings Limited.")
        XCTAssertNil(KnownUUIDs.name(BluetoothUUID(uuid16: 0xFFF0)), "squatted by vendor-serial modules")
        XCTAssertNil(KnownUUIDs.name(BluetoothUUID(uuid16: 0xFFF1)))
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(string: "6e400001-b5a3-f393-e0a9-e50e24dcca9e")!), "Nordic UART Service")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(string: "8ec90003-f315-4f60-9fb8-838830daea50")!), "Nordic Buttonless DFU")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(string: "f000ffc0-0451-4000-b000-000000000000")!), "TI OAD")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(string: "7905f431-b5ce-4e99-a40f-4b1e122d00d0")!), "Apple Notification Center Service")
        XCTAssertNil(KnownUUIDs.name(BluetoothUUID(string: "6e400009-b5a3-f393-e0a9-e50e24dcca9e")!))

        XCTAssertEqual(KnownUUIDs.service(BluetoothUUID(uuid16: 0x180D))?.name, "Heart Rate")
        XCTAssertEqual(KnownUUIDs.service(BluetoothUUID(uuid16: 0x180D))?.source, .sig)
        XCTAssertEqual(KnownUUIDs.service(BluetoothUUID(uuid16: 0xFE59))?.source, .vendor)
        XCTAssertEqual(KnownUUIDs.service(BluetoothUUID(uuid16: 0xFEE7))?.name, "Tencent Holdings Limited. (0xFEE7)")
        XCTAssertNil(KnownUUIDs.service(BluetoothUUID(uuid16: 0x2A37)), "a characteristic is not a service")
        XCTAssertNil(KnownUUIDs.service(BluetoothUUID(uuid16: 0xFFF0)))
        XCTAssertEqual(KnownUUIDs.service(UUIDs.speakerService)?.source, .deviceProtocol)
        XCTAssertEqual(KnownUUIDs.service(BluetoothUUID(string: "00001530-1212-efde-1523-785feabcd123")!)?.name, "Nordic Legacy DFU")
        XCTAssertNil(KnownUUIDs.service(BluetoothUUID(string: "00001531-1212-efde-1523-785feabcd123")!), "a characteristic")
    }

    func testSIGNamesInOtherWidths() {
        // The 128-bit and 32-bit forms of a SIG UUID name the same thing.
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(string: "00002902-0000-1000-8000-00805f9b34fb")!),
                       "Client Characteristic Configuration")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(uuid32: 0x180F)), "Battery")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(littleEndianBytes: [0x0D, 0x18])!), "Heart Rate")
        XCTAssertNil(KnownUUIDs.name(BluetoothUUID(uuid32: 0x0001_2902)), "not a 16-bit value")
    }

    func testRegisteredNames() {
        XCTAssertEqual(KnownUUIDs.name(UUIDs.speakerService), "Speaker service")
        XCTAssertEqual(KnownUUIDs.name(UUIDs.otaCredentials), "OTA_CREDENTIALS")
        XCTAssertEqual(KnownUUIDs.name(UUIDs.otaURL), "OTA_URL")
        XCTAssertEqual(KnownUUIDs.name(UUIDs.otaControl), "OTA_CONTROL")
        XCTAssertEqual(KnownUUIDs.name(UUIDs.otaStatus), "OTA_STATUS")
        XCTAssertEqual(KnownUUIDs.service(UUIDs.speakerService)?.source, .deviceProtocol)
        // Any case in the text form.
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(string: "00000008-1234-5678-9ABC-DEF012345678")!), "OTA_STATUS")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(string: "6e400001-b5a3-f393-e0a9-e50e24dcca9e")!), "Nordic UART Service")
        // From the air, little-endian.
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(littleEndianBytes: UUIDs.otaCredentials.littleEndianBytes128)!), "OTA_CREDENTIALS")
        XCTAssertNil(KnownUUIDs.name(BluetoothUUID(string: "00000009-1234-5678-9abc-def012345678")!))
        // A name registered again replaces the first.
        let other = BluetoothUUID(string: "0000000a-1234-5678-9abc-def012345678")!
        KnownUUIDs.register([other: "first"])
        KnownUUIDs.register([other: "second"])
        XCTAssertEqual(KnownUUIDs.name(other), "second")
    }
}

final class AttributeTableTests: XCTestCase {
    /// The handle lookup keeps handles sorted for its binary search: a table discovered in any
    /// order answers the same and equals one discovered in order.
    func testHandlesArrivingInAnyOrderAreFound() {
        let uuids = (0..<40).map { BluetoothUUID(uuid16: UInt16(0x3000 + $0)) }
        func table(_ order: [Int]) -> AttributeTable {
            var t = AttributeTable()
            for i in order { t.addValueHandle(UInt16(3 * i + 2), uuid: uuids[i]) }
            return t
        }
        var rng = SplitMix64(seed: 20)
        var ascending = table(Array(0..<40))
        let descending = table((0..<40).reversed()), shuffled = table((0..<40).shuffled(using: &rng))
        XCTAssertEqual(ascending, descending)
        XCTAssertEqual(ascending, shuffled)
        for i in 0..<40 {
            for t in [ascending, descending, shuffled] {
                XCTAssertEqual(t.info(for: UInt16(3 * i + 2))?.uuid, uuids[i])
                XCTAssertNil(t.info(for: UInt16(3 * i + 1)))
                XCTAssertNil(t.info(for: UInt16(3 * i + 3)))
            }
        }
        XCTAssertNil(ascending.info(for: 0))
        XCTAssertNil(ascending.info(for: 0xFFFF))
        // A later procedure replaces what was known of a handle, in place.
        ascending.addFoundInformation(handle: 2, uuid: BluetoothUUID(uuid16: 0x2902))
        XCTAssertEqual(ascending.info(for: 2)?.role, .value, "Find Information does not demote a value handle")
        ascending.addCharacteristic(declaration: 1, properties: 0x10, valueHandle: 2, uuid: uuids[5])
        XCTAssertEqual(ascending.info(for: 2)?.uuid, uuids[5])
        XCTAssertEqual(ascending.info(for: 1)?.role, .declaration)
    }

    func testPropertyNames() {
        XCTAssertEqual(AttributeTable.propertyNames(0x12), ["read", "notify"])
        XCTAssertEqual(AttributeTable.propertyNames(0x0C), ["write-without-response", "write"])
        XCTAssertEqual(AttributeTable.propertyNames(0), [])
        XCTAssertEqual(AttributeTable.propertyNames(0xFF).count, 8)
        for p in 0...255 {
            XCTAssertEqual(AttributeTable.properties(named: AttributeTable.propertyNames(UInt8(p))), UInt8(p))
        }
        XCTAssertNil(AttributeTable.properties(named: ["read", "Read"]))
        XCTAssertEqual(AttributeTable.properties(named: ["indicate", "broadcast"]), 0x21)
    }

    func testDescriptorOwnerStaysInItsService() {
        var t = AttributeTable()
        t.addService(start: 1, end: 5, uuid: BluetoothUUID(uuid16: 0x1800), primary: true)
        t.addCharacteristic(declaration: 2, properties: 2, valueHandle: 3, uuid: UUIDs.deviceName)
        t.addService(start: 6, end: 9, uuid: BluetoothUUID(uuid16: 0x180F), primary: true)
        // A descriptor in the second service whose characteristic is unknown: no owner from the first service.
        t.addFoundInformation(handle: 9, uuid: UUIDs.cccd)
        XCTAssertNil(t.owner(ofDescriptor: 9))
        XCTAssertNil(t.info(for: 9)?.characteristic)
        XCTAssertEqual(t.info(for: 9)?.role, .descriptor)
        // Within the first service it has one.
        t.addFoundInformation(handle: 4, uuid: UUIDs.userDescription)
        XCTAssertEqual(t.info(for: 4)?.characteristic, UUIDs.deviceName)
        XCTAssertEqual(t.service(containing: 7)?.uuid, BluetoothUUID(uuid16: 0x180F))
        XCTAssertNil(t.service(containing: 10))
    }

    func testDescriptorOwnerStaysInItsServiceWhenServicesComeLast() {
        var t = AttributeTable()
        t.addCharacteristic(declaration: 2, properties: 2, valueHandle: 3, uuid: UUIDs.deviceName)
        t.addFoundInformation(handle: 9, uuid: UUIDs.cccd)
        t.addService(start: 1, end: 5, uuid: BluetoothUUID(uuid16: 0x1800), primary: true)
        t.addService(start: 6, end: 9, uuid: BluetoothUUID(uuid16: 0x180F), primary: true)
        XCTAssertNil(t.owner(ofDescriptor: 9))
        XCTAssertNil(t.info(for: 9)?.characteristic)
    }

    func testFindInformationDoesNotDemoteKnownAttributes() {
        var t = AttributeTable()
        t.addService(start: 1, end: 5, uuid: UUIDs.gap, primary: true)
        t.addCharacteristic(declaration: 2, properties: 2, valueHandle: 3, uuid: UUIDs.deviceName)
        let before = t
        t.addFoundInformation(handle: 1, uuid: UUIDs.primaryService)
        t.addFoundInformation(handle: 2, uuid: UUIDs.characteristic)
        t.addFoundInformation(handle: 3, uuid: UUIDs.deviceName)
        XCTAssertEqual(t, before)
        XCTAssertTrue(t.descriptors.isEmpty)
        // A value handle learned first from Find Information becomes a value when its declaration arrives.
        t.addFoundInformation(handle: 5, uuid: UUIDs.appearance)
        XCTAssertEqual(t.info(for: 5)?.role, .descriptor)
        t.addCharacteristic(declaration: 4, properties: 2, valueHandle: 5, uuid: UUIDs.appearance)
        XCTAssertEqual(t.info(for: 5)?.role, .value)
        XCTAssertNil(t.descriptors[5])
        // Include declarations found by Find Information.
        t.addFoundInformation(handle: 0x20, uuid: BluetoothUUID(uuid16: 0x2802))
        XCTAssertEqual(t.info(for: 0x20)?.role, .include)
    }

    func testMergeAddsEverything() {
        var a = AttributeTable()
        a.addService(start: 1, end: 5, uuid: UUIDs.gap, primary: true)
        a.addCharacteristic(declaration: 2, properties: 2, valueHandle: 3, uuid: UUIDs.deviceName)
        var b = AttributeTable()
        b.addService(start: 0x10, end: 0x16, uuid: UUIDs.speakerService, primary: true)
        b.addCharacteristic(declaration: 0x13, properties: 0x12, valueHandle: 0x14, uuid: UUIDs.otaStatus)
        b.addFoundInformation(handle: 0x15, uuid: UUIDs.cccd)
        var merged = a
        merged.merge(b)
        XCTAssertEqual(merged.services.count, 2)
        XCTAssertEqual(merged.characteristics.count, 2)
        XCTAssertEqual(merged.info(for: 0x15)?.characteristic, UUIDs.otaStatus)
        XCTAssertEqual(merged.info(for: 3)?.uuid, UUIDs.deviceName)
        var empty = AttributeTable()
        XCTAssertTrue(empty.isEmpty)
        empty.merge(merged)
        XCTAssertEqual(empty.services, merged.services)
        XCTAssertEqual(empty.characteristics, merged.characteristics)
        XCTAssertEqual(empty.descriptors, merged.descriptors)
    }
}
