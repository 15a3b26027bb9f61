import XCTest

@testable import Capture
@testable import HCI

final class SMPTests: XCTestCase {
    let sixteen: [UInt8] = Array(0x10...0x1F)

    /// Decodes one SMP PDU carried on CID 6 of handle 0x0040.
    private func smp(_ bytes: [UInt8], direction: Direction = .received) -> Decoded {
        LinkDecoder().feed(.acl, acl(handle: 0x040, pb: 0b10, l2cap(cid: 0x0006, bytes)), direction: direction)
    }

    private func pdu(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> SMPPDU? {
        let out = smp(bytes)
        XCTAssertEqual(out.events.count, 1, out.summary, file: file, line: line)
        guard let e = out.events.first?.smpPDU else {
            XCTFail("no SMP event: \(out.summary)", file: file, line: line)
            return nil
        }
        XCTAssertEqual(e.key, key(0x040), file: file, line: line)
        XCTAssertEqual(e.direction, .received, file: file, line: line)
        XCTAssertEqual(e.pdu.code, bytes[0], file: file, line: line)
        return e.pdu
    }

    func testPairingRequestAndResponse() {
        guard case .pairingRequest(let f) = pdu([0x01, 0x03, 0x00, 0x2D, 0x10, 0x0F, 0x0F]) else { return XCTFail() }
        XCTAssertEqual(f.ioCapability, 3)
        XCTAssertEqual(f.ioCapabilityName, "NoInputNoOutput")
        XCTAssertFalse(f.oobDataPresent)
        XCTAssertEqual(f.authReq, 0x2D)
        XCTAssertTrue(f.bonding)
        XCTAssertTrue(f.mitm)
        XCTAssertTrue(f.secureConnections)
        XCTAssertFalse(f.keypress)
        XCTAssertEqual(f.maxKeySize, 16)
        XCTAssertEqual(f.initiatorKeyDistribution, 0x0F)
        XCTAssertEqual(f.responderKeyDistribution, 0x0F)
        XCTAssertEqual(SMPPDU.pairingRequest(f).summary(reveal: false),
                       "Pairing Request io=NoInputNoOutput oob=no auth=[bonding,MITM,SC] keysize=16 keys=0x0f/0x0f")

        guard case .pairingResponse(let g) = pdu([0x02, 0x04, 0x01, 0x11, 0x07, 0x03, 0x01]) else { return XCTFail() }
        XCTAssertEqual(g.ioCapabilityName, "KeyboardDisplay")
        XCTAssertTrue(g.oobDataPresent)
        XCTAssertTrue(g.bonding)
        XCTAssertFalse(g.mitm)
        XCTAssertFalse(g.secureConnections)
        XCTAssertTrue(g.keypress)
        XCTAssertEqual(g.maxKeySize, 7)
        XCTAssertEqual(g.initiatorKeyDistribution, 0x03)
        XCTAssertEqual(g.responderKeyDistribution, 0x01)
        XCTAssertEqual(SMPPDU.PairingFeatures(ioCapability: 9, oobDataPresent: false, authReq: 0, maxKeySize: 16,
                                              initiatorKeyDistribution: 0, responderKeyDistribution: 0).ioCapabilityName, "Reserved (9)")
    }

    func testValuesOfSixteenBytes() {
        XCTAssertEqual(pdu([0x03] + sixteen), .pairingConfirm(value: Secret(sixteen, label: "pairing confirm value")))
        XCTAssertEqual(pdu([0x04] + sixteen), .pairingRandom(value: Secret(sixteen, label: "pairing random value")))
        XCTAssertEqual(pdu([0x0D] + sixteen), .pairingDHKeyCheck(value: sixteen))
    }

    func testPairingFailed() {
        XCTAssertEqual(pdu([0x05, 0x08]), .pairingFailed(reason: 8))
        XCTAssertEqual(SMPPDU.pairingFailed(reason: 8).summary(reveal: false), "Pairing Failed: Unspecified Reason")
        XCTAssertEqual(SMPPDU.failureReason(0x0B), "DHKey Check Failed")
        XCTAssertEqual(SMPPDU.failureReason(0x20), "Reserved (0x20)")
    }

    func testKeysAreSecrets() {
        for (code, label) in [(UInt8(0x06), "LTK"), (0x08, "IRK"), (0x0A, "CSRK")] {
            guard let p = pdu([code] + sixteen) else { continue }
            let secret: Secret
            switch p {
            case .encryptionInformation(let s) where code == 0x06: secret = s
            case .identityInformation(let s) where code == 0x08: secret = s
            case .signingInformation(let s) where code == 0x0A: secret = s
            default: XCTFail("code \(code) decoded as \(p)"); continue
            }
            XCTAssertEqual(secret.label, label)
            XCTAssertEqual(secret.unsafeBytes, sixteen)
            XCTAssertEqual(secret.description, "<redacted:16 bytes>")
            let hidden = p.summary(reveal: false)
            XCTAssertTrue(hidden.hasSuffix("\(label)=<redacted:16 bytes>"), hidden)
            XCTAssertFalse(hidden.contains("101112"), hidden)
            XCTAssertTrue(p.summary(reveal: true).hasSuffix("\(label)=101112131415161718191a1b1c1d1e1f"))
            XCTAssertFalse("\(p)".contains("16, 17, 18"), "\(p)")
        }
    }

    func testCentralIdentification() {
        XCTAssertEqual(pdu([0x07, 0x34, 0x12, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08]),
                       .centralIdentification(ediv: 0x1234, rand: 0x0807_0605_0403_0201))
    }

    func testIdentityAddressInformation() {
        guard case .identityAddressInformation(let type, let address) = pdu([0x09, 0x01, 0x66, 0x55, 0x44, 0x33, 0x22, 0xC1]) else { return XCTFail() }
        XCTAssertEqual(type, 1)
        XCTAssertEqual(address.description, "C1:22:33:44:55:66")
    }

    func testSecurityRequestKeypressAndPublicKey() {
        XCTAssertEqual(pdu([0x0B, 0x0D]), .securityRequest(authReq: 0x0D))
        XCTAssertEqual(pdu([0x0E, 0x02]), .keypressNotification(type: 2))
        let x = Array(UInt8(0)..<32), y = Array(UInt8(32)..<64)
        XCTAssertEqual(pdu([0x0C] + x + y), .pairingPublicKey(x: x, y: y))
    }

    func testUnknownCodeKeepsItsBytes() {
        XCTAssertEqual(pdu([0x0F, 0xAA, 0xBB]), .unknown(code: 0x0F, parameters: [0xAA, 0xBB]))
        XCTAssertEqual(pdu([0x00]), .unknown(code: 0x00, parameters: []))
        XCTAssertEqual(SMPPDU.name(0x0F), "SMP 0x0f")
    }

    func testShortPDUsAreMalformed() {
        let sizes: [(UInt8, Int)] = [(0x01, 6), (0x02, 6), (0x03, 16), (0x04, 16), (0x05, 1), (0x06, 16), (0x07, 10),
                                     (0x08, 16), (0x09, 7), (0x0A, 16), (0x0B, 1), (0x0C, 64), (0x0D, 16), (0x0E, 1)]
        for (code, size) in sizes {
            // One byte short: malformed SMP naming the PDU and the sizes.
            let out = smp([code] + Array(repeating: 0xAB, count: size - 1))
            XCTAssertEqual(out.malformedLayers, [.smp], "code \(code): \(out.summary)")
            XCTAssertEqual(out.events.first?.malformed?.key, key(0x040))
            XCTAssertEqual(out.events.first?.malformed?.reason, "\(SMPPDU.name(code)) needs \(size) parameter bytes, has \(size - 1)")
            // Exactly the size: decoded. Trailing bytes are ignored.
            XCTAssertEqual(smp([code] + Array(repeating: 0xAB, count: size)).events.first?.smpPDU?.pdu.code, code)
            XCTAssertEqual(smp([code] + Array(repeating: 0xAB, count: size + 3)).events.first?.smpPDU?.pdu.code, code)
        }
        // An empty SMP PDU.
        let empty = smp([])
        XCTAssertEqual(empty.malformedLayers, [.smp], empty.summary)
        XCTAssertEqual(empty.events.first?.malformed?.reason, "empty SMP PDU")
    }

    func testSMPReassembledFromFragments() {
        let d = LinkDecoder()
        let x = Array(UInt8(0)..<32), y = Array(UInt8(32)..<64)
        let whole = l2cap(cid: 6, [0x0C] + x + y)
        XCTAssertTrue(d.feed(.acl, acl(handle: 0x040, pb: 0b10, Array(whole[0..<27])), direction: .sent).events.isEmpty)
        let out = d.feed(.acl, acl(handle: 0x040, pb: 0b01, Array(whole[27...])), direction: .sent)
        XCTAssertEqual(out.events.first?.smpPDU?.pdu, .pairingPublicKey(x: x, y: y), out.summary)
        XCTAssertEqual(out.events.first?.smpPDU?.direction, .sent)
    }
}
