import ATT
import Capture
import GATT
import HCI
import Profiles
import XCTest
@testable import Analysis
@testable import Emulator

/// The link story on traffic other stacks make: accept-list connections, security refusals told
/// apart, headlines that count, and BR/EDR links (ATT over PSM 0x001F, busy classic channels).
final class LinkStoryTests: XCTestCase {
    let peer: [UInt8] = [0x3D, 0xC5, 0x3A, 0x0E, 0xF9, 0xF0]

    func timeline(_ recorder: HCIRecorder) -> Timeline { recorder.timeline() }

    /// LE Create Connection with the accept list as filter (peer all zeros).
    func createConnectionThroughAcceptList(_ r: inout HCIRecorder, at t: Int64) {
        r.command(0x200D, [0x60, 0x00, 0x30, 0x00, 0x01, 0x00] + [UInt8](repeating: 0, count: 6) + [0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00, 0x00, 0x00, 0x00], at: t)
    }

    /// LE Connection Complete with status 0x02 and peer all zeros: what a cancelled attempt reports.
    func cancelled(_ r: inout HCIRecorder, at t: Int64) {
        r.event(0x3E, [0x01, 0x02, 0x00, 0x00, 0x00, 0x00] + [UInt8](repeating: 0, count: 6) + [0, 0, 0, 0, 0, 0, 0], at: t)
    }

    func testAcceptListAttemptsBelongToTheDeviceThatConnects() {
        var r = HCIRecorder(handle: 0x0040, aclBufferSize: 27)
        createConnectionThroughAcceptList(&r, at: 1_000_000)
        cancelled(&r, at: 2_000_000)
        createConnectionThroughAcceptList(&r, at: 3_000_000)
        r.connectionComplete(peer: peer, interval: 24, at: 4_000_000)
        r.disconnectionComplete(reason: 0x13, at: 5_000_000)
        let t = timeline(r)
        XCTAssertEqual(t.devices.map(\.address), ["F0:F9:0E:3A:C5:3D"])
        let attempt = t.events.first { $0.kind == "link.connect-cancelled" }
        XCTAssertEqual(attempt?.device, 0)
        XCTAssertEqual(attempt?.summary, "connection attempt through the accept list cancelled by the host")
        XCTAssertEqual(t.devices[0].linkCounts.attempted, 2)
        XCTAssertEqual(t.devices[0].linkCounts.established, 1)
    }

    func testAcceptListAttemptsWithNoConnectionBelongToNoDevice() {
        var r = HCIRecorder(handle: 0x0040, aclBufferSize: 27)
        createConnectionThroughAcceptList(&r, at: 1_000_000)
        cancelled(&r, at: 2_000_000)
        let t = timeline(r)
        XCTAssertTrue(t.devices.isEmpty, "\(t.devices.map(\.address))")
        XCTAssertEqual(t.events.filter { $0.kind == "link.connect-cancelled" }.map(\.device), [nil])
    }

    /// A session that gets one ATT error with `code` on a Read; `encryptFirst` encrypts before it.
    func refusal(_ code: UInt8, encryptFirst: Bool = false, encryptAfter: Bool = false, keySize: UInt8? = nil) -> Timeline {
        var r = HCIRecorder(handle: 0x0040, aclBufferSize: 27)
        r.connectionComplete(peer: peer, interval: 24, at: 1_000_000)
        if encryptFirst {
            if let keySize {
                r.event(0x59, [0x00] + r.handleBytes + [0x01, keySize], at: 1_500_000)
            } else {
                r.encryptionChange(at: 1_500_000)
            }
        }
        r.att(ATTPDU.readRequest(handle: 0x0010).encode(), sent: true, at: 2_000_000)
        r.att(ATTPDU.errorResponse(requestOpcode: 0x0A, handle: 0x0010, error: ATTErrorCode(rawValue: code)).encode(), sent: false, at: 2_100_000)
        if encryptAfter { r.encryptionChange(at: 3_000_000) }
        r.disconnectionComplete(reason: 0x13, at: 4_000_000)
        return timeline(r)
    }

    func testEachSecurityRefusalHasItsOwnDiagnosis() {
        XCTAssertEqual(refusal(0x05).findings.map(\.id), ["att.needs-authentication"])
        XCTAssertEqual(refusal(0x0F).findings.map(\.id), ["att.needs-encryption"])
        XCTAssertEqual(refusal(0x0C, encryptFirst: true, keySize: 7).findings.map(\.id), ["att.key-too-short"])
        XCTAssertEqual(refusal(0x08).findings.map(\.id), ["att.not-authorized"])
        XCTAssertEqual(refusal(0x0A).findings.map(\.id), [])
    }

