@testable import ATT

/// A known-answer vector: bytes written out from the Core 5.4 layouts (Vol 3, Part F, 3.4) and the
/// PDU they mean. `fixedFields` are the sizes of the leading fields every PDU of that opcode has
/// (opcode first, and the 12-byte signature of a signed write); cutting into one of them must throw at
/// that field's offset.
struct ATTVector {
    let name: String
    let bytes: [UInt8]
    let pdu: ATTPDU
    let fixedFields: [Int]

    var fixedLength: Int { fixedFields.reduce(0, +) }

    /// The offset a prefix of `count` bytes should fail at: the start of the first fixed field it cuts.
    func expectedFailureOffset(forPrefix count: Int) -> Int? {
        var start = 0
        for size in fixedFields {
            if start + size > count { return start }
            start += size
        }
        return nil
    }
}

/// The OTA status characteristic of the speaker (PROTOCOLS.md section 3): a real 128-bit vendor UUID.
let otaStatusUUID = BluetoothUUID(high: 0x0000_0008_1234_5678, low: 0x9ABC_DEF0_1234_5678)
let otaStatusUUIDBytes: [UInt8] = [
    0x78, 0x56, 0x34, 0x12, 0xF0, 0xDE, 0xBC, 0x9A, 0x78, 0x56, 0x34, 0x12, 0x08, 0x00, 0x00, 0x00,
]
let signature: [UInt8] = [0x01, 0x00, 0x00, 0x00, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8]

