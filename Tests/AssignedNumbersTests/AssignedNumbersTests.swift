import Foundation
import XCTest
@testable import AssignedNumbers

final class AssignedNumbersTests: XCTestCase {
    func testCompanies() {
        XCTAssertEqual(AssignedNumbers.company(0x004C), "Apple, Inc.")
        XCTAssertEqual(AssignedNumbers.company(0x0059), "Nordic Semiconductor ASA")
        XCTAssertEqual(AssignedNumbers.company(0x0006), "Microsoft")
        XCTAssertEqual(AssignedNumbers.company(0x02E5), "Espressif Systems (Shanghai) Co., Ltd.")
        XCTAssertEqual(AssignedNumbers.company(0xFFFF), nil, "0xFFFF is reserved for tests, not assigned")
    }

    func testServicesIncludingLEAudio() {
        XCTAssertEqual(AssignedNumbers.service(0x180D), "Heart Rate")
        XCTAssertEqual(AssignedNumbers.service(0x180F), "Battery")
        XCTAssertEqual(AssignedNumbers.service(0x1826), "Fitness Machine")
        XCTAssertEqual(AssignedNumbers.service(0x1827), "Mesh Provisioning")
        XCTAssertEqual(AssignedNumbers.service(0x1828), "Mesh Proxy")
        XCTAssertEqual(AssignedNumbers.service(0x184E), "Audio Stream Control")
        XCTAssertEqual(AssignedNumbers.service(0x1850), "Published Audio Capabilities")
        XCTAssertEqual(AssignedNumbers.service(0x184F), "Broadcast Audio Scan")
        XCTAssertNil(AssignedNumbers.service(0x2A37), "a characteristic is not a service")
    }

    func testCharacteristicsDescriptorsDeclarationsUnits() {
        XCTAssertEqual(AssignedNumbers.characteristic(0x2A37), "Heart Rate Measurement")
        XCTAssertEqual(AssignedNumbers.characteristic(0x2A19), "Battery Level")
        XCTAssertEqual(AssignedNumbers.characteristic(0x2BC6), "ASE Control Point")
        XCTAssertEqual(AssignedNumbers.characteristic(0x2B8C), "CO2 Concentration", "LaTeX in the YAML is printed as text")
        XCTAssertEqual(AssignedNumbers.descriptor(0x2902), "Client Characteristic Configuration")
        XCTAssertEqual(AssignedNumbers.declaration(0x2803), "Characteristic")
        XCTAssertEqual(AssignedNumbers.unit(0x2700), "unitless")
    }

    func testMemberAndSDOUUIDs() {
        XCTAssertEqual(AssignedNumbers.memberService(0xFE59), "Nordic Semiconductor ASA")
        XCTAssertEqual(AssignedNumbers.memberService(0xFE2C), "Google LLC")
        XCTAssertEqual(AssignedNumbers.memberService(0xFEAA), "Google LLC")
        XCTAssertEqual(AssignedNumbers.sdo(0xFFFD), "Universal Second Factor Authenticator")
    }

    func testUUID16NameLooksEverywhere() {
        XCTAssertEqual(AssignedNumbers.uuid16Name(0x180D), "Heart Rate")
        XCTAssertEqual(AssignedNumbers.uuid16Name(0x2A37), "Heart Rate Measurement")
        XCTAssertEqual(AssignedNumbers.uuid16Name(0x2902), "Client Characteristic Configuration")
        XCTAssertEqual(AssignedNumbers.uuid16Name(0x2800), "Primary Service")
        XCTAssertEqual(AssignedNumbers.uuid16Name(0xFE59), "Nordic Semiconductor ASA")
        XCTAssertEqual(AssignedNumbers.uuid16Name(0xFFFD), "Universal Second Factor Authenticator")
        XCTAssertNil(AssignedNumbers.uuid16Name(0x2700), "units are values, not attribute types")
        XCTAssertNil(AssignedNumbers.uuid16Name(0x0000))
        XCTAssertNil(AssignedNumbers.uuid16Name(0x9999))
    }

    func testAppearance() {
        XCTAssertEqual(AssignedNumbers.appearance(0x0000), "Unknown")
        XCTAssertEqual(AssignedNumbers.appearance(0x03C1), "Human Interface Device: Keyboard")
        XCTAssertEqual(AssignedNumbers.appearance(0x03C2), "Human Interface Device: Mouse")
        XCTAssertEqual(AssignedNumbers.appearance(0x0341), "Heart Rate Sensor: Heart Rate Belt")
        XCTAssertEqual(AssignedNumbers.appearance(0x00C0), "Watch")
        XCTAssertEqual(AssignedNumbers.appearance(0x00FF), "Watch", "an unlisted subcategory falls back to its category")
    }

    /// Every table is sorted without duplicates (binary search depends on it) and large enough
    /// that a format change in the YAML would show.
    func testTablesAreSortedAndFull() {
        let tables: [(String, AssignedNumbers.Table, Int)] = [
            ("company", AssignedNumbers.companyTable, 3000), ("service", AssignedNumbers.serviceTable, 60),
            ("characteristic", AssignedNumbers.characteristicTable, 400), ("descriptor", AssignedNumbers.descriptorTable, 20),
            ("declaration", AssignedNumbers.declarationTable, 4), ("member", AssignedNumbers.memberTable, 500),
            ("sdo", AssignedNumbers.sdoTable, 10), ("unit", AssignedNumbers.unitTable, 100),
            ("appearance", AssignedNumbers.appearanceTable, 300),
        ]
        for (name, table, minimum) in tables {
            XCTAssertGreaterThanOrEqual(table.count, minimum, name)
            XCTAssertEqual(table.keys, table.keys.sorted(), "\(name) sorted")
            XCTAssertEqual(Set(table.keys).count, table.keys.count, "\(name) without duplicates")
            for (key, value) in table.entries {
                XCTAssertFalse(value.isEmpty, "\(name) 0x\(String(key, radix: 16))")
                XCTAssertEqual(value, value.trimmingCharacters(in: .whitespaces), "\(name) 0x\(String(key, radix: 16))")
            }
        }
    }

