import ATT
import Foundation
import Capture
import GATT
import HCI
import Profiles

/// Builds a `Timeline` from the pipeline's events, record by record: the link story of every
/// connection, the device protocols' events, and the phases (and download progress) their
/// trackers see. `finish()` closes what is open and runs the diagnoses. Memory grows with the
/// story (events, not PDUs), capped at `maxEvents`.
public final class TimelineBuilder {
    public static let maxEvents = 200_000
    /// Silence on a live connection longer than this is a gap worth showing.
    public static let gapThreshold: Int64 = 10_000_000

    private var timeline: Timeline
    private var deviceByAddress: [String: Int] = [:]
    private var liveConnection: [ConnectionKey: Int] = [:]
    /// The last connection each key had: protocol events a disconnection flushes (a scan answer
    /// cut short) belong to the connection that just ended.
    private var lastConnection: [ConnectionKey: Int] = [:]
    /// Open connections as values, by id: every record on a link updates its connection, while
    /// `timeline.connections` holds each encoded, as it was when it opened until it closes.
    private var openConnections: [Int: TimelineConnection] = [:]
    private var lastActivity: [Int: (time: Int64, frame: Int)] = [:]
    /// Per device, the phase trackers of the protocols it speaks, by protocol name.
    private var trackers: [Int: [String: any PhaseTracking]] = [:]
    private var rebootAt: [Int: (time: Int64, frame: Int, connection: Int)] = [:]
    /// Per connection: the last plain write (frame, handle, value length, MTU) and subscriptions.
    private(set) var lastWrite: [Int: (frame: Int, handle: UInt16, length: Int, mtu: Int)] = [:]
    var subscribed: [Int: Set<BluetoothUUID>] = [:]
    /// Connections whose undecrypted traffic has its timeline line already (decode lists each PDU).
    private var encryptedTold: Set<Int> = []
    /// Writes of a value longer than MTU-3 done as a plain Write Request or Command.
    var truncatedWrites: [(connection: Int, frame: Int, time: Int64, characteristic: String, length: Int, mtu: Int)] = []
    /// The peer of the last LE Create Connection, unless it went through the accept list.
    private var connectTarget: BDAddr?
    /// Failed or cancelled accept-list attempts, held until a device connects (they were for it);
    /// those left at the end belong to no device.
    private var unattributedAttempts: [TimelineEvent] = []
    static let maxUnattributedAttempts = 1000
    /// Advertising per address (bounded) and connection attempts, for the advertising diagnoses.
    var advertising: AdvertisingTracker
    var connectAttempts: [AdvertisingDiagnoses.Attempt] = []
    static let maxConnectAttempts = 1000
    /// The protocols' analysis hooks, in registration order, and by protocol name.
    private let protocols: [any ProtocolAnalysis.Type]
    private let analysis: [String: any ProtocolAnalysis.Type]

    /// Called with each event as it is added, for live output (`gattlab capture --live --timeline`).
    /// Events come in the order they are found: a gap is told when the silence ends.
    public var onEvent: ((TimelineEvent) -> Void)?

    /// `protocols`: the device protocols whose events the timeline tells and whose advertised
    /// services name a device's protocol.
    public init(source: String, format: String, protocols: ProtocolSet) {
        timeline = Timeline(source: source, format: format, records: 0)
        advertising = AdvertisingTracker(protocols: protocols)
        self.protocols = protocols.conforming(to: (any ProtocolAnalysis.Type).self)
        analysis = Dictionary(self.protocols.map { ($0.name, $0) }) { first, _ in first }
    }

    // MARK: Input

    public func consume(_ record: CaptureRecord, gatt: [GATTEvent], profile: [ProfileEvent]) {
        timeline.records = record.number
        let t = Self.clamp(record.timestamp)
        if timeline.firstTime == nil { timeline.firstTime = t }
        timeline.lastTime = max(timeline.lastTime ?? t, t)
        for e in gatt { consume(e, record: record, time: t) }
        for e in profile { consume(e) }
    }

    /// Timestamps come from files and can be anything: held to ±2^61 µs (73,000 years) so that
    /// every difference the timeline and the rules take fits in an Int64.
    static func clamp(_ t: Int64) -> Int64 { min(max(t, -(1 << 61)), 1 << 61) }

