import Analysis
import Capture
import GATT
import HCI
import Profiles
import Protocols
import Redact
import TestSupport
import XCTest

/// Origins are what redaction trusts: every located secret and every ATT value must point at
/// exactly its own bytes in the records, on every capture the project has.
final class OriginTests: XCTestCase {
    func testByteOriginSliceAndAppend() {
        var o = ByteOrigin(record: 3, offset: 10, count: 4)
        o.append(ByteOrigin(record: 3, offset: 14, count: 2))  // adjacent: merged
        o.append(ByteOrigin(record: 5, offset: 0, count: 6))
        XCTAssertEqual(o.pieces.count, 2)
        XCTAssertEqual(o.count, 12)
        XCTAssertEqual(o.slice(4..<8)?.pieces, [.init(record: 3, offset: 14, count: 2), .init(record: 5, offset: 0, count: 2)])
        XCTAssertEqual(o.slice(0..<0)?.count, 0)
        XCTAssertNil(o.slice(10..<13))
        XCTAssertNil(o.slice(-1..<2))
        XCTAssertEqual(o.records, [3, 5])
        // Empty and negative pieces are dropped, whichever way an origin is made.
        for n in [0, -3] {
            XCTAssertEqual(ByteOrigin(record: 1, offset: 2, count: n), ByteOrigin())
            XCTAssertEqual(ByteOrigin([.init(record: 1, offset: 2, count: n), .init(record: 2, offset: 0, count: 3)]).pieces,
                           [.init(record: 2, offset: 0, count: 3)])
        }
        XCTAssertEqual(ByteOrigin([.init(record: 1, offset: 2, count: 5)]).count, 5)
    }

    /// A checksum that follows from a secret is written where its own bytes lie, piece by piece;
    /// bytes the origin does not cover are not written anywhere.
    func testDependentBytesAreSplitOverTheirOriginsPieces() {
        var origin = ByteOrigin(record: 7, offset: 30, count: 1)
        origin.append(ByteOrigin(record: 8, offset: 4, count: 2))
        let checksum = SecretLocation.Dependent(origin: origin, bytes: [0xA1, 0xB2, 0xC3])
        XCTAssertEqual(checksum.patches.map(\.piece), [.init(record: 7, offset: 30, count: 1), .init(record: 8, offset: 4, count: 2)])
        XCTAssertEqual(checksum.patches.map(\.bytes), [[0xA1], [0xB2, 0xC3]])
        let short = SecretLocation.Dependent(origin: origin, bytes: [0xA1, 0xB2])
        XCTAssertEqual(short.patches.map(\.bytes), [[0xA1]], "a piece the bytes do not fill is left as it is")
        let secret = Secret([1, 2, 3], label: "Wi-Fi password").located(ByteOrigin(record: 7, offset: 27, count: 3), dependents: [checksum])
        XCTAssertEqual(secret.location?.dependents, [checksum])
    }

    func testSecretsAndValuesPointAtTheirBytes() throws {
        let keys = ProtocolKeys(["esp-pop": Secret(Array("abcd1234".utf8), label: "PoP"), "esp-client-key": Secret(hexBytes("e85ef1d7abd8e3b078cbfa1e2f08681421ce54995e227725d010d973846dc60f"), label: "key")])
        var secretsChecked = 0, valuesChecked = 0
        for path in try Files.projectCaptures() + Files.realCaptures() {
            let records = try Files.recordData(path)
            let reader = try openCapture(path)
            let decoder = GATTDecoder()
            decoder.tracksOrigins = true
            // As the redactor reads (it rewrites the file's bytes): what keys recovered from a
            // sniffed legacy pairing decrypt is ciphertext in the file, with no bytes of its own.
            decoder.link.recoversPairingKeys = false
            let profiles = ProfileDecoder(protocols: GATTLabProtocols.all, keys: keys)
            let auditor = Auditor(source: path, format: "", protocols: GATTLabProtocols.all)
            let name = URL(fileURLWithPath: path).lastPathComponent
            while let record = try reader.next() {
                decoder.consume(record)
                profiles.consume(decoder, record: record)
                auditor.consume(record, gatt: decoder.events, profile: profiles.events)
                for case .att(let e) in decoder.events {
                    guard let value = e.pdu?.value else { continue }
                    guard let origin = e.valueOrigin else {
                        XCTFail("\(name) record \(record.number): ATT value without an origin")
                        continue
                    }
                    XCTAssertEqual(Files.bytes(at: origin, in: records), value, "\(name) record \(record.number)")
                    valuesChecked += 1
                }
            }
            for s in auditor.finish().secrets {
                guard let location = s.secret.location else {
                    XCTFail("\(name): \(s.kind) at record \(s.records) (\(s.context)) has no location")
                    continue
                }
                guard var bytes = Files.bytes(at: location.origin, in: records) else {
                    XCTFail("\(name): \(s.kind) origin outside its records")
                    continue
                }
                if let mask = location.mask { bytes = zip(bytes, mask).map { $0 ^ $1 } }
                XCTAssertEqual(bytes, s.secret.unsafeBytes, "\(name): \(s.kind) (\(s.context)) at \(location.origin.pieces)")
                secretsChecked += 1
            }
        }
        XCTAssertGreaterThan(secretsChecked, 60, "the captures hold passwords and keys")
        XCTAssertGreaterThan(valuesChecked, 10_000)
        print("origins: \(secretsChecked) secrets and \(valuesChecked) ATT values point at their own bytes")
    }
}

func hexBytes(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var i = s.startIndex
    while i < s.endIndex, let j = s.index(i, offsetBy: 2, limitedBy: s.endIndex), let b = UInt8(s[i..<j], radix: 16) {
        out.append(b)
        i = j
    }
    return out
}
