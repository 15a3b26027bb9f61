import Analysis

extension TimelineText {
    /// One short line per timeline event as it happens (`gattlab capture --live --timeline`):
    /// time since the first record, device, lane, kind and summary; a problem in yellow, the
    /// frames dimmed.
    public static func liveLine(_ e: TimelineEvent, since firstTime: Int64, style: Style) -> String {
        func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
        let frames = e.frames.count == 2 ? "\(e.frames[0])-\(e.frames[1])" : e.frames.map(String.init).joined(separator: ",")
        let text = pad(TimeFormat.relative(e.time, since: firstTime), 12) + " " + pad(e.device.map { "d\($0)" } ?? "-", 3)
            + " " + pad(e.lane.rawValue, 12) + " " + pad(e.kind, 22) + " " + e.summary
        return (e.problems.isEmpty ? text : style.yellow(text)) + "  " + style.dim("#\(frames)")
    }
}
