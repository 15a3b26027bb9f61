import XCTest

@testable import ATT

/// A deterministic xorshift64 generator: the same seed gives the same inputs on every machine.
struct XorShift64 {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed
    }

    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }

    mutating func below(_ bound: Int) -> Int {
        Int(truncatingIfNeeded: next() % UInt64(bound))
    }

    mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next()) }
    mutating func u16() -> UInt16 { UInt16(truncatingIfNeeded: next()) }

    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in byte() }
    }
}

final class ATTPDUPropertyTests: XCTestCase {
    /// 200 000 random PDUs of 0-40 bytes, mostly with real opcodes and small length fields so that the
    /// list decoders get past their first check. Decoding never traps; errors point inside the input;
    /// whatever decodes re-encodes to the input up to its trailing bytes, exactly when there are none.
    func testRandomBytesNeverTrapAndRoundTrip() {
        var rng = XorShift64(seed: 0xA77_5EED)
        let opcodes = ATTOpcode.allCases.map(\.rawValue)
        var decodedExactly = 0
        var decodedOpcodes = Set<UInt8>()
        var failures = 0

        for _ in 0..<200_000 {
            let count = rng.below(41)
            var input: [UInt8] = []
            input.reserveCapacity(count)
            for index in 0..<count {
                if index == 0 {
                    input.append(rng.below(10) < 9 ? opcodes[rng.below(opcodes.count)] : rng.byte())
                } else {
                    // Small bytes often, so lengths, formats and counts are plausible.
                    input.append(rng.below(2) == 0 ? UInt8(rng.below(8)) : rng.byte())
                }
            }

            let result = Result { () throws(ATTDecodeError) in try ATTPDU.decodeWithTrailing(input) }
            switch result {
            case .failure(let error):
                if !(0...count).contains(error.offset) || error.opcode != input.first || error.reason.isEmpty {
                    failures += 1
                    XCTFail("bad error \(error) for \(input)")
                }
            case .success(let (pdu, trailing)):
                let encoded = pdu.encode()
                let kept = count - trailing
                var ok = (0...count).contains(trailing) && encoded.count == pdu.encodedCount
                    && Array(encoded.prefix(kept)) == Array(input.prefix(kept))
                if trailing == 0 {
                    ok = ok && encoded == input
                    decodedExactly += 1
                }
                // What encode() produces is always well formed and decodes back to the same PDU.
                if let again = try? ATTPDU.decodeWithTrailing(encoded) {
                    ok = ok && again.pdu == pdu && again.trailing == 0
                } else {
                    ok = false
                }
                decodedOpcodes.insert(pdu.opcode)
                if !ok {
                    failures += 1
                    XCTFail("round trip failed for \(input): \(pdu), trailing \(trailing), encoded \(encoded)")
                }
            }
            if failures > 10 { break }
        }

        XCTAssertGreaterThan(decodedExactly, 50_000, "the generator should exercise the happy paths too")
        for opcode in ATTOpcode.allCases {
            XCTAssertTrue(decodedOpcodes.contains(opcode.rawValue), "\(opcode.name) never decoded")
        }
    }

    /// 20 000 random well-formed PDUs of every case: decode(encode(p)) == p, with no trailing bytes.
    func testRandomWellFormedPDUsRoundTrip() throws {
        var rng = XorShift64(seed: 42)
        var failures = 0
        for _ in 0..<20_000 {
            let pdu = Self.randomWellFormedPDU(&rng)
            let bytes = pdu.encode()
            XCTAssertEqual(bytes.count, pdu.encodedCount)
            let (decoded, trailing) = try ATTPDU.decodeWithTrailing(bytes)
            if decoded != pdu || trailing != 0 || decoded.encode() != bytes {
                failures += 1
                XCTFail("\(pdu) -> \(bytes) -> \(decoded), trailing \(trailing)")
                if failures > 10 { break }
            }
        }
    }

