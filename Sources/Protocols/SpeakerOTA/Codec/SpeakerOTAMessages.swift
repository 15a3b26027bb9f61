import Capture
import Profiles

extension SpeakerOTA {
    /// OTA_CREDENTIALS: UTF-8 SSID, 0x00, UTF-8 password. The password is a `Secret`.
    public struct Credentials: ProfileMessage, Hashable {
        public var ssid: [UInt8]
        public var password: Secret

        public init(ssid: [UInt8], password: Secret) {
            self.ssid = ssid
            self.password = password
        }

        public init(ssid: String, password: String) {
            self.init(ssid: Array(ssid.utf8), password: Secret(Array(password.utf8), label: "Wi-Fi password"))
        }

        public var ssidText: String { ProtocolText.decode(ssid).text }

        public func encode() -> [UInt8] { ssid + [0] + password.unsafeBytes }

        /// Splits at the first NUL. Without one there is no telling SSID from password: nil.
        public static func decode(_ bytes: [UInt8]) -> (Credentials?, [ProtocolProblem]) {
            var problems: [ProtocolProblem] = []
            if bytes.count > maxCredentialsLength {
                problems.append(.init("credentials.too-long", "\(bytes.count) bytes; the device takes at most \(maxCredentialsLength)"))
            }
            guard let nul = bytes.firstIndex(of: 0) else {
                problems.append(.init("credentials.missing-nul", "no 0x00 between SSID and password in \(bytes.count) bytes"))
                return (nil, problems)
            }
            let ssid = Array(bytes[..<nul])
            let password = Array(bytes[(nul + 1)...])
            if ssid.isEmpty { problems.append(.init("credentials.ssid-empty", "the SSID is empty")) }
            if ssid.count > maxSSIDLength {
                problems.append(.init("credentials.ssid-too-long", "SSID of \(ssid.count) bytes; at most \(maxSSIDLength)"))
            }
            if password.count > maxPasswordLength {
                problems.append(.init("credentials.password-too-long", "password of \(password.count) bytes; at most \(maxPasswordLength)"))
            }
            if password.contains(0) {
                problems.append(.init("credentials.repeated-nul", "a second 0x00 inside the password"))
            }
            if !ProtocolText.decode(ssid).valid { problems.append(.init("credentials.ssid-not-utf8", "the SSID is not valid UTF-8")) }
            if !ProtocolText.decode(password).valid {
                problems.append(.init("credentials.password-not-utf8", "the password is not valid UTF-8"))
            }
            return (Credentials(ssid: ssid, password: Secret(password, label: "Wi-Fi password")), problems)
        }
    }

    /// OTA_URL: the firmware's URL, UTF-8, at most 256 bytes.
    public struct FirmwareURL: ProfileMessage, Hashable {
        public var bytes: [UInt8]
        public init(_ url: String) { bytes = Array(url.utf8) }
        public init(bytes: [UInt8]) { self.bytes = bytes }

        public var text: String { ProtocolText.decode(bytes).text }
        /// The URL's scheme in lower case ("http", "https"), if it has one.
        public var scheme: String? {
            // The common case read off the bytes (a rule asks it of every URL of a capture):
            // ASCII letters and "+-." before the first colon.
            if let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0,
               bytes[..<colon].allSatisfy({ b in (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A || b == 0x2B || b == 0x2D || b == 0x2E }) {
                return String(decoding: bytes[..<colon].map { b in (b >= 0x41 && b <= 0x5A) ? b | 0x20 : b }, as: UTF8.self)
            }
            guard let colon = text.firstIndex(of: ":") else { return nil }
            let s = text[..<colon].lowercased()
            return s.isEmpty || s.contains(where: { !$0.isLetter && !"+-.".contains($0) }) ? nil : s
        }

        public func encode() -> [UInt8] { bytes }

        public static func decode(_ bytes: [UInt8]) -> (FirmwareURL?, [ProtocolProblem]) {
            var problems: [ProtocolProblem] = []
            if bytes.isEmpty { problems.append(.init("url.empty", "the URL is empty")) }
            if bytes.count > maxURLLength {
                problems.append(.init("url.too-long", "\(bytes.count) bytes; at most \(maxURLLength)"))
            }
            if !ProtocolText.decode(bytes).valid { problems.append(.init("url.not-utf8", "the URL is not valid UTF-8")) }
            let url = FirmwareURL(bytes: bytes)
            if !bytes.isEmpty, url.scheme == nil { problems.append(.init("url.no-scheme", "the URL has no scheme")) }
            return (url, problems)
        }
    }

