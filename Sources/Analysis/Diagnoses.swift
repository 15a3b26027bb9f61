import ATT
import Capture
import HCI
import Profiles

/// The rule engine: each rule has a stable id, a severity, a title and advice, and finds its
/// evidence in a finished timeline. `Diagnoses.rules` is the catalogue (README lists it).
public enum Diagnoses {
    public struct Rule: Sendable {
        public var id: String
        public var severity: Finding.Severity
        public var title: String
        public var advice: String
        let find: @Sendable (Context) -> [Hit]

        public init(id: String, severity: Finding.Severity, title: String, advice: String, find: @escaping @Sendable (Context) -> [Hit]) {
            self.id = id
            self.severity = severity
            self.title = title
            self.advice = advice
            self.find = find
        }
    }

    /// One place a rule fired. `advice` replaces the rule's when the evidence sharpens it.
    public struct Hit {
        public var device: Int?
        public var time: Int64
        public var frames: [Int]
        public var evidence: String
        public var advice: String?
        public var title: String?
        /// A more precise id than the rule's (`protocol.status.short`).
        public var id: String?

        public init(device: Int?, time: Int64, frames: [Int], evidence: String, advice: String? = nil, title: String? = nil, id: String? = nil) {
            self.device = device
            self.time = time
            self.frames = frames
            self.evidence = evidence
            self.advice = advice
            self.title = title
            self.id = id
        }
    }

    /// What the builder knows beyond the events.
    public struct Facts {
        public var truncatedWrites: [(connection: Int, frame: Int, time: Int64, characteristic: String, length: Int, mtu: Int)]
        /// Per connection, the characteristics the phone subscribed to.
        public var subscribed: [Int: Set<BluetoothUUID>]
    }

    public struct Context {
        public var timeline: Timeline
        public var facts: Facts
        /// The protocols the rules are for.
        var protocols: [any ProtocolAnalysis.Type]
        /// Where the events of each message type are, found in one pass: a rule reads the few
        /// events it is about. Forty rules each walking every event of a day's capture was a
        /// quarter of `gattlab timeline`.
        private let index: EventIndex
        /// Every failed Wi-Fi join, read once: the rules of every protocol ask about them for
        /// each failure they see, and a day of captures holds thousands (asked of the whole
        /// timeline each time, that was quadratic: minutes at 200k records).
        let failedJoins: [Provisioning.Join]
        /// The failures among them with a precise diagnosis, by time and frames.
        private let explainedJoins: Set<EventKey>

        struct EventKey: Hashable {
            var time: Int64
            var frames: [Int]
        }

        init(timeline: Timeline, facts: Facts, protocols: [any ProtocolAnalysis.Type]) {
            self.timeline = timeline
            self.facts = facts
            self.protocols = protocols
            index = EventIndex(timeline)
            failedJoins = Provisioning.failedJoins(index.byDevice(EventIndex.merge(index.positions(carrying: index.joinReportingTypes))))
            explainedJoins = Set(failedJoins.filter { $0.failure != nil }.map { EventKey(time: $0.event.time, frames: $0.event.frames) })
        }

        public var events: TimelineEvents { timeline.events }
        /// A time as seconds from the capture's start: "12.3 s".
        public func seconds(_ t: Int64) -> String { TimelineBuilder.seconds(t - (timeline.firstTime ?? t)) }
        /// A length of time in microseconds as seconds: "4.5 s".
        public func duration(_ micros: Int64) -> String { TimelineBuilder.seconds(micros) }
        /// Whether a failed Wi-Fi join has a precise `wifi.*` diagnosis: a protocol's generic
        /// connection-failed rule leaves it to that one.
        public func isExplainedJoinFailure(_ e: TimelineEvent) -> Bool { explainedJoins.contains(EventKey(time: e.time, frames: e.frames)) }

