import XCTest

@testable import Capture
@testable import HCI

final class HCIEventTests: XCTestCase {
    /// LE Connection Complete: status 0, handle 0x0040 (with PB/BC bits 0x2 set above it), role 1
    /// (peripheral), peer random address 11:22:33:44:55:66, interval 0x28, latency 0, timeout 0x1F4.
    let connectionComplete: [UInt8] = [0x3E, 0x13, 0x01, 0x00, 0x40, 0x20, 0x01, 0x01, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
                                       0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00]

    private func connect(_ d: LinkDecoder, number: Int = 1) {
        d.feed(.event, connectionComplete, number: number, time: 5_000_000)
    }

    func testLEConnectionComplete() throws {
        let d = LinkDecoder()
        let out = d.feed(.event, connectionComplete, number: 7, time: 5_000_000)
        XCTAssertEqual(out.events.count, 1, out.summary)
        guard case .connectionComplete(let info) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(info.key, key(0x040))
        XCTAssertEqual(info.role, .peripheral)
        XCTAssertEqual(info.peerAddressType, .randomDevice)
        XCTAssertEqual(info.peerAddress?.description, "11:22:33:44:55:66")
        XCTAssertEqual(info.interval, 0x28)
        XCTAssertEqual(info.intervalMicroseconds, 50_000)
        XCTAssertEqual(info.latency, 0)
        XCTAssertEqual(info.supervisionTimeout, 500)
        XCTAssertEqual(info.supervisionTimeoutMicroseconds, 5_000_000)
        XCTAssertEqual(info.connectedFrame, 7)
        XCTAssertEqual(info.connectedAt, 5_000_000)
        XCTAssertFalse(info.implicit)
        XCTAssertEqual(d.connections[key(0x040)], info)
    }

    func testLEConnectionCompleteOnAnotherController() {
        let d = LinkDecoder()
        let out = d.feed(.event, connectionComplete, controller: 3)
        guard case .connectionComplete(let info) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(info.key, key(0x040, controller: 3))
        XCTAssertEqual(info.key.description, "hci3/0x0040")
        XCTAssertNil(d.connections[key(0x040)])
    }

    func testLEConnectionFailed() {
        let d = LinkDecoder()
        var bytes = connectionComplete
        bytes[3] = 0x3E  // Connection Failed to be Established
        let out = d.feed(.event, bytes)
        guard case .connectionFailed(let status, let peer) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(status.rawValue, 0x3E)
        XCTAssertEqual(status.name, "Connection Failed to be Established")
        XCTAssertEqual(peer?.description, "11:22:33:44:55:66")
        XCTAssertTrue(d.connections.isEmpty)
    }

    func testLEConnectionCompleteTooShort() {
        let d = LinkDecoder()
        // Parameter length says 18, 17 parameter bytes after the subevent code.
        let out = d.feed(.event, Array(connectionComplete.prefix(20)), originalLength: 20)
        XCTAssertEqual(out.malformedLayers, [.hci, .hci], out.summary)
        XCTAssertTrue(out.events.last?.malformed?.reason.contains("needs 18 parameter bytes, has 17") ?? false, out.summary)
        XCTAssertTrue(d.connections.isEmpty)
    }

    func testLEEnhancedConnectionComplete() throws {
        for sub: UInt8 in [0x0A, 0x29] {
            let d = LinkDecoder()
            var p: [UInt8] = [sub, 0x00, 0x41, 0x00, 0x00, 0x02]
            p += [0xFF, 0xEE, 0xDD, 0xCC, 0xBB, 0xAA]  // peer AA:BB:CC:DD:EE:FF
            p += [0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0x45]  // local RPA
            p += [0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0x46]  // peer RPA
            p += [0x18, 0x00, 0x04, 0x00, 0xC8, 0x00, 0x01]  // interval 24, latency 4, timeout 200, clock accuracy
            if sub == 0x29 { p += [0x02, 0xFF, 0xFF] }  // advertising handle, sync handle
            let out = d.feed(.event, [0x3E, UInt8(p.count)] + p, number: 3)
            guard case .connectionComplete(let info) = out.events.first else { return XCTFail(out.summary) }
            XCTAssertEqual(info.key, key(0x041))
            XCTAssertEqual(info.role, .central)
            XCTAssertEqual(info.peerAddressType, .publicIdentity)
            XCTAssertEqual(info.peerAddress?.description, "AA:BB:CC:DD:EE:FF")
            XCTAssertEqual(info.interval, 24, "subevent \(sub)")
            XCTAssertEqual(info.latency, 4)
            XCTAssertEqual(info.supervisionTimeout, 200)
            XCTAssertEqual(d.connections.count, 1)
        }
    }

