extension ATTPDU {
    /// The PDU's bytes, opcode first. Total: any value of the type encodes, so the fuzzer and the
    /// emulator can send deliberately inconsistent PDUs (an entry whose value does not match `length`,
    /// a signature that is not 12 bytes) and get exactly what they asked for.
    public func encode() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(encodedCount)
        encode(into: &out)
        return out
    }

    /// Appends the PDU's bytes, so a bearer can put it after its own header without another copy.
    public func encode(into out: inout [UInt8]) {
        out.append(opcode)
        switch self {
        case .errorResponse(let request, let handle, let error):
            out.append(request)
            out.appendLittleEndian(handle)
            out.append(error.rawValue)
        case .exchangeMTURequest(let mtu), .exchangeMTUResponse(let mtu):
            out.appendLittleEndian(mtu)
        case .findInformationRequest(let start, let end):
            out.appendLittleEndian(start)
            out.appendLittleEndian(end)
        case .findInformationResponse(let format, let entries):
            out.append(format)
            for entry in entries {
                out.appendLittleEndian(entry.handle)
                switch format {
                case 1: out.appendLittleEndian(UInt16(truncatingIfNeeded: entry.uuid.high >> 32))
                case 2: out += entry.uuid.littleEndianBytes128
                default: entry.uuid.appendATT(to: &out)
                }
            }
        case .findByTypeValueRequest(let start, let end, let type, let value):
            out.appendLittleEndian(start)
            out.appendLittleEndian(end)
            out.appendLittleEndian(type)
            out += value
        case .findByTypeValueResponse(let entries):
            for entry in entries {
                out.appendLittleEndian(entry.foundHandle)
                out.appendLittleEndian(entry.groupEndHandle)
            }
        case .readByTypeRequest(let start, let end, let type), .readByGroupTypeRequest(let start, let end, let type):
            out.appendLittleEndian(start)
            out.appendLittleEndian(end)
            type.appendATT(to: &out)
        case .readByTypeResponse(let length, let entries):
            out.append(length)
            for entry in entries {
                out.appendLittleEndian(entry.handle)
                out += entry.value
            }
        case .readRequest(let handle):
            out.appendLittleEndian(handle)
        case .readResponse(let value), .readBlobResponse(let value), .readMultipleResponse(let value):
            out += value
        case .readBlobRequest(let handle, let offset):
            out.appendLittleEndian(handle)
            out.appendLittleEndian(offset)
        case .readMultipleRequest(let handles), .readMultipleVariableRequest(let handles):
            for handle in handles { out.appendLittleEndian(handle) }
        case .readByGroupTypeResponse(let length, let entries):
            out.append(length)
            for entry in entries {
                out.appendLittleEndian(entry.handle)
                out.appendLittleEndian(entry.endGroupHandle)
                out += entry.value
            }
        case .writeRequest(let handle, let value), .handleValueNotification(let handle, let value),
            .handleValueIndication(let handle, let value), .writeCommand(let handle, let value):
            out.appendLittleEndian(handle)
            out += value
        case .prepareWriteRequest(let handle, let offset, let value),
            .prepareWriteResponse(let handle, let offset, let value):
            out.appendLittleEndian(handle)
            out.appendLittleEndian(offset)
            out += value
        case .executeWriteRequest(let flags):
            out.append(flags)
        case .readMultipleVariableResponse(let values):
            for value in values {
                out.appendLength16(value.count)
                out += value
            }
        case .multipleHandleValueNotification(let entries):
            for entry in entries {
                out.appendLittleEndian(entry.handle)
                out.appendLength16(entry.value.count)
                out += entry.value
            }
        case .signedWriteCommand(let handle, let value, let signature):
            out.appendLittleEndian(handle)
            out += value
            out += signature
        case .unknown(_, let parameters):
            out += parameters
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation:
            break
        }
    }

    /// The size `encode()` produces, so a sender can check it against the MTU before building it.
    public var encodedCount: Int {
        switch self {
        case .errorResponse: 5
        case .exchangeMTURequest, .exchangeMTUResponse, .readRequest: 3
        case .findInformationRequest, .readBlobRequest: 5
        case .findInformationResponse(let format, let entries):
            2 + entries.reduce(0) { sum, entry in
                switch format {
                case 1: sum + 4
                case 2: sum + 18
                default: sum + 2 + entry.uuid.attByteCount
                }
            }
        case .findByTypeValueRequest(_, _, _, let value): 7 + value.count
        case .findByTypeValueResponse(let entries): 1 + 4 * entries.count
        case .readByTypeRequest(_, _, let type), .readByGroupTypeRequest(_, _, let type): 5 + type.attByteCount
        case .readByTypeResponse(_, let entries): 2 + entries.reduce(0) { $0 + 2 + $1.value.count }
        case .readResponse(let value), .readBlobResponse(let value), .readMultipleResponse(let value):
            1 + value.count
        case .readMultipleRequest(let handles), .readMultipleVariableRequest(let handles): 1 + 2 * handles.count
        case .readByGroupTypeResponse(_, let entries): 2 + entries.reduce(0) { $0 + 4 + $1.value.count }
        case .writeRequest(_, let value), .handleValueNotification(_, let value),
            .handleValueIndication(_, let value), .writeCommand(_, let value):
            3 + value.count
        case .prepareWriteRequest(_, _, let value), .prepareWriteResponse(_, _, let value): 5 + value.count
        case .executeWriteRequest: 2
        case .readMultipleVariableResponse(let values): 1 + values.reduce(0) { $0 + 2 + $1.count }
        case .multipleHandleValueNotification(let entries): 1 + entries.reduce(0) { $0 + 4 + $1.value.count }
        case .signedWriteCommand(_, let value, let signature): 3 + value.count + signature.count
        case .unknown(_, let parameters): 1 + parameters.count
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation: 1
        }
    }
}

extension BluetoothUUID {
    /// ATT has 16-bit and 128-bit UUIDs only: a 32-bit UUID goes out widened to 128 bits.
    var attByteCount: Int { bitWidth == 16 ? 2 : 16 }

    func appendATT(to out: inout [UInt8]) {
        if bitWidth == 16 {
            out.appendLittleEndian(UInt16(truncatingIfNeeded: high >> 32))
        } else {
            out += littleEndianBytes128
        }
    }
}
