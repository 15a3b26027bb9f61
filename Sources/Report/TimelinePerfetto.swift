import Analysis

/// `gattlab timeline --format perfetto`: Chrome trace-event JSON (the format ui.perfetto.dev and
/// chrome://tracing load). One process per device; threads (tracks) per connection and per
/// protocol lane; connections and phases as complete events ("X"), protocol and link events as
/// instants ("i"), download progress as a counter ("C"), findings as instants on their own track.
/// Timestamps are microseconds since the capture's first record.
public enum TimelinePerfetto {
    public static func render(_ t: Timeline, options: RenderOptions = .init()) -> String {
        var w = JSONWriter()
        write(t, options: options, into: &w)
        return w.text
    }

    /// The same trace written to `out` as it is made: a day's capture makes a trace of tens of
    /// megabytes, which as one string (and its copy) was most of the command's memory.
    public static func write(_ t: Timeline, options: RenderOptions = .init(), to out: BufferedOutput) {
        var w = JSONWriter(sink: { out.write(bytes: $0) })
        write(t, options: options, into: &w)
        w.finish()
    }

    static func write(_ t: Timeline, options: RenderOptions, into w: inout JSONWriter) {
        let start = t.firstTime ?? 0
        w.beginObject()
        w.key("displayTimeUnit"); w.string("ms")
        w.key("traceEvents"); w.beginArray()

        // Track ids: 1 link overview, 2 ota, 3 scan, 4 provisioning, 5 findings, 100+ connections.
        let laneTrack: [TimelineEvent.Lane: Int] = [.link: 1, .ota: 2, .scan: 3, .provisioning: 4]
        let laneName: [Int: String] = [1: "link events", 2: "OTA", 3: "Wi-Fi scan", 4: "provisioning", 5: "findings"]
        func meta(_ name: String, pid: Int, tid: Int?, value: String) {
            w.beginObject()
            w.field("name", name); w.field("ph", "M"); w.field("pid", pid)
            if let tid { w.field("tid", tid) }
            w.key("args"); w.beginObject(); w.field("name", value); w.endObject()
            w.endObject()
        }
        func pid(_ device: Int?) -> Int { (device ?? -1) + 2 }  // pid 1: events of no device

        meta("process_name", pid: 1, tid: nil, value: "capture \(t.source)")
        for d in t.devices {
            let name = [d.address, d.name].compactMap { $0 }.joined(separator: " ")
            meta("process_name", pid: pid(d.id), tid: nil, value: "device \(d.id) \(name) [\(d.outcome.rawValue)]")
            for (tid, n) in laneName.sorted(by: { $0.key < $1.key }) { meta("thread_name", pid: pid(d.id), tid: tid, value: n) }
        }
        for c in t.connections {
            meta("thread_name", pid: pid(c.device), tid: 100 + c.id, value: "connection \(c.key)")
            w.beginObject()
            w.field("name", "connection \(c.key), MTU \(c.mtu)\(c.encryptedAt != nil ? ", encrypted" : "")")
            w.field("cat", "link"); w.field("ph", "X")
            w.key("ts"); w.int(Int(c.start - start))
            w.key("dur"); w.int(Int((c.end ?? t.lastTime ?? c.start) - c.start))
            w.field("pid", pid(c.device)); w.field("tid", 100 + c.id)
            w.key("args"); w.beginObject()
            w.field("disconnect", c.disconnectReason.map { "\($0.name) (0x\(String($0.rawValue, radix: 16)))" })
            w.field("frames", "\(c.firstFrame)-\(c.lastFrame)")
            w.endObject()
            w.endObject()
        }
        for p in t.phases {
            w.beginObject()
            w.field("name", p.name); w.field("cat", "phase"); w.field("ph", "X")
            w.key("ts"); w.int(Int(p.start - start))
            w.key("dur"); w.int(Int(max(0, p.duration)))
            w.field("pid", pid(p.device)); w.field("tid", 2)
            w.key("args"); w.beginObject()
            w.field("outcome", p.outcome.rawValue)
            w.field("detail", p.detail)
            w.endObject()
            w.endObject()
        }
        for e in t.events {
            w.beginObject()
            w.field("name", e.kind); w.field("cat", e.lane.rawValue); w.field("ph", "i"); w.field("s", "t")
            w.key("ts"); w.int(Int(e.time - start))
            w.field("pid", pid(e.device))
            w.field("tid", e.lane == .link ? (e.connection.map { 100 + $0 } ?? 1) : laneTrack[e.lane] ?? 1)
            w.key("args"); w.beginObject()
            let described = e.described
            w.field("summary", described.summary)
            w.field("frames", e.frames.map(String.init).joined(separator: ","))
            for f in described.fields { w.key(f.name); TimelineJSON.value(f.value, options: options, into: &w) }
            w.endObject()
            w.endObject()
        }
        for p in t.progress {
            w.beginObject()
            w.field("name", "download %"); w.field("ph", "C")
            w.key("ts"); w.int(Int(p.time - start))
            w.field("pid", pid(p.device))
            w.key("args"); w.beginObject(); w.field("percent", p.percent); w.endObject()
            w.endObject()
        }
        for f in t.findings {
            w.beginObject()
            w.field("name", "\(f.severity.rawValue): \(f.id)"); w.field("cat", "finding"); w.field("ph", "i"); w.field("s", "p")
            w.key("ts"); w.int(Int(f.time - start))
            w.field("pid", pid(f.device)); w.field("tid", 5)
            w.key("args"); w.beginObject()
            w.field("title", f.title); w.field("evidence", f.evidence); w.field("advice", f.advice)
            w.field("frames", f.frames.map(String.init).joined(separator: ","))
            w.endObject()
            w.endObject()
        }
        w.endArray()
        w.endObject()
    }
}