    func testDisconnectionComplete() throws {
        let d = LinkDecoder()
        connect(d)
        let out = d.feed(.event, [0x05, 0x04, 0x00, 0x40, 0x00, 0x13], number: 9, time: 9_000_000)
        guard case .disconnection(let info, let reason) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(reason.rawValue, 0x13)
        XCTAssertEqual(reason.name, "Remote User Terminated Connection")
        XCTAssertEqual(info.key, key(0x040))
        XCTAssertEqual(info.peerAddress?.description, "11:22:33:44:55:66", "what was known of the connection is reported")
        XCTAssertEqual(info.connectedFrame, 1)
        XCTAssertEqual(info.disconnectedFrame, 9)
        XCTAssertEqual(info.disconnectedAt, 9_000_000)
        XCTAssertEqual(info.disconnectReason, HCIStatus(0x13))
        XCTAssertTrue(d.connections.isEmpty)
        // A failed disconnection (status non-zero) changes nothing.
        connect(d)
        let failed = d.feed(.event, [0x05, 0x04, 0x0C, 0x40, 0x00, 0x13])
        XCTAssertTrue(failed.events.isEmpty, failed.summary)
        XCTAssertEqual(d.connections.count, 1)
        // Too short.
        XCTAssertEqual(d.feed(.event, [0x05, 0x03, 0x00, 0x40, 0x00]).malformedLayers, [.hci])
    }

    func testEncryptionChangeV1() {
        let d = LinkDecoder()
        connect(d)
        var out = d.feed(.event, [0x08, 0x04, 0x00, 0x40, 0x00, 0x01], number: 4)
        guard case .encryptionChange(let k, let enabled, let status, let keySize) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(k, key(0x040))
        XCTAssertTrue(enabled)
        XCTAssertEqual(status.rawValue, 0)
        XCTAssertNil(keySize)
        XCTAssertEqual(d.connections[key(0x040)]?.encrypted, true)
        XCTAssertEqual(d.connections[key(0x040)]?.firstEncryptedFrame, 4)
        // Off again: the first encrypted frame is remembered.
        out = d.feed(.event, [0x08, 0x04, 0x00, 0x40, 0x00, 0x00], number: 6)
        guard case .encryptionChange(_, let off, _, _) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertFalse(off)
        XCTAssertEqual(d.connections[key(0x040)]?.encrypted, false)
        XCTAssertEqual(d.connections[key(0x040)]?.firstEncryptedFrame, 4)
        // A failure status never enables encryption, whatever the enable byte says.
        out = d.feed(.event, [0x08, 0x04, 0x06, 0x40, 0x00, 0x01], number: 8)
        guard case .encryptionChange(_, let failedEnabled, let failure, _) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertFalse(failedEnabled)
        XCTAssertEqual(failure.name, "PIN or Key Missing")
        XCTAssertEqual(d.connections[key(0x040)]?.encrypted, false)
    }

    func testEncryptionChangeV2() {
        let d = LinkDecoder()
        connect(d)
        let out = d.feed(.event, [0x59, 0x05, 0x00, 0x40, 0x00, 0x01, 0x07], number: 2)
        guard case .encryptionChange(let k, let enabled, _, let keySize) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(k, key(0x040))
        XCTAssertTrue(enabled)
        XCTAssertEqual(keySize, 7)
        XCTAssertEqual(d.connections[key(0x040)]?.encryptionKeySize, 7)
        XCTAssertEqual(d.connections[key(0x040)]?.encrypted, true)
        // v2 needs the key size byte.
        XCTAssertEqual(d.feed(.event, [0x59, 0x04, 0x00, 0x40, 0x00, 0x01]).malformedLayers, [.hci])
    }

    func testEncryptionOnAConnectionSeenOnlyNow() {
        // The capture began after the connection: it is created implicitly and marked encrypted.
        let d = LinkDecoder()
        d.feed(.event, [0x08, 0x04, 0x00, 0x80, 0x00, 0x01], number: 1)
        XCTAssertEqual(d.connections[key(0x080)]?.implicit, true)
        XCTAssertEqual(d.connections[key(0x080)]?.encrypted, true)
    }

