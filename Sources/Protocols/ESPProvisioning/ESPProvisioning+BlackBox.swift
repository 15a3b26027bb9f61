import ATT
import Fuzz
import Profiles

/// ESP-IDF provisioning's endpoints for the black-box fuzzer, found by their 0x2901 names (their
/// UUIDs are the firmware's choice): protobuf mutations of what is written there.
extension ESPProvisioningProtocol: BlackBoxFuzzable {
    static let endpointRole = BlackBoxRole("ESP-IDF provisioning endpoint", protocolName: "ESP-IDF provisioning") { value, _, r in
        ProtocolMutators.protobuf(&value, &r)
    }

    public static func blackBoxRole(of uuid: BluetoothUUID, userDescription: String?) -> BlackBoxRole? {
        guard let name = userDescription, ESPProvisioning.Endpoint.allCases.contains(where: { $0.rawValue == name }) else { return nil }
        return endpointRole
    }
}
