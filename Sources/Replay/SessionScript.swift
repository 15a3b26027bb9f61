import ATT
import Foundation
import Profiles

/// A recorded session as an editable script (`gattlab replay extract`): the central's side of one
/// or more connections to one device, step by step, with the recorded answers as expectations.
/// Steps name characteristics by UUID; the runner discovers the target's table and maps them.
/// JSON schema `gattlab.replay/1`, documented in the README.
public struct SessionScript: Codable, Sendable, Hashable {
    public static let schemaName = "gattlab.replay/1"

    public var schema: String = SessionScript.schemaName
    /// Where the script came from: the capture, the device, the connections taken.
    public var source: Source
    /// The device protocol the recording speaks, when one was recognised: its short name (`speaker`).
    public var device: String?
    /// Secrets were overwritten with '*' (extract without `--reveal-secrets`): steps whose value
    /// carries one need `--set` at run time.
    public var redacted: Bool
    public var steps: [ReplayStep]
    /// The session data of protocols whose replay runs a session of its own
    /// (`ReplaySessionDriving`), by the protocol's `scriptKey`: each is a member of the script's
    /// JSON of that name (`esp`), which only the protocol decodes. Members this gattlab does not
    /// know are kept here too, so a script reads and writes back unchanged.
    public var sessions: [String: ScriptValue] = [:]

    public struct Source: Codable, Sendable, Hashable {
        public var capture: String
        public var peer: String?
        public var connections: [String]
        /// The capture's start of the session, microseconds since the Unix epoch.
        public var start: Int64
    }

    public init(source: Source, device: String?, redacted: Bool, steps: [ReplayStep], sessions: [String: ScriptValue] = [:]) {
        self.source = source
        self.device = device
        self.redacted = redacted
        self.steps = steps
        self.sessions = sessions
    }

    // The members by name: the fixed ones, then each session's under its own key. With sorted
    // keys (`json()`) a session member lands where a typed property of that name did, so scripts
    // written before the protocols became plug-ins are written byte for byte the same.
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private static let fixedKeys: Set<String> = ["schema", "source", "device", "redacted", "steps"]

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        schema = try c.decode(String.self, forKey: Key("schema"))
        source = try c.decode(Source.self, forKey: Key("source"))
        device = try c.decodeIfPresent(String.self, forKey: Key("device"))
        redacted = try c.decode(Bool.self, forKey: Key("redacted"))
        steps = try c.decode([ReplayStep].self, forKey: Key("steps"))
        for key in c.allKeys where !Self.fixedKeys.contains(key.stringValue) {
            // Any JSON value reads as one; the protocol that owns the member checks it (`parse`).
            if let value = try? c.decode(ScriptValue.self, forKey: key) { sessions[key.stringValue] = value }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(schema, forKey: Key("schema"))
        try c.encode(source, forKey: Key("source"))
        try c.encodeIfPresent(device, forKey: Key("device"))
        try c.encode(redacted, forKey: Key("redacted"))
        try c.encode(steps, forKey: Key("steps"))
        for (name, value) in sessions where !Self.fixedKeys.contains(name) {
            try c.encode(value, forKey: Key(name))
        }
    }

