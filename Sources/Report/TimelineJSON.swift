import Analysis
import Capture
import Profiles
import HCI

/// How a renderer shows times and secrets.
public struct RenderOptions: Sendable {
    /// Show secrets (passwords, keys) instead of `<redacted:N bytes>`.
    public var reveal = false
    /// Add UTC times (ISO 8601) beside the relative ones.
    public var absoluteTime = false
    /// Indented JSON (the committed expected timelines use it, so diffs read well).
    public var pretty = false
    public init(reveal: Bool = false, absoluteTime: Bool = false, pretty: Bool = false) {
        self.reveal = reveal
        self.absoluteTime = absoluteTime
        self.pretty = pretty
    }
}

/// `gattlab timeline --format json`: one document per capture with `devices`, `connections`,
/// `phases`, `progress`, `events` and `findings` (schema in the README). Times are seconds since
/// the capture's first record.
public enum TimelineJSON {
    public static let schema = 1

    public static func render(_ t: Timeline, options: RenderOptions = .init()) -> String {
        var w = JSONWriter(pretty: options.pretty)
        write(t, options: options, into: &w)
        return w.text
    }

    /// Several captures in one document: `{"captures": [...], "summary": [...]}`.
    public static func render(_ timelines: [Timeline], options: RenderOptions = .init()) -> String {
        var w = JSONWriter(pretty: options.pretty)
        write(timelines, options: options, into: &w)
        return w.text
    }

    /// The same documents written to `out` as they are made (`gattlab timeline --format json` on
    /// stdout): memory holds the timeline, not its text as well.
    public static func write(_ timelines: [Timeline], options: RenderOptions = .init(), to out: BufferedOutput) {
        var w = JSONWriter(pretty: options.pretty, sink: { out.write(bytes: $0) })
        if timelines.count == 1 { write(timelines[0], options: options, into: &w) } else { write(timelines, options: options, into: &w) }
        w.finish()
    }

    static func write(_ timelines: [Timeline], options: RenderOptions, into w: inout JSONWriter) {
        w.beginObject()
        w.key("captures")
        w.beginArray()
        for t in timelines { write(t, options: options, into: &w) }
        w.endArray()
        w.key("summary")
        w.beginArray()
        for t in timelines {
            w.beginObject()
            w.field("path", t.source)
            w.field("devices", t.devices.count)
            w.field("outcome", TimelineText.overallOutcome(t).rawValue)
            w.key("duration"); w.seconds(t.duration)
            w.field("errors", t.findings.filter { $0.severity == .error }.count)
            w.field("warnings", t.findings.filter { $0.severity == .warning }.count)
            w.endObject()
        }
        w.endArray()
        w.endObject()
    }

