import XCTest

@testable import ATT

/// Inputs that must throw (with where and why), and inputs that decode with ignored trailing bytes.
final class ATTPDUMalformedTests: XCTestCase {
    private func assertThrows(
        _ bytes: [UInt8], offset: Int, containing text: String? = nil, description: String? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        guard let error = decodeError(bytes) else {
            XCTFail("decoded, expected an error at \(offset)", file: file, line: line)
            return
        }
        XCTAssertEqual(error.offset, offset, "\(error)", file: file, line: line)
        XCTAssertEqual(error.opcode, bytes.first, file: file, line: line)
        if let text {
            XCTAssertTrue(error.reason.contains(text), "\"\(error.reason)\" lacks \"\(text)\"", file: file, line: line)
        }
        if let description {
            XCTAssertEqual(error.description, description, file: file, line: line)
        }
    }

    func testEmptyPDUThrows() {
        assertThrows([], offset: 0, description: "ATT: empty PDU, no opcode")
        XCTAssertNil(decodeError([])?.opcode)
    }

    func testShortFixedFields() {
        assertThrows([0x02, 0x17], offset: 1, description: "Exchange MTU Request: client Rx MTU needs 2 bytes, 1 left")
        assertThrows([0x01, 0x0A, 0x03, 0x00], offset: 4, containing: "error code needs 1 byte, 0 left")
        assertThrows([0x0A], offset: 1, containing: "attribute handle")
        assertThrows([0x0C, 0x03, 0x00, 0x16], offset: 3, containing: "value offset")
        assertThrows([0x18], offset: 1, containing: "flags")
        assertThrows([0x12, 0x01], offset: 1)
        assertThrows([0x1B], offset: 1)
        assertThrows([0x16, 0x01, 0x00, 0x00], offset: 3)
        assertThrows([0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00], offset: 5, containing: "attribute type")
    }

    func testListsThatDoNotSplit() {
        assertThrows(
            [0x09, 0x04, 0x01, 0x00, 0xAA, 0xBB, 0x02, 0x00, 0xCC], offset: 6,
            description: "Read By Type Response: attribute data list of 7 bytes is not a multiple of the entry length 4")
        assertThrows([0x09, 0x01, 0x01], offset: 1, containing: "length 1")
        assertThrows([0x09, 0x00], offset: 1)
        assertThrows([0x09], offset: 1, containing: "length needs 1 byte")
        assertThrows([0x11, 0x03, 0x01, 0x00, 0x02], offset: 1, containing: "length 3")
        assertThrows([0x11, 0x06, 0x01, 0x00, 0x07, 0x00, 0x00, 0x18, 0x08], offset: 8, containing: "of 7 bytes")
        assertThrows([0x05, 0x03, 0x01, 0x00, 0x02, 0x29], offset: 1, containing: "format 0x03")
        assertThrows([0x05, 0x00], offset: 1)
        assertThrows([0x05, 0x01, 0x09, 0x00, 0x02, 0x29, 0x0A], offset: 6, containing: "entry length 4")
        assertThrows([0x05, 0x02, 0x0C, 0x00, 0x01, 0x02], offset: 2, containing: "entry length 18")
        assertThrows([0x07, 0x10, 0x00, 0x1A, 0x00, 0x20], offset: 5, containing: "entry length 4")
    }

    func testReadMultipleHandles() throws {
        assertThrows([0x0E], offset: 1, containing: "empty")
        assertThrows([0x0E, 0x01], offset: 1)
        assertThrows([0x0E, 0x01, 0x00, 0x02], offset: 3, containing: "set of handles of 3 bytes")
        assertThrows([0x20], offset: 1)
        assertThrows([0x20, 0x01, 0x00, 0x02], offset: 3)
        // One handle is fewer than the specification asks, but Wireshark accepts it, and so do we.
        XCTAssertEqual(try ATTPDU.decode([0x0E, 0x01, 0x00]), .readMultipleRequest(handles: [1]))
        XCTAssertEqual(try ATTPDU.decode([0x20, 0x01, 0x00]), .readMultipleVariableRequest(handles: [1]))
    }

    func testAttributeTypeSizes() throws {
        assertThrows([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28, 0x00], offset: 5, containing: "3 bytes")
        assertThrows([0x10, 0x01, 0x00, 0xFF, 0xFF], offset: 5, containing: "0 left")
        assertThrows([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x00, 0x00], offset: 5)
        // 4 bytes is a 32-bit UUID, which ATT does not carry.
        assertThrows([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28, 0x00, 0x00], offset: 5)
        let pdu = try ATTPDU.decode([0x10, 0x01, 0x00, 0xFF, 0xFF] + otaStatusUUIDBytes)
        XCTAssertEqual(pdu, .readByGroupTypeRequest(startHandle: 1, endHandle: 0xFFFF, type: otaStatusUUID))
    }

