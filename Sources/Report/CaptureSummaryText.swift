import Analysis
import ATT
import GATT
import HCI

/// `gattlab info` as text: the file, its counts and span, each connection on a line, and the
/// GATT tables with handles and UUIDs.
extension CaptureSummary {
    public func text(_ out: BufferedOutput, style: Style) {
        out.line(style.bold(file))
        if let format, let linkType { out.line("  format       \(format), \(linkType)") }
        var span = "  records      \(records)"
        if let f = firstTime, let l = lastTime {
            span += "  from \(TimeFormat.iso8601(f)) to \(TimeFormat.iso8601(l)) (\(TimeFormat.duration(l &- f)))"
        }
        out.line(span)
        for (index, c) in controllers.sorted(by: { $0.key < $1.key }) {
            out.line("  controller   hci\(index) \(c.name) \(c.address)")
        }
        out.line("  ATT PDUs     \(attPDUs)")
        if malformed > 0 {
            out.line(style.red("  malformed    \(malformed)") + " (first: \(firstMalformed ?? ""))")
        }
        out.line("  connections  \(connections.count)")
        for c in connections {
            out.line("    " + connectionLine(c))
        }
        for t in tables {
            out.line("  GATT table of \(t.device): \(t.source)")
            let file = GATTTableFile(name: nil, table: t.table)
            for s in file.services {
                out.line("    \(PDUDetails.handle(s.startHandle))-\(PDUDetails.handle(s.endHandle))  \(PDUDetails.uuidName(s.uuid))")
                for c in s.characteristics ?? [] {
                    out.line("      \(PDUDetails.handle(c.valueHandle))  \(PDUDetails.uuidName(c.uuid)) [\(c.properties.joined(separator: ","))]")
                    for d in c.descriptors ?? [] {
                        out.line("        \(PDUDetails.handle(d.handle))  \(PDUDetails.uuidName(d.uuid))")
                    }
                }
            }
        }
        if let error { out.line(style.red("  error        \(error)")) }
    }

    private func connectionLine(_ c: Connection) -> String {
        let i = c.info
        var parts = [i.key.description]
        if let p = i.peerAddress { parts.append("peer \(p)\(i.peerAddressType.map { " (\($0))" } ?? "")") }
        if let ce = i.centralAddress, let p = i.peripheralAddress { parts.append("central \(ce) peripheral \(p)") }
        if i.role != .unknown { parts.append("local \(i.role.rawValue)") }
        if let us = i.intervalMicroseconds { parts.append("interval \(TimeFormat.duration(Int64(us)))") }
        parts.append("MTU \(c.mtu)")
        if let f = c.encryptedFrame ?? i.firstEncryptedFrame { parts.append("encrypted from frame \(f)") } else { parts.append("not encrypted") }
        if let p = c.pairing { parts.append("pairing \(p)") }
        parts.append("\(c.attPDUs) ATT PDUs")
        if i.implicit { parts.append("began before the capture") }
        if let r = i.disconnectReason {
            parts.append("disconnected at frame \(i.disconnectedFrame ?? 0): \(r)")
        } else {
            parts.append("open at end of capture")
        }
        return parts.joined(separator: ", ")
    }
}
