import ATT
import Capture
import HCI
import Profiles

/// Decodes ESP-IDF provisioning per connection. Endpoints are found by their 0x2901 name, else
/// by the default UUIDs. The session endpoint sets the security scheme: security 0 payloads are
/// decoded as they are; security 1 payloads are decrypted when the user's keys give the phone's
/// private key (and the PoP, unless the device has none), else reported as encrypted; security 2
/// payloads are reported as encrypted. See `ESPSecurity1` for how the keystream runs.
public struct ESPProvisioningProtocol: DeviceProtocol {
    public static let name = "esp-prov"
    public static let advertisedServices: Set<BluetoothUUID> = [ESPProvisioning.service]
    public static let characteristics = Set(ESPProvisioning.Endpoint.allCases.map(\.defaultUUID))
    public static let endpointNames = Set(ESPProvisioning.Endpoint.allCases.map(\.rawValue))

    /// `--esp-pop` and `--esp-client-key`: security 1 sessions decrypt with them.
    public static let keys = [
        ProtocolKeyOption(name: "esp-pop", valueName: "text",
                          help: "ESP-IDF security 1: the device's proof of possession, to decrypt provisioning sessions (a secret: never printed).",
                          expected: "the proof of possession as text", label: "ESP proof of possession", parse: ProtocolKeyOption.text),
        ProtocolKeyOption(name: "esp-client-key", valueName: "hex",
                          help: "ESP-IDF security 1: the phone's X25519 private key, 64 hex digits (a secret: never printed).",
                          expected: "64 hex digits (a 32-byte X25519 private key)", label: "ESP client private key",
                          parse: ProtocolKeyOption.hex(bytes: 32)),
    ]

    private let givenKeys: ProtocolKeys
    /// From the session endpoint (authoritative) or, until then, proto-ver's sec_ver.
    private var security: Int?
    private var capabilities: [String] = []
    private var clientPublicKey: [UInt8]?
    private var devicePublicKey: [UInt8]?
    private var stream: ESPSecurity1.Stream?
    /// Why security 1 payloads cannot be decrypted, when they cannot.
    private var undecryptable = "no session handshake seen"

    public init() { givenKeys = .init() }
    public init(keys: ProtocolKeys) { givenKeys = keys }

    public mutating func decode(_ v: ProfileValue) -> [ProfileEvent] {
        let endpoint = v.endpoint.flatMap(ESPProvisioning.Endpoint.init(rawValue:)) ?? ESPProvisioning.Endpoint(uuid: v.characteristic)
        let name = v.endpoint ?? endpoint?.rawValue ?? "unnamed endpoint"
        let isRequest = v.operation == .write
        func event(_ kind: String, _ message: (any ProfileMessage)?, _ problems: [ProtocolProblem]) -> [ProfileEvent] {
            [ProfileEvent(v, protocolName: Self.name, kind: kind, message: message, problems: problems)]
        }
        let security = self.security
        switch endpoint {
        case .version?:
            if isRequest {
                return event("esp.version", ESPProvisioning.OpaquePayload(endpoint: name, security: nil, encrypted: false, length: v.bytes.count,
                                                                          reason: "version request"), [])
            }
            let (version, problems) = ESPProvisioning.Version.decode(v.bytes)
            if let version {
                if self.security == nil { self.security = version.securityVersion }
                capabilities = version.capabilities
            }
            return event("esp.version", version, problems)
        case .session?:
            var (message, problems) = ESPProvisioning.SessionMessage.decode(v.bytes)
            if let message { problems += session(message) }
            return event("esp.session", message, problems)
        case .config?:
            return payload(v, name: name, kind: "esp.config", event) { plain in
                var (m, p) = ESPProvisioning.ConfigMessage.decode(plain)
                if case .setConfig(var c)? = m?.payload {
                    if security == 0 {
                        p.append(.init("esp.cleartext-passphrase", "security 0: CmdSetConfig carries the Wi-Fi password in the clear"))
                    }
                    // WiFiConfigPayload.cmd_set_config (12) . passphrase (2); encrypted bytes map one
                    // to one onto the plaintext (AES-CTR), with the keystream as the mask.
                    if let r = ProtoWire.bytesField([12, 2], in: plain), r.upperBound <= v.bytes.count {
                        let mask = plain == v.bytes ? nil : zip(v.bytes[r], plain[r]).map { $0 ^ $1 }
                        c.passphrase = c.passphrase.located(v.origin(of: r), mask: mask)
                        m?.payload = .setConfig(c)
                    }
                }
                return (m, p)
            }
        case .scan?:
            return payload(v, name: name, kind: "esp.scan", event) { plain in
                let (m, p) = ESPProvisioning.ScanMessage.decode(plain)
                return (m, p)
            }
        case .control?, nil:
            // prov-ctrl and custom endpoints: decrypted when possible, not decoded further.
            return payload(v, name: name, kind: endpoint == .control ? "esp.ctrl" : "esp.custom", event) { plain in
                (ESPProvisioning.OpaquePayload(endpoint: name, security: security, encrypted: false, length: plain.count,
                                               reason: "messages of \(name) are not decoded"), [])
            }
        }
    }

