import ATT
import Profiles
import Protocols
import XCTest

/// The registration list: what every engine relies on when it is given `GATTLabProtocols.all`.
final class RegistryTests: XCTestCase {
    let protocols = GATTLabProtocols.all

    func testNamesAreUniqueAndFindTheirType() {
        let names = protocols.types.map { $0.name }
        XCTAssertEqual(Set(names).count, names.count, "two protocols share a name: \(names)")
        for type in protocols.types {
            XCTAssertTrue(protocols.named(type.name) == type, "\(type.name)")
        }
        XCTAssertNil(protocols.named("no-such-protocol"))
    }

    /// A value is decoded by the protocol that owns its characteristic: two owners would make the
    /// result depend on the order of the list.
    func testNoCharacteristicOrEndpointNameHasTwoOwners() {
        var owner: [BluetoothUUID: String] = [:]
        var endpointOwner: [String: String] = [:]
        for type in protocols.types {
            XCTAssertFalse(type.characteristics.isEmpty && type.endpointNames.isEmpty, "\(type.name) owns nothing to decode")
            for c in type.characteristics {
                XCTAssertNil(owner[c], "\(c) is claimed by \(owner[c] ?? "") and \(type.name)")
                owner[c] = type.name
            }
            for n in type.endpointNames {
                XCTAssertNil(endpointOwner[n], "endpoint \(n) is claimed by \(endpointOwner[n] ?? "") and \(type.name)")
                endpointOwner[n] = type.name
            }
        }
    }

    /// Keys become command-line options `--NAME`: names must be unique, and a malformed value is
    /// refused without being echoed anywhere.
    func testKeyOptionsAreUniqueAndParseAsSecrets() throws {
        let names = protocols.keyOptions.map(\.name)
        XCTAssertEqual(Set(names).count, names.count, "\(names)")
        for option in protocols.keyOptions {
            XCTAssertFalse(option.help.isEmpty, option.name)
            XCTAssertFalse(option.expected.isEmpty, option.name)
        }
        let hex = try XCTUnwrap(protocols.keyOptions.first { $0.valueName == "hex" }, "a hex key (ESP's client key)")
        XCTAssertNil(hex.parse("not hex"))
        let key = try XCTUnwrap(hex.parse("0x" + String(repeating: "ab", count: 32)))
        XCTAssertEqual(key.unsafeBytes, [UInt8](repeating: 0xAB, count: 32))
        XCTAssertFalse("\(key)".contains("ab"), "a key prints as redacted: \(key)")
        let keys = ProtocolKeys.parse([hex.name: "zz", "no-such-key": "x"], protocols: protocols)
        XCTAssertTrue(keys.isEmpty, "a malformed value and an unknown key are left out")
    }

    func testAdvertisedServicesNameTheirProtocol() {
        for type in protocols.types {
            for s in type.advertisedServices {
                XCTAssertTrue(protocols.protocols(advertising: s).contains(type.name), "\(s) -> \(type.name)")
            }
        }
    }
}
