import ATT
import Capture
import Foundation
import HCI
import XCTest

@testable import GATT

// Synthetic HCI records for the GATT pipeline: ACL frames carrying ATT on CID 0x0004, LE Connection
// Complete and Disconnection Complete events. The phone is the local host (its requests are `.sent`),
// the device is the peer (its answers are `.received`).

enum UUIDs {
    static let speakerService = BluetoothUUID(string: "00000001-1234-5678-9abc-def012345678")!
    static let otaCredentials = BluetoothUUID(string: "00000005-1234-5678-9abc-def012345678")!
    static let otaURL = BluetoothUUID(string: "00000006-1234-5678-9abc-def012345678")!
    static let otaControl = BluetoothUUID(string: "00000007-1234-5678-9abc-def012345678")!
    static let otaStatus = BluetoothUUID(string: "00000008-1234-5678-9abc-def012345678")!
    static let gap = BluetoothUUID(uuid16: 0x1800)
    static let deviceName = BluetoothUUID(uuid16: 0x2A00)
    static let appearance = BluetoothUUID(uuid16: 0x2A01)
    static let batteryLevel = BluetoothUUID(uuid16: 0x2A19)
    static let cccd = BluetoothUUID(uuid16: 0x2902)
    static let userDescription = BluetoothUUID(uuid16: 0x2901)
    static let primaryService = BluetoothUUID(uuid16: 0x2800)
    static let characteristic = BluetoothUUID(uuid16: 0x2803)

    /// The speaker-like table's names, as a device protocol would register them: GATT is tested
    /// without any protocol (the tests that read names register these in their class setUp).
    static let names: [BluetoothUUID: String] = [
        speakerService: "Speaker service", otaCredentials: "OTA_CREDENTIALS", otaURL: "OTA_URL",
        otaControl: "OTA_CONTROL", otaStatus: "OTA_STATUS",
    ]

    static func registerNames() { KnownUUIDs.register(names) }
}

/// Peer addresses in display order.
let peerA: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0xC0, 0x11, 0x22, 0x33, 0x44, 0x55)
let peerB: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0xD0, 0x66, 0x77, 0x88, 0x99, 0xAA)

func key(_ handle: UInt16) -> ConnectionKey { ConnectionKey(controller: 0, handle: handle) }

/// Feeds records to one `GATTDecoder`, numbering frames from 1.
final class GATTFeed {
    let decoder: GATTDecoder
    private(set) var frame = 0

    init(_ decoder: GATTDecoder = GATTDecoder()) { self.decoder = decoder }

    /// Consumes one record whose payload is `bytes` and returns the events it produced.
    @discardableResult
    func feed(_ kind: RecordKind, _ direction: Direction, _ bytes: [UInt8]) -> [GATTEvent] {
        frame += 1
        let number = frame
        bytes.withUnsafeBytes { raw in
            decoder.consume(CaptureRecord(number: number, fileOffset: Int64(number) * 64, timestamp: 1_700_000_000_000_000 + Int64(number) * 1000,
                                          direction: direction, kind: kind, rawType: UInt16(kind.h4Type ?? 0),
                                          originalLength: bytes.count, data: raw))
        }
        return decoder.events
    }

    /// ACL header (first automatically flushable fragment) + L2CAP basic header on CID 4 + `att`.
    static func aclATT(_ handle: UInt16, _ att: [UInt8], cid: UInt16 = 0x0004) -> [UInt8] {
        let l2cap = le16(UInt16(att.count)) + le16(cid) + att
        return le16(handle | 0x2000) + le16(UInt16(l2cap.count)) + l2cap
    }

    /// The phone sends a PDU to the device.
    @discardableResult
    func send(_ pdu: ATTPDU, on handle: UInt16 = 0x40) -> [GATTEvent] {
        feed(.acl, .sent, Self.aclATT(handle, pdu.encode()))
    }

    /// The device's PDU arrives at the phone.
    @discardableResult
    func receive(_ pdu: ATTPDU, on handle: UInt16 = 0x40) -> [GATTEvent] {
        feed(.acl, .received, Self.aclATT(handle, pdu.encode()))
    }