    func testEncryptionKeyRefresh() {
        let d = LinkDecoder()
        let out = d.feed(.event, [0x30, 0x03, 0x00, 0x40, 0x00])
        guard case .encryptionKeyRefresh(let k, let status) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(k, key(0x040))
        XCTAssertEqual(status.rawValue, 0)
    }

    func testLTKRequest() {
        let d = LinkDecoder()
        let out = d.feed(.event, [0x3E, 0x0D, 0x05, 0x40, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x34, 0x12])
        guard case .ltkRequest(let k, let rand, let ediv) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(k, key(0x040))
        XCTAssertEqual(rand, 0x0807_0605_0403_0201)
        XCTAssertEqual(ediv, 0x1234)
        XCTAssertEqual(d.feed(.event, [0x3E, 0x0C, 0x05, 0x40, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 0x34]).malformedLayers.last, .hci)
    }

    let ltk: [UInt8] = [0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF]

    private func assertRedacted(_ secret: Secret, _ event: LinkEvent, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(secret.unsafeBytes, ltk, file: file, line: line)
        XCTAssertEqual(secret.label, "LTK", file: file, line: line)
        XCTAssertEqual(secret.description, "<redacted:16 bytes>", file: file, line: line)
        XCTAssertEqual("\(secret)", "<redacted:16 bytes>", file: file, line: line)
        XCTAssertEqual(String(reflecting: secret), "Secret(LTK, <redacted:16 bytes>)", file: file, line: line)
        XCTAssertEqual(secret.hex(reveal: false), "<redacted:16 bytes>", file: file, line: line)
        XCTAssertEqual(secret.hex(reveal: true), "00112233445566778899aabbccddeeff", file: file, line: line)
        // Printing the whole event shows no key bytes either.
        for text in ["\(event)", String(reflecting: event)] {
            XCTAssertFalse(text.lowercased().contains("8899aabb"), text, file: file, line: line)
            XCTAssertFalse(text.contains("136, 153"), text, file: file, line: line)
            XCTAssertTrue(text.contains("redacted"), text, file: file, line: line)
        }
    }

    func testLTKReplyCarriesARedactedSecret() {
        let d = LinkDecoder()
        let out = d.feed(.command, [0x1A, 0x20, 0x12, 0x40, 0x00] + ltk, direction: .sent)
        guard let event = out.events.first, case .ltkReply(let k, let secret) = event else { return XCTFail(out.summary) }
        XCTAssertEqual(k, key(0x040))
        assertRedacted(secret, event)
        // One byte short: not decoded.
        XCTAssertTrue(d.feed(.command, [0x1A, 0x20, 0x11, 0x40, 0x00] + ltk.dropLast(), direction: .sent).events.isEmpty)
        // Negative reply.
        let negative = d.feed(.command, [0x1B, 0x20, 0x02, 0x40, 0x00], direction: .sent)
        guard case .ltkNegativeReply(let nk) = negative.events.first else { return XCTFail(negative.summary) }
        XCTAssertEqual(nk, key(0x040))
    }

    func testLEStartEncryptionCarriesARedactedSecret() {
        let d = LinkDecoder()
        let params: [UInt8] = [0x40, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x34, 0x12] + ltk
        let out = d.feed(.command, [0x19, 0x20, 0x1C] + params, direction: .sent)
        guard let event = out.events.first, case .startEncryption(let k, let secret, let rand, let ediv) = event else { return XCTFail(out.summary) }
        XCTAssertEqual(k, key(0x040))
        XCTAssertEqual(rand, 0x0807_0605_0403_0201)
        XCTAssertEqual(ediv, 0x1234)
        assertRedacted(secret, event)
    }

    func testOtherCommands() {
        let d = LinkDecoder()
        var out = d.feed(.command, [0x06, 0x04, 0x03, 0x40, 0x00, 0x13], direction: .sent)
        guard case .disconnectCommand(let k, let reason) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(k, key(0x040))
        XCTAssertEqual(reason.rawValue, 0x13)
        // LE Create Connection: scan interval, window, filter policy, peer type 1, peer address, ...
        let create: [UInt8] = [0x60, 0x00, 0x30, 0x00, 0x00, 0x01, 0x66, 0x55, 0x44, 0x33, 0x22, 0xC1, 0x00,
                               0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x00, 0x00]
        out = d.feed(.command, [0x0D, 0x20, UInt8(create.count)] + create, direction: .sent)
        guard case .createConnection(let peer, let type) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(peer.description, "C1:22:33:44:55:66")
        XCTAssertEqual(type, 1)
        XCTAssertEqual(d.feed(.command, [0x03, 0x0C]).malformedLayers, [.hci])
    }

