import XCTest

@testable import Capture
@testable import HCI

/// The LE link layer of sniffer captures: records of kind `.linkLayer`, data from the access address on.
final class LinkLayerTests: XCTestCase {
    let accessAddress: UInt32 = 0x5065_4B2A
    let crc: [UInt8] = [0xC1, 0xC2, 0xC3]

    /// CONNECT_IND (PDU type 5, TxAdd and RxAdd random, length 34): InitA C6:05:04:03:02:01,
    /// AdvA D6:15:14:13:12:11, then LLData: access address 0x50654B2A, CRCInit, WinSize 2,
    /// WinOffset 5, interval 0x24, latency 1, timeout 200, channel map, hop and SCA.
    var connectInd: [UInt8] {
        var b: [UInt8] = [0xD6, 0xBE, 0x89, 0x8E, 0xC5, 0x22]
        b += [0x01, 0x02, 0x03, 0x04, 0x05, 0xC6]
        b += [0x11, 0x12, 0x13, 0x14, 0x15, 0xD6]
        b += [0x2A, 0x4B, 0x65, 0x50, 0x7C, 0x5E, 0x01, 0x02, 0x05, 0x00, 0x24, 0x00, 0x01, 0x00, 0xC8, 0x00,
              0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0x2A]
        return b + crc
    }

    /// A data PDU: access address, header (LLID, NESN, SN, CP), length, optional CTEInfo, payload, CRC.
    func pdu(llid: UInt8, sn: UInt8, nesn: UInt8 = 0, _ payload: [UInt8], length: Int? = nil, cteInfo: UInt8? = nil) -> [UInt8] {
        var b: [UInt8] = [0x2A, 0x4B, 0x65, 0x50]
        b.append(llid | nesn << 2 | sn << 3 | (cteInfo != nil ? 0x20 : 0))
        b.append(UInt8(length ?? (payload.count + (cteInfo != nil ? 1 : 0))))
        if let cteInfo { b.append(cteInfo) }
        return b + payload + crc
    }

    func info(_ direction: LinkLayerDirection, encrypted: Bool = false, micOK: Bool? = nil) -> LinkLayerInfo {
        var i = LinkLayerInfo()
        i.direction = direction
        i.crcOK = true
        i.encrypted = encrypted
        i.micOK = micOK
        i.encryptionReported = encrypted  // as the nRF Sniffer says it
        return i
    }

    var llKey: ConnectionKey { ConnectionKey(accessAddress: accessAddress) }

    @discardableResult
    func feed(_ d: LinkDecoder, _ bytes: [UInt8], _ direction: LinkLayerDirection, number: Int, encrypted: Bool = false,
              micOK: Bool? = nil, originalLength: Int? = nil) -> Decoded {
        d.feed(.linkLayer, bytes, number: number, direction: .unknown, time: Int64(number) * 1000,
               originalLength: originalLength, linkLayer: info(direction, encrypted: encrypted, micOK: micOK))
    }

    func connected() -> LinkDecoder {
        let d = LinkDecoder()
        feed(d, connectInd, .unknown, number: 1)
        return d
    }

    /// An ATT Write Request (handle 0x0010, 20 value bytes) in an L2CAP PDU of 23 + 4 bytes.
    let write: [UInt8] = [0x12, 0x10, 0x00] + Array(0x61...0x74)
    var writePDU: [UInt8] { l2cap(cid: 4, write) }

    func testConnectIndCreatesAConnection() {
        let d = LinkDecoder()
        let out = feed(d, connectInd, .unknown, number: 3)
        guard case .connectionComplete(let c) = out.events.first else { return XCTFail(out.summary) }
        XCTAssertEqual(c.key, llKey)
        XCTAssertTrue(c.key.isLinkLayer)
        XCTAssertEqual(c.key.description, "aa:0x50654b2a")
        XCTAssertEqual(c.centralAddress?.description, "C6:05:04:03:02:01")
        XCTAssertEqual(c.peripheralAddress?.description, "D6:15:14:13:12:11")
        XCTAssertEqual(c.interval, 0x24)
        XCTAssertEqual(c.latency, 1)
        XCTAssertEqual(c.supervisionTimeout, 200)
        XCTAssertEqual(c.connectedFrame, 3)
        XCTAssertEqual(c.connectedAt, 3000)
        XCTAssertEqual(c.role, .unknown)
        XCTAssertEqual(d.connections[llKey], c)
        XCTAssertNotNil(d.linkLayer.sequence[accessAddress])
        // A CONNECT_IND too short for its LLData opens nothing.
        var short = Array(connectInd.prefix(6 + 30)) + crc
        short[5] = 30
        let e = LinkDecoder()
        XCTAssertTrue(feed(e, short, .unknown, number: 1).events.isEmpty)
        XCTAssertTrue(e.connections.isEmpty)
    }