        /// The events that carry a message of one of `types`, are of one of `kinds`, or (with
        /// `problems`) have a protocol problem, in timeline order.
        /// (Read where they are, not copied: the events with messages of a day's capture, copied
        /// for one rule, were 9 MB of the timeline's peak.)
        public func events(carrying types: [any ProfileMessage.Type], kinds: [String] = [], problems: Bool = false) -> TimelineEventSelection {
            TimelineEventSelection(timeline.events, at: selection(types, kinds, problems).map { Int32($0) })
        }

        /// A value several rules work out the same way, made by the first that asks and kept for
        /// the others: `key` names it (`<protocol>.<what>`). Each pass of a rule reads its events
        /// back from the timeline's file, so four rules that walk the same events for different
        /// codes walk them once this way.
        public func shared<T>(_ key: String, _ make: () -> T) -> T {
            if let known = index.shared[key] as? T { return known }
            let made = make()
            index.shared[key] = made
            return made
        }

        /// The events that carry a `T` (`c.events(carrying: MyProtocol.Status.self)`), in order.
        public func events<T: ProfileMessage>(carrying type: T.Type) -> TimelineEventSelection { events(carrying: [type]) }

        /// The events of one kind (`link.disconnected`), in order.
        public func events(kind: String) -> TimelineEventSelection { events(carrying: [], kinds: [kind]) }

        /// The events with a protocol problem, in order.
        public var eventsWithProblems: TimelineEventSelection { events(carrying: [], problems: true) }

        /// The events that carry any message, in order.
        public var eventsWithMessages: TimelineEventSelection { events(carrying: index.allTypes) }

        /// `events(carrying:kinds:problems:)` of each device, devices in ascending order: the
        /// rules that follow a device's state machine.
        public func eventsByDevice(carrying types: [any ProfileMessage.Type], kinds: [String] = []) -> DeviceEvents {
            index.byDevice(selection(types, kinds, false))
        }

        private func selection(_ types: [any ProfileMessage.Type], _ kinds: [String], _ problems: Bool) -> [Int] {
            var lists = index.positions(carrying: types.map { ObjectIdentifier($0) })
            for kind in kinds { lists.append(index.positions(kind: kind)) }
            if problems { lists.append(index.withProblems) }
            return EventIndex.merge(lists)
        }
    }

    /// Each device's events of a selection, devices ascending, each read as the loop reaches it
    /// (all of them at once were the peak of a large timeline's memory).
    public struct DeviceEvents: Sequence {
        let events: TimelineEvents
        /// Positions in `events`, indexed by device.
        let positions: [[Int32]]

        public struct Iterator: IteratorProtocol {
            let events: TimelineEvents
            let positions: [[Int32]]
            var device = 0
            public mutating func next() -> (device: Int, events: TimelineEventSelection)? {
                while device < positions.count, positions[device].isEmpty { device += 1 }
                guard device < positions.count else { return nil }
                defer { device += 1 }
                return (device, TimelineEventSelection(events, at: positions[device]))
            }
        }

        public func makeIterator() -> Iterator { Iterator(events: events, positions: positions) }
    }

    /// Positions in a timeline's events, by message type (built at once) and by kind (found when
    /// a rule first asks). A class: the kinds' positions are kept for the next rule that asks.
    final class EventIndex {
        private let timeline: Timeline
        private var byType: [ObjectIdentifier: [Int]] = [:]
        /// Each message type seen, in the order first seen.
        private(set) var allTypes: [any ProfileMessage.Type] = []
        private(set) var withProblems: [Int] = []
        private var byKind: [String: [Int]] = [:]
        /// What rules share (`Context.shared`), by name.
        var shared: [String: Any] = [:]

        init(_ timeline: Timeline) {
            self.timeline = timeline
            let events = timeline.events
            for i in events.indices {
                if events.hasProblems(at: i) { withProblems.append(i) }
                guard let type = events.messageType(at: i) else { continue }
                if byType[type] == nil, let metatype = events.messageMetatype(at: i) { allTypes.append(metatype) }
                byType[type, default: []].append(i)
            }
        }

