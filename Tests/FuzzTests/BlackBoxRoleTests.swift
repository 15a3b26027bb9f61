import Emulator
import Foundation
import Profiles
import Protocols
import XCTest
@testable import Fuzz

/// The black-box fuzzer's roles come from the protocols (`BlackBoxFuzzable`): on each emulated
/// device they keep the names reports and JSON show, and each protocol's flows are its seeds.
final class BlackBoxRoleTests: XCTestCase {
    func testEmulatedDevicesKeepTheirRoleNamesAndSeeds() async throws {
        let protocols = GATTLabProtocols.all.conforming(to: (any BlackBoxFuzzable.Type).self)
        let expected: [String: (protocols: [String], roles: [String], seeds: Int)] = [
            "speaker": (["speaker OTA"], ["speaker OTA credentials", "speaker OTA URL", "speaker OTA control", "speaker OTA status"], 61),
            "sensor": (["sensor Wi-Fi scan"], ["sensor Wi-Fi scan"], 59),
            "nrf7": (["nRF7 provisioning"], ["nRF7 info", "nRF7 control point", "nRF7 data out"], 25),
            "esp": (["ESP-IDF provisioning"], Array(repeating: "ESP-IDF provisioning endpoint", count: 5), 1),
            "improv": (["Improv Wi-Fi"], ["Improv current state", "Improv error state", "Improv RPC command", "Improv RPC result", "Improv capabilities"], 23),
        ]
        for (name, want) in expected.sorted(by: { $0.key < $1.key }) {
            let spec = try XCTUnwrap(EmulatedDeviceSpec.named(name, protocols: GATTLabProtocols.all))
            let map = try await DeviceMap.discover(EmulatedLink(seed: 1, device: spec.factory), timeout: 2_000_000_000, protocols: protocols)
            XCTAssertEqual(map.protocols, want.protocols, name)
            XCTAssertEqual(map.characteristics.compactMap(\.role?.name), want.roles, name)
            XCTAssertEqual(GATTValues.flows(map, protocols: protocols).count, want.seeds, name)
        }
    }

    /// A password shows through a characteristic only in bytes it did not already show at
    /// discovery: the fuzzer's values come partly from what the device says of itself.
    func testAPasswordWindowInTheCharacteristicsOwnBaselineIsNotADisclosure() {
        let name = Array("GATTLab Speaker 01".utf8)
        let password = Array("Speaker 0".utf8)  // 9 bytes: both 8-byte windows are in the name
        XCTAssertTrue(GATTSession.containsWindow(of: password, width: 8, in: name))
        XCTAssertFalse(GATTSession.containsWindow(of: password, width: 8, in: name, notIn: name))
        XCTAssertTrue(GATTSession.containsWindow(of: password, width: 8, in: name, notIn: nil))
        // The same password in a value the baseline did not hold is shown.
        let leaked = Array("status: Speaker 0 ok".utf8)
        XCTAssertTrue(GATTSession.containsWindow(of: password, width: 8, in: leaked, notIn: Array("status: idle".utf8)))
        // One window new is enough.
        XCTAssertTrue(GATTSession.containsWindow(of: Array("Speaker 0X".utf8), width: 8, in: Array("Speaker 0X".utf8), notIn: name))
    }

    /// The passwords the flows write are found again in what was written.
    func testSecretFindersFindTheCanary() {
        let speaker = SpeakerOTAProtocol.blackBoxRole(of: SpeakerOTA.credentials, userDescription: nil)
        XCTAssertEqual(speaker?.secret?(SpeakerOTA.Credentials(ssid: "HomeNet", password: BlackBoxCanary.password).encode()), Array(BlackBoxCanary.password.utf8))
        let nrf7 = NRF7Protocol.blackBoxRole(of: NRF7.controlPoint, userDescription: nil)
        let config = NRF7.WifiConfig(wifi: NRF7.WifiInfo(ssid: "HomeNet", band: 1, auth: 3), passphrase: BlackBoxCanary.password)
        XCTAssertEqual(nrf7?.secret?(NRF7.Request(opCode: NRF7.opCode(4), config: config).encode()), Array(BlackBoxCanary.password.utf8))
        XCTAssertNil(nrf7?.secret?(NRF7.Request(opCode: NRF7.opCode(1)).encode()))
        let improv = ImprovProtocol.blackBoxRole(of: Improv.rpcCommand, userDescription: nil)
        let settings = Improv.Command.wifiSettings(ssid: Array("HomeNet".utf8), password: Array(BlackBoxCanary.password.utf8)).encode() ?? []
        XCTAssertEqual(improv?.secret?(settings), Array(BlackBoxCanary.password.utf8))
        XCTAssertNil(improv?.secret?(Improv.Command(command: 0x03).encode() ?? []))
        // A role with no secret finder, and values no protocol knows.
        XCTAssertNil(SensorScanProtocol.blackBoxRole(of: SensorScan.characteristic, userDescription: nil)?.secret)
        XCTAssertNil(SpeakerOTAProtocol.blackBoxRole(of: NRF7.info, userDescription: nil))
    }
}
