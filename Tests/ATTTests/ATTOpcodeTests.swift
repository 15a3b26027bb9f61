import XCTest

@testable import ATT

final class ATTOpcodeTests: XCTestCase {
    /// Raw values and names as Core 5.4 numbers them and Wireshark prints them.
    func testRawValuesAndNames() {
        let expected: [(UInt8, String)] = [
            (0x01, "Error Response"), (0x02, "Exchange MTU Request"), (0x03, "Exchange MTU Response"),
            (0x04, "Find Information Request"), (0x05, "Find Information Response"),
            (0x06, "Find By Type Value Request"), (0x07, "Find By Type Value Response"),
            (0x08, "Read By Type Request"), (0x09, "Read By Type Response"), (0x0A, "Read Request"),
            (0x0B, "Read Response"), (0x0C, "Read Blob Request"), (0x0D, "Read Blob Response"),
            (0x0E, "Read Multiple Request"), (0x0F, "Read Multiple Response"),
            (0x10, "Read By Group Type Request"), (0x11, "Read By Group Type Response"),
            (0x12, "Write Request"), (0x13, "Write Response"), (0x16, "Prepare Write Request"),
            (0x17, "Prepare Write Response"), (0x18, "Execute Write Request"), (0x19, "Execute Write Response"),
            (0x1B, "Handle Value Notification"), (0x1D, "Handle Value Indication"),
            (0x1E, "Handle Value Confirmation"), (0x20, "Read Multiple Variable Request"),
            (0x21, "Read Multiple Variable Response"), (0x23, "Multiple Handle Value Notification"),
            (0x52, "Write Command"), (0xD2, "Signed Write Command"),
        ]
        XCTAssertEqual(ATTOpcode.allCases.count, expected.count)
        for (raw, name) in expected {
            XCTAssertEqual(ATTOpcode(rawValue: raw)?.name, name)
            XCTAssertEqual(ATTOpcode.name(for: raw), name)
        }
        XCTAssertEqual(ATTOpcode.name(for: 0x15), "Unknown (0x15)")
        XCTAssertEqual(ATTOpcode.name(for: 0xFA), "Unknown (0xfa)")
        XCTAssertEqual(ATTOpcode.name(for: 0x00), "Unknown (0x00)")
    }

    func testBits() {
        XCTAssertTrue(ATTOpcode.writeCommand.isCommand)
        XCTAssertFalse(ATTOpcode.writeCommand.isSigned)
        XCTAssertTrue(ATTOpcode.signedWriteCommand.isCommand)
        XCTAssertTrue(ATTOpcode.signedWriteCommand.isSigned)
        XCTAssertEqual(ATTOpcode.signedWriteCommand.method, 0x12)
        XCTAssertEqual(ATTOpcode.writeCommand.method, ATTOpcode.writeRequest.rawValue)
        for opcode in ATTOpcode.allCases where opcode != .writeCommand && opcode != .signedWriteCommand {
            XCTAssertFalse(opcode.isCommand)
            XCTAssertFalse(opcode.isSigned)
            XCTAssertEqual(opcode.method, opcode.rawValue)
        }
    }

    func testKindsAndPairs() {
        let requests = ATTOpcode.allCases.filter(\.isRequest)
        XCTAssertEqual(requests.count, 12)
        for request in requests {
            XCTAssertTrue(request.expectsResponse)
            XCTAssertTrue(request.isSentByClient)
            guard let response = request.responseOpcode else {
                XCTFail("\(request.name) has no response")
                continue
            }
            // Every Core 5.4 request's response is the next opcode.
            XCTAssertEqual(response.rawValue, request.rawValue + 1)
            XCTAssertTrue(response.isResponse)
            XCTAssertEqual(response.requestOpcode, request)
            XCTAssertTrue(request.isAnswered(by: response))
            XCTAssertTrue(request.isAnswered(by: .errorResponse))
            XCTAssertFalse(request.isAnswered(by: .handleValueConfirmation))
        }
        XCTAssertEqual(ATTOpcode.allCases.filter(\.isResponse).count, 13)
        XCTAssertNil(ATTOpcode.errorResponse.requestOpcode)
        XCTAssertFalse(ATTOpcode.errorResponse.expectsResponse)

        XCTAssertEqual(ATTOpcode.handleValueIndication.kind, .indication)
        XCTAssertTrue(ATTOpcode.handleValueIndication.expectsResponse)
        XCTAssertEqual(ATTOpcode.handleValueIndication.responseOpcode, .handleValueConfirmation)
        XCTAssertEqual(ATTOpcode.handleValueConfirmation.requestOpcode, .handleValueIndication)
        XCTAssertFalse(ATTOpcode.handleValueIndication.isAnswered(by: .errorResponse))
        XCTAssertTrue(ATTOpcode.handleValueConfirmation.isSentByClient)

        for opcode in [ATTOpcode.handleValueNotification, .multipleHandleValueNotification, .writeCommand,
                       .signedWriteCommand, .handleValueConfirmation] {
            XCTAssertFalse(opcode.expectsResponse, opcode.name)
            XCTAssertNil(opcode.responseOpcode, opcode.name)
            XCTAssertFalse(opcode.isRequest, opcode.name)
            XCTAssertFalse(opcode.isResponse, opcode.name)
        }
        XCTAssertEqual(ATTOpcode.multipleHandleValueNotification.kind, .notification)
        XCTAssertFalse(ATTOpcode.handleValueNotification.isSentByClient)
        XCTAssertTrue(ATTOpcode.writeCommand.isSentByClient)
        XCTAssertFalse(ATTOpcode.readResponse.isSentByClient)
    }
}