    private func add(_ e: TimelineEvent) {
        if let d = e.device, Self.isFailedConnection(e), let address = timeline.devices[d].address {
            advertising.noteFailure(address: address, time: e.time, frame: e.frames.first ?? 0)
        }
        onEvent?(e)
        guard timeline.events.count < Self.maxEvents else {
            timeline.droppedEvents += 1
            return
        }
        // Doubling would reserve 262,144 places for the last 68,856 events the cap lets in.
        if timeline.events.count == timeline.events.capacity, timeline.events.count >= Self.maxEvents / 2 {
            timeline.events.reserveCapacity(Self.maxEvents)
        }
        timeline.events.append(e)
    }

    /// Handle 0x0EDC of an HCI log carries a Qualcomm controller's own diagnostics, whatever
    /// its bytes look like (L2CAP, ATT...): no connection, unless the log made one with it.
    private func isVendorDiagnostics(_ key: ConnectionKey) -> Bool {
        key.isVendorDiagnostics && liveConnection[key] == nil
    }

    /// A connection that failed: an attempt that failed, or a link never established (0x3E) or
    /// lost to a supervision timeout (0x08). The weak-signal diagnosis judges the signal before them.
    static func isFailedConnection(_ e: TimelineEvent) -> Bool {
        if e.kind == "link.connect-failed" { return true }
        guard e.kind == "link.disconnected" else { return false }
        return e.fields.contains { f in
            if f.name == "code", case .int(let c) = f.value { return c == 0x3E || c == 0x08 }
            return false
        }
    }

    // MARK: Devices and connections

    private func deviceKey(_ info: ConnectionInfo) -> String {
        if let a = info.peerAddress ?? info.peripheralAddress { return a.description }
        return "connection \(info.key)"
    }

    private func device(for key: String, address: String?, time: Int64) -> Int {
        if let d = deviceByAddress[key] { return d }
        let id = timeline.devices.count
        timeline.devices.append(TimelineDevice(id: id, address: address, start: time, end: time))
        deviceByAddress[key] = id
        return id
    }

    @discardableResult
    private func open(_ info: ConnectionInfo, time: Int64, frame: Int, implicit: Bool) -> Int {
        let address = (info.peerAddress ?? info.peripheralAddress)?.description
        let d = device(for: deviceKey(info), address: address, time: time)
        let id = timeline.connections.count
        var c = TimelineConnection(id: id, device: d, key: info.key, start: time, firstFrame: frame, lastFrame: frame)
        c.implicit = implicit
        c.classic = info.classic
        timeline.connections.append(c)
        openConnections[id] = c
        timeline.devices[d].connections.append(id)
        liveConnection[info.key] = id
        // Only a key's last connection can still get a protocol event with a write to match.
        if let previous = lastConnection[info.key] { lastWrite[previous] = nil }
        lastConnection[info.key] = id
        lastActivity[id] = (time, frame)
        if let r = rebootAt[d] {
            add(TimelineEvent(time: time, device: d, connection: id, lane: .link, kind: "link.reconnected",
                              summary: "reconnected \(Self.seconds(time - r.time)) after REBOOT",
                              fields: [Field("afterReboot", .double(Double(time - r.time) / 1e6))], frames: [frame]))
            timeline.phases.append(Phase(device: d, connection: r.connection, name: "reboot", start: r.time, end: time,
                                         outcome: .ok, detail: "link dropped and came back", firstFrame: r.frame, lastFrame: frame))
            rebootAt[d] = nil
        }
        return id
    }

    /// Connection `c` as it stands now.
    private func connectionValue(_ c: Int) -> TimelineConnection {
        openConnections[c] ?? timeline.connections[c]
    }

    /// Changes connection `c`: in place while it is open, else written anew to the timeline's list.
    private func update(_ c: Int, _ change: (inout TimelineConnection) -> Void) {
        if openConnections[c] != nil {
            change(&openConnections[c]!)
        } else {
            var connection = timeline.connections[c]
            change(&connection)
            timeline.connections.replace(at: c, with: connection)
        }
    }

    /// Connection `c` has ended: written to the timeline's list as it ended, and what was kept
    /// per open connection let go.
    private func close(_ c: Int) {
        guard let connection = openConnections.removeValue(forKey: c) else { return }
        timeline.connections.replace(at: c, with: connection)
        lastActivity[c] = nil
        encryptedTold.remove(c)
    }

