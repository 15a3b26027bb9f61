import Analysis
import ATT
import Capture
import GATT
import Profiles

/// The speaker's audit: the Wi-Fi password in OTA_CREDENTIALS, secrets in the firmware URL, and
/// OTA commands the device accepted on a link that was not encrypted.
extension SpeakerOTAProtocol: ProtocolAuditing {
    public static let auditRules = [
        AuditRuleInfo(id: "ota.open-control", defaultSeverity: .error, title: "OTA commands accepted on an unencrypted, unauthenticated link",
             fix: "Require an encrypted, authenticated link (and a bonded phone) for OTA_URL and OTA_CONTROL writes: anyone in radio range can otherwise start, reboot or roll back an update."),
        AuditRuleInfo(id: "ota.url-plain-http", defaultSeverity: .warning, title: "Firmware URL over plain http",
             fix: "Serve firmware over https and verify the server, and sign images so a swapped download is refused."),
        AuditRuleInfo(id: "ota.url-credentials", defaultSeverity: .error, title: "Firmware URL carries a user name and password",
             fix: "Do not put credentials in the URL: use short-lived signed URLs or a token the device keeps, never sent over BLE."),
        AuditRuleInfo(id: "ota.url-token", defaultSeverity: .warning, title: "Firmware URL carries a token in its query",
             fix: "Use short-lived, single-use download tokens and https; the token crossed the air with the URL."),
    ]

    /// The URL's password or token, located by its decoder, may sit in a long write's parts.
    public static let auditedCharacteristics: Set<BluetoothUUID> = [SpeakerOTA.url]

    public static func makeAuditTrack() -> any ProtocolAuditTrack { AuditTrack() }

    struct AuditTrack: ProtocolAuditTrack {
        /// OTA control commands and URL writes the device accepted on an unencrypted link.
        var openCommands: [(what: String, record: Int, time: Int64)] = []
        /// Writes waiting for their response, per handle.
        var pendingWrites: [UInt16: (what: String, record: Int, time: Int64)] = [:]
        var pendingLongWrite: (what: String, record: Int, time: Int64)?
        var urls: [(url: SpeakerOTA.FirmwareURL, record: Int, time: Int64)] = []

        mutating func consume(_ pdu: ATTPDU, info: HandleInfo?, encrypted: Bool, record: Int, time: Int64) {
            let uuid = info?.uuid
            let isCommand = uuid == SpeakerOTA.control || uuid == SpeakerOTA.url
            let name = uuid == SpeakerOTA.url ? "OTA_URL" : "OTA_CONTROL"
            switch pdu {
            case .writeRequest(let handle, _), .writeCommand(let handle, _), .signedWriteCommand(let handle, _, _):
                guard isCommand, !encrypted else { return }
                if case .writeRequest = pdu {
                    pendingWrites[handle] = (name + " write", record, time)
                } else {
                    openCommands.appendCapped((name + " write (no response asked)", record, time))
                }
            case .writeResponse:
                // The write it answers is the only one outstanding (ATT is one request at a time).
                if let (handle, w) = pendingWrites.first {
                    pendingWrites[handle] = nil
                    openCommands.appendCapped(w)
                }
            case .errorResponse(let opcode, let handle, _):
                if opcode == 0x12 { pendingWrites[handle] = nil }
            case .prepareWriteRequest:
                // Long writes are followed on OTA_URL only: a control command fits one write.
                if uuid == SpeakerOTA.url, !encrypted { pendingLongWrite = ("OTA_URL long write", record, time) }
            case .executeWriteRequest(let flags):
                if flags & 1 == 0 { pendingLongWrite = nil }
            case .executeWriteResponse:
                if let w = pendingLongWrite { openCommands.appendCapped(w) }
                pendingLongWrite = nil
            default:
                break
            }
        }

        mutating func consume(_ e: ProfileEvent, encrypted: Bool) -> [AuditSighting] {
            switch e.message {
            case let c as SpeakerOTA.Credentials:
                return [.credential(c.password, what: "Wi-Fi password")]
            case let u as SpeakerOTA.FirmwareURL:
                urls.appendCapped((u, e.firstFrame, e.time))
                return u.secretParts.map { part in
                    let kind: SecretKind = part.part == .password ? .urlPassword : .urlToken
                    return .secret(kind, Secret(Array(u.bytes[part.range]), label: kind.title).located(e.origin?.slice(part.range)))
                }
            default:
                return []
            }
        }

        func findings(connection: String) -> [AuditHit] {
            var hits: [AuditHit] = []
            if !openCommands.isEmpty {
                hits.append(AuditHit("ota.open-control", "\(AuditHit.list(openCommands)) accepted on \(connection) while it was not encrypted",
                                     records: openCommands.map(\.record), time: openCommands.first?.time))
            }
            for u in urls {
                let shown = u.url.display(reveal: false)
                if u.url.scheme == "http" {
                    hits.append(AuditHit("ota.url-plain-http", "firmware URL \(shown) at record \(u.record)", records: [u.record], time: u.time))
                }
                let parts = u.url.secretParts
                if parts.contains(where: { $0.part == .password }) {
                    hits.append(AuditHit("ota.url-credentials", "firmware URL \(shown) at record \(u.record) carries user:password",
                                         records: [u.record], time: u.time))
                }
                let tokens = parts.compactMap { if case .queryValue(let n) = $0.part { n } else { nil } }
                if !tokens.isEmpty {
                    hits.append(AuditHit("ota.url-token",
                                         "firmware URL at record \(u.record) carries \(tokens.map { "`\(ProtocolText.display($0))`" }.joined(separator: ", ")) in its query",
                                         records: [u.record], time: u.time))
                }
            }
            return hits
        }
    }
}