final class ATTErrorCodeTests: XCTestCase {
    func testNames() {
        let expected: [(ATTErrorCode, UInt8, String)] = [
            (.invalidHandle, 0x01, "Invalid Handle"), (.readNotPermitted, 0x02, "Read Not Permitted"),
            (.writeNotPermitted, 0x03, "Write Not Permitted"), (.invalidPDU, 0x04, "Invalid PDU"),
            (.insufficientAuthentication, 0x05, "Insufficient Authentication"),
            (.requestNotSupported, 0x06, "Request Not Supported"), (.invalidOffset, 0x07, "Invalid Offset"),
            (.insufficientAuthorization, 0x08, "Insufficient Authorization"),
            (.prepareQueueFull, 0x09, "Prepare Queue Full"), (.attributeNotFound, 0x0A, "Attribute Not Found"),
            (.attributeNotLong, 0x0B, "Attribute Not Long"),
            (.insufficientEncryptionKeySize, 0x0C, "Insufficient Encryption Key Size"),
            (.invalidAttributeValueLength, 0x0D, "Invalid Attribute Value Length"),
            (.unlikelyError, 0x0E, "Unlikely Error"), (.insufficientEncryption, 0x0F, "Insufficient Encryption"),
            (.unsupportedGroupType, 0x10, "Unsupported Group Type"),
            (.insufficientResources, 0x11, "Insufficient Resources"),
            (.databaseOutOfSync, 0x12, "Database Out of Sync"), (.valueNotAllowed, 0x13, "Value Not Allowed"),
            (.writeRequestRejected, 0xFC, "Write Request Rejected"),
            (.cccdImproperlyConfigured, 0xFD, "Improper Client Characteristic Configuration Descriptor"),
            (.procedureAlreadyInProgress, 0xFE, "Procedure Already In Progress"), (.outOfRange, 0xFF, "Out of Range"),
        ]
        for (code, raw, name) in expected {
            XCTAssertEqual(code.rawValue, raw)
            XCTAssertEqual(code.name, name)
            XCTAssertEqual(ATTErrorCode(rawValue: raw), code)
        }
        XCTAssertEqual(ATTErrorCode.encryptionKeySizeTooShort, .insufficientEncryptionKeySize)
        XCTAssertEqual(ATTErrorCode(rawValue: 0x80).name, "Application Error 0x80")
        XCTAssertEqual(ATTErrorCode(rawValue: 0x9F).name, "Application Error 0x9F")
        XCTAssertEqual(ATTErrorCode(rawValue: 0x00).name, "Reserved (0x00)")
        XCTAssertEqual(ATTErrorCode(rawValue: 0x14).name, "Reserved (0x14)")
        XCTAssertEqual(ATTErrorCode(rawValue: 0xA0).name, "Reserved (0xa0)")
        XCTAssertEqual(ATTErrorCode(rawValue: 0xFB).name, "Reserved (0xfb)")
        XCTAssertEqual(ATTErrorCode.insufficientEncryption.description, "Insufficient Encryption (0x0f)")
        XCTAssertEqual(ATTErrorCode(rawValue: 0x85).description, "Application Error 0x85")
        XCTAssertTrue(ATTErrorCode(rawValue: 0x85).isApplicationError)
        XCTAssertFalse(ATTErrorCode.outOfRange.isApplicationError)
        XCTAssertTrue(ATTErrorCode.outOfRange.isCommonProfileError)
    }

    func testMeansPairFirst() {
        let pairFirst = (UInt8.min...UInt8.max).filter { ATTErrorCode(rawValue: $0).meansPairFirst }
        XCTAssertEqual(pairFirst, [0x05, 0x08, 0x0C, 0x0F])
    }
}
