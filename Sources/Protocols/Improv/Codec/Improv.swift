import ATT
import Capture
import Profiles

/// Improv Wi-Fi over BLE (https://www.improv-wifi.com/ble/), the open provisioning standard of
/// ESPHome, WLED and Home Assistant. One service with five characteristics: Current State,
/// Error State and Capabilities each carry one bare byte; the phone writes framed RPC commands
/// to RPC Command and the device notifies framed results on RPC Result. A frame is
/// `command, data length, data, checksum` where the checksum is the low byte of the sum of every
/// byte before it, and the data of every command and result is a list of length-prefixed
/// strings. Nothing is encrypted: the Wi-Fi password crosses the link in plaintext by design,
/// the "authorization" being a button pressed on the device.
///
/// Variants real firmware and clients send, accepted and named in the output:
/// - a frame without its checksum byte (improv-wifi/sdk-cpp parses with `check_checksum=false`);
/// - an RPC command cut into several writes (clients write it in MTU-sized pieces);
/// - state 0x00 (`STOPPED`, sdk-cpp) and error 0x05 (`BAD_HOSTNAME`, spec v2.3);
/// - service data shorter or longer than the six bytes of the spec.
public enum Improv {
    /// `00467768-6228-2272-4663-2774782680xx`.
    static func uuid(_ last: UInt64) -> BluetoothUUID {
        BluetoothUUID(high: 0x0046_7768_6228_2272, low: 0x4663_2774_7826_8000 | last)
    }

    public static let service = uuid(0x00)
    public static let currentState = uuid(0x01)
    public static let errorState = uuid(0x02)
    public static let rpcCommand = uuid(0x03)
    public static let rpcResult = uuid(0x04)
    public static let capabilities = uuid(0x05)
    /// The 16-bit UUID of the advertisement's service data (state, capabilities).
    public static let serviceDataUUID = BluetoothUUID(uuid16: 0x4677)

    /// A frame is at most command, length, 255 data bytes and the checksum.
    public static let maxFrameLength = 2 + 255 + 1

    static let stateNames: [Int: String] = [
        0x00: "STOPPED", 0x01: "AUTHORIZATION_REQUIRED", 0x02: "AUTHORIZED", 0x03: "PROVISIONING", 0x04: "PROVISIONED",
    ]
    static let errorNames: [Int: String] = [
        0x00: "NO_ERROR", 0x01: "INVALID_RPC_PACKET", 0x02: "UNKNOWN_RPC_COMMAND", 0x03: "UNABLE_TO_CONNECT",
        0x04: "NOT_AUTHORIZED", 0x05: "BAD_HOSTNAME", 0xFF: "UNKNOWN_ERROR",
    ]
    static let commandNames: [Int: String] = [
        0x01: "WIFI_SETTINGS", 0x02: "IDENTIFY", 0x03: "GET_DEVICE_INFO", 0x04: "GET_WIFI_NETWORKS",
        0x05: "HOSTNAME", 0x06: "DEVICE_NAME",
    ]
    /// Capability bits, lowest first.
    static let capabilityNames = ["IDENTIFY", "DEVICE_INFO", "SCAN_WIFI", "HOSTNAME", "DEVICE_NAME"]

    public static func state(_ raw: Int) -> ProtoEnumValue { ProtoEnumValue(raw: raw, name: stateNames[raw]) }
    public static func error(_ raw: Int) -> ProtoEnumValue { ProtoEnumValue(raw: raw, name: errorNames[raw]) }
    public static func command(_ raw: Int) -> ProtoEnumValue { ProtoEnumValue(raw: raw, name: commandNames[raw]) }

    /// Auth type names of GET_WIFI_NETWORKS results (the spec's strings), by the WPA auth mode
    /// numbers nRF7 and ESP-IDF share (0 OPEN ... 6 WPA3_PSK).
    static let authNames: [(raw: Int, name: String)] = [
        (0, "NO"), (1, "WEP"), (2, "WPA"), (3, "WPA2"), (4, "WPA/WPA2"), (5, "WPA2 EAP"), (6, "WPA3"),
    ]