    func testCompleteL2CAPInOnePDU() {
        let d = connected()
        let out = feed(d, pdu(llid: 2, sn: 0, l2cap(cid: 4, [0x02, 0xF7, 0x00])), .centralToPeripheral, number: 2)
        XCTAssertEqual(out.malformedLayers, [], out.summary)
        XCTAssertEqual(out.l2capEvents.first?.key, llKey)
        XCTAssertEqual(out.l2capEvents.first?.cid, 4)
        XCTAssertEqual(out.l2capEvents.first?.direction, .centralToPeripheral)
        XCTAssertEqual(out.payload, [0x02, 0xF7, 0x00])
    }

    func testStartAndContinuationReassembled() {
        let d = connected()
        let whole = writePDU
        XCTAssertEqual(whole.count, 27)
        XCTAssertTrue(feed(d, pdu(llid: 2, sn: 0, Array(whole[0..<20])), .centralToPeripheral, number: 2).events.isEmpty)
        XCTAssertTrue(feed(d, pdu(llid: 1, sn: 0, nesn: 1, []), .peripheralToCentral, number: 3).events.isEmpty)
        let out = feed(d, pdu(llid: 1, sn: 1, nesn: 1, Array(whole[20...])), .centralToPeripheral, number: 4)
        XCTAssertEqual(out.malformedLayers, [], out.summary)
        XCTAssertEqual(out.l2capEvents.first?.direction, .centralToPeripheral)
        XCTAssertEqual(out.payload, write)
    }

    func testRetransmittedContinuationIsNotAppendedTwice() {
        let d = connected()
        let whole = writePDU
        // Central: start (SN 0), continuation (SN 1), the same continuation again (SN 1: not acknowledged), the last (SN 0).
        XCTAssertTrue(feed(d, pdu(llid: 2, sn: 0, Array(whole[0..<10])), .centralToPeripheral, number: 2).events.isEmpty)
        XCTAssertTrue(feed(d, pdu(llid: 1, sn: 0, nesn: 1, []), .peripheralToCentral, number: 3).events.isEmpty)
        XCTAssertTrue(feed(d, pdu(llid: 1, sn: 1, nesn: 1, Array(whole[10..<20])), .centralToPeripheral, number: 4).events.isEmpty)
        XCTAssertTrue(feed(d, pdu(llid: 1, sn: 1, nesn: 1, []), .peripheralToCentral, number: 5).events.isEmpty)
        let again = feed(d, pdu(llid: 1, sn: 1, nesn: 1, Array(whole[10..<20])), .centralToPeripheral, number: 6)
        XCTAssertTrue(again.events.isEmpty, "a retransmission is neither appended nor an overflow: \(again.summary)")
        XCTAssertTrue(feed(d, pdu(llid: 1, sn: 0, nesn: 0, []), .peripheralToCentral, number: 7).events.isEmpty)
        let last = feed(d, pdu(llid: 1, sn: 0, nesn: 0, Array(whole[20...])), .centralToPeripheral, number: 8)
        XCTAssertEqual(last.malformedLayers, [], last.summary)
        XCTAssertEqual(last.payload, write)
    }

    func testRetransmittedCompletePDUIsStillDecoded() {
        // As Wireshark: a complete LLID 2 PDU is decoded even when it repeats.
        let d = connected()
        let mtu = pdu(llid: 2, sn: 0, l2cap(cid: 4, [0x02, 0xF7, 0x00]))
        XCTAssertEqual(feed(d, mtu, .centralToPeripheral, number: 2).payload, [0x02, 0xF7, 0x00])
        XCTAssertEqual(feed(d, mtu, .centralToPeripheral, number: 3).payload, [0x02, 0xF7, 0x00])
    }

