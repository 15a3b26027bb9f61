/// One Attribute Protocol PDU, as the Core Specification 5.4 lays it out (Vol 3, Part F, 3.4).
///
/// The same type serves the capture decoder, the GATT client and server, the emulator, the replayer
/// and the fuzzer, so each case carries the PDU's fields and nothing derived: anything a case can hold
/// encodes, and a PDU read off the air encodes back to the same bytes (see `decodeWithTrailing`).
///
/// Handles and offsets are `UInt16`, values `[UInt8]` copied out of the input. Fields the
/// specification constrains but the air does not (an Execute Write flag of 7, an Error Response for an
/// opcode that is not a request) are kept as sent: judging them is the caller's business.
public enum ATTPDU: Hashable, Sendable {
    /// 0x01. `requestOpcode` stays a raw byte because peers answer requests this module does not know.
    case errorResponse(requestOpcode: UInt8, handle: UInt16, error: ATTErrorCode)
    /// 0x02.
    case exchangeMTURequest(clientRxMTU: UInt16)
    /// 0x03.
    case exchangeMTUResponse(serverRxMTU: UInt16)
    /// 0x04.
    case findInformationRequest(startHandle: UInt16, endHandle: UInt16)
    /// 0x05. `format` 1: 16-bit UUIDs, 2: 128-bit UUIDs; each entry's UUID should have that width.
    case findInformationResponse(format: UInt8, entries: [ATTHandleUUID])
    /// 0x06. The PDU has room only for a 16-bit attribute type, so `type` is the 16-bit value itself.
    case findByTypeValueRequest(startHandle: UInt16, endHandle: UInt16, type: UInt16, value: [UInt8])
    /// 0x07.
    case findByTypeValueResponse(entries: [ATTHandlesInformation])
    /// 0x08. `type` goes out in 2 bytes if 16-bit, else in 16 (a 32-bit UUID is widened, as ATT requires).
    case readByTypeRequest(startHandle: UInt16, endHandle: UInt16, type: BluetoothUUID)
    /// 0x09. `length` is the size of each entry (handle + value); every entry's value should be `length - 2` bytes.
    case readByTypeResponse(length: UInt8, entries: [ATTHandleValue])
    /// 0x0A.
    case readRequest(handle: UInt16)
    /// 0x0B. At most MTU-1 bytes: a longer value continues with Read Blob.
    case readResponse(value: [UInt8])
    /// 0x0C.
    case readBlobRequest(handle: UInt16, offset: UInt16)
    /// 0x0D.
    case readBlobResponse(value: [UInt8])
    /// 0x0E. The specification asks for two or more handles; one is accepted, as Wireshark does.
    case readMultipleRequest(handles: [UInt16])
    /// 0x0F. The values are concatenated without lengths; only the attribute table can split them.
    case readMultipleResponse(values: [UInt8])
    /// 0x10.
    case readByGroupTypeRequest(startHandle: UInt16, endHandle: UInt16, type: BluetoothUUID)
    /// 0x11. `length` is the size of each entry (two handles + value); every value should be `length - 4` bytes.
    case readByGroupTypeResponse(length: UInt8, entries: [ATTGroupData])
    /// 0x12.
    case writeRequest(handle: UInt16, value: [UInt8])
    /// 0x13.
    case writeResponse
    /// 0x16. One part of a long or reliable write, queued at `offset` until Execute Write.
    case prepareWriteRequest(handle: UInt16, offset: UInt16, value: [UInt8])
    /// 0x17. Echoes the request, so the client can check what the server queued.
    case prepareWriteResponse(handle: UInt16, offset: UInt16, value: [UInt8])
    /// 0x18. `flags` 0x00 cancels the queued writes, 0x01 writes them all.
    case executeWriteRequest(flags: UInt8)
    /// 0x19.
    case executeWriteResponse
    /// 0x20.
    case readMultipleVariableRequest(handles: [UInt16])
    /// 0x21. When the list did not fit the MTU the last value is cut short; it is kept as far as it came.
    case readMultipleVariableResponse(values: [[UInt8]])
    /// 0x23.
    case multipleHandleValueNotification(entries: [ATTHandleValue])
    /// 0x1B.
    case handleValueNotification(handle: UInt16, value: [UInt8])
    /// 0x1D.
    case handleValueIndication(handle: UInt16, value: [UInt8])
    /// 0x1E.
    case handleValueConfirmation
    /// 0x52.
    case writeCommand(handle: UInt16, value: [UInt8])
    /// 0xD2. `signature` is the 12-byte authentication signature (sign counter and MAC).
    case signedWriteCommand(handle: UInt16, value: [UInt8], signature: [UInt8])
    /// Any opcode that Core 5.4 does not define, kept whole so it can be shown, counted and forwarded.
    case unknown(opcode: UInt8, parameters: [UInt8])

