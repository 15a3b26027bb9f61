import ATT
import Capture
import GATT
import HCI
import Profiles

/// Decodes Improv Wi-Fi by characteristic: Current State, Error State and Capabilities as their
/// one byte, RPC commands written by the phone (joined when the phone cut one into several
/// writes) and RPC results notified by the device. One instance per connection.
public struct ImprovProtocol: DeviceProtocol {
    public static let name = "improv"
    public static let shortName = "improv"
    public static let advertisedServices: Set<BluetoothUUID> = [Improv.service, Improv.serviceDataUUID]

    /// The 0x4677 service data: the state and capabilities the device announces while it
    /// advertises (a phone app shows "needs authorization" from it before connecting).
    public static func advertisedState(serviceData: [UInt8], uuid: BluetoothUUID) -> AdvertisedState? {
        guard uuid == Improv.serviceDataUUID else { return nil }
        let (data, problems) = Improv.ServiceData.decode(serviceData)
        guard let data else { return AdvertisedState(summary: "empty service data", problems: problems) }
        var summary = "state \(data.state)"
        var fields: [(name: String, value: AdvertisedState.Value)] = [("state", .text(data.state.description))]
        if let c = data.capabilities {
            let names = Improv.capabilityList(c)
            summary += ", capabilities " + (names.isEmpty ? "none" : names.joined(separator: ", "))
            fields.append(("capabilities", .list(names)))
        }
        return AdvertisedState(summary: summary, fields: fields, problems: problems)
    }
    /// The names the specification gives them, as every output shows them.
    public static let uuidNames: [BluetoothUUID: String] = [
        Improv.service: "Improv Wi-Fi service",
        Improv.currentState: "Improv Current State",
        Improv.errorState: "Improv Error State",
        Improv.rpcCommand: "Improv RPC Command",
        Improv.rpcResult: "Improv RPC Result",
        Improv.capabilities: "Improv Capabilities",
    ]
    public static let characteristics: Set<BluetoothUUID> = [
        Improv.currentState, Improv.errorState, Improv.rpcCommand, Improv.rpcResult, Improv.capabilities,
    ]
    /// The RPC Command characteristic carries WIFI_SETTINGS, password and all.
    public static let secretCharacteristics: Set<BluetoothUUID> = [Improv.rpcCommand]

    /// The table of ESPHome's esp32_improv component: the five characteristics, state, error
    /// and result notifying.
    public static let builtInTable: String? = """
        {"name": "Improv Wi-Fi", "services": [\(BuiltInProfiles.commonServices),
          {"uuid": "00467768-6228-2272-4663-277478268000", "startHandle": 10, "endHandle": 23, "characteristics": [
            {"uuid": "00467768-6228-2272-4663-277478268001", "handle": 11, "valueHandle": 12, "properties": ["read", "notify"],
             "descriptors": [{"uuid": "0x2902", "handle": 13}]},
            {"uuid": "00467768-6228-2272-4663-277478268002", "handle": 14, "valueHandle": 15, "properties": ["read", "notify"],
             "descriptors": [{"uuid": "0x2902", "handle": 16}]},
            {"uuid": "00467768-6228-2272-4663-277478268003", "handle": 17, "valueHandle": 18, "properties": ["write"]},
            {"uuid": "00467768-6228-2272-4663-277478268004", "handle": 19, "valueHandle": 20, "properties": ["read", "notify"],
             "descriptors": [{"uuid": "0x2902", "handle": 21}]},
            {"uuid": "00467768-6228-2272-4663-277478268005", "handle": 22, "valueHandle": 23, "properties": ["read"]}]}]}
        """

    /// A command cut into several writes, joined until its length is reached.
    private var pending: ProfileValue?
    private var pendingWrites = 0

    public init() {}

    /// A WIFI_SETTINGS frame's password (and SSID). A command cut across writes is seen here
    /// one write at a time, without the writes around it: the first piece of a WIFI_SETTINGS
    /// gives the part of the password it holds, and a write that is no frame and no first piece
    /// (a continuation) is taken as secret whole (`improv-wifi-settings-piece`).
    public static func credentials(in bytes: [UInt8], characteristic: BluetoothUUID, endpoint: String?) -> CredentialLayout? {
        guard characteristic == Improv.rpcCommand, let first = bytes.first else { return nil }
        if let r = Improv.wifiSettingsRanges(in: bytes) {
            return CredentialLayout(format: "improv-wifi-settings", fields: ["ssid", "password"], secret: [r.password],
                                    ssid: Array(bytes[r.ssid]))
        }
        if bytes.count >= 2, (1...6).contains(first), bytes.count < Int(bytes[1]) + 2 {
            // The first piece of a command: for WIFI_SETTINGS, the password bytes it holds.
            guard first == 0x01, bytes.count >= 3 else { return nil }
            let passwordStart = 3 + Int(bytes[2]) + 1
            let ssid = 3 + Int(bytes[2]) <= bytes.count ? Array(bytes[3..<(3 + Int(bytes[2]))]) : nil
            let secret = passwordStart < bytes.count ? [passwordStart..<bytes.count] : []
            return CredentialLayout(format: "improv-wifi-settings-piece", fields: ["password"], secret: secret, ssid: ssid)
        }
        if Improv.Frame.decode(bytes).0 != nil || (1...6).contains(first) { return nil }
        return CredentialLayout(format: "improv-wifi-settings-piece", fields: ["password"], secret: [0..<bytes.count])
    }