    /// The live connection for a key, opened implicitly when the capture started after it.
    private func connection(_ key: ConnectionKey, time: Int64, frame: Int) -> Int {
        if let c = liveConnection[key] { return c }
        var info = ConnectionInfo(key: key, frame: frame, time: time)
        info.implicit = true
        let id = open(info, time: time, frame: frame, implicit: true)
        add(TimelineEvent(time: time, device: connectionValue(id).device, connection: id, lane: .link,
                          kind: "link.already-connected", summary: "connection \(key) already up when the capture started",
                          fields: [Field("handle", .string(key.description))], frames: [frame]))
        return id
    }

    private func touch(_ c: Int, time: Int64, frame: Int) {
        if let last = lastActivity[c], time - last.time > Self.gapThreshold {
            add(TimelineEvent(time: last.time, device: connectionValue(c).device, connection: c, lane: .link, kind: "link.gap",
                              summary: "no traffic for \(Self.seconds(time - last.time))",
                              fields: [Field("seconds", .double(Double(time - last.time) / 1e6))], frames: [last.frame, frame]))
        }
        lastActivity[c] = (time, frame)
        update(c) { $0.lastFrame = frame }
        let d = connectionValue(c).device
        timeline.devices[d].end = max(timeline.devices[d].end, time)
    }

    // MARK: Link and GATT events

    private func consume(_ event: GATTEvent, record: CaptureRecord, time t: Int64) {
        let f = record.number
        switch event {
        case .link(let link):
            consumeLink(link, time: t, frame: f)
        case .att(let a):
            // Vendor diagnostics whose bytes happen to read as ATT (CID 4) are no connection.
            if isVendorDiagnostics(a.connection) { break }
            let c = connection(a.connection, time: t, frame: f)
            touch(c, time: t, frame: f)
            update(c) { $0.carriedATT = true }
            consumeATT(a, connection: c, time: t, frame: f)
        case .operation(let op):
            switch op {
            case .mtuExchanged(let key, _, _, _) where isVendorDiagnostics(key), .subscription(let key, _, _, _, _) where isVendorDiagnostics(key):
                break
            case .mtuExchanged(let key, let client, let server, let mtu):
                let c = connection(key, time: t, frame: f)
                update(c) { $0.mtu = mtu }
                add(TimelineEvent(time: t, device: connectionValue(c).device, connection: c, lane: .link, kind: "link.mtu",
                                  summary: "MTU \(mtu) (phone \(client), device \(server))",
                                  fields: [Field("mtu", .int(mtu)), Field("client", .int(Int(client))), Field("server", .int(Int(server)))],
                                  frames: [f]))
            case .subscription(let key, _, let characteristic, let notify, let indicate):
                let c = connection(key, time: t, frame: f)
                guard let characteristic else { break }
                if notify || indicate { subscribed[c, default: []].insert(characteristic) } else { subscribed[c]?.remove(characteristic) }
                let what = notify && indicate ? "notifications and indications" : notify ? "notifications" : indicate ? "indications" : "off"
                add(TimelineEvent(time: t, device: connectionValue(c).device, connection: c, lane: .link, kind: "gatt.subscribe",
                                  summary: "subscribed to \(KnownUUIDs.name(characteristic) ?? characteristic.description): \(what)",
                                  fields: [Field("characteristic", .string(KnownUUIDs.name(characteristic) ?? characteristic.description)),
                                           Field("notify", .bool(notify)), Field("indicate", .bool(indicate))], frames: [f]))
            default:
                break
            }
        }
    }