    /// A payload on an endpoint the session protects: in the clear (security 0), decrypted
    /// (security 1 with keys) or opaque.
    private mutating func payload(_ v: ProfileValue, name: String, kind: String,
                                  _ event: (String, (any ProfileMessage)?, [ProtocolProblem]) -> [ProfileEvent],
                                  decode: ([UInt8]) -> ((any ProfileMessage)?, [ProtocolProblem])) -> [ProfileEvent] {
        switch security {
        case 0?:
            let (m, p) = decode(v.bytes)
            return event(kind, m, p)
        case 1?:
            if stream != nil {
                let plain = stream!.apply(v.bytes)
                var (m, p) = decode(plain)
                if m == nil { p.append(.init("esp.sec1-decrypt-failed", "decrypted \(name) payload does not parse: wrong keys, or a message missing from the capture")) }
                return event(kind, m, p)
            }
            var reason = "encrypted, sec1: \(undecryptable)"
            if capabilities.contains("no_pop") { reason += " (device has no PoP: no_pop)" }
            return event(kind, ESPProvisioning.OpaquePayload(endpoint: name, security: 1, encrypted: true, length: v.bytes.count, reason: reason), [])
        case let s?:
            return event(kind, ESPProvisioning.OpaquePayload(endpoint: name, security: s, encrypted: true, length: v.bytes.count,
                                                             reason: s == 2 ? "encrypted, sec2 (SRP6a + AES-GCM: not decryptable from a capture)" : "security \(s)"), [])
        case nil:
            // No session seen (the capture began later): try the clear, else call it encrypted.
            let (m, p) = decode(v.bytes)
            if m != nil, !p.contains(where: { $0.id == "esp.malformed" }) { return event(kind, m, p) }
            return event(kind, ESPProvisioning.OpaquePayload(endpoint: name, security: nil, encrypted: true, length: v.bytes.count,
                                                             reason: "not protobuf in the clear and no session seen: probably encrypted"), [])
        }
    }

    /// Follows the handshake: the scheme, the keys, and the keystream when it can be made.
    private mutating func session(_ m: ESPProvisioning.SessionMessage) -> [ProtocolProblem] {
        var problems: [ProtocolProblem] = []
        switch m.payload {
        case .none:
            security = m.securityVersion.raw
        case .sec0Command, .sec0Response:
            security = 0
            stream = nil
        case .sec1Command0(let key):
            security = 1
            clientPublicKey = key
            devicePublicKey = nil
            stream = nil
            undecryptable = "the handshake has not finished"
        case .sec1Response0(_, let deviceKey, let random):
            security = 1
            devicePublicKey = deviceKey
            stream = nil
            guard let privateKey = givenKeys["esp-client-key"] else {
                undecryptable = "give --esp-client-key (the phone's X25519 private key)\(capabilities.contains("no_pop") ? "" : " and --esp-pop") to decrypt"
                break
            }
            guard let client = clientPublicKey else {
                undecryptable = "SessionCmd0 (the phone's public key) is not in the capture"
                break
            }
            guard ESPSecurity1.publicKey(privateKey: privateKey.unsafeBytes) == client else {
                undecryptable = "--esp-client-key does not belong to this session's phone"
                problems.append(.init("esp.sec1-client-key-mismatch", "the given client key's public key is not the session's client_pubkey"))
                break
            }
            do {
                let shared = try ESPSecurity1.sharedSecret(privateKey: privateKey.unsafeBytes, peerPublicKey: deviceKey)
                // A device that reports no_pop uses none, whatever PoP the user gave for a batch of captures.
                let pop = capabilities.contains("no_pop") ? [] : givenKeys["esp-pop"]?.unsafeBytes ?? []
                let key = ESPSecurity1.sessionKey(sharedSecret: shared, proofOfPossession: pop)
                stream = ESPSecurity1.Stream(key: key, iv: random)
                if stream == nil { undecryptable = "device_random is not 16 bytes" }
            } catch {
                undecryptable = "\(error)"
            }
        case .sec1Command1(let verify):
            if stream != nil, let device = devicePublicKey {
                if stream!.apply(verify) != device {
                    stream = nil
                    undecryptable = "the PoP or the client key is wrong (client_verify_data does not decrypt to the device key)"
                    problems.append(.init("esp.sec1-verify-failed", "client_verify_data does not decrypt to the device's public key: wrong --esp-pop?"))
                }
            }
        case .sec1Response1(_, let verify):
            if stream != nil, let client = clientPublicKey, stream!.apply(verify) != client {
                stream = nil
                undecryptable = "device_verify_data does not decrypt to the client key"
                problems.append(.init("esp.sec1-verify-failed", "device_verify_data does not decrypt to the client's public key"))
            }
        case .sec2:
            security = 2
            stream = nil
        }
        return problems
    }

    public mutating func connectionEnded(_ connection: ConnectionKey, frame: Int, time: Int64, reason: String) -> [ProfileEvent] { [] }
}