    /// The script as pretty JSON, keys in a stable order.
    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .withoutEscapingSlashes, .sortedKeys]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// Reads a script, with a message that names the step and field that is wrong. The session
    /// data of `protocols` is checked by the protocol that owns it.
    public static func parse(_ data: Data, path: String, protocols: ProtocolSet) throws(ReplayError) -> SessionScript {
        let script: SessionScript
        do {
            script = try JSONDecoder().decode(SessionScript.self, from: data)
            for type in protocols.replaySessions {
                guard let value = script.sessions[type.scriptKey] else { continue }
                do { try type.checkSessionData(value) } catch { throw Self.problem(error, within: type.scriptKey) }
            }
        } catch let error as ScriptProblem {
            throw .badScript(path, error.text)
        } catch {
            throw .badScript(path, Self.problem(error, within: nil).text)
        }
        guard script.schema == schemaName else {
            throw .badScript(path, "schema '\(script.schema)'; this gattlab reads \(schemaName)")
        }
        for (i, step) in script.steps.enumerated() {
            if let problem = step.problem { throw .badScript(path, "step \(i + 1) (\(step.action.rawValue)): \(problem)") }
        }
        return script
    }

    /// A decoding error as one line; `member`: it came from decoding that member on its own.
    private struct ScriptProblem: Error { var text: String }

    private static func problem(_ error: any Error, within member: String?) -> ScriptProblem {
        let prefix: [any CodingKey] = member.map { [Key($0)] } ?? []
        switch error {
        case DecodingError.dataCorrupted(let context):
            return ScriptProblem(text: "not JSON: \(context.underlyingError.map { "\($0.localizedDescription)" } ?? context.debugDescription)")
        case DecodingError.keyNotFound(let key, let context):
            return ScriptProblem(text: "\(Self.where(prefix + context.codingPath)) lacks '\(key.stringValue)'")
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return ScriptProblem(text: "\(Self.where(prefix + context.codingPath)): \(context.debugDescription)")
        default:
            return ScriptProblem(text: "\(error)")
        }
    }

    static func `where`(_ path: [any CodingKey]) -> String {
        var parts: [String] = []
        for key in path {
            if let i = key.intValue { parts.append("step \(i + 1)") } else if key.stringValue != "steps" { parts.append(key.stringValue) }
        }
        return parts.isEmpty ? "the script" : parts.joined(separator: ".")
    }
}

/// One thing the central did, or one thing it waited for.
public struct ReplayStep: Codable, Sendable, Hashable {
    public enum Action: String, Codable, Sendable, CaseIterable {
        /// Open the link (a reconnection too).
        case connect
        case exchangeMTU = "exchange-mtu"
        /// Find the target's services, characteristics and descriptors (and, when the recording
        /// did, read their user descriptions).
        case discover
        /// Write a CCCD: notifications (0100), indications (0200) or off (0000).
        case subscribe
        case read
        case write
        /// Wait for a notification or indication on a characteristic.
        case notification
        /// The phone paired or encrypted the link.
        case encrypt
        /// The phone hung up.
        case disconnect
        /// The device ended the link (reset, hung up): the recording saw it go.
        case linkLost = "link-lost"
        /// Any other PDU, sent as recorded.
        case pdu
    }

    public enum WriteMethod: String, Codable, Sendable {
        /// Write Request, answered by Write Response.
        case request
        /// Write Command: no answer.
        case command
        /// Prepare Write Requests, then Execute Write.
        case long
    }

    public var action: Action
    /// Microseconds since the session's start, as recorded.
    public var at: Int64
    /// The characteristic, by UUID.
    public var characteristic: String?
    /// A descriptor of the characteristic (by UUID), for descriptor reads and writes.
    public var descriptor: String?
    /// A handle, when the recording had no discovery to name it.
    public var handle: UInt16?
    /// Hex bytes: what is written (or sent as `pdu`).
    public var value: String?
    /// What the value means, for people reading the script (the runner ignores it).
    public var meaning: String?
    public var method: WriteMethod?
    /// Exchange MTU: what the phone asked for.
    public var mtu: UInt16?
    /// Read: a Read Blob of the value from this offset on, one part (absent: the whole value).
    public var offset: UInt16?
    /// Discover: the recording read the user descriptions (0x2901), as ESP-IDF apps do.
    public var readsDescriptions: Bool?
    public var indication: Bool?
    /// How long to wait, in microseconds (notification, link-lost).
    public var timeout: Int64?
    /// For a protocol session run live (`ReplaySessionDriving`; ESP-IDF provisioning): what
    /// `value` carries in the clear (hex) on an endpoint the session protects; the live replay
    /// encrypts it with its own session. `credentials` apply to it.
    public var plain: String?
    /// The value carries credentials: how to rebuild it with `--set`.
    public var credentials: CredentialField?
    public var expect: Expectation?

    public init(_ action: Action, at: Int64) {
        self.action = action
        self.at = at
    }