        func positions(carrying types: [ObjectIdentifier]) -> [[Int]] { types.compactMap { byType[$0] } }

        func positions(kind: String) -> [Int] {
            if let known = byKind[kind] { return known }
            let found = timeline.events.positions(ofKind: kind)
            byKind[kind] = found
            return found
        }

        /// The message types seen that report Wi-Fi joins.
        var joinReportingTypes: [ObjectIdentifier] {
            allTypes.filter { $0 is any WiFiJoinReporting.Type }.map { ObjectIdentifier($0) }
        }

        /// Sorted position lists as one, in order, each position once.
        static func merge(_ lists: [[Int]]) -> [Int] {
            switch lists.count {
            case 0: return []
            case 1: return lists[0]
            default:
                var all = lists.flatMap { $0 }
                all.sort()
                var out: [Int] = []
                out.reserveCapacity(all.count)
                for p in all where out.last != p { out.append(p) }
                return out
            }
        }

        /// The events at `positions` (ascending) of each device, devices ascending.
        func byDevice(_ positions: [Int]) -> DeviceEvents {
            DeviceEvents(events: timeline.events, positions: timeline.eventPositionsByDevice(among: positions))
        }
    }

    /// No progress for longer than this during a download is a stall.
    public static let stallThreshold: Int64 = 15_000_000

    static func run(on timeline: Timeline, facts: Facts, protocols: [any ProtocolAnalysis.Type]) -> [Finding] {
        let context = Context(timeline: timeline, facts: facts, protocols: protocols)
        var findings: [Finding] = []
        for rule in rules(protocols) {
            for hit in rule.find(context) {
                findings.append(Finding(id: hit.id ?? rule.id, severity: rule.severity, title: hit.title ?? rule.title, device: hit.device,
                                        time: hit.time, frames: hit.frames, evidence: hit.evidence, advice: hit.advice ?? rule.advice))
            }
        }
        return findings.sorted { ($0.time, $0.id) < ($1.time, $1.id) }
    }

    // MARK: The catalogue

    /// Every rule: the link, ATT, GATT and Wi-Fi rules, then each protocol's own (README lists them).
    public static func rules(_ protocols: ProtocolSet) -> [Rule] {
        rules(protocols.conforming(to: (any ProtocolAnalysis.Type).self))
    }

    static func rules(_ protocols: [any ProtocolAnalysis.Type]) -> [Rule] {
        genericRules + protocols.flatMap { $0.diagnoses }
    }