    /// Binary search at the edges: the first and last entry, one past either end, the gaps.
    func testBinarySearchEdges() {
        let t = AssignedNumbers.Table("""
            0001 one
            0003 three
            FFFE last
            """)
        XCTAssertEqual(t.count, 3)
        XCTAssertEqual(t[0x0001], "one")
        XCTAssertEqual(t[0x0003], "three")
        XCTAssertEqual(t[0xFFFE], "last")
        XCTAssertNil(t[0x0000])
        XCTAssertNil(t[0x0002])
        XCTAssertNil(t[0x0004])
        XCTAssertNil(t[0xFFFF])
        let empty = AssignedNumbers.Table("")
        XCTAssertEqual(empty.count, 0)
        XCTAssertNil(empty[0])
        let one = AssignedNumbers.Table("abcd Ünïcode name")
        XCTAssertEqual(one[0xABCD], "Ünïcode name")
        XCTAssertNil(one[0xABCC])
        XCTAssertNil(one[0xABCE])
        // Lines that are not "XXXX name" are skipped, not trusted.
        let odd = AssignedNumbers.Table("zz12 bad\n00\n0010 ok\n0011x no space")
        XCTAssertEqual(odd.keys, [0x0010])
        // Every company in the real table is found again by its own number.
        let companies = AssignedNumbers.companyTable
        for key in companies.keys { XCTAssertNotNil(AssignedNumbers.company(key)) }
        XCTAssertEqual(AssignedNumbers.company(companies.keys.first ?? 0), "Ericsson AB")
    }

    func testVendorTable() {
        let nus = VendorServices.parse("6e400001-b5a3-f393-e0a9-e50e24dcca9e")
        XCTAssertEqual(nus?.0, 0x6E40_0001_B5A3_F393)
        XCTAssertEqual(nus?.1, 0xE0A9_E50E_24DC_CA9E)
        func name(_ s: String) -> String? { VendorServices.parse(s).flatMap { VendorServices.name(high: $0.0, low: $0.1) } }
        func kind(_ s: String) -> VendorServices.Kind? { VendorServices.parse(s).flatMap { VendorServices.kind(high: $0.0, low: $0.1) } }
        XCTAssertEqual(name("6E400001-B5A3-F393-E0A9-E50E24DCCA9E"), "Nordic UART Service")
        XCTAssertEqual(kind("6e400001-b5a3-f393-e0a9-e50e24dcca9e"), .service)
        XCTAssertEqual(name("6e400003-b5a3-f393-e0a9-e50e24dcca9e"), "Nordic UART TX")
        XCTAssertEqual(name("8ec90001-f315-4f60-9fb8-838830daea50"), "Nordic DFU Control Point")
        XCTAssertEqual(name("8ec90004-f315-4f60-9fb8-838830daea50"), "Nordic Buttonless DFU (bonded)")
        XCTAssertEqual(name("00001530-1212-efde-1523-785feabcd123"), "Nordic Legacy DFU")
        XCTAssertEqual(name("00001523-1212-efde-1523-785feabcd123"), "Nordic LED Button Service")
        XCTAssertEqual(name("f000ffc0-0451-4000-b000-000000000000"), "TI OAD")
        XCTAssertEqual(name("021a9004-0382-4aea-bff4-6b3f1c5adfb4"), "ESP provisioning service")
        XCTAssertEqual(name("7905f431-b5ce-4e99-a40f-4b1e122d00d0"), "Apple Notification Center Service")
        XCTAssertEqual(name("89d3502b-0f36-433a-8ef4-c502ad55f8dc"), "Apple Media Service")
        XCTAssertEqual(name("fe2c1234-8366-4814-8eb0-01de32100bea"), "Fast Pair Key-based Pairing")
        XCTAssertNil(name("6e400004-b5a3-f393-e0a9-e50e24dcca9e"))
        XCTAssertNil(VendorServices.parse("6e400001-b5a3-f393-e0a9-e50e24dcca9"))
        XCTAssertNil(VendorServices.parse("6e400001-b5a3-f393-e0a9-e50e24dcca9g"))
        // Every entry parses and none repeats a UUID.
        XCTAssertEqual(VendorServices.entries.count, VendorServices.table.count)
        XCTAssertEqual(VendorServices.byValue.count, VendorServices.table.count)

        XCTAssertEqual(VendorServices.service16(0xFE59), "Nordic Secure DFU")
        XCTAssertEqual(VendorServices.service16(0xFE2C), "Google Fast Pair")
        XCTAssertEqual(VendorServices.service16(0xFEAA), "Eddystone")
        XCTAssertNil(VendorServices.service16(0x180D))
        XCTAssertEqual(VendorServices.services16.map(\.0), VendorServices.services16.map(\.0).sorted())
    }
}