    private func consumeLink(_ link: LinkEvent, time t: Int64, frame f: Int) {
        // ACL data on the vendor diagnostics handle that reads as SMP (CID 6) is no pairing on a
        // link (ATT and other channels are left out where they are handled).
        if case .smp(let key, _, _) = link, isVendorDiagnostics(key) { return }
        switch link {
        case .advertising(let r):
            advertising.add(r, time: t, frame: f)
        case .createConnection(let peer, let peerType):
            // All zeros: the initiator filter policy is the accept list, so the peer is whichever
            // listed device answers first; the attempt belongs to the device that connects.
            connectTarget = peer.isZero ? nil : peer
            if connectAttempts.count < Self.maxConnectAttempts {
                connectAttempts.append(.init(peer: peer, peerType: peerType, time: t, frame: f))
            }
        case .connectionComplete(let info):
            // A CONNECT_IND a sniffer saw is the attempt itself.
            if let p = info.peripheralAddress, info.centralAddress != nil, connectAttempts.count < Self.maxConnectAttempts {
                connectAttempts.append(.init(peer: p, peerType: nil, time: t, frame: f))
            }
            if let old = liveConnection[info.key] {
                liveConnection[info.key] = nil
                update(old) { $0.end = t }
                close(old)
            }
            let c = open(info, time: t, frame: f, implicit: false)
            connectTarget = nil
            for var attempt in unattributedAttempts {
                attempt.device = connectionValue(c).device
                add(attempt)
            }
            unattributedAttempts.removeAll()
            let addr = (info.peerAddress ?? info.peripheralAddress)?.description ?? "unknown address"
            var fields = [Field("handle", .string(info.key.description)), Field("address", .string(addr))]
            var summary = "connected to \(addr)"
            if let i = info.interval {
                fields.append(Field("intervalMs", .double(Double(i) * 1.25)))
                summary += ", interval \(Self.intervalMilliseconds(Int(i))) ms"
            }
            add(TimelineEvent(time: t, device: connectionValue(c).device, connection: c, lane: .link, kind: "link.connected",
                              summary: summary, fields: fields, frames: [f]))
        case .connectionFailed(let status, let reported):
            // A failed or cancelled attempt reports the peer it was made for, or all zeros when
            // it went through the accept list (or the controller does not say): then the device
            // is the one the host asked for, or the one that connects next.
            let peer = reported.flatMap { $0.isZero ? nil : $0 } ?? connectTarget
            // 0x02 is what a cancelled LE Create Connection reports: the host gave up, nothing failed.
            let cancelled = status.rawValue == 0x02
            var fields = [Field("code", .int(Int(status.rawValue))), Field("reason", .string(status.name))]
            if peer == nil { fields.append(Field("acceptList", .bool(true))) }
            let what = peer == nil ? "connection attempt through the accept list" : "connection attempt"
            let event = TimelineEvent(time: t, device: nil, connection: nil, lane: .link, kind: cancelled ? "link.connect-cancelled" : "link.connect-failed",
                                      summary: cancelled ? "\(what) cancelled by the host"
                                                         : "\(what) failed: \(status.name) (0x\(Hex.string([status.rawValue]))): \(Meanings.disconnect(status))",
                                      fields: fields, frames: [f])
            if let peer {
                var e = event
                e.device = device(for: peer.description, address: peer.description, time: t)
                add(e)
            } else if unattributedAttempts.count < Self.maxUnattributedAttempts {
                unattributedAttempts.append(event)
            } else {
                add(event)
            }
        case .disconnection(let info, let reason):
            let c = connection(info.key, time: t, frame: f)
            touch(c, time: t, frame: f)
            update(c) { connection in
                connection.end = t
                connection.disconnectReason = reason
                connection.hostDisconnectReason = info.hostDisconnectReason
            }
            liveConnection[info.key] = nil
            let code = "\(reason.name) (0x\(Hex.string([reason.rawValue])))"
            var fields = [Field("code", .int(Int(reason.rawValue))), Field("reason", .string(reason.name))]
            let summary: String
            if let host = info.hostDisconnectReason {
                // The host's own command says who ended the link; the event's code is the
                // controller's (0x16 from real ones, 0x13 from Bumble's virtual controller).
                let meaning = Meanings.disconnectedByHost(host)
                summary = "disconnected by this host: it sent Disconnect (\(host.name), 0x\(Hex.string([host.rawValue]))); the controller reported \(code)"
                fields += [Field("meaning", .string(meaning)), Field("endedBy", .string("host")),
                           Field("hostCode", .int(Int(host.rawValue))), Field("hostReason", .string(host.name))]
            } else {
                summary = "disconnected: \(code): \(Meanings.disconnect(reason))"
                fields.append(Field("meaning", .string(Meanings.disconnect(reason))))
            }
            add(TimelineEvent(time: t, device: connectionValue(c).device, connection: c, lane: .link, kind: "link.disconnected",
                              summary: summary, fields: fields, frames: [f]))
            linkEnded(connection: c, time: t, frame: f)
            close(c)
        case .encryptionChange(let key, let enabled, let status, let keySize):
            let c = connection(key, time: t, frame: f)
            touch(c, time: t, frame: f)
            if status.rawValue == 0 {
                update(c) { connection in
                    connection.encrypted = enabled
                    if let keySize { connection.keySize = Int(keySize) }
                    if enabled, connection.encryptedAt == nil { connection.encryptedAt = t }
                }
            }
            var fields = [Field("enabled", .bool(enabled)), Field("status", .string(status.name))]
            if let keySize { fields.append(Field("keySize", .int(Int(keySize)))) }
            let summary = status.rawValue != 0 ? "encryption failed: \(status.name)"
                : enabled ? "link encrypted" + (keySize.map { " (\($0)-byte key)" } ?? "") : "encryption off"
            add(TimelineEvent(time: t, device: connectionValue(c).device, connection: c, lane: .link, kind: "link.encryption",
                              summary: summary, fields: fields, frames: [f]))
        case .smp(let key, _, let pdu):
            let c = connection(key, time: t, frame: f)
            touch(c, time: t, frame: f)
            switch pdu {
            case .pairingRequest:
                update(c) { $0.paired = true }
                add(TimelineEvent(time: t, device: connectionValue(c).device, connection: c, lane: .link, kind: "link.pairing",
                                  summary: "pairing started", fields: [], frames: [f]))
            case .pairingFailed(let reason):
                add(TimelineEvent(time: t, device: connectionValue(c).device, connection: c, lane: .link, kind: "link.pairing-failed",
                                  summary: "pairing failed (SMP reason 0x\(Hex.string([reason])))",
                                  fields: [Field("reason", .int(Int(reason)))], frames: [f]))
            default:
                update(c) { $0.paired = true }
            }
        case .encrypted(let key, _, let pdu):
            let c = connection(key, time: t, frame: f)
            touch(c, time: t, frame: f)
            // The link's story: undecryptable from here on, or the key was wrong. Single PDUs
            // that failed (damaged on air) are decode's to list.
            switch pdu.reason {
            case .keyLikelyWrong:
                add(TimelineEvent(time: t, device: connectionValue(c).device, connection: c, lane: .link, kind: "link.ltk-wrong",
                                  summary: pdu.reasonText, fields: [Field("reason", .string(pdu.reasonName))], frames: [f]))
            case .noKey, .noKeyExchange:
                guard encryptedTold.insert(c).inserted else { break }
                add(TimelineEvent(time: t, device: connectionValue(c).device, connection: c, lane: .link, kind: "link.encrypted-traffic",
                                  summary: "encrypted traffic: \(pdu.reasonText)",
                                  fields: [Field("reason", .string(pdu.reasonName))], frames: [f]))
            case .micFailed, .keyRejected, .damaged:
                break
            }
        case .decrypting(let key):
            let c = connection(key, time: t, frame: f)
            touch(c, time: t, frame: f)
            add(TimelineEvent(time: t, device: connectionValue(c).device, connection: c, lane: .link, kind: "link.decrypted",
                              summary: "LTK verified: the encrypted link is decrypted", fields: [], frames: [f]))
        case .connectionUpdate(let key, let interval, let latency, let timeout):
            let c = connection(key, time: t, frame: f)
            add(TimelineEvent(time: t, device: connectionValue(c).device, connection: c, lane: .link, kind: "link.parameters",
                              summary: "interval \(Self.intervalMilliseconds(Int(interval))) ms, latency \(latency), timeout \(Int(timeout) * 10) ms",
                              fields: [Field("intervalMs", .double(Double(interval) * 1.25)), Field("latency", .int(Int(latency))),
                                       Field("timeoutMs", .int(Int(timeout) * 10))], frames: [f]))
        case .l2cap(let key, _, _), .signalling(let key, _, _, _):
            // Traffic on any channel (RFCOMM, AVDTP, SDP... on classic links) keeps a link alive:
            // no "no traffic" gap over a busy connection. Vendor diagnostics are not a
            // connection; over the air, a data PDU on an access address never seen connecting is
            // as likely noise as a link: only ATT opens one there.
            if isVendorDiagnostics(key) || (liveConnection[key] == nil && key.isLinkLayer) { break }
            touch(connection(key, time: t, frame: f), time: t, frame: f)
        case .encryptionKeySize(let key, let size):
            if let c = liveConnection[key] { update(c) { $0.keySize = Int(size) } }
        default:
            break
        }
    }