    /// The opcode byte this PDU encodes with.
    public var opcode: UInt8 {
        switch self {
        case .errorResponse: ATTOpcode.errorResponse.rawValue
        case .exchangeMTURequest: ATTOpcode.exchangeMTURequest.rawValue
        case .exchangeMTUResponse: ATTOpcode.exchangeMTUResponse.rawValue
        case .findInformationRequest: ATTOpcode.findInformationRequest.rawValue
        case .findInformationResponse: ATTOpcode.findInformationResponse.rawValue
        case .findByTypeValueRequest: ATTOpcode.findByTypeValueRequest.rawValue
        case .findByTypeValueResponse: ATTOpcode.findByTypeValueResponse.rawValue
        case .readByTypeRequest: ATTOpcode.readByTypeRequest.rawValue
        case .readByTypeResponse: ATTOpcode.readByTypeResponse.rawValue
        case .readRequest: ATTOpcode.readRequest.rawValue
        case .readResponse: ATTOpcode.readResponse.rawValue
        case .readBlobRequest: ATTOpcode.readBlobRequest.rawValue
        case .readBlobResponse: ATTOpcode.readBlobResponse.rawValue
        case .readMultipleRequest: ATTOpcode.readMultipleRequest.rawValue
        case .readMultipleResponse: ATTOpcode.readMultipleResponse.rawValue
        case .readByGroupTypeRequest: ATTOpcode.readByGroupTypeRequest.rawValue
        case .readByGroupTypeResponse: ATTOpcode.readByGroupTypeResponse.rawValue
        case .writeRequest: ATTOpcode.writeRequest.rawValue
        case .writeResponse: ATTOpcode.writeResponse.rawValue
        case .prepareWriteRequest: ATTOpcode.prepareWriteRequest.rawValue
        case .prepareWriteResponse: ATTOpcode.prepareWriteResponse.rawValue
        case .executeWriteRequest: ATTOpcode.executeWriteRequest.rawValue
        case .executeWriteResponse: ATTOpcode.executeWriteResponse.rawValue
        case .readMultipleVariableRequest: ATTOpcode.readMultipleVariableRequest.rawValue
        case .readMultipleVariableResponse: ATTOpcode.readMultipleVariableResponse.rawValue
        case .multipleHandleValueNotification: ATTOpcode.multipleHandleValueNotification.rawValue
        case .handleValueNotification: ATTOpcode.handleValueNotification.rawValue
        case .handleValueIndication: ATTOpcode.handleValueIndication.rawValue
        case .handleValueConfirmation: ATTOpcode.handleValueConfirmation.rawValue
        case .writeCommand: ATTOpcode.writeCommand.rawValue
        case .signedWriteCommand: ATTOpcode.signedWriteCommand.rawValue
        case .unknown(let opcode, _): opcode
        }
    }

    /// The one handle the PDU is about, for timelines and per-attribute filtering: the target of reads,
    /// writes, prepares and notifications, the start of a range request, the handle in error of an
    /// Error Response. Nil when there is none or several (lists, Read Multiple).
    public var handle: UInt16? {
        switch self {
        case .errorResponse(_, let handle, _): handle
        case .findInformationRequest(let start, _): start
        case .findByTypeValueRequest(let start, _, _, _): start
        case .readByTypeRequest(let start, _, _): start
        case .readByGroupTypeRequest(let start, _, _): start
        case .readRequest(let handle): handle
        case .readBlobRequest(let handle, _): handle
        case .writeRequest(let handle, _): handle
        case .prepareWriteRequest(let handle, _, _): handle
        case .prepareWriteResponse(let handle, _, _): handle
        case .handleValueNotification(let handle, _): handle
        case .handleValueIndication(let handle, _): handle
        case .writeCommand(let handle, _): handle
        case .signedWriteCommand(let handle, _, _): handle
        case .exchangeMTURequest, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse,
            .readByTypeResponse, .readResponse, .readBlobResponse, .readMultipleRequest, .readMultipleResponse,
            .readByGroupTypeResponse, .writeResponse, .executeWriteRequest, .executeWriteResponse,
            .readMultipleVariableRequest, .readMultipleVariableResponse, .multipleHandleValueNotification,
            .handleValueConfirmation, .unknown:
            nil
        }
    }

    /// The attribute value bytes the PDU carries in one piece, for profile decoders and the credential
    /// audit: read and blob responses, writes, prepares (one part of the value), notifications,
    /// indications, the value searched for by Find By Type Value, and the concatenated values of a
    /// Read Multiple Response. Nil for PDUs without a value and for lists of separate values.
    public var value: [UInt8]? {
        switch self {
        case .findByTypeValueRequest(_, _, _, let value): value
        case .readResponse(let value): value
        case .readBlobResponse(let value): value
        case .readMultipleResponse(let values): values
        case .writeRequest(_, let value): value
        case .prepareWriteRequest(_, _, let value): value
        case .prepareWriteResponse(_, _, let value): value
        case .handleValueNotification(_, let value): value
        case .handleValueIndication(_, let value): value
        case .writeCommand(_, let value): value
        case .signedWriteCommand(_, let value, _): value
        case .errorResponse, .exchangeMTURequest, .exchangeMTUResponse, .findInformationRequest,
            .findInformationResponse, .findByTypeValueResponse, .readByTypeRequest, .readByTypeResponse,
            .readRequest, .readBlobRequest, .readMultipleRequest, .readByGroupTypeRequest,
            .readByGroupTypeResponse, .writeResponse, .executeWriteRequest, .executeWriteResponse,
            .readMultipleVariableRequest, .readMultipleVariableResponse, .multipleHandleValueNotification,
            .handleValueConfirmation, .unknown:
            nil
        }
    }

    /// Where `value` starts in the encoded PDU (opcode included), so a decoder that knows where the
    /// PDU's bytes lie knows where the value's do.
    public var valueOffset: Int? {
        switch self {
        case .readResponse, .readBlobResponse, .readMultipleResponse: 1
        case .findByTypeValueRequest: 7
        case .writeRequest, .writeCommand, .signedWriteCommand, .handleValueNotification, .handleValueIndication: 3
        case .prepareWriteRequest, .prepareWriteResponse: 5
        default: nil
        }
    }
}