    func testStartEncryptionResponseMarksTheLinkEncrypted() {
        let d = connected()
        let out = feed(d, pdu(llid: 3, sn: 0, [0x06]), .peripheralToCentral, number: 5, encrypted: true, micOK: true)
        XCTAssertEqual(out.events.count, 2, out.summary)
        guard case .llControl(let k, let dir, let opcode) = out.events[0] else { return XCTFail(out.summary) }
        XCTAssertEqual(k, llKey)
        XCTAssertEqual(dir, .peripheralToCentral)
        XCTAssertEqual(opcode, 0x06)
        XCTAssertEqual(LinkEvent.llControlName(opcode), "LL_START_ENC_RSP")
        guard case .encryptionChange(let ek, let enabled, _, _) = out.events[1] else { return XCTFail(out.summary) }
        XCTAssertEqual(ek, llKey)
        XCTAssertTrue(enabled)
        XCTAssertEqual(d.connections[llKey]?.encrypted, true)
        XCTAssertEqual(d.connections[llKey]?.firstEncryptedFrame, 5)
        // The second START_ENC (the other side's) does not report the change again.
        let again = feed(d, pdu(llid: 3, sn: 1, [0x06]), .centralToPeripheral, number: 6, encrypted: true, micOK: true)
        XCTAssertEqual(again.events.count, 1, again.summary)
    }

    func testTerminateIndEndsTheConnection() {
        let d = connected()
        let out = feed(d, pdu(llid: 3, sn: 0, [0x02, 0x13]), .centralToPeripheral, number: 9)
        XCTAssertEqual(out.events.count, 2, out.summary)
        guard case .disconnection(let c, let reason) = out.events[1] else { return XCTFail(out.summary) }
        XCTAssertEqual(reason.rawValue, 0x13)
        XCTAssertEqual(c.key, llKey)
        XCTAssertEqual(c.centralAddress?.description, "C6:05:04:03:02:01")
        XCTAssertEqual(c.disconnectedFrame, 9)
        XCTAssertEqual(c.disconnectReason, HCIStatus(0x13))
        XCTAssertNil(d.connections[llKey])
        XCTAssertNil(d.linkLayer.sequence[accessAddress])
    }

    func testConnectionUpdateInd() {
        let d = connected()
        // WinSize 1, WinOffset 2, interval 0x50, latency 3, timeout 0x190, instant 0x0100.
        feed(d, pdu(llid: 3, sn: 0, [0x00, 0x01, 0x02, 0x00, 0x50, 0x00, 0x03, 0x00, 0x90, 0x01, 0x00, 0x01]), .centralToPeripheral, number: 2)
        XCTAssertEqual(d.connections[llKey]?.interval, 0x50)
        XCTAssertEqual(d.connections[llKey]?.latency, 3)
        XCTAssertEqual(d.connections[llKey]?.supervisionTimeout, 0x190)
    }