    public static func authName(_ raw: Int) -> String { authNames.first { $0.raw == raw }?.name ?? "WPA2" }
    public static func authRaw(_ name: [UInt8]) -> Int? {
        let text = String(decoding: name, as: UTF8.self)
        return authNames.first { $0.name == text }?.raw
    }

    /// The names of the capability bits set (`IDENTIFY`, `bit6` for a bit the spec does not name).
    public static func capabilityList(_ raw: UInt8) -> [String] {
        (0..<8).compactMap { bit in
            guard raw & (1 << bit) != 0 else { return nil }
            return bit < capabilityNames.count ? capabilityNames[bit] : "bit\(bit)"
        }
    }

    /// The low byte of the sum of `bytes`.
    public static func checksum(_ bytes: some Collection<UInt8>) -> UInt8 {
        bytes.reduce(UInt8(0)) { $0 &+ $1 }
    }

    // MARK: Frames

    /// How a frame ended.
    public enum Checksum: String, Sendable, Hashable {
        /// The checksum byte was there and right.
        case valid
        /// No checksum byte: the frame ends with its data (sdk-cpp's `check_checksum=false`).
        case absent
    }

    /// One RPC frame: command or result. `data` is the payload between the length and the checksum.
    public struct Frame: Sendable, Hashable {
        public var command: UInt8
        public var data: [UInt8]
        public var checksum: Checksum

        public init(command: UInt8, data: [UInt8], checksum: Checksum = .valid) {
            self.command = command
            self.data = data
            self.checksum = checksum
        }

        /// The frame's bytes; nil when the data does not fit in one length byte.
        public func encode() -> [UInt8]? {
            guard data.count <= 255 else { return nil }
            var out: [UInt8] = [command, UInt8(data.count)]
            out.reserveCapacity(3 + data.count)
            out += data
            if checksum == .valid { out.append(Improv.checksum(out)) }
            return out
        }

        /// Decodes one whole frame. A frame whose checksum is wrong, that is longer than its
        /// length byte says, or cut short of it, is refused with the problem; one exactly a
        /// checksum byte short is read (`absent`) with `improv.checksum-missing`, since over BLE
        /// that is either firmware leaving the checksum out or a value cut one byte short.
        public static func decode(_ bytes: [UInt8]) -> (Frame?, [ProtocolProblem]) {
            guard bytes.count >= 2 else {
                return (nil, [.init("improv.frame-short", "\(bytes.count) byte\(bytes.count == 1 ? "" : "s"): a frame needs at least command and length")])
            }
            let declared = Int(bytes[1])
            switch bytes.count {
            case declared + 3:
                let expected = Improv.checksum(bytes[0..<(declared + 2)])
                guard let got = bytes.last, got == expected else {
                    return (nil, [.init("improv.bad-checksum", "checksum 0x\(Hex.string([bytes.last ?? 0])), the bytes sum to 0x\(Hex.string([expected]))")])
                }
                return (Frame(command: bytes[0], data: Array(bytes[2..<(declared + 2)])), [])
            case declared + 2:
                return (Frame(command: bytes[0], data: Array(bytes[2...]), checksum: .absent),
                        [.init("improv.checksum-missing", "no checksum byte after the \(declared) data bytes (firmware that leaves it out, or a value cut one byte short)")])
            case ..<(declared + 2):
                return (nil, [.init("improv.frame-cut", "\(bytes.count) bytes of a \(declared + 3)-byte frame (length byte \(declared)): the value was cut")])
            default:
                return (nil, [.init("improv.bad-length", "length byte \(declared) in a \(bytes.count)-byte frame (expected \(declared + 3))")])
            }
        }
    }

