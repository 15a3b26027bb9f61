import XCTest

@testable import ATT

/// Decodes `bytes`, returning the error instead of throwing, so assertions can look at it.
func decodeError(_ bytes: [UInt8]) -> ATTDecodeError? {
    do {
        _ = try ATTPDU.decodeWithTrailing(bytes)
        return nil
    } catch {
        return error
    }
}

final class ATTPDUVectorTests: XCTestCase {
    func testEveryOpcodeHasAVector() {
        let covered = Set(attVectors.compactMap { ATTOpcode(rawValue: $0.bytes[0]) })
        for opcode in ATTOpcode.allCases {
            XCTAssertTrue(covered.contains(opcode), "no known-answer vector for \(opcode.name)")
        }
        XCTAssertTrue(attVectors.contains { if case .unknown = $0.pdu { true } else { false } })
    }

    func testDecodeKnownAnswers() throws {
        for vector in attVectors {
            let (pdu, trailing) = try ATTPDU.decodeWithTrailing(vector.bytes)
            XCTAssertEqual(pdu, vector.pdu, vector.name)
            XCTAssertEqual(trailing, 0, vector.name)
            XCTAssertEqual(try ATTPDU.decode(vector.bytes), vector.pdu, vector.name)
        }
    }

    func testEncodeKnownAnswers() {
        for vector in attVectors {
            XCTAssertEqual(vector.pdu.encode(), vector.bytes, vector.name)
            XCTAssertEqual(vector.pdu.encodedCount, vector.bytes.count, vector.name)
            XCTAssertEqual(vector.pdu.opcode, vector.bytes[0], vector.name)
            var out: [UInt8] = [0xEE, 0xFF]
            vector.pdu.encode(into: &out)
            XCTAssertEqual(out, [0xEE, 0xFF] + vector.bytes, "encode(into:) appends: \(vector.name)")
        }
    }

    func testRoundTripsBothWays() throws {
        for vector in attVectors {
            XCTAssertEqual(try ATTPDU.decode(vector.pdu.encode()), vector.pdu, vector.name)
            XCTAssertEqual(try ATTPDU.decode(vector.bytes).encode(), vector.bytes, vector.name)
        }
    }

    /// Decoding works on borrowed bytes that do not start at offset 0 of their storage.
    func testDecodesBorrowedSlices() throws {
        for vector in attVectors {
            let framed: [UInt8] = [0x0B, 0x00, 0x04, 0x00] + vector.bytes + [0x99]
            let pdu = try framed.withUnsafeBytes { raw in
                try ATTPDU.decode(UnsafeRawBufferPointer(rebasing: raw[4..<(4 + vector.bytes.count)]))
            }
            XCTAssertEqual(pdu, vector.pdu, vector.name)
        }
    }

    /// Every prefix of every vector decodes or throws; a prefix that cuts a fixed field throws at that
    /// field's offset; a thrown error always points inside the prefix and names the right opcode.
    func testEveryTruncationDecodesOrThrows() {
        for vector in attVectors {
            for count in 0..<vector.bytes.count {
                let prefix = Array(vector.bytes.prefix(count))
                let error = decodeError(prefix)
                if let expected = vector.expectedFailureOffset(forPrefix: count) {
                    guard let error else {
                        XCTFail("\(vector.name): prefix of \(count) bytes decoded but cuts a fixed field")
                        continue
                    }
                    XCTAssertEqual(error.offset, expected, "\(vector.name), prefix \(count): \(error)")
                }
                if let error {
                    XCTAssertLessThanOrEqual(error.offset, count, "\(vector.name), prefix \(count)")
                    XCTAssertEqual(error.opcode, prefix.first, "\(vector.name), prefix \(count)")
                    XCTAssertFalse(error.reason.isEmpty)
                } else {
                    // What decodes from a prefix still re-encodes to a prefix of it.
                    XCTAssertNoThrow(try {
                        let (pdu, trailing) = try ATTPDU.decodeWithTrailing(prefix)
                        XCTAssertEqual(Array(pdu.encode().prefix(count - trailing)), Array(prefix.prefix(count - trailing)))
                    }())
                }
            }
        }
    }

