import ATT
import Capture
import GATT
import HCI
import Profiles

/// Audits credential handling in one capture, record by record: how each link was protected
/// (pairing, encryption, key size), where Wi-Fi credentials, URL secrets and keys went, and which
/// sensitive commands a link accepted. `finish()` turns what it saw into findings and the
/// inventory of secrets. Run the decoder with `tracksOrigins` on so that secrets are located.
///
/// Memory follows what is found (sightings, one track per connection), not the file's size;
/// both are capped so that a hostile capture cannot grow them without bound.
public final class Auditor {
    public static let maxSightings = 100_000
    public static let maxConnections = 100_000

    /// The device protocols whose credential characteristics and messages are audited.
    private let protocols: ProtocolSet
    private let auditing: [any ProtocolAuditing.Type]
    /// Every rule: the audit's own and the protocols'.
    private let catalogue: [AuditRuleInfo]
    private var report: AuditReport
    /// The report lists links and findings in the order their connections began. A connection
    /// is followed while its link is up; once the link ends nothing can reach its track, and only
    /// its link and findings are kept (a day's tracks kept whole to the end were most of the
    /// audit's memory). They go to the report at once when every connection that began before
    /// it has gone there too; until then they wait in `endedLinks` and `endedFindings`, and its
    /// entry here says where. So only the connections from the first one still open are here,
    /// a few in a capture whose connections come one after another (an entry for each of a
    /// day's 40,000 connections was the audit's largest allocation).
    private var waiting: [Connection] = []
    private enum Connection {
        case open(ConnectionTrack)
        case ended(link: Int, findings: Range<Int>)
    }
    /// `waiting[waitingStart...]` are the connections numbered `firstWaiting...` in the order
    /// they began (entries before `waitingStart` have gone to the report).
    private var waitingStart = 0
    private var firstWaiting = 0
    private var endedLinks: SpillList<AuditLink>
    private var endedFindings: SpillList<AuditFinding>
    /// Each open connection's number in the order they began.
    private var live: [ConnectionKey: Int] = [:]
    /// Links whose Disconnection Complete is in the record being read: they end after its
    /// protocol events.
    private var endedLinkKeys: [ConnectionKey] = []
    private var droppedSightings = 0
    /// Writes on handles the decoder could not name (no discovery, no --profile): how many, and the first ones.
    private var unnamedWrites = 0
    private var unnamedValueRecords: [Int] = []

    /// What one connection showed.
    final class ConnectionTrack {
        let key: ConnectionKey
        var link: AuditLink
        var encrypted = false
        var pairingRequest: (features: SMPPDU.PairingFeatures, record: Int, time: Int64)?
        var encryptedAtTime: Int64?
        var pairingResponse: (features: SMPPDU.PairingFeatures, record: Int)?
        var pairingFailed: (reason: String, record: Int)?
        /// Credentials sent, with whether the link was encrypted then.
        var credentialsSent: [(what: String, record: Int, time: Int64, encrypted: Bool)] = []
        var secretReads: [(what: String, record: Int, time: Int64)] = []
        /// What each audited protocol follows on this connection, in registration order.
        var protocolTracks: [any ProtocolAuditTrack]
        /// Prepare Write parts on credential and URL characteristics not executed yet.
        var prepared: [PreparedPart] = []
        /// Prepare Write Responses echo their request: request bytes -> the same bytes again.
        var echoes: [Int: [(request: ByteOrigin.Piece, response: ByteOrigin.Piece)]] = [:]
        var echoCount = 0
        /// Handles of the prepared parts' characteristics, for names.
        var preparedNames: [UInt16: String] = [:]

        init(key: ConnectionKey, link: AuditLink, protocolTracks: [any ProtocolAuditTrack]) {
            self.key = key
            self.link = link
            self.protocolTracks = protocolTracks
        }
    }

    struct PreparedPart {
        var handle: UInt16
        var offset: UInt16
        var value: [UInt8]
        var origin: ByteOrigin?
        var record: Int
        var time: Int64
        var encrypted: Bool
        var credential: Bool
        var echoed = false
    }