let attVectors: [ATTVector] = [
    ATTVector(
        name: "Error Response: Read By Group Type, handle 0x0001, Attribute Not Found",
        bytes: [0x01, 0x10, 0x01, 0x00, 0x0A],
        pdu: .errorResponse(requestOpcode: 0x10, handle: 0x0001, error: .attributeNotFound),
        fixedFields: [1, 1, 2, 1]),
    ATTVector(
        name: "Error Response: Write Request, handle 0x002a, Insufficient Encryption",
        bytes: [0x01, 0x12, 0x2A, 0x00, 0x0F],
        pdu: .errorResponse(requestOpcode: 0x12, handle: 0x002A, error: .insufficientEncryption),
        fixedFields: [1, 1, 2, 1]),
    ATTVector(
        name: "Exchange MTU Request 517",
        bytes: [0x02, 0x05, 0x02],
        pdu: .exchangeMTURequest(clientRxMTU: 517),
        fixedFields: [1, 2]),
    ATTVector(
        name: "Exchange MTU Response 247",
        bytes: [0x03, 0xF7, 0x00],
        pdu: .exchangeMTUResponse(serverRxMTU: 247),
        fixedFields: [1, 2]),
    ATTVector(
        name: "Find Information Request 0x0008..0x000c",
        bytes: [0x04, 0x08, 0x00, 0x0C, 0x00],
        pdu: .findInformationRequest(startHandle: 0x0008, endHandle: 0x000C),
        fixedFields: [1, 2, 2]),
    ATTVector(
        name: "Find Information Response, 16-bit: CCCD and user description",
        bytes: [0x05, 0x01, 0x09, 0x00, 0x02, 0x29, 0x0A, 0x00, 0x01, 0x29],
        pdu: .findInformationResponse(format: 1, entries: [
            ATTHandleUUID(handle: 0x0009, uuid: BluetoothUUID(uuid16: 0x2902)),
            ATTHandleUUID(handle: 0x000A, uuid: BluetoothUUID(uuid16: 0x2901)),
        ]),
        fixedFields: [1, 1]),
    ATTVector(
        name: "Find Information Response, 128-bit",
        bytes: [0x05, 0x02, 0x0C, 0x00] + otaStatusUUIDBytes,
        pdu: .findInformationResponse(format: 2, entries: [ATTHandleUUID(handle: 0x000C, uuid: otaStatusUUID)]),
        fixedFields: [1, 1]),
    ATTVector(
        name: "Find By Type Value Request: primary service 0x180a",
        bytes: [0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x0A, 0x18],
        pdu: .findByTypeValueRequest(startHandle: 0x0001, endHandle: 0xFFFF, type: 0x2800, value: [0x0A, 0x18]),
        fixedFields: [1, 2, 2, 2]),
    ATTVector(
        name: "Find By Type Value Response: 0x0010..0x001a",
        bytes: [0x07, 0x10, 0x00, 0x1A, 0x00],
        pdu: .findByTypeValueResponse(entries: [ATTHandlesInformation(foundHandle: 0x0010, groupEndHandle: 0x001A)]),
        fixedFields: [1]),
    ATTVector(
        name: "Read By Type Request: characteristic declarations 0x0001..0xffff",
        bytes: [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28],
        pdu: .readByTypeRequest(startHandle: 0x0001, endHandle: 0xFFFF, type: BluetoothUUID(uuid16: 0x2803)),
        fixedFields: [1, 2, 2, 2]),
    ATTVector(
        name: "Read By Type Request: 128-bit type",
        bytes: [0x08, 0x0B, 0x00, 0x20, 0x00] + otaStatusUUIDBytes,
        pdu: .readByTypeRequest(startHandle: 0x000B, endHandle: 0x0020, type: otaStatusUUID),
        fixedFields: [1, 2, 2, 2]),
    ATTVector(
        name: "Read By Type Response: two characteristic declarations",
        bytes: [
            0x09, 0x07,
            0x02, 0x00, 0x12, 0x03, 0x00, 0x00, 0x2A,
            0x04, 0x00, 0x02, 0x05, 0x00, 0x01, 0x2A,
        ],
        pdu: .readByTypeResponse(length: 7, entries: [
            ATTHandleValue(handle: 0x0002, value: [0x12, 0x03, 0x00, 0x00, 0x2A]),
            ATTHandleValue(handle: 0x0004, value: [0x02, 0x05, 0x00, 0x01, 0x2A]),
        ]),
        fixedFields: [1, 1]),
    ATTVector(
        name: "Read Request 0x0003",
        bytes: [0x0A, 0x03, 0x00],
        pdu: .readRequest(handle: 0x0003),
        fixedFields: [1, 2]),
    ATTVector(
        name: "Read Response \"GATT\"",
        bytes: [0x0B, 0x47, 0x41, 0x54, 0x54],
        pdu: .readResponse(value: Array("GATT".utf8)),
        fixedFields: [1]),
    ATTVector(
        name: "Read Response, empty value",
        bytes: [0x0B],
        pdu: .readResponse(value: []),
        fixedFields: [1]),
    ATTVector(
        name: "Read Blob Request 0x0003 offset 22",
        bytes: [0x0C, 0x03, 0x00, 0x16, 0x00],
        pdu: .readBlobRequest(handle: 0x0003, offset: 22),
        fixedFields: [1, 2, 2]),
    ATTVector(
        name: "Read Blob Response",
        bytes: [0x0D, 0x01, 0x02],
        pdu: .readBlobResponse(value: [0x01, 0x02]),
        fixedFields: [1]),
    ATTVector(
        name: "Read Multiple Request 0x0003, 0x0005",
        bytes: [0x0E, 0x03, 0x00, 0x05, 0x00],
        pdu: .readMultipleRequest(handles: [0x0003, 0x0005]),
        fixedFields: [1, 2]),
    ATTVector(
        name: "Read Multiple Response",
        bytes: [0x0F, 0x01, 0x02, 0x03],
        pdu: .readMultipleResponse(values: [0x01, 0x02, 0x03]),
        fixedFields: [1]),
    ATTVector(
        name: "Read By Group Type Request: primary services 0x0001..0xffff",
        bytes: [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28],
        pdu: .readByGroupTypeRequest(startHandle: 0x0001, endHandle: 0xFFFF, type: BluetoothUUID(uuid16: 0x2800)),
        fixedFields: [1, 2, 2, 2]),
    ATTVector(
        name: "Read By Group Type Response: GAP and GATT services",
        bytes: [
            0x11, 0x06,
            0x01, 0x00, 0x07, 0x00, 0x00, 0x18,
            0x08, 0x00, 0x0B, 0x00, 0x01, 0x18,
        ],
        pdu: .readByGroupTypeResponse(length: 6, entries: [
            ATTGroupData(handle: 0x0001, endGroupHandle: 0x0007, value: [0x00, 0x18]),
            ATTGroupData(handle: 0x0008, endGroupHandle: 0x000B, value: [0x01, 0x18]),
        ]),
        fixedFields: [1, 1]),
    ATTVector(
        name: "Read By Group Type Response: one 128-bit service",
        bytes: [0x11, 0x14, 0x0C, 0x00, 0xFF, 0xFF] + otaStatusUUIDBytes,
        pdu: .readByGroupTypeResponse(length: 20, entries: [
            ATTGroupData(handle: 0x000C, endGroupHandle: 0xFFFF, value: otaStatusUUIDBytes)
        ]),
        fixedFields: [1, 1]),
    ATTVector(
        name: "Write Request: enable notifications on CCCD 0x0009",
        bytes: [0x12, 0x09, 0x00, 0x01, 0x00],
        pdu: .writeRequest(handle: 0x0009, value: [0x01, 0x00]),
        fixedFields: [1, 2]),
    ATTVector(
        name: "Write Response",
        bytes: [0x13],
        pdu: .writeResponse,
        fixedFields: [1]),
    ATTVector(
        name: "Prepare Write Request 0x000f offset 0",
        bytes: [0x16, 0x0F, 0x00, 0x00, 0x00, 0x41, 0x42],
        pdu: .prepareWriteRequest(handle: 0x000F, offset: 0, value: [0x41, 0x42]),
        fixedFields: [1, 2, 2]),
    ATTVector(
        name: "Prepare Write Response 0x000f offset 18",
        bytes: [0x17, 0x0F, 0x00, 0x12, 0x00, 0x43],
        pdu: .prepareWriteResponse(handle: 0x000F, offset: 18, value: [0x43]),
        fixedFields: [1, 2, 2]),
    ATTVector(
        name: "Execute Write Request: write",
        bytes: [0x18, 0x01],
        pdu: .executeWriteRequest(flags: 0x01),
        fixedFields: [1, 1]),
    ATTVector(
        name: "Execute Write Request: cancel",
        bytes: [0x18, 0x00],
        pdu: .executeWriteRequest(flags: 0x00),
        fixedFields: [1, 1]),
    ATTVector(
        name: "Execute Write Response",
        bytes: [0x19],
        pdu: .executeWriteResponse,
        fixedFields: [1]),
    ATTVector(
        name: "Handle Value Notification: OTA status, downloading 50 %",
        bytes: [0x1B, 0x08, 0x00, 0x05, 0x00, 0x32, 0x00, 0x02, 0x00, 0x04, 0xC4],
        pdu: .handleValueNotification(handle: 0x0008, value: [0x05, 0x00, 0x32, 0x00, 0x02, 0x00, 0x04, 0xC4]),
        fixedFields: [1, 2]),
    ATTVector(
        name: "Handle Value Indication: Service Changed",
        bytes: [0x1D, 0x03, 0x00, 0x01, 0x00, 0xFF, 0xFF],
        pdu: .handleValueIndication(handle: 0x0003, value: [0x01, 0x00, 0xFF, 0xFF]),
        fixedFields: [1, 2]),
    ATTVector(
        name: "Handle Value Confirmation",
        bytes: [0x1E],
        pdu: .handleValueConfirmation,
        fixedFields: [1]),
    ATTVector(
        name: "Read Multiple Variable Request 0x0003, 0x0005",
        bytes: [0x20, 0x03, 0x00, 0x05, 0x00],
        pdu: .readMultipleVariableRequest(handles: [0x0003, 0x0005]),
        fixedFields: [1, 2]),
    ATTVector(
        name: "Read Multiple Variable Response: three values, one empty",
        bytes: [0x21, 0x02, 0x00, 0xAA, 0xBB, 0x00, 0x00, 0x01, 0x00, 0xCC],
        pdu: .readMultipleVariableResponse(values: [[0xAA, 0xBB], [], [0xCC]]),
        fixedFields: [1]),
    ATTVector(
        name: "Multiple Handle Value Notification: two tuples",
        bytes: [0x23, 0x03, 0x00, 0x02, 0x00, 0x01, 0x02, 0x07, 0x00, 0x01, 0x00, 0x05],
        pdu: .multipleHandleValueNotification(entries: [
            ATTHandleValue(handle: 0x0003, value: [0x01, 0x02]),
            ATTHandleValue(handle: 0x0007, value: [0x05]),
        ]),
        fixedFields: [1]),
    ATTVector(
        name: "Write Command: OTA control START",
        bytes: [0x52, 0x07, 0x00, 0x10, 0x00],
        pdu: .writeCommand(handle: 0x0007, value: [0x10, 0x00]),
        fixedFields: [1, 2]),
    ATTVector(
        name: "Signed Write Command",
        bytes: [0xD2, 0x07, 0x00, 0x12, 0x00] + signature,
        pdu: .signedWriteCommand(handle: 0x0007, value: [0x12, 0x00], signature: signature),
        fixedFields: [1, 2, 12]),
    ATTVector(
        name: "Signed Write Command, empty value",
        bytes: [0xD2, 0x07, 0x00] + signature,
        pdu: .signedWriteCommand(handle: 0x0007, value: [], signature: signature),
        fixedFields: [1, 2, 12]),
    ATTVector(
        name: "Unknown opcode 0x15",
        bytes: [0x15, 0x01, 0x02],
        pdu: .unknown(opcode: 0x15, parameters: [0x01, 0x02]),
        fixedFields: [1]),
    ATTVector(
        name: "Unknown opcode 0x92 (signed, not a command), no parameters",
        bytes: [0x92],
        pdu: .unknown(opcode: 0x92, parameters: []),
        fixedFields: [1]),
]