    private func consumeATT(_ a: ATTEvent, connection c: Int, time t: Int64, frame f: Int) {
        guard let pdu = a.pdu else { return }
        let characteristic = a.info?.characteristic.map { KnownUUIDs.name($0) ?? $0.description }
        switch pdu {
        case .writeRequest(let h, let v), .writeCommand(let h, let v):
            lastWrite[c] = (f, h, v.count, a.mtu)
        case .errorResponse(let request, let handle, let error):
            let name = characteristic ?? "handle 0x\(Hex.string([UInt8(handle >> 8), UInt8(handle & 0xFF)]))"
            // Discovery ends with Attribute Not Found by design: not part of the story.
            guard error != .attributeNotFound else { return }
            add(TimelineEvent(time: t, device: connectionValue(c).device, connection: c, lane: .link, kind: "att.error",
                              summary: "\(ATTOpcode.name(for: request)) on \(name): \(error)",
                              fields: [Field("request", .string(ATTOpcode.name(for: request))), Field("handle", .int(Int(handle))),
                                       Field("characteristic", .string(name)), Field("error", .string("\(error)")),
                                       Field("pairFirst", .bool(error.meansPairFirst)),
                                       Field("security", .string(error.securityRequirement?.rawValue ?? "")),
                                       Field("encrypted", .bool(connectionValue(c).encrypted))], frames: [f]))
        case .readResponse(let v) where a.info?.uuid.uuid16 == 0x2A00:
            let d = connectionValue(c).device
            if timeline.devices[d].name == nil { timeline.devices[d].name = ProtocolText.display(v) }
        case .readByGroupTypeResponse(_, let entries) where a.direction != .sent && a.direction != .centralToPeripheral:
            // Only service discovery reads by group type (0x2800/0x2801): each entry's value is a
            // service UUID. Only the device's own answers count: a phone is a GATT server too
            // (an iPhone offers ANCS and AMS to a watch), and its services are not the device's.
            let d = connectionValue(c).device
            for e in entries {
                if let uuid = BluetoothUUID(littleEndianBytes: e.value), !timeline.devices[d].services.contains(uuid) {
                    timeline.devices[d].services.append(uuid)
                }
            }
        default:
            break
        }
    }