    /// The length-prefixed strings of a frame's data; nil with a problem when a length runs past the end.
    public static func strings(_ data: [UInt8]) -> ([[UInt8]]?, ProtocolProblem?) {
        var out: [[UInt8]] = []
        var i = 0
        while i < data.count {
            let n = Int(data[i])
            guard i + 1 + n <= data.count else {
                return (nil, .init("improv.bad-string", "a string of \(n) bytes at data offset \(i) runs past the \(data.count)-byte data"))
            }
            out.append(Array(data[(i + 1)..<(i + 1 + n)]))
            i += 1 + n
        }
        return (out, nil)
    }

    /// Strings as frame data; nil when one is longer than 255 bytes or the whole over 255.
    public static func data(_ strings: [[UInt8]]) -> [UInt8]? {
        var out: [UInt8] = []
        for s in strings {
            guard s.count <= 255 else { return nil }
            out.append(UInt8(s.count))
            out += s
        }
        return out.count <= 255 ? out : nil
    }

    /// Where the SSID and password lie in a WIFI_SETTINGS frame (offsets in the frame), when its
    /// lengths hold; nil for any other frame.
    public static func wifiSettingsRanges(in bytes: [UInt8]) -> (ssid: Range<Int>, password: Range<Int>)? {
        guard bytes.count >= 4, bytes[0] == 0x01 else { return nil }
        let end = min(bytes.count, 2 + Int(bytes[1]))
        let ssidStart = 3
        let ssidEnd = ssidStart + Int(bytes[2])
        guard ssidEnd < end else { return nil }
        let passwordStart = ssidEnd + 1
        let passwordEnd = passwordStart + Int(bytes[ssidEnd])
        guard passwordEnd <= end else { return nil }
        return (ssidStart..<ssidEnd, passwordStart..<passwordEnd)
    }
}

// MARK: Messages

extension Improv {
    /// A Current State value (read or notified).
    public struct CurrentState: ProfileMessage, Hashable {
        public var state: ProtoEnumValue
        public init(_ raw: Int) { state = Improv.state(raw) }

        public static func decode(_ bytes: [UInt8]) -> (CurrentState?, [ProtocolProblem]) {
            guard let b = bytes.first else { return (nil, [.init("improv.state-empty", "an empty Current State value")]) }
            var p: [ProtocolProblem] = []
            if bytes.count > 1 { p.append(.init("improv.state-long", "\(bytes.count) bytes where one is expected; the first is read")) }
            if stateNames[Int(b)] == nil { p.append(.init("improv.state-unknown", "state 0x\(Hex.string([b])) is not in the spec")) }
            return (CurrentState(Int(b)), p)
        }

        public func encode() -> [UInt8] { [UInt8(truncatingIfNeeded: state.raw)] }
    }

    /// An Error State value.
    public struct ErrorState: ProfileMessage, Hashable {
        public var error: ProtoEnumValue
        public init(_ raw: Int) { error = Improv.error(raw) }

        public static func decode(_ bytes: [UInt8]) -> (ErrorState?, [ProtocolProblem]) {
            guard let b = bytes.first else { return (nil, [.init("improv.error-empty", "an empty Error State value")]) }
            var p: [ProtocolProblem] = []
            if bytes.count > 1 { p.append(.init("improv.error-long", "\(bytes.count) bytes where one is expected; the first is read")) }
            if errorNames[Int(b)] == nil { p.append(.init("improv.error-unknown", "error 0x\(Hex.string([b])) is not in the spec")) }
            return (ErrorState(Int(b)), p)
        }

        public func encode() -> [UInt8] { [UInt8(truncatingIfNeeded: error.raw)] }
    }

    /// The Capabilities value: a bit field.
    public struct Capabilities: ProfileMessage, Hashable {
        public var raw: UInt8
        public init(_ raw: UInt8) { self.raw = raw }
        public var names: [String] { Improv.capabilityList(raw) }