    func testNeverPairedIsSaidOnlyOfALinkThatWasNeverEncrypted() throws {
        let never = try XCTUnwrap(refusal(0x05).findings.first)
        XCTAssertEqual(never.title, "The device needs pairing and the phone never paired")
        XCTAssertTrue(never.evidence.contains("never encrypted"), never.evidence)

        let later = try XCTUnwrap(refusal(0x05, encryptAfter: true).findings.first)
        XCTAssertEqual(later.title, "The device needs an authenticated link")
        XCTAssertTrue(later.evidence.contains("encrypted 0.9 s later"), later.evidence)

        let already = try XCTUnwrap(refusal(0x05, encryptFirst: true).findings.first)
        XCTAssertEqual(already.title, "The device needs a stronger pairing than the link has")
        XCTAssertFalse(already.title.contains("never"))

        let authorization = try XCTUnwrap(refusal(0x08).findings.first)
        XCTAssertFalse(authorization.title.lowercased().contains("pair"), authorization.title)
        XCTAssertTrue(authorization.advice.contains("not a pairing problem"))

        let keySize = try XCTUnwrap(refusal(0x0C, encryptFirst: true, keySize: 7).findings.first)
        XCTAssertTrue(keySize.evidence.contains("7-byte key"), keySize.evidence)
    }

    func testAHeadlineCountsTheLinksAndOneFailureDoesNotFailTheDevice() {
        var r = HCIRecorder(handle: 0x0040, aclBufferSize: 27)
        var t0: Int64 = 1_000_000
        for reason: UInt8 in [0x13, 0x3E, 0x13] {
            r.connectionComplete(peer: peer, interval: 24, at: t0)
            if reason == 0x13 { r.encryptionChange(at: t0 + 100_000) }
            r.disconnectionComplete(reason: reason, at: t0 + 1_000_000)
            t0 += 2_000_000
        }
        let t = timeline(r)
        XCTAssertEqual(t.devices.count, 1)
        let d = t.devices[0]
        XCTAssertNotEqual(d.outcome, .failed, d.summary)
        XCTAssertEqual(d.linkCounts.attempted, 3)
        XCTAssertEqual(d.linkCounts.established, 2)
        XCTAssertEqual(d.linkCounts.neverEstablished, 1)
        XCTAssertEqual(d.linkCounts.encrypted, 2)
        XCTAssertTrue(d.summary.contains("3 connections (1 never established), 2 encrypted"), d.summary)
        XCTAssertEqual(t.findings.map(\.id), ["link.never-established"])

        var only = HCIRecorder(handle: 0x0040, aclBufferSize: 27)
        only.connectionComplete(peer: peer, interval: 24, at: 1_000_000)
        only.disconnectionComplete(reason: 0x3E, at: 2_000_000)
        XCTAssertEqual(timeline(only).devices.first?.outcome, .failed)
    }

    /// Who ended a link: this host's own HCI_Disconnect for the handle, accepted (Command Status
    /// success) before the Disconnection Complete, says the host did, whatever code the event
    /// carries (Bumble's virtual controller says 0x13 "remote user" there); without one, or
    /// when the controller refused it, or for another handle, the event's code tells.
    func testTheHostsOwnDisconnectSaysItEndedTheLink() throws {
        func story(_ steps: (inout HCIRecorder) -> Void) throws -> (TimelineConnection, TimelineEvent) {
            var r = HCIRecorder(handle: 0x0040, aclBufferSize: 27)
            r.connectionComplete(peer: peer, interval: 24, at: 1_000_000)
            steps(&r)
            r.disconnectionComplete(reason: 0x13, at: 3_000_000)
            let t = timeline(r)
            return (try XCTUnwrap(t.connections.first), try XCTUnwrap(t.events.first { $0.kind == "link.disconnected" }))
        }
        let (byHost, event) = try story { r in
            r.command(0x0406, r.handleBytes + [0x15], at: 2_000_000)
            r.commandStatus(0x0406, at: 2_000_100)
        }
        XCTAssertEqual(byHost.disconnectReason?.rawValue, 0x13, "the event's code stays")
        XCTAssertEqual(byHost.hostDisconnectReason?.rawValue, 0x15)
        XCTAssertEqual(byHost.disconnectMeaning, "this host hung up: it sent Disconnect (Remote Device Terminated Connection due to Power Off, 0x15)")
        XCTAssertTrue(event.summary.hasPrefix("disconnected by this host: it sent Disconnect ("), event.summary)
        XCTAssertTrue(event.summary.hasSuffix("the controller reported Remote User Terminated Connection (0x13)"), event.summary)
        XCTAssertTrue(event.fields.contains { f in if case .string("host") = f.value { f.name == "endedBy" } else { false } })

        let (peerHungUp, e2) = try story { _ in }
        XCTAssertNil(peerHungUp.hostDisconnectReason)
        XCTAssertTrue(e2.summary.contains("the peer hung up"), e2.summary)
        let (refused, _) = try story { r in
            r.command(0x0406, r.handleBytes + [0x13], at: 2_000_000)
            r.event(0x0F, [0x0C, 0x01, 0x06, 0x04], at: 2_000_100)  // Command Disallowed
        }
        XCTAssertNil(refused.hostDisconnectReason)
        let (otherHandle, _) = try story { r in
            r.command(0x0406, [0x41, 0x00, 0x13], at: 2_000_000)
            r.commandStatus(0x0406, at: 2_000_100)
        }
        XCTAssertNil(otherHandle.hostDisconnectReason)
        let (noStatus, _) = try story { r in r.command(0x0406, r.handleBytes + [0x13], at: 2_000_000) }
        XCTAssertNil(noStatus.hostDisconnectReason, "a command the capture never saw accepted says nothing")
    }