    /// Raw ATT bytes (possibly malformed or empty) in either direction.
    @discardableResult
    func rawATT(_ att: [UInt8], on handle: UInt16 = 0x40, _ direction: Direction = .sent) -> [GATTEvent] {
        feed(.acl, direction, Self.aclATT(handle, att))
    }

    /// HCI LE Connection Complete (subevent 0x01), status 0, local role central.
    @discardableResult
    func connect(_ handle: UInt16 = 0x40, peer: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = peerA) -> [GATTEvent] {
        let address = [peer.5, peer.4, peer.3, peer.2, peer.1, peer.0]  // little-endian on the wire
        let params: [UInt8] = [0x01, 0x00] + le16(handle) + [0x00, 0x00] + address
            + le16(0x0018) + le16(0x0000) + le16(0x0048) + [0x00]
        return feed(.event, .received, [0x3E, UInt8(params.count)] + params)
    }

    /// HCI Disconnection Complete, status 0, reason 0x13 (remote user terminated).
    @discardableResult
    func disconnect(_ handle: UInt16 = 0x40) -> [GATTEvent] {
        feed(.event, .received, [0x05, 0x04, 0x00] + le16(handle) + [0x13])
    }

    /// The table in use on a connection.
    func table(_ handle: UInt16 = 0x40) -> AttributeTable? { decoder.table(for: key(handle))?.0 }
    func source(_ handle: UInt16 = 0x40) -> TableSource? { decoder.table(for: key(handle))?.1 }
}

func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }

extension Array where Element == GATTEvent {
    var atts: [ATTEvent] { compactMap { if case .att(let e) = $0 { return e } else { return nil } } }
    var operations: [GATTOperation] { compactMap { if case .operation(let o) = $0 { return o } else { return nil } } }
    var links: [LinkEvent] { compactMap { if case .link(let l) = $0 { return l } else { return nil } } }

    /// Reasons of the link-level malformed events (any layer).
    var malformedReasons: [String] {
        links.compactMap { if case .malformed(_, _, let reason) = $0 { return reason } else { return nil } }
    }

    var longWrites: [(key: ConnectionKey, handle: UInt16, info: HandleInfo?, value: [UInt8], firstFrame: Int, parts: Int)] {
        operations.compactMap {
            if case .longWrite(let k, let h, let i, let v, let f, let p, _) = $0 { return (k, h, i, v, f, p) } else { return nil }
        }
    }

    var longReads: [(key: ConnectionKey, handle: UInt16, info: HandleInfo?, value: [UInt8], firstFrame: Int, parts: Int)] {
        operations.compactMap {
            if case .longRead(let k, let h, let i, let v, let f, let p, _) = $0 { return (k, h, i, v, f, p) } else { return nil }
        }
    }

    var subscriptions: [(key: ConnectionKey, cccd: UInt16, characteristic: BluetoothUUID?, notify: Bool, indicate: Bool)] {
        operations.compactMap {
            if case .subscription(let k, let h, let c, let n, let i) = $0 { return (k, h, c, n, i) } else { return nil }
        }
    }

    var mtuExchanges: [(key: ConnectionKey, client: UInt16, server: UInt16, mtu: Int)] {
        operations.compactMap {
            if case .mtuExchanged(let k, let c, let s, let m) = $0 { return (k, c, s, m) } else { return nil }
        }
    }

    var tableUpdates: Int {
        operations.filter { if case .tableUpdated = $0 { return true } else { return false } }.count
    }
}

// MARK: A device to discover

