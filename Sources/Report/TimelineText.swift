import Analysis
import Capture

/// `gattlab timeline` for a terminal: a summary first (each device, its outcome and duration,
/// the findings with evidence and advice, the phases), then the events.
public enum TimelineText {
    /// ANSI colour, off unless the caller decided the terminal wants it.
    public struct Colors: Sendable {
        public var enabled: Bool
        public init(enabled: Bool) { self.enabled = enabled }
        func wrap(_ code: String, _ s: String) -> String { enabled ? open(code) + s + close : s }
        /// The escape that starts a colour, and the one that ends it (empty when disabled).
        func open(_ code: String) -> String { enabled ? "\u{1B}[\(code)m" : "" }
        var close: String { enabled ? "\u{1B}[0m" : "" }
        func bold(_ s: String) -> String { wrap("1", s) }
        func dim(_ s: String) -> String { wrap("2", s) }
        func red(_ s: String) -> String { wrap("31", s) }
        func green(_ s: String) -> String { wrap("32", s) }
        func yellow(_ s: String) -> String { wrap("33", s) }
        func blue(_ s: String) -> String { wrap("34", s) }
    }

    public static func overallOutcome(_ t: Timeline) -> TimelineDevice.Outcome {
        let outcomes = t.devices.map(\.outcome)
        for o in [TimelineDevice.Outcome.failed, .interrupted, .incomplete, .succeeded] where outcomes.contains(o) { return o }
        return .unknown
    }

    public static func render(_ t: Timeline, options: RenderOptions = .init(), colors: Colors = .init(enabled: false),
                              eventsToo: Bool = true) -> String {
        let out = BufferedOutput.collecting()
        write(t, options: options, colors: colors, eventsToo: eventsToo, to: out)
        return out.text
    }

    /// The same text written to `out` as it is made: a day's capture has hundreds of thousands of
    /// event lines, which built as one string (and then copied into the output) were 70 MB.
    public static func write(_ t: Timeline, options: RenderOptions = .init(), colors: Colors = .init(enabled: false),
                             eventsToo: Bool = true, to sink: BufferedOutput) {
        let start = t.firstTime ?? 0
        func at(_ v: Int64) -> String {
            options.absoluteTime ? TimeFormat.iso8601(v) : TimeFormat.relative(v, since: start)
        }
        var out = TextSink(sink)
        out += colors.bold(t.source) + "  " + colors.dim("\(t.format), \(t.records) records, \(TimeFormat.duration(t.duration))"
            + (t.firstTime.map { ", from \(TimeFormat.iso8601($0))" } ?? "")) + "\n"
        if t.devices.isEmpty { out += "  no devices: the capture has no connections\n" }
        // Each device's phases and connections, as places in the timeline's lists: the lists
        // live encoded (`SpillList`), so each element is read once here and once to be written.
        let phasesOf = Dictionary(grouping: t.phases.indices) { t.phases[$0].device }
        let connectionsOf = Dictionary(grouping: t.connections.indices) { t.connections[$0].device }
        for d in t.devices {
            let name = [d.address, d.name.map { "\"\($0)\"" }].compactMap { $0 }.joined(separator: " ")
            out += "\n" + colors.bold("Device \(d.id): \(name.isEmpty ? "unknown address" : name)")
            if !d.protocols.isEmpty { out += " (" + d.protocols.joined(separator: ", ") + ")" }
            out += "  " + outcome(d.outcome, colors) + "\n"
            out += "  " + d.summary + "\n"
            if let a = d.advertising {
                var line = "  Advertising: \(a.reports) reports \(at(a.firstSeen))-\(at(a.lastSeen))"
                if let m = a.rssiMedian, let lo = a.rssiMin, let hi = a.rssiMax { line += ", RSSI \(lo)/\(m)/\(hi) dBm (min/median/max)" }
                line += a.connectable ? ", connectable" : ", not connectable"
                if !a.names.isEmpty { line += ", names " + a.names.map { "\"\($0)\"" }.joined(separator: ", ") }
                if !a.services.isEmpty { line += ", services " + a.services.map(\.description).joined(separator: ", ") }
                if !a.protocols.isEmpty { line += ", looks like " + a.protocols.joined(separator: ", ") }
                out += line + "\n"
                for n in a.announcements {
                    out += "    announced (\(n.protocol)) at \(at(n.time)): \(n.state.summary)"
                    if !n.state.problems.isEmpty { out += colors.dim("  [" + n.state.problems.map(\.id).joined(separator: ", ") + "]") }
                    out += colors.dim("  #\(n.frame)") + "\n"
                }
                if a.announcementsNotKept > 0 { out += "    " + colors.dim("\(a.announcementsNotKept) later changes not kept") + "\n" }
            }
            let findings = t.findings.filter { $0.device == d.id }
            if !findings.isEmpty {
                out += "  Findings:\n"
                for f in findings {
                    out += "    " + severity(f.severity, colors) + " " + colors.bold(f.id) + "  " + f.title + "\n"
                    out += "      " + colors.dim("at \(at(f.time)) s, frames \(f.frames.map(String.init).joined(separator: ", "))") + "\n"
                    out += "      " + f.evidence + "\n"
                    out += "      " + colors.dim("what to do: ") + f.advice + "\n"
                }
            }
            let phases = t.phases.picking(phasesOf[d.id] ?? [])
            if !phases.isEmpty {
                out += "  Phases:\n"
                for p in phases {
                    let line = "    " + pad(at(p.start), 12) + " " + pad(p.name, 15) + " " + pad(TimeFormat.duration(p.duration), 10) + " "
                        + pad(p.outcome.rawValue, 11) + " " + (p.detail ?? "")
                    out += (p.outcome == .failed ? colors.red(line) : line) + "\n"
                }
            }
            let connections = t.connections.picking(connectionsOf[d.id] ?? [])
            if !connections.isEmpty {
                out += "  Connections:\n"
                for c in connections {
                    var line = "    \(c.key) from \(at(c.start))"
                    line += c.end.map { " to \(at($0)) (\(TimeFormat.duration($0 - c.start)))" } ?? " to the end of the capture"
                    if c.classic { line += ", BR/EDR" }
                    if !c.classic || c.carriedATT { line += ", MTU \(c.mtu)" }
                    line += c.encryptedAt != nil ? ", encrypted" + (c.paired ? " after pairing" : "") : ", not encrypted"
                    if let h = c.hostDisconnectReason {
                        line += ", ended by this host (Disconnect: \(h.name), 0x\(Hex.string([h.rawValue])))"
                    } else if let r = c.disconnectReason {
                        line += ", ended: \(r.name) (0x\(Hex.string([r.rawValue])))"
                    }
                    out += line + "\n"
                }
            }
        }
        if let o = t.advertising {
            out += "\n" + colors.bold("Advertising") + ": \(o.reports) report\(o.reports == 1 ? "" : "s") from \(o.advertisers) advertiser\(o.advertisers == 1 ? "" : "s")"
            if o.hidden > 0 { out += "; \(o.hidden) devices seen only advertising are not listed" }
            if o.untrackedReports > 0 { out += "; \(o.untrackedReports) reports from advertisers beyond the first \(o.advertisers) not followed" }
            out += "\n"
        }
        let unattached = t.findings.filter { $0.device == nil }
        for f in unattached {
            out += "\n" + severity(f.severity, colors) + " " + colors.bold(f.id) + "  " + f.title + ": " + f.evidence + "\n"
        }
        if eventsToo, !t.events.isEmpty {
            out += "\n" + colors.bold("Events") + "\n"
            // Each line written straight into the output (building them as strings was a third
            // of the command's time on a day's capture).
            for e in t.events { eventLine(e, start: start, absoluteTime: options.absoluteTime, colors: colors, to: sink) }
            if t.droppedEvents > 0 { out += "(\(t.droppedEvents) more events not kept)\n" }
        }
    }