    /// What the recording saw in answer.
    public struct Expectation: Codable, Sendable, Hashable {
        /// `ok`, `error` (an ATT Error Response), `none` (no answer came).
        public var result: String?
        /// The ATT error code, as hex (0x05).
        public var error: String?
        /// The value read or notified, hex; for a `pdu` step extracted with secrets revealed, the
        /// whole answer PDU as recorded (a clone answers with it).
        public var value: String?
        public var meaning: String?
        /// Exchange MTU: the MTU agreed.
        public var mtu: UInt16?
        /// Discover: the characteristics found, by UUID.
        public var characteristics: [String]?
        /// Link lost: the HCI reason.
        public var reason: String?
        /// PDU: the answer's opcode (hex).
        public var opcode: String?
        /// For a protocol session run live (ESP-IDF provisioning): the value read, decrypted
        /// (hex); compared by meaning.
        public var plain: String?
        /// A long write refused with Prepare Queue Full: the parts the device queued before it.
        public var queued: Int?

        public init() {}
    }

    /// A value that carries credentials, and how to rebuild it.
    public struct CredentialField: Codable, Sendable, Hashable {
        /// `speaker-credentials`, `speaker-url`, `nrf7-set-config`, `esp-set-config`.
        public var format: String
        /// The names `--set` takes for this value.
        public var fields: [String]
        /// The SSID as recorded (not a secret).
        public var ssid: String?
        /// The secret bytes were overwritten with '*': `--set` must give them.
        public var redacted: Bool

        public init(format: String, fields: [String], ssid: String?, redacted: Bool) {
            self.format = format
            self.fields = fields
            self.ssid = ssid
            self.redacted = redacted
        }
    }

    /// What is wrong with a step a person edited, if anything.
    var problem: String? {
        func needs(_ present: Bool, _ what: String) -> String? { present ? nil : "needs '\(what)'" }
        if let value, Hex.bytes(value) == nil { return "'value' is not hex bytes" }
        if let e = expect?.value, Hex.bytes(e) == nil { return "'expect.value' is not hex bytes" }
        if let p = plain, Hex.bytes(p) == nil { return "'plain' is not hex bytes" }
        if let p = expect?.plain, Hex.bytes(p) == nil { return "'expect.plain' is not hex bytes" }
        if let c = characteristic, BluetoothUUID(string: c) == nil { return "'characteristic' \(c) is not a UUID" }
        if let d = descriptor, BluetoothUUID(string: d) == nil { return "'descriptor' \(d) is not a UUID" }
        switch action {
        case .exchangeMTU: return needs(mtu != nil, "mtu")
        case .subscribe: return needs((characteristic != nil || handle != nil) && value != nil, "characteristic and value")
        case .read, .notification: return needs(characteristic != nil || handle != nil, "characteristic")
        case .write: return needs((characteristic != nil || handle != nil) && value != nil, "characteristic and value")
        case .pdu: return needs(value != nil, "value")
        case .connect, .discover, .encrypt, .disconnect, .linkLost: return nil
        }
    }
}

/// Hex text as scripts carry it: lower case, no separators (spaces and colons are accepted back).
public enum Hex {
    public static func string(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func bytes(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var high: UInt8?
        for c in text.utf8 {
            if c == 0x20 || c == 0x3A { continue }
            let v: UInt8
            switch c {
            case 0x30...0x39: v = c - 0x30
            case 0x61...0x66: v = c - 0x61 + 10
            case 0x41...0x46: v = c - 0x41 + 10
            default: return nil
            }
            if let h = high {
                out.append(h << 4 | v)
                high = nil
            } else {
                high = v
            }
        }
        return high == nil ? out : nil
    }
}

/// Why a replay could not start or run.
public enum ReplayError: Error, Sendable, CustomStringConvertible {
    /// The script file is not a script this gattlab reads.
    case badScript(String, String)
    /// The capture has nothing to replay.
    case nothingToReplay(String, String)
    /// The command line asks for something the script cannot do (a redacted secret with no --set).
    case usage(String)

    public var description: String {
        switch self {
        case .badScript(let path, let why): "\(path): \(why)"
        case .nothingToReplay(let path, let why): "\(path): \(why)"
        case .usage(let why): why
        }
    }
}
