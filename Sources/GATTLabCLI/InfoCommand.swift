import Report
import ArgumentParser
import ATT
import Capture
import Foundation
import GATT
import HCI

struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Summarise captures: format, controllers, time span, connections, GATT tables.",
        discussion: """
            For each file: its format and link type, record count and time span, the controllers \
            (monitor captures), every connection (peer, role, interval, MTU, encryption, ATT PDU \
            count, disconnect reason) and each device's attribute table with where it came from: \
            discovered in the capture, --gatt-table, or a built-in --profile.

            --format json writes one JSON document per file; its "tables" entries are in the \
            format --gatt-table reads, so a table discovered in one capture can serve another.

            Examples:
              gattlab info phone.btsnoop
              gattlab info --format json field/*.log > summary.json
            """ + "\n\n" + ExitStatus.help([.success, .usage, .badInput, .noInput]))

    @Option(name: .long, help: "Output format: text for people, json for machines.")
    var format: OutputFormatOption = .text

    @OptionGroup var options: DecodeOptions

    @Argument(help: ArgumentHelp("Capture files (format detected from content); - reads standard input.", valueName: "file"))
    var files: [String]

    func run() throws {
        let style = Style.forStdout(disabled: options.noColor)
        let out = BufferedOutput()
        var status = ExitStatus.success
        for (index, file) in try CaptureFiles.expand(files).enumerated() {
            let summary = CaptureSummary(file: file)
            let decoder = try options.makeDecoder()
            var progress = Progress(path: file)
            do {
                let reader = try openCapture(file)
                summary.format = reader.format.description
                summary.linkType = reader.linkType.description
                while let record = try reader.next() {
                    decoder.consume(record)
                    summary.add(record, decoder.events)
                    progress.update(records: summary.records, offset: record.fileOffset)
                }
                progress.finish()
            } catch {
                progress.finish()
                summary.error = error.description
                status = status.worst(report(error, decoded: summary.records))
            }
            summary.finish(decoder)
            if summary.format == nil { continue }
            if format == .json {
                out.line(summary.json())
            } else {
                if index > 0 { out.line("") }
                summary.text(out, style: style)
            }
            out.flush()
        }
        if status != .success { throw status.exitCode }
    }
}

/// What `info` gathers while streaming: counts and per-connection facts, no per-record storage.
final class CaptureSummary {
    let file: String
    var format: String?
    var linkType: String?
    var records = 0
    var firstTime: Int64?
    var lastTime: Int64?
    var attPDUs = 0
    var malformed = 0
    var firstMalformed: String?
    var error: String?
    var controllers: [UInt16: (name: String, address: String)] = [:]
    var connections: [Connection] = []
    var tables: [(device: String, table: AttributeTable, source: TableSource)] = []
    /// Index into `connections` of each open connection.
    private var open: [ConnectionKey: Int] = [:]
    /// Beyond this many connections only counts go on (hostile files cannot grow the summary).
    static let maxConnections = 10_000

    struct Connection {
        var info: ConnectionInfo
        var mtu = 23
        var attPDUs = 0
        var encryptedFrame: Int?
        var pairing: String?
        var lastFrame = 0
    }

    init(file: String) { self.file = file }

    func add(_ record: CaptureRecord, _ events: [GATTEvent]) {
        records += 1
        if firstTime == nil { firstTime = record.timestamp }
        lastTime = record.timestamp
        for event in events {
            switch event {
            case .att(let e):
                attPDUs += 1
                if let i = index(e.connection, record) {
                    connections[i].attPDUs += 1
                    connections[i].lastFrame = record.number
                }
                if let reason = e.malformed { noteMalformed("frame \(record.number): ATT \(reason)") }
            case .operation(.mtuExchanged(let key, _, _, let mtu)):
                if let i = index(key, record) { connections[i].mtu = mtu }
            case .link(.connectionComplete(let info)):
                open[info.key] = nil
                lastIndex = nil
                if connections.count < Self.maxConnections {
                    connections.append(Connection(info: info))
                    open[info.key] = connections.count - 1
                }
            case .link(.disconnection(let info, _)):
                lastIndex = nil
                if let i = open[info.key] {
                    let mtu = connections[i].mtu, count = connections[i].attPDUs
                    let enc = connections[i].encryptedFrame, pairing = connections[i].pairing
                    connections[i] = Connection(info: info, mtu: mtu, attPDUs: count, encryptedFrame: enc, pairing: pairing, lastFrame: record.number)
                    open[info.key] = nil
                } else if connections.count < Self.maxConnections {
                    connections.append(Connection(info: info))
                }
            case .link(.encryptionChange(let key, let enabled, _, _)):
                if enabled, let i = index(key, record), connections[i].encryptedFrame == nil { connections[i].encryptedFrame = record.number }
            case .link(.smp(let key, _, let pdu)):
                if let i = index(key, record) {
                    switch pdu {
                    case .pairingResponse(let f): connections[i].pairing = f.summary
                    case .pairingFailed(let r): connections[i].pairing = "failed: \(SMPPDU.failureReason(r))"
                    default: break
                    }
                }
            case .link(.controllerAdded(let index, let name, let address)):
                controllers[index] = (name, address?.description ?? "")
            case .link(.malformed(_, let layer, let reason)):
                noteMalformed("frame \(record.number): \(layer.rawValue) \(reason)")
            default:
                break
            }
        }
    }