    static let genericRules: [Rule] = [
        Rule(id: "att.write-truncated", severity: .error, title: "A value longer than MTU-3 was sent as a plain write",
             advice: "A Write Request carries at most MTU-3 bytes: the rest was cut. Use a long write (Prepare/Execute Write), or exchange a larger MTU first.",
             find: truncatedWrites),
        Rule(id: "att.needs-encryption", severity: .info, title: "The device needs an encrypted link",
             advice: "Insufficient Encryption: the phone should encrypt the link with its bond (or pair if it has none) and repeat the request. If it happens on every connection, one side lost the bond: remove it on the phone and pair again.",
             find: { c in securityRefusals(c, .encryption) }),
        Rule(id: "att.needs-authentication", severity: .info, title: "The device needs an authenticated link",
             advice: "Insufficient Authentication: on a link that is not encrypted the phone must pair; on one already encrypted the device wants a key made with MITM protection (passkey or numeric comparison), not Just Works.",
             find: { c in securityRefusals(c, .authentication) }),
        Rule(id: "att.key-too-short", severity: .warning, title: "The encryption key is shorter than the device requires",
             advice: "Insufficient Encryption Key Size: the link was encrypted with a key shorter than the device accepts. Pair again with a 16-byte key; a controller that negotiates 7-byte keys is what the KNOB attack looks like.",
             find: { c in securityRefusals(c, .encryptionKeySize) }),
        Rule(id: "att.not-authorized", severity: .warning, title: "The device refused the request: not authorized",
             advice: "Insufficient Authorization is the device application's own refusal (a login, a button press, a session or an allow-list it keeps), not a pairing problem: pairing again will not help. Do first what the device's protocol asks.",
             find: { c in securityRefusals(c, .authorization) }),
        Rule(id: "gatt.not-subscribed", severity: .warning, title: "Answers expected on a characteristic the phone never subscribed to",
             advice: "Write the characteristic's CCCD (enable notifications or indications) before sending the request: the device sends its answers only to subscribers.",
             find: notSubscribed),
        Rule(id: "wifi.wrong-password", severity: .error, title: "The device rejected the Wi-Fi password",
             advice: "The access point refused the passphrase (nRF7 AUTH_ERROR, ESP AuthError): have the user type it again; check its case, and that the network is WPA2/WPA3 personal, not enterprise.",
             find: { c in Provisioning.hits(c, .wrongPassword) }),
        Rule(id: "wifi.ap-not-found", severity: .error, title: "The device did not find the Wi-Fi network",
             advice: "No access point with that SSID answered (nRF7 NETWORK_NOT_FOUND, ESP NetworkNotFound): check the spelling (SSIDs are case-sensitive) and that the device is in range; offer the networks from the device's own scan instead of typed names.",
             find: { c in Provisioning.hits(c, .apNotFound) }),
        Rule(id: "wifi.5ghz-only-ssid", severity: .error, title: "The SSID is on 5 GHz only and the device joins 2.4 GHz",
             advice: "The device's radio (ESP32, or firmware limited to 2.4 GHz) cannot see a 5 GHz-only network: give it the router's 2.4 GHz SSID, or enable 2.4 GHz (band steering with one SSID for both bands) on the access point.",
             find: { c in Provisioning.hits(c, .fiveGHzOnly) }),
        Rule(id: "link.never-established", severity: .error, title: "The connection was never established",
             advice: "The device did not answer the connection request: out of range, advertising stopped, or already connected to another phone.",
             find: neverEstablished),
        Rule(id: "protocol.problem", severity: .warning, title: "A message the protocol does not allow",
             advice: "See the problem's id: the device or app sent bytes outside the protocol's layout.",
             find: protocolProblems),
    ]

    // MARK: ATT and GATT rules

    static func truncatedWrites(_ c: Context) -> [Hit] {
        c.facts.truncatedWrites.map { w in
            Hit(device: c.timeline.connections[w.connection].device, time: w.time, frames: [w.frame],
                evidence: "\(w.characteristic): a Write of \(w.length) bytes at MTU \(w.mtu) (at most \(w.mtu - 3) fit) at \(c.seconds(w.time)); the value looks cut")
        }
    }

