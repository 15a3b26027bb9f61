import ATT
import Capture
import GATT
import HCI
@testable import Protocols
@testable import SensorScanCodec
import XCTest
@testable import Profiles

/// The protocol stage on the real pipeline: HCI records in, protocol events out, with tables
/// from the built-in profiles (as the emulated devices serve them).
final class ProfileDecoderTests: XCTestCase {
    final class Pipeline {
        let gatt = GATTDecoder()
        let profiles = ProfileDecoder(protocols: GATTLabProtocols.all)
        var frame = 0
        var out: [ProfileEvent] = []

        init(profile: String) throws {
            let loaded = try XCTUnwrap(GATTLabProtocols.all.builtInTable(named: profile))
            gatt.defaultTable = loaded.table
            gatt.defaultTableSource = .builtIn(profile)
        }

        func record(_ kind: RecordKind, _ direction: Direction, _ bytes: [UInt8]) {
            frame += 1
            let number = frame
            bytes.withUnsafeBytes { raw in
                gatt.consume(CaptureRecord(number: number, fileOffset: 0, timestamp: Int64(number) * 1000,
                                           direction: direction, kind: kind, originalLength: bytes.count, data: raw))
            }
            profiles.consume(gatt, record: CaptureRecord(number: number, fileOffset: 0, timestamp: Int64(number) * 1000,
                                                         direction: direction, kind: kind, originalLength: 0,
                                                         data: UnsafeRawBufferPointer(start: nil, count: 0)))
            out += profiles.events
        }

        func att(_ pdu: ATTPDU, sent: Bool) {
            let a = pdu.encode()
            let l2cap: [UInt8] = [UInt8(a.count & 0xFF), UInt8(a.count >> 8), 0x04, 0x00] + a
            record(.acl, sent ? .sent : .received, [0x40, 0x20, UInt8(l2cap.count & 0xFF), UInt8(l2cap.count >> 8)] + l2cap)
        }

        func disconnect() { record(.event, .received, [0x05, 0x04, 0x00, 0x40, 0x00, 0x08]) }
    }

    func testSpeakerLongWriteOfCredentialsAndStatus() throws {
        let p = try Pipeline(profile: "speaker")
        let creds = Array("HomeNet".utf8) + [0] + Array("correct horse battery".utf8)
        p.att(.prepareWriteRequest(handle: 14, offset: 0, value: Array(creds[0..<18])), sent: true)
        p.att(.prepareWriteResponse(handle: 14, offset: 0, value: Array(creds[0..<18])), sent: false)
        p.att(.prepareWriteRequest(handle: 14, offset: 18, value: Array(creds[18...])), sent: true)
        p.att(.executeWriteRequest(flags: 1), sent: true)
        p.att(.handleValueNotification(handle: 20, value: [0x05, 0x00, 0x3F, 0xA4, 0x03, 0xC8, 0x05, 0xBE]), sent: false)
        p.att(.handleValueNotification(handle: 20, value: [0x05, 0x00, 0x3F]), sent: false)
        p.att(.writeRequest(handle: 18, value: [0x12, 0x00]), sent: true)
        XCTAssertEqual(p.out.map(\.kind), ["ota.credentials", "ota.status", "ota.status", "ota.control"])
        guard let c = p.out[0].message as? SpeakerOTA.Credentials else { return XCTFail("credentials") }
        XCTAssertEqual(c.ssidText, "HomeNet")
        XCTAssertEqual(p.out[0].firstFrame, 1, "the long write started at the first Prepare Write")
        XCTAssertEqual(p.out[0].frame, 4)
        guard let s = p.out[1].message as? SpeakerOTA.Status else { return XCTFail("status") }
        XCTAssertEqual(s.progress, 63)
        XCTAssertNil(p.out[2].message)
        XCTAssertEqual(p.out[2].problems.map(\.id), ["status.short"])
        guard let cmd = p.out[3].message as? SpeakerOTA.ControlCommand else { return XCTFail("control") }
        XCTAssertEqual(cmd.command, .reboot)
    }

    func testSensorScanAcrossNotificationsAndATruncatedOne() throws {
        let p = try Pipeline(profile: "sensor")
        p.att(.writeRequest(handle: 12, value: Array("SCAN".utf8)), sent: true)
        for chunk in SensorScan.encode([SensorScan.Network("HomeNet", rssi: -45), SensorScan.Network("Office", rssi: -70)], chunkSize: 12) {
            p.att(.handleValueNotification(handle: 12, value: chunk), sent: false)
        }
        p.att(.writeRequest(handle: 12, value: Array("SCAN".utf8)), sent: true)
        p.att(.handleValueNotification(handle: 12, value: Array("Cafe,-5".utf8)), sent: false)
        p.disconnect()
        XCTAssertEqual(p.out.map(\.kind), ["scan.request", "scan.result", "scan.request", "scan.result"])
        guard let first = p.out[1].message as? SensorScan.Response, let cut = p.out[3].message as? SensorScan.Response else {
            return XCTFail("results")
        }
        XCTAssertTrue(first.complete)
        XCTAssertEqual(first.networks.map(\.ssidText), ["HomeNet", "Office"])
        XCTAssertFalse(cut.complete)
        XCTAssertEqual(cut.networks.map(\.ssidText), ["Cafe"])
        XCTAssertTrue(cut.problems.contains { $0.id == "scan.truncated" && $0.message.contains("the link ended") })
    }

    /// Messages are an open protocol: two existentials compare equal only when type and value agree.
    func testMessagesCompareAcrossTypes() throws {
        let p = try Pipeline(profile: "sensor")
        p.att(.writeRequest(handle: 12, value: Array("SCAN".utf8)), sent: true)
        p.att(.writeRequest(handle: 12, value: Array("SCAM".utf8)), sent: true)
        let written = try XCTUnwrap(p.out.first?.message)
        XCTAssertTrue(written.isEqual(SensorScan.Request(bytes: SensorScan.request)))
        XCTAssertFalse(written.isEqual(try XCTUnwrap(p.out.last?.message)), "same type, other bytes")
        XCTAssertFalse(written.isEqual(SensorScan.Response(networks: [], complete: true, problems: [], chunks: 0)), "other type")
    }

    func testValuesOnOtherCharacteristicsAreLeftAlone() throws {
        let p = try Pipeline(profile: "speaker")
        p.att(.writeRequest(handle: 12, value: [1, 2, 3]), sent: true)  // DSP control: not OTA
        p.att(.readRequest(handle: 3), sent: true)
        p.att(.readResponse(value: Array("Speaker".utf8)), sent: false)
        XCTAssertEqual(p.out.count, 0)
    }
}