    func testConnectionUpdateComplete() {
        let d = LinkDecoder()
        connect(d)
        let out = d.feed(.event, [0x3E, 0x0A, 0x03, 0x00, 0x40, 0x00, 0x50, 0x00, 0x02, 0x00, 0x90, 0x01])
        guard case .connectionUpdate(let k, let interval, let latency, let timeout) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(k, key(0x040))
        XCTAssertEqual(interval, 0x50)
        XCTAssertEqual(latency, 2)
        XCTAssertEqual(timeout, 400)
        XCTAssertEqual(d.connections[key(0x040)]?.interval, 0x50)
        XCTAssertEqual(d.connections[key(0x040)]?.latency, 2)
        XCTAssertEqual(d.connections[key(0x040)]?.supervisionTimeout, 400)
        XCTAssertEqual(d.connections[key(0x040)]?.peerAddress?.description, "11:22:33:44:55:66", "the rest is kept")
        // A failed update changes nothing.
        XCTAssertTrue(d.feed(.event, [0x3E, 0x0A, 0x03, 0x3B, 0x40, 0x00, 0x06, 0x00, 0x00, 0x00, 0x0A, 0x00]).events.isEmpty)
        XCTAssertEqual(d.connections[key(0x040)]?.interval, 0x50)
    }

    func testDataLengthChange() {
        let d = LinkDecoder()
        let out = d.feed(.event, [0x3E, 0x0B, 0x07, 0x40, 0x00, 0xFB, 0x00, 0x48, 0x08, 0x1B, 0x00, 0x48, 0x01])
        guard case .dataLengthChange(let k, let tx, let rx) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(k, key(0x040))
        XCTAssertEqual(tx, 251)
        XCTAssertEqual(rx, 27)
        XCTAssertEqual(d.feed(.event, [0x3E, 0x0A, 0x07, 0x40, 0x00, 0xFB, 0x00, 0x48, 0x08, 0x1B, 0x00, 0x48]).malformedLayers.last, .hci)
    }

    func testCommandStatusAndCompleteFailures() {
        let d = LinkDecoder()
        // Command Status: status 0x0C, 1 packet, opcode 0x200D (LE Create Connection).
        var out = d.feed(.event, [0x0F, 0x04, 0x0C, 0x01, 0x0D, 0x20])
        guard case .commandFailed(let opcode, let status) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(opcode, 0x200D)
        XCTAssertEqual(status.rawValue, 0x0C)
        XCTAssertEqual(HCINames.command(opcode), "LE Create Connection")
        // Success, or a command GATTLab does not follow, gives nothing.
        XCTAssertTrue(d.feed(.event, [0x0F, 0x04, 0x00, 0x01, 0x0D, 0x20]).events.isEmpty)
        XCTAssertTrue(d.feed(.event, [0x0F, 0x04, 0x0C, 0x01, 0x99, 0xFC]).events.isEmpty)
        // Command Complete: 1 packet, opcode 0x201A, status 0x12.
        out = d.feed(.event, [0x0E, 0x06, 0x01, 0x1A, 0x20, 0x12, 0x40, 0x00])
        guard case .commandFailed(let opcode2, let status2) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(opcode2, 0x201A)
        XCTAssertEqual(status2.rawValue, 0x12)
    }

    func testEventHeaderProblems() {
        let d = LinkDecoder()
        XCTAssertEqual(d.feed(.event, [0x05]).malformedLayers, [.hci])
        // Parameter length larger than the bytes present is malformed unless the capture cut the record.
        XCTAssertEqual(d.feed(.event, [0x13, 0x05, 0x01, 0x40, 0x00]).malformedLayers, [.hci])
        XCTAssertTrue(d.feed(.event, [0x13, 0x05, 0x01, 0x40, 0x00], originalLength: 7).events.isEmpty)
        XCTAssertEqual(d.feed(.event, [0x3E, 0x00]).malformedLayers, [.hci])
    }

    func testHCIStatusNames() {
        XCTAssertEqual(HCIStatus(0x13).description, "Remote User Terminated Connection (0x13)")
        XCTAssertEqual(HCIStatus(0x3D).name, "Connection Terminated due to MIC Failure")
        XCTAssertEqual(HCIStatus(0x2B).name, "Reserved (0x2b)")
        XCTAssertEqual(HCIStatus(0xFF).name, "Reserved (0xff)")
    }
}