    /// Characteristics whose long-write parts matter: those carrying credentials, and those a
    /// protocol audits for secrets it locates (a firmware URL).
    func isSensitive(_ uuid: BluetoothUUID?) -> Bool {
        guard let uuid else { return false }
        return protocols.isSecretBearing(uuid) || auditing.contains { $0.auditedCharacteristics.contains(uuid) }
    }

    /// `memoryLimit`: bytes each of the audit's lists keeps in memory before it writes to a
    /// temporary file (`SpillList`; tests make it small to read everything back from the file).
    public init(source: String, format: String, protocols: ProtocolSet, memoryLimit: Int = SpillList<AuditFinding>.defaultMemoryLimit) {
        self.protocols = protocols
        auditing = protocols.conforming(to: (any ProtocolAuditing.Type).self)
        catalogue = AuditCatalogue.rules(protocols: protocols)
        report = AuditReport(source: source, format: format, records: 0, memoryLimit: memoryLimit)
        endedLinks = SpillList(memoryLimit: memoryLimit)
        endedFindings = SpillList(memoryLimit: memoryLimit)
    }

    // MARK: Input

    public func consume(_ record: CaptureRecord, gatt: [GATTEvent], profile: [ProfileEvent]) {
        report.records = record.number
        for e in gatt {
            switch e {
            case .link(let l): consumeLink(l, record: record)
            case .att(let a): consumeATT(a, record: record)
            case .operation: break
            }
        }
        for e in profile { consumeProfile(e, record: record) }
        // A link ends after what its protocols said as it ended (the value they were still
        // joining, which did not decode): that belongs to this link, and was once given to a new
        // link of its own, never encrypted, with a false "credentials over an unencrypted link".
        for key in endedLinkKeys {
            if let (n, t) = openTrack(key) {
                flushPrepared(t, why: "never executed: the link ended")
                end(t, number: n)
            }
            live[key] = nil
        }
        endedLinkKeys.removeAll(keepingCapacity: true)
    }

    private func track(_ key: ConnectionKey, record: CaptureRecord, peer: BDAddr? = nil) -> ConnectionTrack {
        if let (_, t) = openTrack(key) { return t }
        let t = ConnectionTrack(key: key, link: AuditLink(connection: key.description, peer: peer?.description, firstRecord: record.number),
                                protocolTracks: auditing.map { $0.makeAuditTrack() })
        if waiting.count - waitingStart < Self.maxConnections {
            live[key] = firstWaiting + waiting.count - waitingStart
            waiting.append(.open(t))
        }
        return t
    }

    /// The open track of `key` and its number in the order connections began.
    private func openTrack(_ key: ConnectionKey) -> (number: Int, track: ConnectionTrack)? {
        guard let n = live[key], case .open(let t) = waiting[n - firstWaiting + waitingStart] else { return nil }
        return (n, t)
    }

    private func sighting(_ kind: SecretKind, _ secret: Secret, record: CaptureRecord, connection: ConnectionTrack?,
                          context: String, overTheAir: Bool) {
        sighting(kind, secret, at: record.number, time: record.timestamp, connection: connection, context: context, overTheAir: overTheAir)
    }

    private func sighting(_ kind: SecretKind, _ secret: Secret, at recordNumber: Int, time: Int64, connection: ConnectionTrack?,
                          context: String, overTheAir: Bool) {
        guard report.secrets.count < Self.maxSightings else {
            droppedSightings += 1
            return
        }
        var secret = secret
        if let connection, var location = secret.location, !connection.echoes.isEmpty {
            for (index, piece) in location.placements {
                for echo in connection.echoes[piece.record] ?? [] {
                    let lo = max(piece.offset, echo.request.offset), hi = min(piece.offset + piece.count, echo.request.offset + echo.request.count)
                    guard lo < hi else { continue }
                    location.copies.append(.init(index: index + lo - piece.offset,
                                                 piece: .init(record: echo.response.record, offset: echo.response.offset + lo - echo.request.offset, count: hi - lo)))
                }
            }
            secret.location = location
        }
        let records = secret.location?.origin.records ?? [recordNumber]
        report.secrets.append(SecretSighting(kind: kind, secret: secret, records: records.isEmpty ? [recordNumber] : records,
                                             time: time, connection: connection?.link.connection, context: context,
                                             overTheAir: overTheAir, linkEncrypted: overTheAir ? connection?.encrypted : nil))
    }