    func testEncryptedPacketsWithoutMICOKAreReportedNotDecoded() {
        let d = connected()
        func onlyEncrypted(_ out: Decoded, llid: UInt8, length: Int, file: StaticString = #filePath, line: UInt = #line) {
            guard out.events.count == 1, case .encrypted(let key, let direction, let pdu) = out.events[0] else {
                return XCTFail(out.summary, file: file, line: line)
            }
            XCTAssertEqual(key, llKey, file: file, line: line)
            XCTAssertEqual(direction, .centralToPeripheral, file: file, line: line)
            XCTAssertEqual(pdu, EncryptedPDU(llid: llid, length: length, reason: .noKey), file: file, line: line)
            XCTAssertTrue(out.payload.isEmpty, file: file, line: line)
        }
        let mtu = pdu(llid: 2, sn: 0, l2cap(cid: 4, [0x02, 0xF7, 0x00]))
        for micOK: Bool? in [false, nil] {
            onlyEncrypted(feed(d, mtu, .centralToPeripheral, number: 2, encrypted: true, micOK: micOK), llid: 2, length: 7)
        }
        // Nor is a control PDU, nor a fragment start.
        onlyEncrypted(feed(d, pdu(llid: 3, sn: 1, [0x02, 0x13]), .centralToPeripheral, number: 3, encrypted: true, micOK: false), llid: 3, length: 2)
        XCTAssertNotNil(d.connections[llKey])
        onlyEncrypted(feed(d, pdu(llid: 2, sn: 0, Array(writePDU[0..<10])), .centralToPeripheral, number: 4, encrypted: true, micOK: false), llid: 2, length: 10)
        XCTAssertTrue(d.pending.isEmpty)
        // An empty PDU is never encrypted: nothing to say.
        XCTAssertTrue(feed(d, pdu(llid: 1, sn: 1, []), .centralToPeripheral, number: 5, encrypted: true, micOK: false).events.isEmpty)
        // Decrypted by the sniffer: decoded.
        XCTAssertEqual(feed(d, mtu, .centralToPeripheral, number: 6, encrypted: true, micOK: true).payload, [0x02, 0xF7, 0x00])
    }

    func testLLLengthLargerThanBytesPresent() {
        let d = connected()
        // Header length 20, 7 payload bytes present before the CRC.
        let bytes = pdu(llid: 2, sn: 0, l2cap(cid: 4, [0x02, 0xF7, 0x00]), length: 20)
        let out = feed(d, bytes, .centralToPeripheral, number: 2)
        XCTAssertEqual(out.malformedLayers.first, .linkLayer, out.summary)
        XCTAssertEqual(out.events.first?.malformed?.key, llKey)
        XCTAssertTrue(out.events.first?.malformed?.reason.contains("LL length 20 exceeds the 7 bytes present") ?? false, out.summary)
        XCTAssertEqual(out.payload, [0x02, 0xF7, 0x00], "what is present is still decoded")
        // A record the capture cut short is not malformed for it.
        let cut = feed(connected(), bytes, .centralToPeripheral, number: 2, originalLength: bytes.count + 13)
        XCTAssertFalse(cut.malformedLayers.contains(.linkLayer), cut.summary)
    }

    /// As Wireshark reads such packets (SweynTooth's LL length attacks, a length byte damaged on
    /// air): a control PDU is read by its own fields and a continuation is a fragment of the bytes
    /// there, each with a note, not a malformed verdict (only a complete L2CAP PDU is, above).
    func testLLLengthLargerThanBytesPresentOnControlAndContinuation() {
        let d = connected()
        // LL_VERSION_IND with an LL length of 114 over its 6 bytes.
        let version = feed(d, pdu(llid: 3, sn: 0, [0x0C, 0x08, 0x00, 0x00, 0x00, 0x00], length: 114), .centralToPeripheral, number: 2)
        XCTAssertEqual(version.malformedLayers, [], version.summary)
        XCTAssertTrue(version.events.contains { if case .llControl(_, _, 0x0C) = $0 { true } else { false } }, version.summary)
        XCTAssertTrue(version.events.contains { if case .note(llKey, .linkLayer, let t) = $0 { t.hasPrefix("LL length 114 exceeds the 6 bytes present") } else { false } },
                      version.summary)
        // A start, then a continuation whose LL length says 132 over its 10 bytes: the bytes
        // there complete the PDU.
        feed(d, pdu(llid: 2, sn: 1, Array(writePDU[0..<17])), .centralToPeripheral, number: 3)
        let rest = feed(d, pdu(llid: 1, sn: 0, Array(writePDU[17...]), length: 132), .centralToPeripheral, number: 4)
        XCTAssertEqual(rest.malformedLayers, [], rest.summary)
        XCTAssertEqual(rest.payload, write, rest.summary)
        XCTAssertTrue(rest.events.contains { if case .note(_, .linkLayer, _) = $0 { true } else { false } }, rest.summary)
    }

