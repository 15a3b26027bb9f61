extension ATTPDU {
    /// Decodes one PDU (opcode first, as carried on L2CAP CID 4 or an EATT channel).
    ///
    /// Throws only when a field runs past the end or a list cannot be split (the cases Wireshark calls
    /// malformed, plus the few structural checks listed on `decodeWithTrailing`). Extra bytes after a
    /// fixed-size PDU are ignored, as Wireshark ignores them; use `decodeWithTrailing` to see them.
    /// Unknown opcodes decode to `.unknown`: whether that is an error is the caller's call.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(ATTDecodeError) -> ATTPDU {
        try decodeWithTrailing(bytes).pdu
    }

    /// `decode` for bytes already in an array.
    public static func decode(_ bytes: [UInt8]) throws(ATTDecodeError) -> ATTPDU {
        try decodeWithTrailing(bytes).pdu
    }

    /// `decodeWithTrailing` for bytes already in an array.
    public static func decodeWithTrailing(_ bytes: [UInt8]) throws(ATTDecodeError) -> (pdu: ATTPDU, trailing: Int) {
        // Array.withUnsafeBytes rethrows untyped; a Result keeps the error type without a cast.
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(ATTDecodeError) in try decodeWithTrailing(raw) }
        }
        return try result.get()
    }

    /// Decodes one PDU and says how many bytes at its end the result does not reproduce.
    ///
    /// `trailing` is zero exactly when `encode()` gives the input back. It is non-zero for:
    /// - extra bytes after a complete fixed-size PDU (Exchange MTU, Read Request, Write Response,
    ///   Confirmation, Execute Write, Error Response, ...), which are ignored;
    /// - a Read Multiple Variable Response whose last tuple was cut short by the MTU: its bytes are
    ///   kept as a shorter last value (or dropped, if not even its length field is whole), but its
    ///   length field is not, so `trailing` counts that whole last tuple. A non-zero `trailing` on this
    ///   PDU therefore means "last value truncated".
    /// In every case the input and `encode()` agree on their first `count - trailing` bytes.
    ///
    /// Beyond fields that run past the end, these throw: a Find Information Response format other than
    /// 1 or 2; a Read By Type (Group Type) Response entry length below 2 (4); any list that does not
    /// split into whole entries; a Read By Type or Read By Group Type Request type that is not 2 or 16
    /// bytes; a Read Multiple (Variable) Request with no handle or an odd byte count; a Signed Write
    /// Command without room for its 12-byte signature.
    public static func decodeWithTrailing(
        _ bytes: UnsafeRawBufferPointer
    ) throws(ATTDecodeError) -> (pdu: ATTPDU, trailing: Int) {
        guard let first = bytes.first else {
            throw ATTDecodeError(opcode: nil, offset: 0, reason: "empty PDU, no opcode")
        }
        var cursor = ByteCursor(bytes, opcode: first, position: 1)
        guard let opcode = ATTOpcode(rawValue: first) else {
            return (.unknown(opcode: first, parameters: cursor.restArray()), 0)
        }
        let pdu = try decodeParameters(of: opcode, from: &cursor)
        return (pdu, cursor.remaining + cursor.truncatedTail)
    }

    /// The parameters after the opcode; `cursor` ends after the last byte the PDU uses.
    private static func decodeParameters(
        of opcode: ATTOpcode, from c: inout ByteCursor
    ) throws(ATTDecodeError) -> ATTPDU {
        switch opcode {
        case .errorResponse:
            let request = try c.readU8("request opcode in error")
            let handle = try c.readU16("attribute handle in error")
            let code = try c.readU8("error code")
            return .errorResponse(requestOpcode: request, handle: handle, error: ATTErrorCode(rawValue: code))

        case .exchangeMTURequest:
            return .exchangeMTURequest(clientRxMTU: try c.readU16("client Rx MTU"))

        case .exchangeMTUResponse:
            return .exchangeMTUResponse(serverRxMTU: try c.readU16("server Rx MTU"))

        case .findInformationRequest:
            let start = try c.readU16("starting handle")
            let end = try c.readU16("ending handle")
            return .findInformationRequest(startHandle: start, endHandle: end)

        case .findInformationResponse:
            let format = try c.readU8("format")
            let uuidSize: Int
            switch format {
            case 1: uuidSize = 2
            case 2: uuidSize = 16
            default:
                throw c.error("format \(hexByte(format)) is neither 1 (16-bit UUIDs) nor 2 (128-bit UUIDs)", at: 1)
            }
            try c.requireWholeEntries(of: 2 + uuidSize, list: "information data")
            var entries: [ATTHandleUUID] = []
            entries.reserveCapacity(c.remaining / (2 + uuidSize))
            while !c.isAtEnd {
                let handle = try c.readU16("handle")
                let uuid: BluetoothUUID
                if uuidSize == 2 {
                    uuid = BluetoothUUID(uuid16: try c.readU16("UUID"))
                } else {
                    let (high, low) = try c.readU128("UUID")
                    uuid = BluetoothUUID(high: high, low: low)
                }
                entries.append(ATTHandleUUID(handle: handle, uuid: uuid))
            }
            return .findInformationResponse(format: format, entries: entries)

        case .findByTypeValueRequest:
            let start = try c.readU16("starting handle")
            let end = try c.readU16("ending handle")
            let type = try c.readU16("attribute type")
            return .findByTypeValueRequest(startHandle: start, endHandle: end, type: type, value: c.restArray())

        case .findByTypeValueResponse:
            try c.requireWholeEntries(of: 4, list: "handles information list")
            var entries: [ATTHandlesInformation] = []
            entries.reserveCapacity(c.remaining / 4)
            while !c.isAtEnd {
                let found = try c.readU16("found attribute handle")
                let end = try c.readU16("group end handle")
                entries.append(ATTHandlesInformation(foundHandle: found, groupEndHandle: end))
            }
            return .findByTypeValueResponse(entries: entries)

        case .readByTypeRequest:
            let start = try c.readU16("starting handle")
            let end = try c.readU16("ending handle")
            return .readByTypeRequest(startHandle: start, endHandle: end, type: try c.readAttributeType())

        case .readByTypeResponse:
            let length = try c.readU8("length")
            guard length >= 2 else {
                throw c.error("length \(length) is too short for an entry (the handle alone needs 2)", at: 1)
            }
            try c.requireWholeEntries(of: Int(length), list: "attribute data list")
            var entries: [ATTHandleValue] = []
            entries.reserveCapacity(c.remaining / Int(length))
            while !c.isAtEnd {
                let handle = try c.readU16("attribute handle")
                let value = try c.readArray(Int(length) - 2, "attribute value")
                entries.append(ATTHandleValue(handle: handle, value: value))
            }
            return .readByTypeResponse(length: length, entries: entries)

        case .readRequest:
            return .readRequest(handle: try c.readU16("attribute handle"))

        case .readResponse:
            return .readResponse(value: c.restArray())

        case .readBlobRequest:
            let handle = try c.readU16("attribute handle")
            let offset = try c.readU16("value offset")
            return .readBlobRequest(handle: handle, offset: offset)

        case .readBlobResponse:
            return .readBlobResponse(value: c.restArray())

        case .readMultipleRequest:
            return .readMultipleRequest(handles: try c.readHandleSet())

        case .readMultipleResponse:
            return .readMultipleResponse(values: c.restArray())

        case .readByGroupTypeRequest:
            let start = try c.readU16("starting handle")
            let end = try c.readU16("ending handle")
            return .readByGroupTypeRequest(startHandle: start, endHandle: end, type: try c.readAttributeType())

        case .readByGroupTypeResponse:
            let length = try c.readU8("length")
            guard length >= 4 else {
                throw c.error("length \(length) is too short for an entry (the two handles alone need 4)", at: 1)
            }
            try c.requireWholeEntries(of: Int(length), list: "attribute data list")
            var entries: [ATTGroupData] = []
            entries.reserveCapacity(c.remaining / Int(length))
            while !c.isAtEnd {
                let handle = try c.readU16("attribute handle")
                let end = try c.readU16("end group handle")
                let value = try c.readArray(Int(length) - 4, "attribute value")
                entries.append(ATTGroupData(handle: handle, endGroupHandle: end, value: value))
            }
            return .readByGroupTypeResponse(length: length, entries: entries)

        case .writeRequest:
            let handle = try c.readU16("attribute handle")
            return .writeRequest(handle: handle, value: c.restArray())

        case .writeResponse:
            return .writeResponse

        case .prepareWriteRequest:
            let handle = try c.readU16("attribute handle")
            let offset = try c.readU16("value offset")
            return .prepareWriteRequest(handle: handle, offset: offset, value: c.restArray())

        case .prepareWriteResponse:
            let handle = try c.readU16("attribute handle")
            let offset = try c.readU16("value offset")
            return .prepareWriteResponse(handle: handle, offset: offset, value: c.restArray())

        case .executeWriteRequest:
            return .executeWriteRequest(flags: try c.readU8("flags"))

        case .executeWriteResponse:
            return .executeWriteResponse

        case .readMultipleVariableRequest:
            return .readMultipleVariableRequest(handles: try c.readHandleSet())

        case .readMultipleVariableResponse:
            var values: [[UInt8]] = []
            while !c.isAtEnd {
                let tupleStart = c.position
                guard c.remaining >= 2 else {
                    // Not even the length field came whole: nothing of the value is here to keep.
                    c.markTruncatedTail(from: tupleStart)
                    _ = c.rest()
                    break
                }
                let length = Int(try c.readU16("value length"))
                if c.remaining < length {
                    // The MTU cut the list: keep what came of the last value.
                    c.markTruncatedTail(from: tupleStart)
                    values.append(c.restArray())
                    break
                }
                values.append(try c.readArray(length, "attribute value"))
            }
            return .readMultipleVariableResponse(values: values)

        case .multipleHandleValueNotification:
            var entries: [ATTHandleValue] = []
            while !c.isAtEnd {
                let handle = try c.readU16("attribute handle")
                let length = Int(try c.readU16("value length"))
                let value = try c.readArray(length, "value of handle \(hexHandle(handle))")
                entries.append(ATTHandleValue(handle: handle, value: value))
            }
            return .multipleHandleValueNotification(entries: entries)

        case .handleValueNotification:
            let handle = try c.readU16("attribute handle")
            return .handleValueNotification(handle: handle, value: c.restArray())

        case .handleValueIndication:
            let handle = try c.readU16("attribute handle")
            return .handleValueIndication(handle: handle, value: c.restArray())

        case .handleValueConfirmation:
            return .handleValueConfirmation

        case .writeCommand:
            let handle = try c.readU16("attribute handle")
            return .writeCommand(handle: handle, value: c.restArray())

        case .signedWriteCommand:
            let handle = try c.readU16("attribute handle")
            try c.require(12, for: "authentication signature")
            let value = try c.readArray(c.remaining - 12, "attribute value")
            let signature = try c.readArray(12, "authentication signature")
            return .signedWriteCommand(handle: handle, value: value, signature: signature)
        }
    }
}

