/// Every Attribute Protocol opcode of the Bluetooth Core Specification 5.4 (Vol 3, Part F, 3.4.8).
///
/// A raw byte that is not a case here is still a valid thing to see on the air (a newer or vendor
/// opcode); `ATTPDU.unknown` carries it, and `ATTOpcode.name(for:)` prints it.
public enum ATTOpcode: UInt8, Sendable, CaseIterable {
    case errorResponse = 0x01
    case exchangeMTURequest = 0x02
    case exchangeMTUResponse = 0x03
    case findInformationRequest = 0x04
    case findInformationResponse = 0x05
    case findByTypeValueRequest = 0x06
    case findByTypeValueResponse = 0x07
    case readByTypeRequest = 0x08
    case readByTypeResponse = 0x09
    case readRequest = 0x0A
    case readResponse = 0x0B
    case readBlobRequest = 0x0C
    case readBlobResponse = 0x0D
    case readMultipleRequest = 0x0E
    case readMultipleResponse = 0x0F
    case readByGroupTypeRequest = 0x10
    case readByGroupTypeResponse = 0x11
    case writeRequest = 0x12
    case writeResponse = 0x13
    case prepareWriteRequest = 0x16
    case prepareWriteResponse = 0x17
    case executeWriteRequest = 0x18
    case executeWriteResponse = 0x19
    case handleValueNotification = 0x1B
    case handleValueIndication = 0x1D
    case handleValueConfirmation = 0x1E
    case readMultipleVariableRequest = 0x20
    case readMultipleVariableResponse = 0x21
    case multipleHandleValueNotification = 0x23
    case writeCommand = 0x52
    case signedWriteCommand = 0xD2

    /// The six kinds of ATT PDU (Core Vol 3, Part F, 3.3), which decide who sends it and what answers it.
    public enum Kind: Sendable, Hashable {
        case request, response, command, notification, indication, confirmation
    }

    /// The name Wireshark prints, so reports and tshark output read the same.
    public var name: String {
        switch self {
        case .errorResponse: "Error Response"
        case .exchangeMTURequest: "Exchange MTU Request"
        case .exchangeMTUResponse: "Exchange MTU Response"
        case .findInformationRequest: "Find Information Request"
        case .findInformationResponse: "Find Information Response"
        case .findByTypeValueRequest: "Find By Type Value Request"
        case .findByTypeValueResponse: "Find By Type Value Response"
        case .readByTypeRequest: "Read By Type Request"
        case .readByTypeResponse: "Read By Type Response"
        case .readRequest: "Read Request"
        case .readResponse: "Read Response"
        case .readBlobRequest: "Read Blob Request"
        case .readBlobResponse: "Read Blob Response"
        case .readMultipleRequest: "Read Multiple Request"
        case .readMultipleResponse: "Read Multiple Response"
        case .readByGroupTypeRequest: "Read By Group Type Request"
        case .readByGroupTypeResponse: "Read By Group Type Response"
        case .writeRequest: "Write Request"
        case .writeResponse: "Write Response"
        case .prepareWriteRequest: "Prepare Write Request"
        case .prepareWriteResponse: "Prepare Write Response"
        case .executeWriteRequest: "Execute Write Request"
        case .executeWriteResponse: "Execute Write Response"
        case .handleValueNotification: "Handle Value Notification"
        case .handleValueIndication: "Handle Value Indication"
        case .handleValueConfirmation: "Handle Value Confirmation"
        case .readMultipleVariableRequest: "Read Multiple Variable Request"
        case .readMultipleVariableResponse: "Read Multiple Variable Response"
        case .multipleHandleValueNotification: "Multiple Handle Value Notification"
        case .writeCommand: "Write Command"
        case .signedWriteCommand: "Signed Write Command"
        }
    }

    /// A name for any byte, so unknown opcodes still print the way Wireshark shows them: "Unknown (0x15)".
    public static func name(for raw: UInt8) -> String {
        ATTOpcode(rawValue: raw)?.name ?? "Unknown (\(hexByte(raw)))"
    }

    /// The low six bits: the operation, without the command and signature flags.
    public var method: UInt8 { rawValue & 0x3F }

    /// Bit 6: the sender expects no answer.
    public var isCommand: Bool { rawValue & 0x40 != 0 }

    /// Bit 7: the PDU ends in a 12-byte authentication signature.
    public var isSigned: Bool { rawValue & 0x80 != 0 }

    public var kind: Kind {
        switch self {
        case .exchangeMTURequest, .findInformationRequest, .findByTypeValueRequest, .readByTypeRequest,
            .readRequest, .readBlobRequest, .readMultipleRequest, .readByGroupTypeRequest, .writeRequest,
            .prepareWriteRequest, .executeWriteRequest, .readMultipleVariableRequest:
            .request
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse,
            .readByTypeResponse, .readResponse, .readBlobResponse, .readMultipleResponse,
            .readByGroupTypeResponse, .writeResponse, .prepareWriteResponse, .executeWriteResponse,
            .readMultipleVariableResponse:
            .response
        case .writeCommand, .signedWriteCommand: .command
        case .handleValueNotification, .multipleHandleValueNotification: .notification
        case .handleValueIndication: .indication
        case .handleValueConfirmation: .confirmation
        }
    }

    public var isRequest: Bool { kind == .request }
    public var isResponse: Bool { kind == .response }

    /// Client-to-server PDUs (requests, commands, confirmations); the rest come from the server. Lets a
    /// capture without direction flags (pcap DLT 187) still be read the right way round.
    public var isSentByClient: Bool {
        switch kind {
        case .request, .command, .confirmation: true
        case .response, .notification, .indication: false
        }
    }

    /// Whether the sender must wait for an answer before sending another of its kind, under the 30 s
    /// ATT transaction timeout: true for requests (answered by their response or an Error Response)
    /// and for Handle Value Indication (answered by a confirmation).
    public var expectsResponse: Bool {
        switch kind {
        case .request, .indication: true
        case .response, .command, .notification, .confirmation: false
        }
    }

    /// The success answer to this PDU: a request's response, or the confirmation of an indication.
    /// An Error Response can answer any request as well; see `isAnswered(by:)`.
    public var responseOpcode: ATTOpcode? {
        switch self {
        case .exchangeMTURequest: .exchangeMTUResponse
        case .findInformationRequest: .findInformationResponse
        case .findByTypeValueRequest: .findByTypeValueResponse
        case .readByTypeRequest: .readByTypeResponse
        case .readRequest: .readResponse
        case .readBlobRequest: .readBlobResponse
        case .readMultipleRequest: .readMultipleResponse
        case .readByGroupTypeRequest: .readByGroupTypeResponse
        case .writeRequest: .writeResponse
        case .prepareWriteRequest: .prepareWriteResponse
        case .executeWriteRequest: .executeWriteResponse
        case .readMultipleVariableRequest: .readMultipleVariableResponse
        case .handleValueIndication: .handleValueConfirmation
        default: nil
        }
    }

    /// The request a response answers (the indication, for a confirmation). Nil for Error Response,
    /// which names its request in its parameters.
    public var requestOpcode: ATTOpcode? {
        ATTOpcode.allCases.first { $0.responseOpcode == self }
    }

    /// Whether `answer` completes the transaction this PDU opened, error responses included.
    public func isAnswered(by answer: ATTOpcode) -> Bool {
        answer == responseOpcode || (isRequest && answer == .errorResponse)
    }
}