    /// A track whose link ended becomes its link and findings: in the report if it is the first
    /// connection waiting, else waiting for those before it.
    private func end(_ t: ConnectionTrack, number n: Int) {
        finishPairing(t)
        // In the report's order already, so that the report's sort finds them sorted (it holds
        // keys only for what is not), and stably, so that the order it ends in stays the same.
        let found = AuditRules.findings(for: t, catalogue: catalogue).sorted(by: Self.reportOrder)
        guard n != firstWaiting else {
            report.links.append(t.link)
            report.findings += found
            waitingStart += 1
            firstWaiting += 1
            sendWaiting()
            return
        }
        let first = endedFindings.count
        endedFindings += found
        endedLinks.append(t.link)
        waiting[n - firstWaiting + waitingStart] = .ended(link: endedLinks.count - 1, findings: first..<endedFindings.count)
    }

    /// Moves the ended connections at the front of `waiting` to the report.
    private func sendWaiting() {
        while waitingStart < waiting.count, case .ended(let link, let findings) = waiting[waitingStart] {
            report.links.append(endedLinks[link])
            for i in findings { report.findings.append(endedFindings[i]) }
            waitingStart += 1
            firstWaiting += 1
        }
        if waitingStart == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingStart = 0
        } else if waitingStart >= 1024, waitingStart * 2 >= waiting.count {
            waiting.removeFirst(waitingStart)
            waitingStart = 0
        }
    }

    /// The order of the report's findings: by their first record, the more severe first.
    private static func reportOrder(_ a: AuditFinding, _ b: AuditFinding) -> Bool {
        reportOrder(a.sortKey, b.sortKey)
    }

    private static func reportOrder(_ a: (record: Int, severity: AuditFinding.Severity), _ b: (record: Int, severity: AuditFinding.Severity)) -> Bool {
        (a.record, b.severity) < (b.record, a.severity)
    }

    private func consumeLink(_ l: LinkEvent, record: CaptureRecord) {
        switch l {
        case .connectionComplete(let info):
            // A new connection on a handle whose end the capture never showed (a lost
            // Disconnection Complete, a capture begun mid-connection): nothing can reach the old
            // track any more, so it ends now, as it would at the end of the capture. (Not with
            // prepared writes pending: those end as "never executed before the capture ended".)
            if let (n, t) = openTrack(info.key), t.prepared.isEmpty { end(t, number: n) }
            live[info.key] = nil
            _ = track(info.key, record: record, peer: info.peerAddress ?? info.peripheralAddress)
        case .disconnection(let info, _):
            endedLinkKeys.append(info.key)
        case .encryptionChange(let key, let enabled, let status, let keySize):
            guard status.rawValue == 0 else { return }
            let t = track(key, record: record)
            t.encrypted = enabled
            if enabled, t.link.encryptedAtRecord == nil {
                t.link.encryptedAtRecord = record.number
                t.encryptedAtTime = record.timestamp
            }
            if let keySize { t.link.keySize = Int(keySize) }
        case .encryptionKeySize(let key, let size):
            track(key, record: record).link.keySize = Int(size)
        case .ltkReply(let key, let ltk):
            sighting(.ltk, ltk, record: record, connection: track(key, record: record),
                     context: "HCI LE Long Term Key Request Reply", overTheAir: false)
        case .startEncryption(let key, let ltk, _, _):
            sighting(.ltk, ltk, record: record, connection: track(key, record: record),
                     context: "HCI LE Enable Encryption", overTheAir: false)
        case .linkKey(let peer, let key, let fromController):
            sighting(.linkKey, key, record: record, connection: nil,
                     context: "HCI \(fromController ? "Link Key Notification" : "Link Key Request Reply") for \(peer)", overTheAir: false)
        case .resolvingListAdd(let peer, let peerIRK, let localIRK):
            for (irk, whose) in [(peerIRK, "peer"), (localIRK, "local")] {
                guard let irk else { continue }
                sighting(.irk, irk, record: record, connection: nil, context: "HCI LE Add Device To Resolving List (\(whose) IRK, \(peer))", overTheAir: false)
            }
        case .leEncrypt(let key):
            sighting(.leEncryptKey, key, record: record, connection: nil, context: "HCI LE Encrypt", overTheAir: false)
        case .smp(let key, _, let pdu):
            let t = track(key, record: record)
            switch pdu {
            case .pairingRequest(let f):
                finishPairing(t)
                t.pairingRequest = (f, record.number, record.timestamp)
                t.pairingResponse = nil
                t.pairingFailed = nil
            case .pairingResponse(let f):
                t.pairingResponse = (f, record.number)
            case .pairingFailed(let reason):
                t.pairingFailed = (SMPPDU.failureReason(reason), record.number)
            case .pairingConfirm(let value), .pairingRandom(let value):
                // A legacy pairing's confirm and random values give its TK by search, and with it
                // the STK and every key distributed under it (what crackle does); a Secure
                // Connections Passkey Entry gives its passkey, one bit per round. Secrets, so that
                // redact blanks them. Other SC values give nothing without the DH keys.
                let a = t.pairingRequest?.features, b = t.pairingResponse?.features
                if let a, let b, a.secureConnections, b.secureConnections {
                    guard PairingMethod.of(initiator: a, responder: b, secureConnections: true) == "Passkey Entry" else { break }
                    sighting(.pairingValue, value, record: record, connection: t,
                             context: "SMP \(SMPPDU.name(pdu.code)) of a Secure Connections Passkey Entry (with its pair, one bit of the passkey)",
                             overTheAir: true)
                } else {
                    sighting(.pairingValue, value, record: record, connection: t,
                             context: "SMP \(SMPPDU.name(pdu.code)) of a legacy pairing (with the other values, its TK, STK and distributed keys can be found)",
                             overTheAir: true)
                }
            case .encryptionInformation(let ltk):
                sighting(.ltk, ltk, record: record, connection: t, context: "SMP Encryption Information", overTheAir: true)
            case .identityInformation(let irk):
                sighting(.irk, irk, record: record, connection: t, context: "SMP Identity Information", overTheAir: true)
            case .signingInformation(let csrk):
                sighting(.csrk, csrk, record: record, connection: t, context: "SMP Signing Information", overTheAir: true)
            default:
                break
            }
        default:
            break
        }
    }

    private func consumeATT(_ e: ATTEvent, record: CaptureRecord) {
        guard let pdu = e.pdu else { return }
        let t = track(e.connection, record: record)
        for i in t.protocolTracks.indices {
            t.protocolTracks[i].consume(pdu, info: e.info, encrypted: t.encrypted, record: record.number, time: record.timestamp)
        }
        switch pdu {
        case .writeRequest, .writeCommand, .signedWriteCommand:
            if e.info == nil {
                unnamedWrites += 1
                if unnamedValueRecords.count < 8 { unnamedValueRecords.append(record.number) }
            }
        case .prepareWriteRequest(let handle, let offset, let value) where isSensitive(e.info?.uuid):
            guard t.prepared.count < 4096 else { break }
            t.prepared.append(PreparedPart(handle: handle, offset: offset, value: value, origin: e.valueOrigin, record: record.number,
                                           time: record.timestamp, encrypted: t.encrypted,
                                           credential: e.info.map { protocols.isSecretBearing($0.uuid) } ?? false))
            t.preparedNames[handle] = e.info.flatMap { KnownUUIDs.name($0.uuid) }
        case .prepareWriteResponse(let handle, let offset, let value):
            // The server echoes the part: the same bytes cross the air a second time.
            guard let i = t.prepared.lastIndex(where: { $0.handle == handle && $0.offset == offset && $0.value == value && !$0.echoed }) else { break }
            t.prepared[i].echoed = true
            if let request = t.prepared[i].origin, let response = e.valueOrigin, request.count == response.count, t.echoCount < 65_536 {
                var ri = 0
                for p in request.pieces {
                    if let r = response.slice(ri..<(ri + p.count)) {
                        var at = 0
                        for q in r.pieces {
                            t.echoes[p.record, default: []].append((.init(record: p.record, offset: p.offset + at, count: q.count), q))
                            t.echoCount += 1
                            at += q.count
                        }
                    }
                    ri += p.count
                }
            }
        case .executeWriteRequest(let flags):
            if flags & 1 == 0 {
                flushPrepared(t, why: "cancelled")
            } else {
                // Executed: the joined value is decoded by its protocol, which locates the secret.
                t.prepared.removeAll()
            }
        default:
            break
        }
    }

    private func consumeProfile(_ e: ProfileEvent, record: CaptureRecord) {
        let t = track(e.connection, record: record)
        let characteristic = KnownUUIDs.name(e.characteristic) ?? e.characteristic.description
        let isRead = e.operation == .read
        let place = "\(characteristic) \(e.operation.rawValue)"
        func credential(_ secret: Secret, _ what: String) {
            sighting(.wifiPassword, secret, record: record, connection: t, context: place, overTheAir: true)
            if isRead {
                t.secretReads.appendCapped(("\(what) read back from \(characteristic)", e.firstFrame, e.time))
            } else {
                t.credentialsSent.appendCapped(("\(what) (\(place))", e.firstFrame, e.time, t.encrypted))
            }
        }
        if e.message != nil {
            for i in t.protocolTracks.indices {
                for s in t.protocolTracks[i].consume(e, encrypted: t.encrypted) {
                    switch s {
                    case .credential(let secret, let what): credential(secret, what)
                    case .secret(let kind, let secret, let note):
                        sighting(kind, secret, record: record, connection: t, context: place + note, overTheAir: true)
                    }
                }
            }
            return
        }
        // A value of a credential characteristic that did not decode: all of it is secret.
        guard let bytes = e.undecodedValue, !bytes.isEmpty, protocols.isSecretBearing(e.characteristic) else { return }
        let secret = Secret(bytes, label: "credential value").located(e.origin)
        sighting(.credentialValue, secret, record: record, connection: t, context: place + " (did not decode)", overTheAir: true)
        if isRead {
            t.secretReads.appendCapped(("credential value read back from \(characteristic)", e.firstFrame, e.time))
        } else {
            t.credentialsSent.appendCapped(("credential value (\(place), did not decode)", e.firstFrame, e.time, t.encrypted))
        }
    }

    /// Prepared parts that were never joined (cancelled, refused, cut off by a disconnection):
    /// their bytes crossed the air all the same. On a credential characteristic each part is
    /// secret as a whole (a part alone cannot be told apart into SSID and password).
    private func flushPrepared(_ t: ConnectionTrack, why: String) {
        let parts = t.prepared.filter(\.credential)
        t.prepared.removeAll()
        for p in parts where !p.value.isEmpty {
            let name = t.preparedNames[p.handle] ?? "handle 0x\(String(p.handle, radix: 16))"
            let secret = Secret(p.value, label: "credential value").located(p.origin)
            sighting(.credentialValue, secret, at: p.record, time: p.time, connection: t, context: "\(name) prepare write, \(why)", overTheAir: true)
            t.credentialsSent.appendCapped(("part of a credential value (\(name) prepare write, \(why))", p.record, p.time, p.encrypted))
        }
    }

    // MARK: Findings

    public func finish() -> AuditReport {
        for case .open(let t) in waiting[waitingStart...] { flushPrepared(t, why: "never executed before the capture ended") }
        // Ending the first sends it and any ended after it to the report, moving `firstWaiting`.
        let pastLast = firstWaiting + waiting.count - waitingStart
        for n in firstWaiting..<pastLast where n >= firstWaiting {
            if case .open(let t) = waiting[n - firstWaiting + waitingStart] { end(t, number: n) }
        }
        var r = report
        if !r.secrets.isEmpty {
            var counts: [SecretKind: Int] = [:]
            for s in r.secrets where !s.alreadyRedacted { counts[s.kind, default: 0] += 1 }
            let redacted = r.secrets.reduce(0) { $0 + ($1.alreadyRedacted ? 1 : 0) }
            let list = SecretKind.allCases.compactMap { k in counts[k].map { "\($0) × \(k.title)" } }
            // Secrets read from a link decrypted with keys the capture gave up (a sniffed legacy
            // pairing) are ciphertext in the file: redact cannot overwrite them.
            let unlocated = r.secrets.reduce(0) { $0 + (!$1.alreadyRedacted && $1.secret.location == nil ? 1 : 0) }
            let decrypted = unlocated > 0 ? "; \(unlocated) not located in the file's bytes, which redact cannot overwrite (where gattlab decrypted a sniffed link, anyone with the file can)" : ""
            if !list.isEmpty, let first = r.secrets.first(where: { !$0.alreadyRedacted }) {
                r.findings.append(finding("capture.holds-secrets",
                    "\(list.joined(separator: ", "))\(redacted > 0 ? "; \(redacted) already redacted" : "")\(decrypted)\(droppedSightings > 0 ? "; \(droppedSightings) more not listed" : "")",
                    connection: first.connection, records: first.records, time: first.time))
            }
        }
        if !unnamedValueRecords.isEmpty {
            r.findings.append(finding("audit.unknown-handles",
                "\(unnamedWrites) writes go to handles the capture never discovered: credentials among them cannot be recognised",
                connection: nil, records: unnamedValueRecords, time: nil))
        }
        r.findings.sort(on: \.sortKey, by: Self.reportOrder)
        return r
    }

    private func finding(_ id: String, _ evidence: String, connection: String?, records: [Int], time: Int64?) -> AuditFinding {
        let rule = AuditRules.rule(id, in: catalogue)
        return AuditFinding(id: id, severity: rule.defaultSeverity, title: rule.title, evidence: evidence, fix: rule.fix,
                            connection: connection, records: records, time: time)
    }

    /// Closes the pairing in progress (a new Pairing Request or the end) into the link's list.
    private func finishPairing(_ t: ConnectionTrack) {
        if let p = pairingSummary(t) { t.link.pairings.appendCapped(p) }
        t.pairingRequest = nil
        t.pairingResponse = nil
        t.pairingFailed = nil
    }

    private func pairingSummary(_ t: ConnectionTrack) -> PairingSummary? {
        guard let req = t.pairingRequest else { return nil }
        let rsp = t.pairingResponse
        let a = req.features, b = rsp?.features
        let sc = a.secureConnections && (b?.secureConnections ?? false)
        let mitm = a.mitm || (b?.mitm ?? false)
        let method = b.map { PairingMethod.of(initiator: a, responder: $0, secureConnections: sc) } ?? "unknown (no Pairing Response)"
        return PairingSummary(secureConnections: sc, mitm: mitm, bonding: a.bonding && (b?.bonding ?? false), method: method,
                              keySize: Int(min(a.maxKeySize, b?.maxKeySize ?? a.maxKeySize)),
                              records: [req.record] + (rsp.map { [$0.record] } ?? []), failed: t.pairingFailed?.reason, time: req.time,
                              ioCapabilities: b.map { (a.ioCapabilityName, $0.ioCapabilityName) })
    }
}