    public mutating func decode(_ v: ProfileValue) -> [ProfileEvent] {
        func event(_ kind: String, _ message: (any ProfileMessage)?, _ problems: [ProtocolProblem], _ value: ProfileValue = v) -> [ProfileEvent] {
            [ProfileEvent(value, protocolName: Self.name, kind: kind, message: message, problems: problems)]
        }
        let written: [ProtocolProblem] = v.operation == .write && v.characteristic != Improv.rpcCommand
            ? [.init("improv.write-to-read-only", "a write to a characteristic the device only reads or notifies")] : []
        switch v.characteristic {
        case Improv.currentState:
            let (m, p) = Improv.CurrentState.decode(v.bytes)
            return event("improv.state", m, p + written)
        case Improv.errorState:
            let (m, p) = Improv.ErrorState.decode(v.bytes)
            return event("improv.error", m, p + written)
        case Improv.capabilities:
            let (m, p) = Improv.Capabilities.decode(v.bytes)
            return event("improv.capabilities", m, p + written)
        case Improv.rpcResult:
            let (m, p) = Improv.Result.decode(v.bytes)
            return event("improv.result", m, p + written)
        case Improv.rpcCommand where v.operation == .write:
            return command(v)
        case Improv.rpcCommand:
            return event("improv.command", nil, [.init("improv.command-from-device", "the device sent a value on RPC Command, which the phone writes")])
        default:
            return []
        }
    }

    /// Joins the writes of one command: a write shorter than its length byte says starts a
    /// command that the next writes continue. A command is at most 258 bytes, so at most that
    /// is held. A command that lacks only its checksum byte is held until the next write tells:
    /// one byte is its checksum; anything else starts another command, and the held one had none.
    private mutating func command(_ v: ProfileValue) -> [ProfileEvent] {
        var out: [ProfileEvent] = []
        var value = v
        var writes = 1
        if var held = pending {
            pending = nil
            if held.bytes.count == Self.needed(held.bytes) - 1, v.bytes.count != 1 {
                out += decodeCommand(held, writes: pendingWrites, extra: [])
            } else {
                held.bytes += v.bytes
                held.frame = v.frame
                held.time = v.time
                if let o = v.origin, var joined = held.origin { joined.append(o); held.origin = joined } else { held.origin = nil }
                writes = pendingWrites + 1
                value = held
            }
        }
        let bytes = value.bytes
        if bytes.count >= 2 {
            let needed = Self.needed(bytes)
            if bytes.count < needed {
                pending = value
                pendingWrites = writes
                return out
            }
            if bytes.count > needed {
                var whole = value
                whole.bytes = Array(bytes[..<needed])
                return out + decodeCommand(whole, writes: writes, extra: [
                    .init("improv.frame-trailing", "\(bytes.count - needed) byte(s) after the frame's checksum are ignored"),
                ])
            }
        }
        return out + decodeCommand(value, writes: writes, extra: [])
    }

    /// The checksum byte as it must read once `gattlab redact` has overwritten the password with
    /// '*': the frame's sum changes by what the password's bytes change by, so a right checksum
    /// stays right (and a wrong one stays as wrong). None for a frame without a checksum byte.
    private static func checksumAfterRedaction(_ v: ProfileValue, password: Range<Int>, checksum: Improv.Checksum) -> [SecretLocation.Dependent] {
        let at = needed(v.bytes) - 1
        guard checksum == .valid, at < v.bytes.count, password.upperBound <= at, let origin = v.origin(of: at..<(at + 1)) else { return [] }
        var sum = v.bytes[at]
        for i in password { sum = sum &+ CredentialLayout.filler &- v.bytes[i] }
        return [SecretLocation.Dependent(origin: origin, bytes: [sum])]
    }

    /// A frame's size by its length byte (`bytes` has at least two).
    private static func needed(_ bytes: [UInt8]) -> Int { bytes.count >= 2 ? Int(bytes[1]) + 3 : 3 }

    private func decodeCommand(_ v: ProfileValue, writes: Int, extra: [ProtocolProblem]) -> [ProfileEvent] {
        var (m, p) = Improv.Command.decode(v.bytes)
        if var c = m {
            c.writes = writes
            if let password = c.password, let r = Improv.wifiSettingsRanges(in: v.bytes)?.password {
                c.password = password.located(v.origin(of: r), dependents: Self.checksumAfterRedaction(v, password: r, checksum: c.checksum))
            }
            m = c
        }
        return [ProfileEvent(v, protocolName: Self.name, kind: "improv.command", message: m, problems: p + extra)]
    }

    public mutating func connectionEnded(_ connection: ConnectionKey, frame: Int, time: Int64, reason: String) -> [ProfileEvent] {
        guard var held = pending else { return [] }
        pending = nil
        let declared = Self.needed(held.bytes)
        // Only the checksum byte missing: a frame without one.
        if held.bytes.count == declared - 1 { return decodeCommand(held, writes: pendingWrites, extra: []) }
        held.frame = frame
        held.time = time
        return [ProfileEvent(held, protocolName: Self.name, kind: "improv.command", message: nil, problems: [
            .init("improv.command-unfinished", "\(held.bytes.count) of \(declared) bytes of a command in \(pendingWrites) write(s) when \(reason)"),
        ])]
    }
}