        public static func decode(_ bytes: [UInt8]) -> (Capabilities?, [ProtocolProblem]) {
            guard let b = bytes.first else { return (nil, [.init("improv.capabilities-empty", "an empty Capabilities value")]) }
            let p: [ProtocolProblem] = bytes.count > 1 ? [.init("improv.capabilities-long", "\(bytes.count) bytes where one is expected; the first is read")] : []
            return (Capabilities(b), p)
        }
    }

    /// An RPC command written by the phone. WIFI_SETTINGS carries the SSID and the password
    /// (a `Secret`); HOSTNAME and DEVICE_NAME may carry a name to set.
    public struct Command: ProfileMessage, Hashable {
        public var command: ProtoEnumValue
        public var ssid: [UInt8]?
        public var password: Secret?
        /// Every string of the data (for WIFI_SETTINGS the SSID only; the password is `password`).
        public var strings: [[UInt8]]
        public var checksum: Checksum
        /// How many writes the frame was joined from (1: it came whole).
        public var writes: Int

        public init(command: Int, strings: [[UInt8]] = [], ssid: [UInt8]? = nil, password: Secret? = nil,
                    checksum: Checksum = .valid, writes: Int = 1) {
            self.command = Improv.command(command)
            self.strings = strings
            self.ssid = ssid
            self.password = password
            self.checksum = checksum
            self.writes = writes
        }

        /// A WIFI_SETTINGS command.
        public static func wifiSettings(ssid: [UInt8], password: [UInt8]) -> Command {
            Command(command: 0x01, strings: [ssid], ssid: ssid, password: Secret(password, label: "Wi-Fi password"))
        }

        public static func decode(_ bytes: [UInt8]) -> (Command?, [ProtocolProblem]) {
            var (frame, problems) = Frame.decode(bytes)
            if frame == nil, problems.map(\.id) == ["improv.bad-checksum"], let r = Improv.wifiSettingsRanges(in: bytes),
               !r.password.isEmpty, bytes[r.password].allSatisfy({ $0 == CredentialLayout.filler }) {
                // A capture that went through `gattlab redact`: the password is '*' and the
                // checksum, over the original bytes, no longer matches. Read it, saying so.
                frame = Frame(command: bytes[0], data: Array(bytes[2..<(bytes.count - 1)]))
                problems = [.init("improv.checksum-after-redaction", "the checksum no longer matches: the password was overwritten with '*' (gattlab redact)")]
            }
            guard let frame else { return (nil, problems) }
            var p = problems
            let (list, bad) = Improv.strings(frame.data)
            if let bad { p.append(bad) }
            var c = Command(command: Int(frame.command), strings: list ?? [], checksum: frame.checksum)
            if commandNames[Int(frame.command)] == nil {
                p.append(.init("improv.unknown-command", "command 0x\(Hex.string([frame.command])) is not in the spec"))
            }
            if frame.command == 0x01 {
                guard let list, list.count >= 2 else {
                    p.append(.init("improv.wifi-settings-short", "WIFI_SETTINGS needs an SSID and a password string"))
                    return (nil, p)
                }
                if list.count > 2 { p.append(.init("improv.wifi-settings-extra", "\(list.count - 2) string(s) after the password")) }
                c.ssid = list[0]
                c.password = Secret(list[1], label: "Wi-Fi password")
                c.strings = [list[0]]
            }
            return (c, p)
        }

        /// The frame's bytes; nil when the strings do not fit.
        public func encode() -> [UInt8]? {
            var list = strings
            if command.raw == 0x01 { list = [ssid ?? strings.first ?? [], password?.unsafeBytes ?? []] }
            guard let data = Improv.data(list) else { return nil }
            return Frame(command: UInt8(truncatingIfNeeded: command.raw), data: data, checksum: checksum).encode()
        }
    }

