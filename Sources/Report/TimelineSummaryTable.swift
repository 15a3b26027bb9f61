import Analysis
import Foundation

/// The table after several captures' timelines (text): one line each.
public enum TimelineSummaryTable {
    public static func render(_ timelines: [Timeline]) -> String {
        var rows = [["capture", "devices", "outcome", "duration", "errors", "warnings", "first finding"]]
        for t in timelines {
            let first = t.findings.max { $0.severity < $1.severity }
            rows.append([URL(fileURLWithPath: t.source).lastPathComponent, String(t.devices.count),
                         TimelineText.overallOutcome(t).rawValue, TimeFormat.duration(t.duration),
                         String(t.findings.filter { $0.severity == .error }.count),
                         String(t.findings.filter { $0.severity == .warning }.count), first?.id ?? "-"])
        }
        let widths = (0..<rows[0].count).map { c in rows.map { $0[c].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { c, s in c == row.count - 1 ? s : s + String(repeating: " ", count: widths[c] - s.count) }
                .joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }
}