    /// One event's line: the time (12 wide), the device (3), the lane (12), the kind (22), the
    /// summary and the frames (dim), all yellow when the event has a problem. Widths count
    /// characters, as `pad` does: the kind is the one field that could hold more than ASCII, and
    /// then takes `pad`.
    static func eventLine(_ e: TimelineEvent, start: Int64, absoluteTime: Bool, colors: Colors, to out: BufferedOutput) {
        let problem = !e.problems.isEmpty
        if problem { out.append(colors.open("33")) }
        var m = out.mark
        if absoluteTime { out.append(TimeFormat.iso8601(e.time)) } else { out.seconds(e.time &- start) }
        out.pad(from: m, width: 12, minimum: 0)
        out.byte(0x20)
        m = out.mark
        if let d = e.device {
            out.byte(UInt8(ascii: "d"))
            out.int(d)
        } else {
            out.byte(UInt8(ascii: "-"))
        }
        out.pad(from: m, width: 3, minimum: 0)
        out.byte(0x20)
        m = out.mark
        out.append(e.lane.rawValue)
        out.pad(from: m, width: 12, minimum: 0)
        out.byte(0x20)
        let kind = e.kind
        if kind.utf8.allSatisfy({ $0 < 0x80 }) {
            m = out.mark
            out.append(kind)
            out.pad(from: m, width: 22, minimum: 0)
        } else {
            out.append(pad(kind, 22))
        }
        out.byte(0x20)
        out.append(e.summary)
        out.append("  " + colors.open("2") + "#")
        let count = e.frameCount
        var i = 0
        e.forEachFrame { f in
            if i > 0 { out.byte(count == 2 ? UInt8(ascii: "-") : UInt8(ascii: ",")) }
            out.int(f)
            i += 1
        }
        out.append(colors.close)
        if problem { out.append(colors.close) }
        out.endLine()
    }

    /// `out += text` onto a `BufferedOutput`, so that the renderer reads as the string it once built.
    struct TextSink {
        let output: BufferedOutput
        init(_ output: BufferedOutput) { self.output = output }
        static func += (sink: inout TextSink, text: String) { sink.output.write(text) }
    }

    static func outcome(_ o: TimelineDevice.Outcome, _ c: Colors) -> String {
        let s = o.rawValue.uppercased()
        switch o {
        case .succeeded: return c.green(s)
        case .failed: return c.red(s)
        case .interrupted, .incomplete: return c.yellow(s)
        case .unknown: return c.dim(s)
        }
    }

    static func severity(_ s: Finding.Severity, _ c: Colors) -> String {
        switch s {
        case .error: c.red("ERROR  ")
        case .warning: c.yellow("WARNING")
        case .info: c.blue("INFO   ")
        }
    }

    static func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
}