    /// A device's `advertising` object: seen when, how often, how strong (a compact RSSI series
    /// of time buckets), what it said about itself.
    static func advertising(_ a: DeviceAdvertising, start: Int64, options: RenderOptions, into w: inout JSONWriter) {
        func time(_ key: String, _ v: Int64) {
            w.key(key)
            w.seconds(v - start)
            if options.absoluteTime { w.field(key + "UTC", TimeFormat.iso8601(v)) }
        }
        w.key("advertising"); w.beginObject()
        time("firstSeen", a.firstSeen)
        time("lastSeen", a.lastSeen)
        w.key("frames"); w.beginArray(); w.int(a.firstFrame); w.int(a.lastFrame); w.endArray()
        w.field("reports", a.reports)
        w.field("connectable", a.connectable)
        w.field("addressType", a.addressType)
        w.key("eventTypes"); w.beginArray(); a.eventTypes.forEach { w.string($0) }; w.endArray()
        w.key("names"); w.beginArray(); a.names.forEach { w.string($0) }; w.endArray()
        w.key("services"); w.beginArray(); a.services.forEach { w.string($0.description) }; w.endArray()
        w.key("companies"); w.beginArray()
        for c in a.companies {
            w.beginObject(); w.field("id", Int(c)); w.field("name", AdvertisingNames.company(c)); w.endObject()
        }
        w.endArray()
        w.key("protocols"); w.beginArray(); a.protocols.forEach { w.string($0) }; w.endArray()
        // Only where a protocol read service data, so other timelines keep their shape.
        if !a.announcements.isEmpty {
            w.key("announcements"); w.beginArray()
            for n in a.announcements {
                w.beginObject()
                time("time", n.time)
                w.field("frame", n.frame)
                w.field("protocol", n.protocol)
                w.field("summary", n.state.summary)
                w.key("fields"); w.beginObject()
                for (name, value) in n.state.fields {
                    switch value {
                    case .text(let t): w.field(name, t)
                    case .int(let i): w.field(name, i)
                    case .list(let l): w.key(name); w.beginArray(); l.forEach { w.string($0) }; w.endArray()
                    }
                }
                w.endObject()
                w.key("problems"); w.beginArray(); n.state.problems.forEach { w.string($0.id) }; w.endArray()
                w.endObject()
            }
            w.endArray()
            if a.announcementsNotKept > 0 { w.field("announcementsNotKept", a.announcementsNotKept) }
        }
        w.key("rssi"); w.beginObject()
        w.field("min", a.rssiMin); w.field("max", a.rssiMax); w.field("median", a.rssiMedian)
        w.key("series"); w.beginArray()
        for p in a.rssi {
            w.beginObject()
            time("time", p.time)
            w.field("mean", p.mean); w.field("min", p.min); w.field("max", p.max); w.field("count", p.count)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        w.endObject()
    }

    static func write(_ t: Timeline, options: RenderOptions, into w: inout JSONWriter) {
        let start = t.firstTime ?? 0
        func time(_ key: String, _ v: Int64?) {
            w.key(key)
            guard let v else { return w.null() }
            w.seconds(v - start)
            if options.absoluteTime { w.field(key + "UTC", TimeFormat.iso8601(v)) }
        }
        w.beginObject()
        w.key("gattlab"); w.beginObject()
        w.field("kind", "timeline"); w.field("schema", schema)
        w.endObject()

        w.key("capture"); w.beginObject()
        w.field("path", t.source)
        w.field("format", t.format)
        w.field("records", t.records)
        w.field("start", t.firstTime.map(TimeFormat.iso8601))
        w.key("duration"); w.seconds(t.duration)
        if t.droppedEvents > 0 { w.field("droppedEvents", t.droppedEvents) }
        w.endObject()

        w.key("devices"); w.beginArray()
        for d in t.devices {
            w.beginObject()
            w.field("id", d.id)
            w.field("address", d.address)
            w.field("name", d.name)
            w.key("protocols"); w.beginArray(); d.protocols.forEach { w.string($0) }; w.endArray()
            w.key("connections"); w.beginArray(); d.connections.forEach { w.int($0) }; w.endArray()
            w.field("outcome", d.outcome.rawValue)
            w.field("summary", d.summary)
            w.key("links"); w.beginObject()
            w.field("attempted", d.linkCounts.attempted)
            w.field("established", d.linkCounts.established)
            w.field("neverEstablished", d.linkCounts.neverEstablished)
            w.field("failedAttempts", d.linkCounts.failedAttempts)
            w.field("encrypted", d.linkCounts.encrypted)
            w.endObject()
            time("start", d.start)
            time("end", d.end)
            if let a = d.advertising { advertising(a, start: start, options: options, into: &w) }
            w.endObject()
        }
        w.endArray()
        if let o = t.advertising {
            w.key("advertising"); w.beginObject()
            w.field("reports", o.reports)
            w.field("advertisers", o.advertisers)
            w.field("devicesShown", o.shown)
            w.field("devicesNotShown", o.hidden)
            w.field("untrackedReports", o.untrackedReports)
            time("first", o.firstTime)
            time("last", o.lastTime)
            w.endObject()
        }

        w.key("connections"); w.beginArray()
        for c in t.connections {
            w.beginObject()
            w.field("id", c.id)
            w.field("device", c.device)
            w.field("handle", c.key.description)
            time("start", c.start)
            time("end", c.end)
            w.field("transport", c.classic ? "br/edr" : "le")
            w.field("mtu", c.mtu)
            w.field("encrypted", c.encryptedAt != nil)
            time("encryptedAt", c.encryptedAt)
            w.field("paired", c.paired)
            w.field("alreadyConnected", c.implicit)
            w.key("disconnect")
            if let r = c.disconnectReason {
                w.beginObject()
                w.field("code", Int(r.rawValue)); w.field("name", r.name); w.field("meaning", c.disconnectMeaning ?? Meanings.disconnect(r))
                if let host = c.hostDisconnectReason {
                    w.field("endedBy", "host"); w.field("hostCode", Int(host.rawValue)); w.field("hostReason", host.name)
                }
                w.endObject()
            } else {
                w.null()
            }
            w.key("frames"); w.beginArray(); w.int(c.firstFrame); w.int(c.lastFrame); w.endArray()
            w.endObject()
        }
        w.endArray()

        w.key("phases"); w.beginArray()
        for p in t.phases {
            w.beginObject()
            w.field("device", p.device)
            w.field("connection", p.connection)
            w.field("name", p.name)
            time("start", p.start)
            time("end", p.end)
            w.key("duration"); w.seconds(p.duration)
            w.field("outcome", p.outcome.rawValue)
            w.field("detail", p.detail)
            w.key("frames"); w.beginArray(); w.int(p.firstFrame); w.int(p.lastFrame); w.endArray()
            w.endObject()
        }
        w.endArray()

        w.key("progress"); w.beginArray()
        for p in t.progress {
            w.beginObject()
            w.field("device", p.device)
            time("time", p.time)
            w.field("percent", p.percent)
            w.field("kb", p.kb)
            w.endObject()
        }
        w.endArray()

        w.key("events"); w.beginArray()
        for e in t.events {
            w.beginObject()
            time("time", e.time)
            w.field("device", e.device)
            w.field("connection", e.connection)
            w.field("lane", e.lane.rawValue)
            w.field("kind", e.kind)
            let described = e.described
            w.field("summary", described.summary)
            w.key("fields"); w.beginObject()
            for f in described.fields { w.key(f.name); value(f.value, options: options, into: &w) }
            w.endObject()
            if !e.problems.isEmpty {
                w.key("problems"); w.beginArray(); e.problems.forEach { w.string($0.id) }; w.endArray()
            }
            w.key("frames"); w.beginArray(); e.forEachFrame { w.int($0) }; w.endArray()
            w.endObject()
        }
        w.endArray()

        w.key("findings"); w.beginArray()
        for f in t.findings {
            w.beginObject()
            w.field("id", f.id)
            w.field("severity", f.severity.rawValue)
            w.field("title", f.title)
            w.field("device", f.device)
            time("time", f.time)
            w.key("frames"); w.beginArray(); f.frames.forEach { w.int($0) }; w.endArray()
            w.field("evidence", f.evidence)
            w.field("advice", f.advice)
            w.endObject()
        }
        w.endArray()
        w.endObject()
    }

    static func value(_ v: FieldValue, options: RenderOptions, into w: inout JSONWriter) {
        switch v {
        case .string(let s): w.string(s)
        case .int(let i): w.int(i)
        case .double(let d): w.double(d)
        case .bool(let b): w.bool(b)
        case .secret(let s): w.string(options.reveal ? String(decoding: s.unsafeBytes, as: UTF8.self) : s.redacted)
        case .partlySecret(let redacted, let full): w.string(options.reveal ? ProtocolText.display(full.unsafeBytes) : redacted)
        case .strings(let list): w.beginArray(); list.forEach { w.string($0) }; w.endArray()
        case .objects(let list):
            w.beginArray()
            for object in list {
                w.beginObject()
                for f in object { w.key(f.name); value(f.value, options: options, into: &w) }
                w.endObject()
            }
            w.endArray()
        }
    }
}