    /// A start fragment of one byte holds half the L2CAP length (SweynTooth's invalid fragment):
    /// a start whose length the next fragment completes, as Wireshark's "L2CAP Fragment Start".
    func testOneByteStartWaitsForTheRestOfItsLength() {
        let d = connected()
        let start = feed(d, pdu(llid: 2, sn: 0, [writePDU[0]]), .centralToPeripheral, number: 2)
        XCTAssertEqual(start.malformedLayers, [], start.summary)
        XCTAssertEqual(d.pending.count, 1)
        XCTAssertNil(d.pending.values.first?.total)
        let middle = feed(d, pdu(llid: 1, sn: 1, Array(writePDU[1..<9])), .centralToPeripheral, number: 3)
        XCTAssertEqual(middle.malformedLayers, [], middle.summary)
        XCTAssertEqual(d.pending.values.first?.total, writePDU.count)
        let last = feed(d, pdu(llid: 1, sn: 0, Array(writePDU[9...])), .centralToPeripheral, number: 4)
        XCTAssertEqual(last.malformedLayers, [], last.summary)
        XCTAssertEqual(last.payload, write, last.summary)
        // One never continued is an unfinished PDU when the next fragmented start comes.
        feed(d, pdu(llid: 2, sn: 1, [0x07]), .centralToPeripheral, number: 5)
        let next = feed(d, pdu(llid: 2, sn: 0, Array(writePDU[0..<17])), .centralToPeripheral, number: 6)
        XCTAssertTrue(next.events.first?.malformed?.reason.contains("L2CAP PDU started at frame 5 was never completed (1 bytes, its length never known)") ?? false,
                      next.summary)
        XCTAssertEqual(d.pending.values.first?.total, writePDU.count)
    }

