// Each protocol's codec (its Codec/ folder) is a module of its own, so that a libFuzzer build can
// instrument one codec alone (Package.swift); re-exported here, so that whoever imports
// Protocols sees each protocol whole, as it sees the list below.
@_exported import ESPProvisioningCodec
@_exported import ImprovCodec
@_exported import NRF7Codec
@_exported import SensorScanCodec
@_exported import SpeakerOTACodec
import GATT
import Profiles

/// Every device protocol GATTLab knows, one line each, like a dissector table: the only place
/// that names them all. The engines (decoding above GATT, Analysis, Audit, Redact, Report,
/// Emulator, Replay, Fuzz, the command line) are given this set and name no protocol.
/// Adding a protocol is its folder beside this file and one line here (docs/adding-a-protocol.md).
public enum GATTLabProtocols {
    public static let all = registered([
        SpeakerOTAProtocol.self,
        SensorScanProtocol.self,
        NRF7Protocol.self,
        ESPProvisioningProtocol.self,
        ImprovProtocol.self,
    ])

    /// The set, with its UUIDs' names registered for every output (`KnownUUIDs`): the first use
    /// of `all` registers them, once.
    private static func registered(_ types: [any DeviceProtocol.Type]) -> ProtocolSet {
        let set = ProtocolSet(types)
        KnownUUIDs.register(set.uuidNames)
        return set
    }
}