    // MARK: Protocol events

    private func consume(_ e: ProfileEvent) {
        let time = Self.clamp(e.time)
        let c = liveConnection[e.connection] ?? lastConnection[e.connection] ?? connection(e.connection, time: time, frame: e.frame)
        let d = connectionValue(c).device
        if !timeline.devices[d].protocols.contains(e.protocolName) { timeline.devices[d].protocols.append(e.protocolName) }
        let frames = e.firstFrame == e.frame ? [e.frame] : [e.firstFrame, e.frame]
        let hooks = analysis[e.protocolName]
        let lane = hooks?.lane ?? .provisioning
        add(TimelineEvent(time: time, device: d, connection: c, lane: lane, kind: e.kind, frames: frames, message: e.message, problems: e.problems))
        if let w = lastWrite[c], w.frame == e.frame, w.length >= connectionValue(c).mtu - 3, e.firstFrame == e.frame,
           hooks?.isWholeValueWrite(e) == true {
            truncatedWrites.append((c, e.frame, time, KnownUUIDs.name(e.characteristic) ?? e.characteristic.description, w.length,
                                    connectionValue(c).mtu))
        }
        guard let hooks, let message = e.message else { return }
        if trackers[d]?[hooks.name] == nil, let tracker = hooks.phaseTracker(device: d) { trackers[d, default: [:]][hooks.name] = tracker }
        trackers[d]?[hooks.name]?.add(message, connection: c, time: time, frame: e.frame, to: &timeline)
        if hooks.asksToReboot(message) { rebootAt[d] = (time, e.frame, c) }
    }

    private func linkEnded(connection c: Int, time t: Int64, frame f: Int) {
        let d = connectionValue(c).device
        for p in protocols { trackers[d]?[p.name]?.linkEnded(connection: c, time: t, frame: f, to: &timeline) }
    }

    // MARK: Finish