    /// A Just Works legacy pairing sniffed whole: its STK (TK 0) decrypts the key distribution,
    /// and the LTK distributed there (by its EDIV and Rand) decrypts a later link of the pair,
    /// each said in a note that names the key's origin, never the key.
    func testLegacyPairingKeysDecryptThePairingAndTheNextLink() throws {
        let d = LinkDecoder()
        var number = 0
        var sn: [Bool: UInt8] = [true: 1, false: 1]
        var counter: [Bool: UInt64] = [true: 0, false: 0]
        var cipher: LinkLayerCipher?
        @discardableResult
        func send(_ c2p: Bool, llid: UInt8, _ payload: [UInt8]) -> Decoded {
            number += 1
            sn[c2p]! ^= 1
            var body = payload
            let header = llid | sn[c2p]! << 3
            if let cipher, !payload.isEmpty {
                body = cipher.encrypt(payload, header: header, counter: counter[c2p]!, centralToPeripheral: c2p)
                counter[c2p]! += 1
            }
            return feed(d, pdu(llid: llid, sn: sn[c2p]!, body), c2p ? .centralToPeripheral : .peripheralToCentral, number: number)
        }
        func connect() {
            number += 1
            feed(d, connectInd, .unknown, number: number)
            sn = [true: 1, false: 1]
            counter = [true: 0, false: 0]
            cipher = nil
        }
        /// LL_ENC_REQ (Rand, EDIV), LL_ENC_RSP, LL_START_ENC_REQ; then encrypted under `key` (on air).
        /// Returns what the first encrypted PDU (LL_START_ENC_RSP) gave.
        func startEncryption(rand: [UInt8], ediv: [UInt8], key: [UInt8]) -> Decoded {
            let skdm: [UInt8] = Array(1...8), ivm: [UInt8] = [9, 10, 11, 12], skds: [UInt8] = Array(21...28), ivs: [UInt8] = [29, 30, 31, 32]
            send(true, llid: 3, [0x03] + rand + ediv + skdm + ivm)
            send(false, llid: 3, [0x04] + skds + ivs)
            send(false, llid: 3, [0x05])
            cipher = LinkLayerCipher(ltk: key.reversed(), skdm: skdm, ivm: ivm, skds: skds, ivs: ivs)
            let first = send(true, llid: 3, [0x06])
            send(false, llid: 3, [0x06])
            return first
        }
        func notes(_ out: Decoded) -> [String] { out.events.compactMap { if case .note(_, _, let t) = $0 { t } else { nil } } }

        connect()
        // CONNECT_IND's header 0xC5: TxAdd and RxAdd set, both addresses random.
        let ia = Array(connectInd[6..<12]), ra = Array(connectInd[12..<18])
        let preq: [UInt8] = [0x01, 0x03, 0x00, 0x01, 0x10, 0x00, 0x01], pres: [UInt8] = [0x02, 0x03, 0x00, 0x01, 0x10, 0x00, 0x01]
        let mrand = [UInt8](repeating: 0x5A, count: 16), srand = [UInt8](repeating: 0xA5, count: 16)
        let tk = LegacyPairing.tk(passkey: 0)
        let mconfirm = try XCTUnwrap(LegacyPairing.c1(tk: tk, r: mrand, preq: preq, pres: pres, iat: 1, rat: 1, ia: ia, ra: ra))
        let sconfirm = try XCTUnwrap(LegacyPairing.c1(tk: tk, r: srand, preq: preq, pres: pres, iat: 1, rat: 1, ia: ia, ra: ra))
        send(true, llid: 2, l2cap(cid: 6, preq))
        send(false, llid: 2, l2cap(cid: 6, pres))
        send(true, llid: 2, l2cap(cid: 6, [0x03] + mconfirm))
        send(false, llid: 2, l2cap(cid: 6, [0x03] + sconfirm))
        send(true, llid: 2, l2cap(cid: 6, [0x04] + mrand))
        let found = send(false, llid: 2, l2cap(cid: 6, [0x04] + srand))
        // The whole note: no search time in it, so a capture decodes to the same bytes on every run.
        XCTAssertTrue(notes(found).contains("legacy pairing: TK found: 000000 (Just Works); the STK decrypts what follows"), found.summary)

        let stk = try XCTUnwrap(LegacyPairing.s1(tk: tk, r1: srand, r2: mrand))
        let started = startEncryption(rand: Array(repeating: 0, count: 8), ediv: [0, 0], key: stk)
        XCTAssertTrue(notes(started).contains("decrypting with the STK of the legacy pairing (TK 000000)"), started.summary)
        let ltk: [UInt8] = Array(0x40...0x4F), rand: [UInt8] = Array(0x71...0x78), ediv: [UInt8] = [0x34, 0x12]
        let info = send(false, llid: 2, l2cap(cid: 6, [0x06] + ltk))
        let infoFrame = number
        XCTAssertTrue(info.events.contains { if case .smp(_, _, .encryptionInformation(let k)) = $0 { k.unsafeBytes == ltk } else { false } },
                      info.summary)
        let central = send(false, llid: 2, l2cap(cid: 6, [0x07] + ediv + rand))
        XCTAssertTrue(notes(central).contains { $0.hasPrefix("LTK from SMP key distribution (frame \(infoFrame), EDIV 0x1234") }, central.summary)
        XCTAssertFalse(central.summary.contains(Hex.string(ltk)), "the key is never in an event's text")

        // The pair's next link: encrypted with the distributed LTK, asked for by its EDIV and Rand.
        connect()
        let next = startEncryption(rand: rand, ediv: ediv, key: ltk)
        XCTAssertTrue(notes(next).contains("decrypting with the LTK from SMP key distribution (frame \(infoFrame))"), next.summary)
        let read = send(true, llid: 2, l2cap(cid: 4, [0x0A, 0x03, 0x00]))
        XCTAssertEqual(read.payload, [0x0A, 0x03, 0x00], read.summary)

        // A third link paired with an out-of-band TK: no passkey gives the central's confirm, and
        // the note says so in full (no search time: a capture decodes the same on every run).
        connect()
        let oob = [UInt8](repeating: 0xC3, count: 16)
        let oobConfirm = try XCTUnwrap(LegacyPairing.c1(tk: oob, r: mrand, preq: preq, pres: pres, iat: 1, rat: 1, ia: ia, ra: ra))
        let oobSConfirm = try XCTUnwrap(LegacyPairing.c1(tk: oob, r: srand, preq: preq, pres: pres, iat: 1, rat: 1, ia: ia, ra: ra))
        send(true, llid: 2, l2cap(cid: 6, preq))
        send(false, llid: 2, l2cap(cid: 6, pres))
        send(true, llid: 2, l2cap(cid: 6, [0x03] + oobConfirm))
        send(false, llid: 2, l2cap(cid: 6, [0x03] + oobSConfirm))
        send(true, llid: 2, l2cap(cid: 6, [0x04] + mrand))
        let notFound = send(false, llid: 2, l2cap(cid: 6, [0x04] + srand))
        XCTAssertEqual(notes(notFound), ["legacy pairing: no TK from 000000 to 999999 gives the central's confirm value (out-of-band TK?); not decrypted"],
                       notFound.summary)
    }

