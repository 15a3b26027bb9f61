import ATT
import Capture
import HCI
import TestSupport
import XCTest

@testable import GATT

/// `reportsValues` off, as `info` decodes: the same events, sessions and tables, except that a
/// well-formed value PDU (write, notification, indication and their acknowledgements) comes
/// without its decoded PDU, handle and attribute, and a CCCD write makes no subscription.
final class GATTValueReportingTests: XCTestCase {
    /// What the counting decoder gives for one event of the full one (nil: nothing).
    private func counted(_ e: GATTEvent) -> String? {
        switch e {
        case .att(var a) where a.pdu != nil && GATTDecoder.valueOnlyParameters(a.opcode) != nil:
            a.pdu = nil
            a.handle = nil
            a.info = nil
            return "\(GATTEvent.att(a))"
        case .operation(.subscription):
            return nil
        default:
            return "\(e)"
        }
    }

    /// Both decoders over one capture; returns how many value PDUs it held.
    private func compare(_ path: String) throws -> Int {
        let full = GATTDecoder(), counting = GATTDecoder()
        counting.reportsValues = false
        // Cracking a sniffed pairing's TK is slow and has nothing to do with values.
        full.link.recoversPairingKeys = false
        counting.link.recoversPairingKeys = false
        let a = try openCapture(path), b = try openCapture(path)
        var values = 0
        while let r = try a.next() {
            let same = try XCTUnwrap(b.next())
            full.consume(r)
            counting.consume(same)
            XCTAssertEqual(counting.events.map { "\($0)" }, full.events.compactMap(counted), "\(path) record \(r.number)")
            values += counting.events.filter { if case .att(let e) = $0 { e.pdu == nil && e.malformed == nil } else { false } }.count
        }
        XCTAssertEqual(counting.deviceTables.map { "\($0)" }, full.deviceTables.map { "\($0)" }, path)
        return values
    }

    func testProjectCaptures() throws {
        var values = 0
        for path in try Files.projectCaptures() { values += try compare(path) }
        XCTAssertGreaterThan(values, 1_000, "the captures hold value PDUs to count")
    }

    func testRealCaptures() throws {
        let folder = try RealCaptures.require()
        var values = 0
        for name in try RealCaptures.manifest() { values += try compare(folder.appendingPathComponent(name).path) }
        XCTAssertGreaterThan(values, 10_000)
    }

    /// Short value PDUs are malformed for the same reason either way; a CCCD write is counted.
    func testMalformedValuePDUsAndSubscriptions() throws {
        let full = GATTFeed(), counting = GATTFeed()
        counting.decoder.reportsValues = false
        var table = AttributeTable()
        table.addService(start: 1, end: 5, uuid: UUIDs.speakerService, primary: true)
        table.addCharacteristic(declaration: 2, properties: 0x10, valueHandle: 3, uuid: UUIDs.otaStatus)
        table.addFoundInformation(handle: 4, uuid: UUIDs.cccd)
        full.decoder.defaultTable = table
        counting.decoder.defaultTable = table
        _ = full.connect()
        _ = counting.connect()
        let pdus: [[UInt8]] = [[0x12, 0x04, 0x00, 0x01, 0x00], [0x13], [0x1B, 0x03, 0x00, 0x42], [0x1D, 0x03, 0x00], [0x1E],
                               [0x52, 0x04, 0x00, 0x00, 0x00], [0x12, 0x04], [0x1B], [0x1D, 0x03], [0x52], [0x13, 0xFF], [0x1E, 0x01]]
        var malformed = 0, subscriptions = 0
        for bytes in pdus {
            let f = full.rawATT(bytes), c = counting.rawATT(bytes)
            subscriptions += f.operations.count
            XCTAssertEqual(c.map { "\($0)" }, f.compactMap(counted), "\(bytes)")
            XCTAssertEqual(c.atts.map(\.malformed), f.atts.map(\.malformed))
            malformed += c.atts.filter { $0.malformed != nil }.count
        }
        XCTAssertEqual(malformed, 4)
        XCTAssertEqual(subscriptions, 2, "the full decoder saw both CCCD writes")
    }
}
