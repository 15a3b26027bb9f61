import Profiles
import Protocols
import XCTest
@testable import Fuzz

/// Mutators keep to their stated limits and the protobuf view splits and joins losslessly.
final class MutatorTests: XCTestCase {
    func testGenericMutationsStayWithinMaxLength() {
        var r = FuzzRandom(seed: 7)
        var data = Array(repeating: UInt8(0x41), count: 10)
        for _ in 0..<10_000 {
            GenericMutator.mutate(&data, &r, maxLength: 64, other: [1, 2, 3])
            XCTAssertLessThanOrEqual(data.count, 64)
        }
    }

    func testProtobufFieldsRoundTrip() {
        let message: [UInt8] = [0x08, 0x96, 0x01, 0x12, 0x03, 0x61, 0x62, 0x63, 0x1D, 1, 2, 3, 4]
        let fields = ProtoFields.split(message)
        XCTAssertEqual(fields.count, 3)
        XCTAssertEqual(ProtoFields.join(fields), message)
        XCTAssertTrue(ProtoFields.split([0x12, 0x05, 0x61]).isEmpty, "a length past the end does not split")
    }

    func testCredentialMutationsReachTheBoundaryLengths() {
        var r = FuzzRandom(seed: 3)
        var ssidLengths = Set<Int>()
        for _ in 0..<3000 {
            var data = Array("HomeNet\0secret".utf8)
            ProtocolMutators.credentials(&data, &r)
            if let nul = data.firstIndex(of: 0) { ssidLengths.insert(nul) }
        }
        XCTAssertTrue(ssidLengths.isSuperset(of: [0, 1, 31, 32, 33, 255]), "\(ssidLengths.sorted())")
    }

    func testTheSameSeedGivesTheSameMutations() {
        func run(_ seed: UInt64) -> [[UInt8]] {
            var r = FuzzRandom(seed: seed)
            var data: [UInt8] = [0x14, 0x48, 0x6F, 0x6D, 0x65]
            return (0..<100).map { _ in SensorScanProtocol.mutateScan(&data, &r); return data }
        }
        XCTAssertEqual(run(5), run(5))
        XCTAssertNotEqual(run(5), run(6))
    }
}