    static func randomWellFormedPDU(_ rng: inout XorShift64) -> ATTPDU {
        func value(_ rng: inout XorShift64, max: Int = 24) -> [UInt8] { rng.bytes(rng.below(max + 1)) }
        func uuid(_ rng: inout XorShift64) -> BluetoothUUID {
            switch rng.below(3) {
            case 0: BluetoothUUID(uuid16: rng.u16())
            case 1: BluetoothUUID(uuid32: UInt32(truncatingIfNeeded: rng.next()))
            default: BluetoothUUID(high: rng.next(), low: rng.next())
            }
        }
        let opcodes = ATTOpcode.allCases
        let pick = rng.below(opcodes.count + 1)
        guard pick < opcodes.count else {
            var raw = rng.byte()
            while ATTOpcode(rawValue: raw) != nil { raw = rng.byte() }
            return .unknown(opcode: raw, parameters: value(&rng))
        }
        switch opcodes[pick] {
        case .errorResponse:
            return .errorResponse(requestOpcode: rng.byte(), handle: rng.u16(), error: ATTErrorCode(rawValue: rng.byte()))
        case .exchangeMTURequest: return .exchangeMTURequest(clientRxMTU: rng.u16())
        case .exchangeMTUResponse: return .exchangeMTUResponse(serverRxMTU: rng.u16())
        case .findInformationRequest: return .findInformationRequest(startHandle: rng.u16(), endHandle: rng.u16())
        case .findInformationResponse:
            let wide = rng.below(2) == 0
            let entries = (0..<rng.below(5)).map { _ in
                ATTHandleUUID(
                    handle: rng.u16(),
                    uuid: wide ? BluetoothUUID(high: rng.next(), low: rng.next()) : BluetoothUUID(uuid16: rng.u16()))
            }
            return .findInformationResponse(format: wide ? 2 : 1, entries: entries)
        case .findByTypeValueRequest:
            return .findByTypeValueRequest(startHandle: rng.u16(), endHandle: rng.u16(), type: rng.u16(), value: value(&rng))
        case .findByTypeValueResponse:
            return .findByTypeValueResponse(entries: (0..<rng.below(6)).map { _ in
                ATTHandlesInformation(foundHandle: rng.u16(), groupEndHandle: rng.u16())
            })
        case .readByTypeRequest:
            return .readByTypeRequest(startHandle: rng.u16(), endHandle: rng.u16(), type: uuid(&rng))
        case .readByTypeResponse:
            let length = 2 + rng.below(20)
            return .readByTypeResponse(length: UInt8(length), entries: (0..<rng.below(5)).map { _ in
                ATTHandleValue(handle: rng.u16(), value: rng.bytes(length - 2))
            })
        case .readRequest: return .readRequest(handle: rng.u16())
        case .readResponse: return .readResponse(value: value(&rng))
        case .readBlobRequest: return .readBlobRequest(handle: rng.u16(), offset: rng.u16())
        case .readBlobResponse: return .readBlobResponse(value: value(&rng))
        case .readMultipleRequest: return .readMultipleRequest(handles: (0...rng.below(6)).map { _ in rng.u16() })
        case .readMultipleResponse: return .readMultipleResponse(values: value(&rng))
        case .readByGroupTypeRequest:
            return .readByGroupTypeRequest(startHandle: rng.u16(), endHandle: rng.u16(), type: uuid(&rng))
        case .readByGroupTypeResponse:
            let length = 4 + rng.below(20)
            return .readByGroupTypeResponse(length: UInt8(length), entries: (0..<rng.below(5)).map { _ in
                ATTGroupData(handle: rng.u16(), endGroupHandle: rng.u16(), value: rng.bytes(length - 4))
            })
        case .writeRequest: return .writeRequest(handle: rng.u16(), value: value(&rng))
        case .writeResponse: return .writeResponse
        case .prepareWriteRequest: return .prepareWriteRequest(handle: rng.u16(), offset: rng.u16(), value: value(&rng))
        case .prepareWriteResponse: return .prepareWriteResponse(handle: rng.u16(), offset: rng.u16(), value: value(&rng))
        case .executeWriteRequest: return .executeWriteRequest(flags: rng.byte())
        case .executeWriteResponse: return .executeWriteResponse
        case .readMultipleVariableRequest:
            return .readMultipleVariableRequest(handles: (0...rng.below(6)).map { _ in rng.u16() })
        case .readMultipleVariableResponse:
            return .readMultipleVariableResponse(values: (0..<rng.below(5)).map { _ in value(&rng, max: 8) })
        case .multipleHandleValueNotification:
            return .multipleHandleValueNotification(entries: (0..<rng.below(5)).map { _ in
                ATTHandleValue(handle: rng.u16(), value: value(&rng, max: 8))
            })
        case .handleValueNotification: return .handleValueNotification(handle: rng.u16(), value: value(&rng))
        case .handleValueIndication: return .handleValueIndication(handle: rng.u16(), value: value(&rng))
        case .handleValueConfirmation: return .handleValueConfirmation
        case .writeCommand: return .writeCommand(handle: rng.u16(), value: value(&rng))
        case .signedWriteCommand:
            return .signedWriteCommand(handle: rng.u16(), value: value(&rng), signature: rng.bytes(12))
        }
    }
}
