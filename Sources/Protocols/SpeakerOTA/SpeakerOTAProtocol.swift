import ATT
import HCI
import Profiles

/// Decodes the speaker's OTA messages by characteristic. Stateless: each write and status
/// stands alone (the state machine's rules are checked by the timeline's diagnoses).
public struct SpeakerOTAProtocol: DeviceProtocol {
    public static let name = "speaker-ota"
    public static let advertisedServices: Set<BluetoothUUID> = [SpeakerOTA.service]
    public static let characteristics: Set<BluetoothUUID> = [
        SpeakerOTA.credentials, SpeakerOTA.url, SpeakerOTA.control, SpeakerOTA.status,
    ]

    public init() {}

    public mutating func decode(_ v: ProfileValue) -> [ProfileEvent] {
        func event(_ kind: String, _ message: (any ProfileMessage)?, _ problems: [ProtocolProblem]) -> [ProfileEvent] {
            [ProfileEvent(v, protocolName: Self.name, kind: kind, message: message, problems: problems)]
        }
        switch v.characteristic {
        case SpeakerOTA.credentials:
            var (c, p) = SpeakerOTA.Credentials.decode(v.bytes)
            // The password is everything after the first NUL: the value's last bytes.
            if let password = c?.password {
                c?.password = password.located(v.origin(of: (v.bytes.count - password.count)..<v.bytes.count))
            }
            return event("ota.credentials", c, p)
        case SpeakerOTA.url:
            let (u, p) = SpeakerOTA.FirmwareURL.decode(v.bytes)
            return event("ota.url", u, p)
        case SpeakerOTA.control:
            let (c, p) = SpeakerOTA.ControlCommand.decode(v.bytes)
            return event("ota.control", c, p)
        case SpeakerOTA.status:
            let (s, p) = SpeakerOTA.Status.decode(v.bytes)
            return event("ota.status", s, p)
        default:
            return []
        }
    }

    public mutating func connectionEnded(_ connection: ConnectionKey, frame: Int, time: Int64, reason: String) -> [ProfileEvent] { [] }
}
