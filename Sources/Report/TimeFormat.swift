#if canImport(Glibc)
import Glibc
#endif

/// Times in output: relative seconds since the file's first record by default, or absolute UTC
/// in ISO 8601 on request. Integer microseconds throughout, formatted without floating point.
public enum TimeFormat {
    public static func relative(_ micros: Int64, since start: Int64) -> String {
        let d = micros &- start  // timestamps come from files: never trap on them
        let sign = d < 0 ? "-" : ""
        let a = d.magnitude
        let frac = String(a % 1_000_000)
        return "\(sign)\(a / 1_000_000).\(String(repeating: "0", count: 6 - frac.count))\(frac)"
    }

    public static func iso8601(_ micros: Int64) -> String {
        var seconds = time_t(micros >= 0 ? micros / 1_000_000 : (micros &- 999_999) / 1_000_000)
        let us = Int((micros % 1_000_000 + 1_000_000) % 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let frac = String(us)
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(String(repeating: "0", count: 6 - frac.count))\(frac)Z"
    }

    public static func duration(_ signed: Int64) -> String {
        let micros = Int64(clamping: signed.magnitude)
        if micros < 1_000 { return "\(micros) µs" }
        if micros < 1_000_000 { return "\(micros / 1_000).\((micros % 1_000) / 100) ms" }
        let s = micros / 1_000_000
        if s < 120 { return "\(s).\((micros % 1_000_000) / 1_000 / 100) s" }
        if s < 7200 { return "\(s / 60) min \(s % 60) s" }
        return "\(s / 3600) h \((s % 3600) / 60) min"
    }
}