    /// An RPC result notified by the device: a list of strings, their meaning by command.
    public struct Result: ProfileMessage, Hashable {
        public var command: ProtoEnumValue
        public var strings: [[UInt8]]
        public var checksum: Checksum

        public init(command: Int, strings: [[UInt8]], checksum: Checksum = .valid) {
            self.command = Improv.command(command)
            self.strings = strings
            self.checksum = checksum
        }

        public static func decode(_ bytes: [UInt8]) -> (Result?, [ProtocolProblem]) {
            let (frame, problems) = Frame.decode(bytes)
            guard let frame else { return (nil, problems) }
            var p = problems
            let (list, bad) = Improv.strings(frame.data)
            guard let list else { return (nil, p + [bad].compactMap { $0 }) }
            let r = Result(command: Int(frame.command), strings: list, checksum: frame.checksum)
            if commandNames[Int(frame.command)] == nil {
                p.append(.init("improv.unknown-command", "a result to command 0x\(Hex.string([frame.command])), which is not in the spec"))
            }
            if frame.command == 0x04, !list.isEmpty, list.count % 3 != 0 {
                p.append(.init("improv.networks-partial", "\(list.count) strings: a network is three (SSID, RSSI, auth)"))
            }
            return (r, p)
        }

        public func encode() -> [UInt8]? {
            guard let data = Improv.data(strings) else { return nil }
            return Frame(command: UInt8(truncatingIfNeeded: command.raw), data: data, checksum: checksum).encode()
        }

        /// The frame's size on the wire (with its checksum byte when it had one).
        public var frameLength: Int {
            2 + strings.reduce(0) { $0 + 1 + $1.count } + (checksum == .valid ? 1 : 0)
        }

        /// WIFI_SETTINGS' result: the URL to continue at, when the device gives one.
        public var redirectURL: [UInt8]? { command.raw == 0x01 ? strings.first : nil }

        /// GET_WIFI_NETWORKS' result: one network (SSID, RSSI, auth) per three strings. The
        /// device sends one result per network and an empty one to end the list.
        public var networks: [WiFiNetwork] {
            guard command.raw == 0x04 else { return [] }
            return stride(from: 0, to: strings.count - strings.count % 3, by: 3).map { i in
                let rssi = Int(String(decoding: strings[i + 1], as: UTF8.self))
                return WiFiNetwork(ssid: strings[i], rssi: rssi, authMode: ProtocolText.display(strings[i + 2]))
            }
        }

        /// The empty GET_WIFI_NETWORKS result that ends the scan.
        public var endsScan: Bool { command.raw == 0x04 && strings.isEmpty }
    }

    /// The advertisement's service data (UUID 0x4677): state, capabilities and four reserved
    /// bytes. Shorter or longer data is read as far as it goes, with a problem.
    public struct ServiceData: Sendable, Hashable {
        public var state: ProtoEnumValue
        public var capabilities: UInt8?
        public var reserved: [UInt8]

        public init(state: Int, capabilities: UInt8?, reserved: [UInt8] = [0, 0, 0, 0]) {
            self.state = Improv.state(state)
            self.capabilities = capabilities
            self.reserved = reserved
        }

        public static func decode(_ bytes: [UInt8]) -> (ServiceData?, [ProtocolProblem]) {
            guard let s = bytes.first else { return (nil, [.init("improv.service-data-empty", "empty Improv service data")]) }
            var p: [ProtocolProblem] = []
            if bytes.count != 6 { p.append(.init("improv.service-data-length", "\(bytes.count) bytes of service data; the spec has 6")) }
            let reserved = bytes.count > 2 ? Array(bytes[2...].prefix(4)) : []
            return (ServiceData(state: Int(s), capabilities: bytes.count > 1 ? bytes[1] : nil, reserved: reserved), p)
        }

        public func encode() -> [UInt8] {
            [UInt8(truncatingIfNeeded: state.raw), capabilities ?? 0] + reserved
        }
    }
}