/// The device the discovery tests walk:
///
///     0x0001-0x0005  Generic Access (0x1800)
///       0x0002/0x0003  Device Name 0x2A00   read
///       0x0004/0x0005  Appearance 0x2A01    read
///     0x0010-0x001A  speaker service (128-bit)
///       0x0011/0x0012  OTA_CREDENTIALS      write
///       0x0013/0x0014  OTA_STATUS           read, notify
///         0x0015 CCCD 0x2902, 0x0016 user description 0x2901
///       0x0017/0x0018  Battery Level 0x2A19 read, notify (16-bit among 128-bit ones)
///         0x0019 CCCD 0x2902, 0x001A user description 0x2901
enum Device {
    static func char16(_ decl: UInt16, _ props: UInt8, _ value: UInt16, _ uuid: UInt16) -> ATTHandleValue {
        ATTHandleValue(handle: decl, value: [props] + le16(value) + le16(uuid))
    }

    static func char128(_ decl: UInt16, _ props: UInt8, _ value: UInt16, _ uuid: BluetoothUUID) -> ATTHandleValue {
        ATTHandleValue(handle: decl, value: [props] + le16(value) + uuid.littleEndianBytes128)
    }

    // Each step is a request sent and the device's answer.
    static let services: [(ATTPDU, ATTPDU)] = [
        (.readByGroupTypeRequest(startHandle: 1, endHandle: 0xFFFF, type: UUIDs.primaryService),
         .readByGroupTypeResponse(length: 6, entries: [ATTGroupData(handle: 1, endGroupHandle: 5, value: [0x00, 0x18])])),
        (.readByGroupTypeRequest(startHandle: 6, endHandle: 0xFFFF, type: UUIDs.primaryService),
         .readByGroupTypeResponse(length: 20, entries: [ATTGroupData(handle: 0x10, endGroupHandle: 0x1A,
                                                                      value: UUIDs.speakerService.littleEndianBytes128)])),
        (.readByGroupTypeRequest(startHandle: 0x1B, endHandle: 0xFFFF, type: UUIDs.primaryService),
         .errorResponse(requestOpcode: 0x10, handle: 0x1B, error: .attributeNotFound)),
    ]

    static let characteristics: [(ATTPDU, ATTPDU)] = [
        (.readByTypeRequest(startHandle: 1, endHandle: 5, type: UUIDs.characteristic),
         .readByTypeResponse(length: 7, entries: [char16(2, 0x02, 3, 0x2A00), char16(4, 0x02, 5, 0x2A01)])),
        (.readByTypeRequest(startHandle: 0x10, endHandle: 0x1A, type: UUIDs.characteristic),
         .readByTypeResponse(length: 21, entries: [char128(0x11, 0x08, 0x12, UUIDs.otaCredentials),
                                                   char128(0x13, 0x12, 0x14, UUIDs.otaStatus)])),
        (.readByTypeRequest(startHandle: 0x14, endHandle: 0x1A, type: UUIDs.characteristic),
         .readByTypeResponse(length: 7, entries: [char16(0x17, 0x12, 0x18, 0x2A19)])),
        (.readByTypeRequest(startHandle: 0x18, endHandle: 0x1A, type: UUIDs.characteristic),
         .errorResponse(requestOpcode: 0x08, handle: 0x18, error: .attributeNotFound)),
    ]

    static let descriptors: [(ATTPDU, ATTPDU)] = [
        (.findInformationRequest(startHandle: 0x15, endHandle: 0x16),
         .findInformationResponse(format: 1, entries: [ATTHandleUUID(handle: 0x15, uuid: UUIDs.cccd),
                                                       ATTHandleUUID(handle: 0x16, uuid: UUIDs.userDescription)])),
        (.findInformationRequest(startHandle: 0x19, endHandle: 0x1A),
         .findInformationResponse(format: 1, entries: [ATTHandleUUID(handle: 0x19, uuid: UUIDs.cccd),
                                                       ATTHandleUUID(handle: 0x1A, uuid: UUIDs.userDescription)])),
    ]

