import Capture
import Profiles

/// Decode lines for device-protocol events: the message's own text and JSON fields come from
/// its protocol (`DecodeRendering`); this adds the frame, time, connection and colours.
extension EventRenderer {
    public func render(_ events: [ProfileEvent], record: CaptureRecord) {
        for e in events {
            guard !attOnly, passesProfile(e) else { continue }
            json ? jsonProfile(e, record) : textProfile(e, record)
        }
    }

    private func passesProfile(_ e: ProfileEvent) -> Bool {
        guard passesConnection(e.connection) else { return false }
        if !handleFilter.isEmpty, !handleFilter.contains(e.handle) { return false }
        if !uuidFilter.isEmpty { return uuidFilter.contains { $0.matches(e.characteristic) } }
        return true
    }

    private func textProfile(_ e: ProfileEvent, _ record: CaptureRecord) {
        beginLine(record, e.connection)
        style.open(Style.cyanCode, out)
        out.append(e.decodeSummary(reveal: reveal))
        style.close(out)
        if e.firstFrame != e.frame { out.append(style.dim(" (from frame \(e.firstFrame))")) }
        for p in e.problems { out.append(" " + style.red("[\(p.id): \(p.message)]")) }
        endLine()
    }

    private func jsonProfile(_ e: ProfileEvent, _ record: CaptureRecord) {
        jsonLineForProfile(record, e.connection) { o in o.merge(e.decodeJSON(reveal: reveal)) }
    }
}

extension EventRenderer.JSONFields {
    /// Writes a built object's fields at the top level of the line.
    func merge(_ b: JSONBuild) {
        guard !b.fields.isEmpty else { return }
        renderer.out.byte(UInt8(ascii: ","))
        b.fields.withUnsafeBufferPointer { renderer.out.append($0) }
    }
}
