import Analysis
import Foundation
import GATT

/// `gattlab info --format json`: one document per file; its "tables" entries are in the format
/// --gatt-table reads.
extension CaptureSummary {
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

    public func json() -> String {
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