/// The association model a Pairing Request and Response select (Core 5.4 Vol 3 Part H 2.3.5.1).
enum PairingMethod {
    static func of(initiator a: SMPPDU.PairingFeatures, responder b: SMPPDU.PairingFeatures, secureConnections sc: Bool) -> String {
        if sc ? (a.oobDataPresent || b.oobDataPresent) : (a.oobDataPresent && b.oobDataPresent) { return "Out of Band" }
        if !a.mitm && !b.mitm { return "Just Works" }
        let i = a.ioCapability, r = b.ioCapability
        guard i <= 4, r <= 4 else { return "Just Works" }
        if i == 3 || r == 3 { return "Just Works" }
        let pair = Set([i, r])
        switch pair {
        case [0], [0, 1]: return "Just Works"
        case [1]: return sc ? "Numeric Comparison" : "Just Works"
        case [1, 4], [4]: return sc ? "Numeric Comparison" : "Passkey Entry"
        default: return "Passkey Entry"
        }
    }
}

extension Array {
    /// Evidence lists stop growing here: findings show the first few, and a hostile capture
    /// repeating one mistake a million times must not grow memory with it.
    public mutating func appendCapped(_ element: Element, cap: Int = 256) {
        if count < cap { append(element) }
    }
}

extension AuditFinding {
    /// What the report's findings are sorted on (`Auditor.reportOrder`).
    var sortKey: (record: Int, severity: Severity) { (records.first ?? 0, severity) }
}
