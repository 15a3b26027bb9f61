import ATT
import GATT
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

    /// Each protocol names its own 128-bit UUIDs, distinctly, and the registration list makes
    /// those names what every output shows.
    func testUUIDNamesAreTheProtocolsOwnAndRegistered() {
        var owner: [BluetoothUUID: String] = [:]
        var names: [String: BluetoothUUID] = [:]
        for type in protocols.types {
            for (uuid, name) in type.uuidNames {
                XCTAssertEqual(uuid.bitWidth, 128, "\(type.name): \(uuid)")
                XCTAssertNil(owner.updateValue(type.name, forKey: uuid), "\(uuid) named by two protocols")
                XCTAssertNil(names.updateValue(uuid, forKey: name), "\(name) names two UUIDs")
                XCTAssertEqual(KnownUUIDs.name(uuid), name)
            }
        }
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(string: "12345678-9ABC-DEF0-1234-000000000008")!), "Sensor Wi-Fi scan")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(string: "14387800-130c-49e7-b877-2881c89cb258")!), "nRF7 Wi-Fi provisioning service")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(string: "14387802-130c-49e7-b877-2881c89cb258")!), "nRF7 Control Point")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(string: "021a9004-0382-4aea-bff4-6b3f1c5adfb4")!), "ESP provisioning service")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(string: "021aff51-0382-4aea-bff4-6b3f1c5adfb4")!), "ESP prov-session")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(string: "021aff53-0382-4aea-bff4-6b3f1c5adfb4")!), "ESP proto-ver")
        XCTAssertEqual(KnownUUIDs.name(BluetoothUUID(string: "00000008-1234-5678-9abc-def012345678")!), "OTA_STATUS")
    }
}