    func testTooShortForHeaderAndCRC() {
        let out = feed(LinkDecoder(), [0x2A, 0x4B, 0x65, 0x50, 0x01, 0x00, 0xC1, 0xC2], .centralToPeripheral, number: 1)
        XCTAssertEqual(out.malformedLayers, [.linkLayer], out.summary)
    }

    func testReservedLLIDAndEmptyControl() {
        let d = connected()
        XCTAssertEqual(feed(d, pdu(llid: 0, sn: 0, [0x01, 0x02]), .centralToPeripheral, number: 2).malformedLayers, [.linkLayer])
        XCTAssertEqual(feed(d, pdu(llid: 3, sn: 1, []), .centralToPeripheral, number: 3).malformedLayers, [.linkLayer])
    }

    func testCTEInfoReducesThePayloadByOneByte() {
        let d = connected()
        // Length 8 counts the CTEInfo byte (0x14) and the 7-byte L2CAP PDU.
        let bytes = pdu(llid: 2, sn: 0, l2cap(cid: 4, [0x02, 0xF7, 0x00]), cteInfo: 0x14)
        XCTAssertEqual(bytes[5], 8)
        XCTAssertEqual(bytes[6], 0x14)
        let out = feed(d, bytes, .centralToPeripheral, number: 2)
        XCTAssertEqual(out.malformedLayers, [], out.summary)
        XCTAssertEqual(out.l2capEvents.first?.cid, 4)
        XCTAssertEqual(out.payload, [0x02, 0xF7, 0x00])
    }

    func testOverflowingContinuationAbandonsThePDU() {
        let d = connected()
        let whole = writePDU
        XCTAssertTrue(feed(d, pdu(llid: 2, sn: 0, Array(whole[0..<20])), .centralToPeripheral, number: 2).events.isEmpty)
        feed(d, pdu(llid: 1, sn: 0, nesn: 1, []), .peripheralToCentral, number: 3)
        let over = feed(d, pdu(llid: 1, sn: 1, Array(whole[20...]) + [0xEE]), .centralToPeripheral, number: 4)
        XCTAssertEqual(over.malformedLayers, [.l2cap], over.summary)
        XCTAssertTrue(over.events.first?.malformed?.reason.contains("PDU abandoned") ?? false, over.summary)
        XCTAssertTrue(d.pending.isEmpty)
    }

    func testDirectionsAreSeparate() {
        let d = connected()
        let whole = writePDU
        XCTAssertTrue(feed(d, pdu(llid: 2, sn: 0, Array(whole[0..<20])), .centralToPeripheral, number: 2).events.isEmpty)
        let wrong = feed(d, pdu(llid: 1, sn: 0, Array(whole[20...])), .peripheralToCentral, number: 3)
        XCTAssertEqual(wrong.malformedLayers, [.l2cap], wrong.summary)
        let right = feed(d, pdu(llid: 1, sn: 1, Array(whole[20...])), .centralToPeripheral, number: 4)
        XCTAssertEqual(right.payload, write)
    }

    func testSMPOverTheAir() {
        let d = connected()
        let out = feed(d, pdu(llid: 2, sn: 0, l2cap(cid: 6, [0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07])), .centralToPeripheral, number: 2)
        guard case .pairingRequest(let f)? = out.events.first?.smpPDU?.pdu else { return XCTFail(out.summary) }
        XCTAssertEqual(f.maxKeySize, 16)
        XCTAssertEqual(out.events.first?.smpPDU?.direction, .centralToPeripheral)
    }
}