extension ByteCursor {
    /// Throws unless what is left splits into whole `size`-byte entries, pointing at the partial one.
    func requireWholeEntries(of size: Int, list: String) throws(ATTDecodeError) {
        let whole = size > 0 ? remaining / size * size : remaining
        guard whole == remaining else {
            throw error(
                "\(list) of \(remaining) bytes is not a multiple of the entry length \(size)", at: position + whole)
        }
    }

    /// The attribute type of Read By Type and Read By Group Type Requests: all that is left, 2 or 16 bytes.
    mutating func readAttributeType() throws(ATTDecodeError) -> BluetoothUUID {
        switch remaining {
        case 2:
            return BluetoothUUID(uuid16: try readU16("attribute type"))
        case 16:
            let (high, low) = try readU128("attribute type")
            return BluetoothUUID(high: high, low: low)
        case 0, 1:
            throw error("attribute type needs 2 or 16 bytes, \(remaining) left")
        default:
            throw error("attribute type of \(remaining) bytes is neither a 16-bit (2) nor a 128-bit (16) UUID")
        }
    }

    /// The set of handles of Read Multiple and Read Multiple Variable Requests: all that is left, at least one.
    mutating func readHandleSet() throws(ATTDecodeError) -> [UInt16] {
        guard remaining >= 2 else {
            if remaining == 0 { throw error("set of handles is empty, at least one handle is needed") }
            throw error("handle needs 2 bytes, \(remaining) left")
        }
        try requireWholeEntries(of: 2, list: "set of handles")
        var handles: [UInt16] = []
        handles.reserveCapacity(remaining / 2)
        while !isAtEnd { handles.append(try readU16("handle")) }
        return handles
    }
}