    /// OTA_CONTROL: [command, parameter].
    public struct ControlCommand: ProfileMessage, Hashable {
        public var rawCommand: UInt8
        public var parameter: UInt8
        public var command: Command? { Command(rawValue: rawCommand) }

        public init(_ command: Command, parameter: UInt8 = 0) {
            rawCommand = command.rawValue
            self.parameter = parameter
        }

        public init(rawCommand: UInt8, parameter: UInt8) {
            self.rawCommand = rawCommand
            self.parameter = parameter
        }

        public func encode() -> [UInt8] { [rawCommand, parameter] }

        public static func decode(_ bytes: [UInt8]) -> (ControlCommand?, [ProtocolProblem]) {
            guard let first = bytes.first else {
                return (nil, [.init("control.empty", "an empty control write")])
            }
            var problems: [ProtocolProblem] = []
            if bytes.count != 2 {
                problems.append(.init(bytes.count < 2 ? "control.short" : "control.long", "\(bytes.count) bytes; a command is 2"))
            }
            let c = ControlCommand(rawCommand: first, parameter: bytes.count > 1 ? bytes[1] : 0)
            if c.command == nil {
                problems.append(.init("control.unknown-command", "unknown command 0x\(Hex.string([first]))"))
            }
            return (c, problems)
        }
    }

    /// OTA_STATUS: state, error, progress (0-100), downloaded KB u16 LE, total KB u16 LE, RSSI i8.
    public struct Status: ProfileMessage, Hashable {
        public var rawState: UInt8
        public var rawError: UInt8
        public var progress: UInt8
        public var downloadedKB: UInt16
        public var totalKB: UInt16
        public var rssi: Int8

        public var state: State? { State(rawValue: rawState) }
        public var error: ErrorCode? { ErrorCode(rawValue: rawError) }

        public init(state: State, error: ErrorCode = .none, progress: UInt8 = 0, downloadedKB: UInt16 = 0,
                    totalKB: UInt16 = 0, rssi: Int8 = 0) {
            self.init(rawState: state.rawValue, rawError: error.rawValue, progress: progress,
                      downloadedKB: downloadedKB, totalKB: totalKB, rssi: rssi)
        }

        public init(rawState: UInt8, rawError: UInt8, progress: UInt8, downloadedKB: UInt16, totalKB: UInt16, rssi: Int8) {
            self.rawState = rawState
            self.rawError = rawError
            self.progress = progress
            self.downloadedKB = downloadedKB
            self.totalKB = totalKB
            self.rssi = rssi
        }

        public func encode() -> [UInt8] {
            [rawState, rawError, progress, UInt8(downloadedKB & 0xFF), UInt8(downloadedKB >> 8),
             UInt8(totalKB & 0xFF), UInt8(totalKB >> 8), UInt8(bitPattern: rssi)]
        }

        /// Fewer than 8 bytes cannot be read (nil); more are read and reported.
        public static func decode(_ b: [UInt8]) -> (Status?, [ProtocolProblem]) {
            guard b.count >= statusLength else {
                return (nil, [.init("status.short", "\(b.count) bytes; a status is \(statusLength)")])
            }
            var problems: [ProtocolProblem] = []
            if b.count > statusLength {
                problems.append(.init("status.long", "\(b.count) bytes; a status is \(statusLength), the rest is ignored"))
            }
            let s = Status(rawState: b[0], rawError: b[1], progress: b[2],
                           downloadedKB: UInt16(b[3]) | UInt16(b[4]) << 8, totalKB: UInt16(b[5]) | UInt16(b[6]) << 8,
                           rssi: Int8(bitPattern: b[7]))
            if s.state == nil { problems.append(.init("status.unknown-state", "unknown state 0x\(Hex.string([b[0]]))")) }
            if s.error == nil { problems.append(.init("status.unknown-error", "unknown error 0x\(Hex.string([b[1]]))")) }
            if s.progress > 100 { problems.append(.init("status.progress-over-100", "progress \(s.progress) %")) }
            if s.totalKB > 0, s.downloadedKB > s.totalKB {
                problems.append(.init("status.downloaded-over-total", "\(s.downloadedKB) KB of \(s.totalKB) KB"))
            }
            if s.state == .error, s.error == ErrorCode.none {
                problems.append(.init("status.error-without-code", "state ERROR with error NONE"))
            }
            return (s, problems)
        }
    }
}