    /// Find Information over the whole speaker service before anything else is known: it lists the
    /// declarations and values too, in a 16-bit and a 128-bit response.
    static let everythingByFindInformation: [(ATTPDU, ATTPDU)] = [
        (.findInformationRequest(startHandle: 1, endHandle: 0xFFFF),
         .findInformationResponse(format: 1, entries: [
            ATTHandleUUID(handle: 1, uuid: UUIDs.primaryService), ATTHandleUUID(handle: 2, uuid: UUIDs.characteristic),
            ATTHandleUUID(handle: 3, uuid: UUIDs.deviceName), ATTHandleUUID(handle: 4, uuid: UUIDs.characteristic),
            ATTHandleUUID(handle: 5, uuid: UUIDs.appearance), ATTHandleUUID(handle: 0x10, uuid: UUIDs.primaryService),
            ATTHandleUUID(handle: 0x11, uuid: UUIDs.characteristic),
         ])),
        (.findInformationRequest(startHandle: 0x12, endHandle: 0xFFFF),
         .findInformationResponse(format: 2, entries: [ATTHandleUUID(handle: 0x12, uuid: UUIDs.otaCredentials)])),
        (.findInformationRequest(startHandle: 0x13, endHandle: 0xFFFF),
         .findInformationResponse(format: 1, entries: [ATTHandleUUID(handle: 0x13, uuid: UUIDs.characteristic)])),
        (.findInformationRequest(startHandle: 0x14, endHandle: 0xFFFF),
         .findInformationResponse(format: 2, entries: [ATTHandleUUID(handle: 0x14, uuid: UUIDs.otaStatus)])),
        (.findInformationRequest(startHandle: 0x15, endHandle: 0xFFFF),
         .findInformationResponse(format: 1, entries: [
            ATTHandleUUID(handle: 0x15, uuid: UUIDs.cccd), ATTHandleUUID(handle: 0x16, uuid: UUIDs.userDescription),
            ATTHandleUUID(handle: 0x17, uuid: UUIDs.characteristic), ATTHandleUUID(handle: 0x18, uuid: UUIDs.batteryLevel),
            ATTHandleUUID(handle: 0x19, uuid: UUIDs.cccd), ATTHandleUUID(handle: 0x1A, uuid: UUIDs.userDescription),
         ])),
    ]

    /// Sends each request and its answer; returns every event.
    @discardableResult
    static func run(_ steps: [(ATTPDU, ATTPDU)], _ feed: GATTFeed, on handle: UInt16 = 0x40) -> [GATTEvent] {
        var all: [GATTEvent] = []
        for (request, response) in steps {
            all += feed.send(request, on: handle)
            all += feed.receive(response, on: handle)
        }
        return all
    }

    /// Services, then characteristics, then descriptors, as a phone does it.
    @discardableResult
    static func discover(_ feed: GATTFeed, on handle: UInt16 = 0x40) -> [GATTEvent] {
        run(services + characteristics + descriptors, feed, on: handle)
    }