    private func noteMalformed(_ s: String) {
        malformed += 1
        if firstMalformed == nil { firstMalformed = s }
    }

    /// The open connection for a key, adding one for a capture that began mid-connection.
    private var lastIndex: (key: ConnectionKey, index: Int)?

    private func index(_ key: ConnectionKey, _ record: CaptureRecord) -> Int? {
        if let last = lastIndex, last.key == key { return last.index }
        if let i = open[key] {
            lastIndex = (key, i)
            return i
        }
        guard connections.count < Self.maxConnections else { return nil }
        var info = ConnectionInfo(key: key, frame: record.number, time: record.timestamp)
        info.implicit = true
        connections.append(Connection(info: info))
        open[key] = connections.count - 1
        return connections.count - 1
    }

    func finish(_ decoder: GATTDecoder) {
        for (key, i) in open {
            if let live = decoder.link.connections[key] {
                let c = connections[i]
                connections[i] = Connection(info: live, mtu: c.mtu, attPDUs: c.attPDUs, encryptedFrame: c.encryptedFrame ?? live.firstEncryptedFrame, pairing: c.pairing, lastFrame: c.lastFrame)
            }
        }
        tables = decoder.deviceTables.filter { !$0.table.isEmpty }
    }

    // MARK: Text

    func text(_ out: BufferedOutput, style: Style) {
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

    // MARK: JSON

    struct JSONConnection: Encodable {
        var connection: UInt32
        var controller: UInt16?
        var role: String
        var peer: String?
        var peerType: String?
        var central: String?
        var peripheral: String?
        var intervalMicros: Int?
        var latency: UInt16?
        var supervisionTimeoutMicros: Int?
        var mtu: Int
        var encrypted: Bool
        var firstEncryptedFrame: Int?
        var pairing: String?
        var attPDUs: Int
        var firstFrame: Int
        var lastFrame: Int
        var beganBeforeCapture: Bool
        var disconnectFrame: Int?
        var disconnectReason: UInt8?
        var disconnectReasonName: String?
    }

    struct JSONTable: Encodable {
        var device: String
        var source: String
        var table: GATTTableFile
    }

    struct JSONSummary: Encodable {
        var file: String
        var format: String?
        var linkType: String?
        var records: Int
        var firstTime: Int64?
        var lastTime: Int64?
        var controllers: [[String: String]]
        var attPDUs: Int
        var malformed: Int
        var connections: [JSONConnection]
        var tables: [JSONTable]
        var error: String?
    }

    func json() -> String {
        let s = JSONSummary(
            file: file, format: format, linkType: linkType, records: records, firstTime: firstTime, lastTime: lastTime,
            controllers: controllers.sorted { $0.key < $1.key }.map { ["index": "\($0.key)", "name": $0.value.name, "address": $0.value.address] },
            attPDUs: attPDUs, malformed: malformed,
            connections: connections.map { c in
                let i = c.info
                let enc = c.encryptedFrame ?? i.firstEncryptedFrame
                return JSONConnection(
                    connection: i.key.id, controller: i.key.isLinkLayer ? nil : i.key.controller, role: i.role.rawValue,
                    peer: i.peerAddress?.description, peerType: i.peerAddressType?.description,
                    central: i.centralAddress?.description, peripheral: i.peripheralAddress?.description,
                    intervalMicros: i.intervalMicroseconds, latency: i.latency,
                    supervisionTimeoutMicros: i.supervisionTimeoutMicroseconds, mtu: c.mtu,
                    encrypted: enc != nil, firstEncryptedFrame: enc, pairing: c.pairing, attPDUs: c.attPDUs,
                    firstFrame: i.connectedFrame ?? i.firstFrame, lastFrame: i.disconnectedFrame ?? max(c.lastFrame, i.firstFrame),
                    beganBeforeCapture: i.implicit, disconnectFrame: i.disconnectedFrame,
                    disconnectReason: i.disconnectReason?.rawValue, disconnectReasonName: i.disconnectReason?.name)
            },
            tables: tables.map { JSONTable(device: $0.device, source: $0.source.description, table: GATTTableFile(name: nil, table: $0.table)) },
            error: error)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(s)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
