import XCTest

@testable import ATT

final class BluetoothUUIDTests: XCTestCase {
    let deviceInformation128: [UInt8] = [
        0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00, 0x0A, 0x18, 0x00, 0x00,
    ]

    func testShortUUIDEqualsItsBaseExpansion() throws {
        let short = BluetoothUUID(uuid16: 0x180A)
        let long = try XCTUnwrap(BluetoothUUID(littleEndianBytes: deviceInformation128))
        let text = try XCTUnwrap(BluetoothUUID(string: "0000180A-0000-1000-8000-00805F9B34FB"))
        let thirtyTwo = BluetoothUUID(uuid32: 0x180A)
        XCTAssertEqual(short, long)
        XCTAssertEqual(short, text)
        XCTAssertEqual(short, thirtyTwo)
        XCTAssertEqual(Set([short, long, text, thirtyTwo]).count, 1)
        XCTAssertEqual(short.hashValue, long.hashValue)
        XCTAssertFalse(short < long || long < short)
        XCTAssertNotEqual(short, BluetoothUUID(uuid16: 0x180B))
        XCTAssertNotEqual(short, otaStatusUUID)
    }

    func testWidthIsKeptForEncoding() throws {
        XCTAssertEqual(BluetoothUUID(uuid16: 0x2902).littleEndianBytes, [0x02, 0x29])
        XCTAssertEqual(BluetoothUUID(uuid32: 0x1234_5678).littleEndianBytes, [0x78, 0x56, 0x34, 0x12])
        let long = try XCTUnwrap(BluetoothUUID(littleEndianBytes: deviceInformation128))
        XCTAssertEqual(long.littleEndianBytes, deviceInformation128, "a base UUID sent in 16 bytes stays 16 bytes")
        XCTAssertEqual(long.bitWidth, 128)
        XCTAssertEqual(BluetoothUUID(uuid16: 0x180A).littleEndianBytes128, deviceInformation128)
        XCTAssertEqual(otaStatusUUID.littleEndianBytes, otaStatusUUIDBytes)
        XCTAssertEqual(BluetoothUUID(littleEndianBytes: [0x0A, 0x18])?.bitWidth, 16)
        XCTAssertEqual(BluetoothUUID(littleEndianBytes: [0x0A, 0x18, 0x00, 0x00])?.bitWidth, 32)
        XCTAssertEqual(BluetoothUUID(littleEndianBytes: otaStatusUUIDBytes[...]), otaStatusUUID)
        for count in [0, 1, 3, 5, 15, 17] {
            XCTAssertNil(BluetoothUUID(littleEndianBytes: [UInt8](repeating: 0, count: count)))
        }
    }

    func testShortValues() throws {
        XCTAssertEqual(BluetoothUUID(uuid16: 0x2803).uuid16, 0x2803)
        XCTAssertEqual(try XCTUnwrap(BluetoothUUID(littleEndianBytes: deviceInformation128)).uuid16, 0x180A)
        XCTAssertNil(BluetoothUUID(uuid32: 0x0001_0000).uuid16)
        XCTAssertEqual(BluetoothUUID(uuid32: 0x0001_0000).uuid32, 0x0001_0000)
        XCTAssertNil(otaStatusUUID.uuid16)
        XCTAssertNil(otaStatusUUID.uuid32)
        XCTAssertTrue(BluetoothUUID.bluetoothBase.isOnBluetoothBase)
        XCTAssertEqual(BluetoothUUID.bluetoothBase.uuid16, 0x0000)
    }

    func testParsing() throws {
        for text in ["180A", "180a", "0x180a", "0X180A", "0000180a", "0x0000180A",
                     "0000180a-0000-1000-8000-00805f9b34fb", "0000180A00001000800000805F9B34FB"] {
            XCTAssertEqual(BluetoothUUID(string: text), BluetoothUUID(uuid16: 0x180A), text)
        }
        XCTAssertEqual(BluetoothUUID(string: "180a")?.bitWidth, 16)
        XCTAssertEqual(BluetoothUUID(string: "0000180a")?.bitWidth, 32)
        XCTAssertEqual(BluetoothUUID(string: "00000008-1234-5678-9abc-def012345678"), otaStatusUUID)
        XCTAssertEqual(BluetoothUUID(string: "00000008-1234-5678-9ABC-DEF012345678"), otaStatusUUID)
        XCTAssertEqual(
            BluetoothUUID(string: "14387800-130c-49e7-b877-2881c89cb258"),
            BluetoothUUID(high: 0x1438_7800_130C_49E7, low: 0xB877_2881_C89C_B258))
        for bad in ["", "0x", "18A", "180G", "0x180a0", "12345", "0x00000008-1234-5678-9abc-def012345678",
                    "00000008-1234-5678-9abc-def01234567", "00000008-1234-5678-9abc-def0123456789",
                    "000000081-234-5678-9abc-def012345678", "00000008_1234_5678_9abc_def012345678",
                    "g0000008-1234-5678-9abc-def012345678", " 180a", "180a ", "+180", "-180", "１８０a"] {
            XCTAssertNil(BluetoothUUID(string: bad), bad)
        }
    }

    func testPrinting() throws {
        XCTAssertEqual(BluetoothUUID(uuid16: 0x180A).description, "0x180a")
        XCTAssertEqual(BluetoothUUID(uuid16: 0x0001).description, "0x0001")
        XCTAssertEqual(BluetoothUUID(uuid32: 0x1234_ABCD).description, "0x1234abcd")
        XCTAssertEqual(otaStatusUUID.description, "00000008-1234-5678-9abc-def012345678")
        XCTAssertEqual(
            try XCTUnwrap(BluetoothUUID(littleEndianBytes: deviceInformation128)).description,
            "0000180a-0000-1000-8000-00805f9b34fb")
        XCTAssertEqual(BluetoothUUID(uuid16: 0x180A).canonicalString, "0000180a-0000-1000-8000-00805f9b34fb")
        // Printing and parsing agree for every width.
        for uuid in [BluetoothUUID(uuid16: 0xFEAA), BluetoothUUID(uuid32: 0xDEAD_BEEF), otaStatusUUID] {
            let parsed = try XCTUnwrap(BluetoothUUID(string: uuid.description))
            XCTAssertEqual(parsed, uuid)
            XCTAssertEqual(parsed.bitWidth, uuid.bitWidth)
            XCTAssertEqual(parsed.littleEndianBytes, uuid.littleEndianBytes)
        }
    }

    func testOrdering() {
        let sorted = [otaStatusUUID, BluetoothUUID(uuid16: 0x2A00), BluetoothUUID(uuid16: 0x1800)].sorted()
        XCTAssertEqual(sorted, [otaStatusUUID, BluetoothUUID(uuid16: 0x1800), BluetoothUUID(uuid16: 0x2A00)])
        XCTAssertLessThan(BluetoothUUID(uuid16: 0x1800), BluetoothUUID(uuid16: 0x1801))
    }
}