    /// One finding per connection and kind of security refusal, with what the link's encryption
    /// actually was: "never paired" is said only of a link that was never encrypted.
    static func securityRefusals(_ c: Context, _ requirement: ATTErrorCode.SecurityRequirement) -> [Hit] {
        var hits: [Hit] = []
        var seen = Set<Int>()
        for e in c.events(kind: "att.error") {
            guard case .string(requirement.rawValue)? = e.fields.first(where: { $0.name == "security" })?.value, let conn = e.connection,
                  seen.insert(conn).inserted else { continue }
            let connection = c.timeline.connections[conn]
            let error = e.string("error") ?? ""
            let characteristic = e.string("characteristic") ?? ""
            let encryptedThen = { if case .bool(true)? = e.fields.first(where: { $0.name == "encrypted" })?.value { true } else { false } }()
            let key = connection.keySize.map { " (\($0)-byte key)" } ?? ""
            var evidence = "\(error) on \(characteristic) at \(c.seconds(e.time))"
            var title: String?
            var advice: String?
            if encryptedThen {
                evidence += "; the link was encrypted at the time\(key)"
                switch requirement {
                case .authentication:
                    title = "The device needs a stronger pairing than the link has"
                    advice = "The link was already encrypted, so the device wants a key made with MITM protection: pair with passkey entry or numeric comparison (LE Secure Connections) instead of Just Works."
                case .encryption:
                    title = "The device refused on a link the capture shows encrypted"
                    advice = "Insufficient Encryption on an encrypted link: the device and phone disagree about the link's state (a race right after encryption started, or a firmware bug); repeat the request once the encryption change is complete."
                default: break
                }
            } else if let at = connection.encryptedAt, at >= e.time {
                evidence += "; the link was encrypted \(TimelineBuilder.seconds(at - e.time)) later\(key)"
            } else {
                let pairingFailed = c.events(kind: "link.pairing-failed").contains { $0.device == connection.device && $0.connection == conn }
                evidence += pairingFailed ? "; pairing was attempted and failed, and the link was never encrypted"
                                          : "; the link was never encrypted afterwards"
                if requirement == .authentication || requirement == .encryption {
                    title = pairingFailed ? "The device needs pairing and pairing failed" : "The device needs pairing and the phone never paired"
                }
            }
            hits.append(Hit(device: connection.device, time: e.time, frames: e.frames, evidence: evidence, advice: advice, title: title))
        }
        return hits
    }

    static func notSubscribed(_ c: Context) -> [Hit] {
        var hits: [Hit] = []
        var reported = Set<Int>()
        for e in c.eventsWithMessages {
            guard let conn = e.connection, !reported.contains(conn) else { continue }
            guard let message = e.message,
                  let (uuid, name) = c.protocols.lazy.compactMap({ $0.answersNeedSubscription(to: message) }).first,
                  c.facts.subscribed[conn]?.contains(uuid) != true else { continue }
            reported.insert(conn)
            hits.append(Hit(device: e.device, time: e.time, frames: e.frames,
                            evidence: "\(e.summary) at \(c.seconds(e.time)) with no subscription to \(name) on this connection"))
        }
        return hits
    }

    // MARK: Link and protocol rules

    static func neverEstablished(_ c: Context) -> [Hit] {
        c.events(carrying: [], kinds: ["link.connect-failed", "link.disconnected"]).compactMap { e in
            guard e.kind == "link.connect-failed" || (e.kind == "link.disconnected" && e.fields.contains { $0.name == "code" && { if case .int(0x3E) = $0.value { true } else { false } }($0) })
            else { return nil }
            return Hit(device: e.device, time: e.time, frames: e.frames, evidence: "\(e.summary) at \(c.seconds(e.time))")
        }
    }

    /// Problems the codecs report (over-long fields, missing NUL, short status, unknown codes,
    /// too many networks, malformed lines...), one finding per problem id and device, titled by
    /// the problem, except those a protocol tells elsewhere (a scan's truncation has its own rule).
    static func protocolProblems(_ c: Context) -> [Hit] {
        var hits: [Hit] = []
        var counts: [String: Int] = [:]
        let withProblems = c.eventsWithProblems
        for e in withProblems {
            for p in e.problems { counts["\(e.device ?? -1)/\(p.id)", default: 0] += 1 }
        }
        let toldElsewhere = Set(c.protocols.flatMap { $0.problemsToldElsewhere })
        var seen = Set<String>()
        for e in withProblems {
            for p in e.problems where !toldElsewhere.contains(p.id) {
                let key = "\(e.device ?? -1)/\(p.id)"
                guard seen.insert(key).inserted else { continue }
                let count = counts[key] ?? 1
                hits.append(Hit(device: e.device, time: e.time, frames: e.frames,
                                evidence: "\(p.id): \(p.message) (\(e.kind) at \(c.seconds(e.time))\(count > 1 ? "; \(count) times" : ""))",
                                title: p.message, id: "protocol.\(p.id)"))
            }
        }
        return hits
    }
}