    func testMultipleHandleValueNotificationTruncatedTupleThrows() throws {
        assertThrows([0x23, 0x03, 0x00, 0x05, 0x00, 0x01], offset: 5, containing: "value of handle 0x0003 needs 5 bytes")
        assertThrows([0x23, 0x03, 0x00, 0x01], offset: 3, containing: "value length")
        assertThrows([0x23, 0x03, 0x00, 0x01, 0x00, 0xAA, 0x04], offset: 6, containing: "attribute handle")
        XCTAssertEqual(try ATTPDU.decode([0x23]), .multipleHandleValueNotification(entries: []))
    }

    func testSignedWriteNeedsRoomForSignature() throws {
        assertThrows([0xD2, 0x01, 0x00] + [UInt8](repeating: 0, count: 11), offset: 3, containing: "authentication signature")
        assertThrows([0xD2, 0x01], offset: 1)
        let pdu = try ATTPDU.decode([0xD2, 0x01, 0x00, 0x55] + signature)
        XCTAssertEqual(pdu, .signedWriteCommand(handle: 1, value: [0x55], signature: signature))
    }

    func testUnknownOpcodesAreNotErrors() throws {
        for raw in UInt8.min...UInt8.max where ATTOpcode(rawValue: raw) == nil {
            let (pdu, trailing) = try ATTPDU.decodeWithTrailing([raw, 0x01])
            XCTAssertEqual(pdu, .unknown(opcode: raw, parameters: [0x01]))
            XCTAssertEqual(trailing, 0)
        }
        XCTAssertEqual(decodeError([0x15, 0x00])?.description, nil)
        XCTAssertEqual(
            ATTDecodeError(opcode: 0x15, offset: 1, reason: "x").description, "Unknown (0x15): x")
    }

    /// Fixed-size PDUs with extra bytes decode, as in Wireshark, and say how many bytes they ignored.
    func testTrailingBytesOfFixedSizePDUs() throws {
        let cases: [([UInt8], ATTPDU)] = [
            ([0x01, 0x0A, 0x03, 0x00, 0x02, 0xEE], .errorResponse(requestOpcode: 0x0A, handle: 3, error: .readNotPermitted)),
            ([0x02, 0x05, 0x02, 0xEE], .exchangeMTURequest(clientRxMTU: 517)),
            ([0x03, 0x17, 0x00, 0xEE, 0xEE], .exchangeMTUResponse(serverRxMTU: 23)),
            ([0x04, 0x01, 0x00, 0xFF, 0xFF, 0xEE], .findInformationRequest(startHandle: 1, endHandle: 0xFFFF)),
            ([0x0A, 0x03, 0x00, 0xEE], .readRequest(handle: 3)),
            ([0x0C, 0x03, 0x00, 0x16, 0x00, 0xEE], .readBlobRequest(handle: 3, offset: 22)),
            ([0x13, 0xEE], .writeResponse),
            ([0x18, 0x01, 0xEE], .executeWriteRequest(flags: 1)),
            ([0x19, 0xEE, 0xEE, 0xEE], .executeWriteResponse),
            ([0x1E, 0xEE], .handleValueConfirmation),
        ]
        for (bytes, expected) in cases {
            let (pdu, trailing) = try ATTPDU.decodeWithTrailing(bytes)
            XCTAssertEqual(pdu, expected)
            XCTAssertEqual(trailing, bytes.count - expected.encodedCount)
            XCTAssertEqual(pdu.encode(), Array(bytes.prefix(bytes.count - trailing)))
            XCTAssertEqual(try ATTPDU.decode(bytes), expected)
        }
    }

    /// The MTU may cut the last value of a Read Multiple Variable Response: keep what came, and count
    /// the cut tuple as trailing because its length field cannot be reproduced.
    func testReadMultipleVariableResponseTruncatedLastValue() throws {
        var (pdu, trailing) = try ATTPDU.decodeWithTrailing([0x21, 0x01, 0x00, 0xAA, 0x05, 0x00, 0x61, 0x62])
        XCTAssertEqual(pdu, .readMultipleVariableResponse(values: [[0xAA], [0x61, 0x62]]))
        XCTAssertEqual(trailing, 4)

        (pdu, trailing) = try ATTPDU.decodeWithTrailing([0x21, 0x01, 0x00, 0xAA, 0x05])
        XCTAssertEqual(pdu, .readMultipleVariableResponse(values: [[0xAA]]))
        XCTAssertEqual(trailing, 1)

        (pdu, trailing) = try ATTPDU.decodeWithTrailing([0x21, 0x03, 0x00])
        XCTAssertEqual(pdu, .readMultipleVariableResponse(values: [[]]))
        XCTAssertEqual(trailing, 2)

        (pdu, trailing) = try ATTPDU.decodeWithTrailing([0x21])
        XCTAssertEqual(pdu, .readMultipleVariableResponse(values: []))
        XCTAssertEqual(trailing, 0)
    }

    func testErrorsAreValuesForPeople() {
        let error = ATTDecodeError(opcode: 0x09, offset: 6, reason: "r")
        XCTAssertEqual(error, ATTDecodeError(opcode: 0x09, offset: 6, reason: "r"))
        XCTAssertEqual(Set([error, error]).count, 1)
        XCTAssertEqual(error.description, "Read By Type Response: r")
    }
}