    func testAccessors() {
        XCTAssertEqual(ATTPDU.errorResponse(requestOpcode: 0x0A, handle: 7, error: .readNotPermitted).handle, 7)
        XCTAssertEqual(ATTPDU.readRequest(handle: 3).handle, 3)
        XCTAssertEqual(ATTPDU.readByGroupTypeRequest(startHandle: 1, endHandle: 9, type: .init(uuid16: 0x2800)).handle, 1)
        XCTAssertEqual(ATTPDU.prepareWriteRequest(handle: 5, offset: 18, value: [1]).handle, 5)
        XCTAssertEqual(ATTPDU.signedWriteCommand(handle: 4, value: [9], signature: signature).handle, 4)
        XCTAssertNil(ATTPDU.readMultipleRequest(handles: [1, 2]).handle)
        XCTAssertNil(ATTPDU.readResponse(value: [1]).handle)
        XCTAssertNil(ATTPDU.exchangeMTURequest(clientRxMTU: 23).handle)

        XCTAssertEqual(ATTPDU.handleValueNotification(handle: 8, value: [1, 2]).value, [1, 2])
        XCTAssertEqual(ATTPDU.writeCommand(handle: 8, value: [3]).value, [3])
        XCTAssertEqual(ATTPDU.signedWriteCommand(handle: 4, value: [9], signature: signature).value, [9])
        XCTAssertEqual(ATTPDU.readBlobResponse(value: []).value, [])
        XCTAssertNil(ATTPDU.readRequest(handle: 3).value)
        XCTAssertNil(ATTPDU.readMultipleVariableResponse(values: [[1]]).value)
        XCTAssertNil(ATTPDU.writeResponse.value)

        XCTAssertEqual(ATTPDU.unknown(opcode: 0x7F, parameters: []).opcode, 0x7F)
        for vector in attVectors {
            let opcode = ATTOpcode(rawValue: vector.pdu.opcode)
            if case .unknown = vector.pdu { XCTAssertNil(opcode) } else { XCTAssertNotNil(opcode, vector.name) }
        }
    }

    /// Inconsistent PDUs still encode (the fuzzer sends them on purpose) and never trap.
    func testEncodeIsTotal() {
        let odd: [ATTPDU] = [
            .readByTypeResponse(length: 3, entries: [ATTHandleValue(handle: 1, value: [1, 2, 3, 4])]),
            .readByGroupTypeResponse(length: 0, entries: [ATTGroupData(handle: 1, endGroupHandle: 2, value: [])]),
            .findInformationResponse(format: 1, entries: [ATTHandleUUID(handle: 1, uuid: otaStatusUUID)]),
            .findInformationResponse(format: 7, entries: [ATTHandleUUID(handle: 1, uuid: otaStatusUUID)]),
            .signedWriteCommand(handle: 1, value: [], signature: []),
            .readMultipleVariableResponse(values: [[UInt8](repeating: 0, count: 70_000)]),
            .readByTypeRequest(startHandle: 1, endHandle: 2, type: BluetoothUUID(uuid32: 0x1234_5678)),
        ]
        for pdu in odd {
            XCTAssertEqual(pdu.encode().count, pdu.encodedCount, "\(pdu)".prefix(80).description)
        }
        // A 32-bit type goes out as 128 bits and comes back equal.
        let widened = ATTPDU.readByTypeRequest(startHandle: 1, endHandle: 2, type: BluetoothUUID(uuid32: 0x1234_5678))
        XCTAssertEqual(widened.encodedCount, 21)
        XCTAssertEqual(try ATTPDU.decode(widened.encode()), widened)
    }
}