    /// BR/EDR Connection Complete (0x03): status, handle, address, link type ACL, no encryption.
    func classicConnection(_ r: inout HCIRecorder, at t: Int64) {
        r.event(0x03, [0x00] + r.handleBytes + peer + [0x01, 0x00], at: t)
    }

    func signalling(_ r: inout HCIRecorder, code: UInt8, id: UInt8, _ p: [UInt8], sent: Bool, at t: Int64) {
        r.l2cap([code, id, UInt8(p.count), 0] + p, cid: 0x0001, sent: sent, at: t)
    }

    func testATTOverBREDRIsDecodedAsATT() {
        var r = HCIRecorder(handle: 0x000B, aclBufferSize: 1021)
        classicConnection(&r, at: 1_000_000)
        // The phone opens PSM 0x001F from its CID 0x0040; the device answers with its CID 0x0071.
        signalling(&r, code: 0x02, id: 7, [0x1F, 0x00, 0x40, 0x00], sent: true, at: 1_100_000)
        signalling(&r, code: 0x03, id: 7, [0x71, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00], sent: false, at: 1_200_000)
        r.l2cap(ATTPDU.exchangeMTURequest(clientRxMTU: 517).encode(), cid: 0x0071, sent: true, at: 1_300_000)
        r.l2cap(ATTPDU.exchangeMTUResponse(serverRxMTU: 256).encode(), cid: 0x0040, sent: false, at: 1_400_000)
        r.l2cap(ATTPDU.readRequest(handle: 3).encode(), cid: 0x0071, sent: true, at: 1_500_000)
        r.l2cap(ATTPDU.readResponse(value: Array("Treadmill".utf8)).encode(), cid: 0x0040, sent: false, at: 1_600_000)
        // A channel for another PSM (RFCOMM) is not ATT.
        signalling(&r, code: 0x02, id: 8, [0x03, 0x00, 0x41, 0x00], sent: true, at: 1_700_000)
        signalling(&r, code: 0x03, id: 8, [0x72, 0x00, 0x41, 0x00, 0x00, 0x00, 0x00, 0x00], sent: false, at: 1_800_000)
        r.l2cap(ATTPDU.readRequest(handle: 3).encode(), cid: 0x0072, sent: true, at: 1_900_000)

        let decoder = GATTDecoder()
        var opcodes: [UInt8] = []
        r.recording.forEachRecord { record in
            decoder.consume(record)
            for case .att(let a) in decoder.events { opcodes.append(a.opcode) }
        }
        XCTAssertEqual(opcodes, [0x02, 0x03, 0x0A, 0x0B])
        let t = timeline(r)
        XCTAssertEqual(t.connections.first?.classic, true)
        XCTAssertEqual(t.connections.first?.mtu, 256)
    }

    func testABusyClassicLinkHasNoTrafficGap() {
        var r = HCIRecorder(handle: 0x000B, aclBufferSize: 1021)
        classicConnection(&r, at: 1_000_000)
        // Media on an AVDTP channel every 2 s for a minute: busy, though no ATT at all.
        for i in 0..<30 {
            r.l2cap([0x80, 0x60] + [UInt8](repeating: 0x55, count: 40), cid: 0x0042, sent: true, at: 2_000_000 + Int64(i) * 2_000_000)
        }
        r.disconnectionComplete(reason: 0x16, at: 62_000_000)
        let t = timeline(r)
        XCTAssertEqual(t.events.filter { $0.kind == "link.gap" }.count, 0)
        XCTAssertEqual(t.connections.first?.classic, true)
    }

    func testAClassicLinkUpBeforeTheCaptureIsListedAsSuch() {
        var r = HCIRecorder(handle: 0x000C, aclBufferSize: 1021)
        r.l2cap([0x01, 0x02, 0x03], cid: 0x0042, sent: true, at: 1_000_000)
        let t = timeline(r)
        XCTAssertEqual(t.connections.first?.implicit, true)
        XCTAssertEqual(t.events.first?.kind, "link.already-connected")
    }
}
