#if canImport(Glibc)
import Glibc
#endif

/// Progress on stderr for long runs: only on a terminal, only after a second, at most a few
/// times a second, and erased when done, so pipes and logs stay clean.
struct Progress {
    private let enabled: Bool
    private let path: String
    private let size: Int64
    private let start: Int64
    private var lastShown: Int64 = 0
    private var shown = false

    init(path: String) {
        self.path = path
        enabled = isatty(2) == 1
        var st = stat()
        size = stat(path, &st) == 0 ? Int64(st.st_size) : 0
        start = Self.now()
    }

    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1_000
    }

    /// Call per record; cheap except every 64k records.
    @inline(__always)
    mutating func update(records: Int, offset: Int64) {
        guard enabled, records & 0xFFFF == 0 else { return }
        show(records: records, offset: offset)
    }

    private mutating func show(records: Int, offset: Int64) {
        let t = Self.now()
        guard t - start > 1_000_000, t - lastShown > 250_000 else { return }
        lastShown = t
        shown = true
        let percent = size > 0 && offset >= 0 ? " \(min(100, offset * 100 / size))%" : ""
        printErrorRaw("\r\u{1B}[Kgattlab: \(path):\(percent) \(records) records")
    }

    mutating func finish() {
        if shown { printErrorRaw("\r\u{1B}[K") }
        shown = false
    }
}

func printErrorRaw(_ s: String) {
    var s = s
    s.withUTF8 { _ = Glibc.write(2, $0.baseAddress, $0.count) }
}