    /// Closes open phases, sums up each device and runs the diagnoses.
    public func finish() -> Timeline {
        let end = timeline.lastTime ?? 0
        for c in openConnections.keys.sorted() { close(c) }
        for attempt in unattributedAttempts { add(attempt) }
        unattributedAttempts.removeAll()
        for d in trackers.keys.sorted() {
            for p in protocols { trackers[d]?[p.name]?.finish(at: end, to: &timeline) }
        }
        for (d, r) in rebootAt {
            timeline.phases.append(Phase(device: d, connection: r.connection, name: "reboot", start: r.time, end: max(r.time, end),
                                         outcome: .open, detail: "no reconnection in the capture", firstFrame: r.frame, lastFrame: r.frame))
        }
        timeline.phases += Provisioning.phases(timeline, protocols: protocols)
        timeline.phases.sort(on: { ($0.start, $0.device) }, by: <)
        timeline.events.sortByTime()  // stable: gap events were added late
        addAdvertising()
        var result = timeline
        result.findings = Diagnoses.run(on: result, facts: Diagnoses.Facts(truncatedWrites: truncatedWrites, subscribed: subscribed),
                                        protocols: protocols)
        result.findings += AdvertisingDiagnoses.run(on: result, attempts: connectAttempts)
        Summaries.summarise(&result, protocols: protocols)
        for d in result.devices.indices where result.devices[d].connections.isEmpty {
            guard let a = result.devices[d].advertising else { continue }
            let failed = result.devices[d].summary
            result.devices[d].summary = "seen only advertising (\(a.reports) report\(a.reports == 1 ? "" : "s")), never connected"
                + (a.protocols.isEmpty ? "" : "; advertises \(a.protocols.joined(separator: ", "))")
                + (result.events.indices.contains { result.events.device(at: $0) == d } ? "; " + failed : "")
        }
        return result
    }

    /// Attaches advertising to the devices it belongs to, and lists the most relevant devices
    /// seen only advertising (a device protocol's service, connectable, named, heard often);
    /// the rest are only counted, so a capture of thousands of advertisers stays readable.
    private func addAdvertising() {
        guard advertising.overview.reports > 0 else { return }
        var overview = advertising.overview
        var alone: [(String, DeviceAdvertising)] = []
        for (address, a) in advertising.summaries() {
            if let d = deviceByAddress[address] {
                timeline.devices[d].advertising = a
            } else {
                alone.append((address, a))
            }
        }
        overview.advertisers = advertising.tracks.count
        alone.sort { a, b in
            a.1.relevance != b.1.relevance ? a.1.relevance > b.1.relevance : a.1.firstSeen < b.1.firstSeen
        }
        let shown = alone.prefix(AdvertisingTracker.maxShownAdvertisers).sorted { $0.1.firstSeen < $1.1.firstSeen }
        for (address, a) in shown {
            let d = device(for: address, address: address, time: a.firstSeen)
            timeline.devices[d].end = max(timeline.devices[d].end, a.lastSeen)
            timeline.devices[d].name = timeline.devices[d].name ?? a.names.first
            timeline.devices[d].advertising = a
        }
        overview.shown = shown.count
        overview.hidden = alone.count - shown.count
        timeline.advertising = overview
    }

    // MARK: Formatting helpers

    public static func decimal(_ v: Double, _ places: Int) -> String {
        var s = String(format: "%.\(places)f", v)
        if s.contains(".") {
            while s.hasSuffix("0") { s.removeLast() }
            if s.hasSuffix(".") { s.removeLast() }
        }
        return s
    }

    /// A connection interval in milliseconds, from the 1.25 ms units HCI gives it: what
    /// `decimal(Double(units) * 1.25, 2)` prints (the value is exact in hundredths), without
    /// `String(format:)`, which was 2% of a day's timeline.
    static func intervalMilliseconds(_ units: Int) -> String {
        let hundredths = units.magnitude * 125
        let whole = "\(units < 0 ? "-" : "")\(hundredths / 100)"
        switch hundredths % 100 {
        case 0: return whole
        case let f where f % 10 == 0: return "\(whole).\(f / 10)"
        case let f: return "\(whole).\(f < 10 ? "0" : "")\(f)"
        }
    }

    /// "4.5 s": tenths of a second as `%.1f` prints them, trailing zero dropped. Integer
    /// rounding gives the same digits except at an exact half (where the binary value of
    /// micros/1e6 decides) and for huge values: those go through `decimal`. (`String(format:)`
    /// for every event's time was 3% of a day's timeline.)
    static func seconds(_ micros: Int64) -> String {
        let m = micros.magnitude
        guard m < 1_000_000_000_000_000, m % 100_000 != 50_000 else { return decimal(Double(micros) / 1e6, 1) + " s" }
        let tenths = (m + 50_000) / 100_000
        let text = tenths % 10 == 0 ? "\(tenths / 10)" : "\(tenths / 10).\(tenths % 10)"
        return (micros < 0 ? "-" : "") + text + " s"
    }
}