    /// Checks everything the table should know about the device.
    static func assertTable(_ t: AttributeTable?, file: StaticString = #filePath, line: UInt = #line) {
        guard let t else { return XCTFail("no table", file: file, line: line) }
        XCTAssertEqual(t.services.count, 2, file: file, line: line)
        XCTAssertEqual(t.services[1]?.uuid, UUIDs.gap, file: file, line: line)
        XCTAssertEqual(t.services[1]?.endHandle, 5, file: file, line: line)
        XCTAssertEqual(t.services[1]?.primary, true, file: file, line: line)
        XCTAssertEqual(t.services[0x10]?.uuid, UUIDs.speakerService, file: file, line: line)
        XCTAssertEqual(t.services[0x10]?.startHandle, 0x10, file: file, line: line)
        XCTAssertEqual(t.services[0x10]?.endHandle, 0x1A, file: file, line: line)

        XCTAssertEqual(t.characteristics.count, 5, file: file, line: line)
        let expected: [(UInt16, UInt16, UInt8, BluetoothUUID)] = [
            (2, 3, 0x02, UUIDs.deviceName), (4, 5, 0x02, UUIDs.appearance),
            (0x11, 0x12, 0x08, UUIDs.otaCredentials), (0x13, 0x14, 0x12, UUIDs.otaStatus),
            (0x17, 0x18, 0x12, UUIDs.batteryLevel),
        ]
        for (decl, value, props, uuid) in expected {
            let c = t.characteristics[decl]
            XCTAssertEqual(c?.uuid, uuid, "characteristic at \(decl)", file: file, line: line)
            XCTAssertEqual(c?.valueHandle, value, "characteristic at \(decl)", file: file, line: line)
            XCTAssertEqual(c?.properties, props, "characteristic at \(decl)", file: file, line: line)
            XCTAssertEqual(t.info(for: value), HandleInfo(role: .value, uuid: uuid, characteristic: uuid), file: file, line: line)
            XCTAssertEqual(t.info(for: decl), HandleInfo(role: .declaration, uuid: UUIDs.characteristic, characteristic: uuid),
                           file: file, line: line)
        }

        XCTAssertEqual(t.descriptors, [0x15: UUIDs.cccd, 0x16: UUIDs.userDescription,
                                       0x19: UUIDs.cccd, 0x1A: UUIDs.userDescription], file: file, line: line)
        XCTAssertEqual(t.info(for: 0x15), HandleInfo(role: .descriptor, uuid: UUIDs.cccd, characteristic: UUIDs.otaStatus), file: file, line: line)
        XCTAssertEqual(t.info(for: 0x16), HandleInfo(role: .descriptor, uuid: UUIDs.userDescription, characteristic: UUIDs.otaStatus),
                       file: file, line: line)
        XCTAssertEqual(t.info(for: 0x19), HandleInfo(role: .descriptor, uuid: UUIDs.cccd, characteristic: UUIDs.batteryLevel), file: file, line: line)
        XCTAssertEqual(t.info(for: 0x1A), HandleInfo(role: .descriptor, uuid: UUIDs.userDescription, characteristic: UUIDs.batteryLevel),
                       file: file, line: line)
        XCTAssertEqual(t.owner(ofDescriptor: 0x15)?.declarationHandle, 0x13, file: file, line: line)
        XCTAssertEqual(t.owner(ofDescriptor: 0x1A)?.declarationHandle, 0x17, file: file, line: line)
        XCTAssertEqual(t.info(for: 0x10)?.role, .service, file: file, line: line)
        XCTAssertNil(t.info(for: 0x1B), file: file, line: line)
    }
}

/// Default tables for the decoder's no-discovery tests, in the layout of the built-in profiles
/// (`--profile speaker`, `--profile sensor`): GATT knows no protocol, so its tests bring their own.
enum FixtureTables {
    static let speaker = parse("""
        {"name": "speaker", "services": [\(BuiltInProfiles.commonServices),
          {"uuid": "00000001-1234-5678-9abc-def012345678", "startHandle": 10, "endHandle": 21, "characteristics": [
            {"uuid": "00000002-1234-5678-9abc-def012345678", "handle": 11, "valueHandle": 12, "properties": ["read", "write"]},
            {"uuid": "00000005-1234-5678-9abc-def012345678", "handle": 13, "valueHandle": 14, "properties": ["write"]},
            {"uuid": "00000006-1234-5678-9abc-def012345678", "handle": 15, "valueHandle": 16, "properties": ["write"]},
            {"uuid": "00000007-1234-5678-9abc-def012345678", "handle": 17, "valueHandle": 18, "properties": ["write"]},
            {"uuid": "00000008-1234-5678-9abc-def012345678", "handle": 19, "valueHandle": 20, "properties": ["read", "notify"],
             "descriptors": [{"uuid": "0x2902", "handle": 21}]}]}]}
        """)
    static let sensor = parse("""
        {"name": "sensor", "services": [\(BuiltInProfiles.commonServices),
          {"uuid": "12345678-9abc-def0-1234-000000000000", "startHandle": 10, "endHandle": 13, "characteristics": [
            {"uuid": "12345678-9abc-def0-1234-000000000008", "handle": 11, "valueHandle": 12, "properties": ["write", "notify"],
             "descriptors": [{"uuid": "0x2902", "handle": 13}]}]}]}
        """)

    private static func parse(_ json: String) -> AttributeTable {
        (try? GATTTableFile.parse(Data(json.utf8), source: "fixture"))?.table ?? AttributeTable()
    }
}
