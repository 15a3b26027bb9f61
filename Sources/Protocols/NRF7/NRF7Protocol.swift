import ATT
import HCI
import Profiles

/// Decodes nRF7 provisioning by characteristic: Info reads, Control Point writes (Request) and
/// indications (Response), Data Out notifications (Result). Each message stands alone; the
/// problems say what was wrong with it.
public struct NRF7Protocol: DeviceProtocol {
    public static let name = "nrf7"
    public static let advertisedServices: Set<BluetoothUUID> = [NRF7.service]
    public static let characteristics: Set<BluetoothUUID> = [NRF7.info, NRF7.controlPoint, NRF7.dataOut]

    public init() {}

    public mutating func decode(_ v: ProfileValue) -> [ProfileEvent] {
        func event(_ kind: String, _ message: (any ProfileMessage)?, _ problems: [ProtocolProblem]) -> [ProfileEvent] {
            [ProfileEvent(v, protocolName: Self.name, kind: kind, message: message, problems: problems)]
        }
        switch (v.characteristic, v.operation) {
        case (NRF7.info, _):
            let (m, p) = NRF7.Info.decode(v.bytes)
            return event("nrf7.info", m, p)
        case (NRF7.controlPoint, .write):
            var (m, p) = NRF7.Request.decode(v.bytes)
            // Request.config (11) . WifiConfig.passphrase (2)
            if let passphrase = m?.config?.passphrase, let r = ProtoWire.bytesField([11, 2], in: v.bytes) {
                m?.config?.passphrase = passphrase.located(v.origin(of: r))
            }
            return event("nrf7.request", m, p)
        case (NRF7.controlPoint, _):
            let (m, p) = NRF7.Response.decode(v.bytes)
            return event("nrf7.response", m, p)
        case (NRF7.dataOut, _):
            var (m, p) = NRF7.Result.decode(v.bytes)
            if v.operation == .write { p.append(.init("nrf7.write-to-data-out", "a write to Data Out, which only notifies")) }
            return event("nrf7.result", m, p)
        default:
            return []
        }
    }

    public mutating func connectionEnded(_ connection: ConnectionKey, frame: Int, time: Int64, reason: String) -> [ProfileEvent] { [] }
}
