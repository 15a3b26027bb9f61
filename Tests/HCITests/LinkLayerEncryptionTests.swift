import Foundation
import XCTest

@testable import Capture
@testable import HCI

/// LE link-layer encryption: the Core specification's sample data (Vol 6 Part C 1) as known
/// answers, and sniffed sessions encrypted here and decrypted by `LinkDecoder`.
final class LinkLayerEncryptionTests: XCTestCase {
    // Vol 6 Part C 1, "Encryption sample data". The LTK most significant octet first, as the
    // specification writes it; the diversifiers and IVs as the LL control PDUs carry them.
    static let ltk = hex("4C68384139F574D836BCF34E9DFB01BF")
    static let skdm = hex("ACBDCEDFE0F10213").reversed().map { $0 }
    static let skds = hex("0213243546576879").reversed().map { $0 }
    static let ivm = hex("BADCAB24").reversed().map { $0 }
    static let ivs = hex("DEAFBABE").reversed().map { $0 }
    static let rand = hex("ABCDEF1234567890").reversed().map { $0 }
    static let ediv: [UInt8] = [0x74, 0x24]

    static func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            out.append(UInt8(s[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    var sample: LinkLayerCipher {
        LinkLayerCipher(ltk: Self.ltk, skdm: Self.skdm, ivm: Self.ivm, skds: Self.skds, ivs: Self.ivs)!
    }

    func testSessionKeyOfTheSampleData() {
        XCTAssertEqual(LinkLayerCipher.sessionKey(ltk: Self.ltk, skdm: Self.skdm, skds: Self.skds),
                       Self.hex("99AD1B5226A37E3E058E3B8E27C2C666"))
        XCTAssertNil(LinkLayerCipher.sessionKey(ltk: Array(Self.ltk.prefix(15)), skdm: Self.skdm, skds: Self.skds))
    }

    /// The four packets of the sample: LL_START_ENC_RSP each way (counter 0), then a data PDU
    /// each way (counter 1); header bytes as on air (NESN/SN set), masked for the additional data.
    func testSamplePacketsEncryptAndDecrypt() {
        let startEncRSP: [UInt8] = [0x06]
        XCTAssertEqual(sample.encrypt(startEncRSP, header: 0x0F, counter: 0, centralToPeripheral: true), Self.hex("9FCDA7F448"))
        XCTAssertEqual(sample.encrypt(startEncRSP, header: 0x07, counter: 0, centralToPeripheral: false), Self.hex("A34C13A415"))
        let data1 = Self.hex("1700636465666768696A6B6C6D6E6F707131323334353637383930")
        let data2 = Self.hex("170037363534333231304142434445464748494A4B4C4D4E4F5051")
        let data1Encrypted = Self.hex("7A70D66415226DF26B17839A060405596BD6564F796B5B9CE6FF32F75A6D33")
        let data2Encrypted = Self.hex("F38881E7BD94C9C369B9A66846DD4786AA8C39CE540D0DAE3ADCDF89B96088")
        XCTAssertEqual(sample.encrypt(data1, header: 0x0E, counter: 1, centralToPeripheral: true), data1Encrypted)
        XCTAssertEqual(sample.encrypt(data2, header: 0x06, counter: 1, centralToPeripheral: false), data2Encrypted)

        func decrypt(_ bytes: [UInt8], header: UInt8 = 0x0E, counter: UInt64 = 1, c2p: Bool = true) -> [UInt8]? {
            let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
            defer { out.deallocate() }
            return bytes.withUnsafeBytes { b in
                sample.decrypt(b, header: header, counter: counter, centralToPeripheral: c2p, into: out).map { Array(out[0..<$0]) }
            }
        }
        XCTAssertEqual(decrypt(data1Encrypted), data1)
        // NESN, SN and MD are not authenticated: the same PDU retransmitted still verifies.
        XCTAssertEqual(decrypt(data1Encrypted, header: 0x1A), data1)
        var flipped = data1Encrypted
        flipped[flipped.count - 1] ^= 1
        XCTAssertNil(decrypt(flipped), "a MIC with one bit flipped")
        XCTAssertNil(decrypt(data1Encrypted, counter: 2), "the wrong packet counter")
        XCTAssertNil(decrypt(data1Encrypted, c2p: false), "the wrong direction")
        XCTAssertNil(decrypt(data1Encrypted, header: 0x0D), "the wrong LLID")
        XCTAssertNil(decrypt([1, 2, 3]), "shorter than a MIC")
    }

    func testLTKFileLines() throws {
        XCTAssertNil(try LinkLayerKey.parse(line: "  # a comment").get())
        XCTAssertNil(try LinkLayerKey.parse(line: "").get())
        let plain = try XCTUnwrap(LinkLayerKey.parse(line: "4c68384139f574d836bcf34e9dfb01bf").get())
        XCTAssertNil(plain.address)
        XCTAssertEqual(plain.ltk.unsafeBytes, Self.ltk)
        let addressed = try XCTUnwrap(LinkLayerKey.parse(line: "C0:FF:EE:00:11:22  0x4C68384139F574D836BCF34E9DFB01BF # phone").get())
        XCTAssertEqual(addressed.address?.description, "C0:FF:EE:00:11:22")
        XCTAssertEqual(addressed.ltk.unsafeBytes, Self.ltk)
        XCTAssertEqual("\(addressed.ltk)", "<redacted:16 bytes>")
        for bad in ["4c6838", "C0:FF:EE 4c68384139f574d836bcf34e9dfb01bf", "a b c", "zz68384139f574d836bcf34e9dfb01bf"] {
            XCTAssertThrowsError(try LinkLayerKey.parse(line: Substring(bad)).get(), bad)
        }
    }

    // MARK: Sniffed sessions

    /// A sniffed session: CONNECT_IND, the encryption start with the sample's diversifiers, then
    /// data PDUs each way. `encrypt` turns the session's PDUs after LL_START_ENC_REQ into what
    /// travels on air; `sniffer` says how the sniffer labels them.
    enum Sniffer { case nordic, ubertooth }

    struct Frame {
        var bytes: [UInt8]
        var info: LinkLayerInfo
    }

    let accessAddress: [UInt8] = [0x2A, 0x4B, 0x65, 0x50]
    let crc: [UInt8] = [0xC1, 0xC2, 0xC3]

    var connectInd: [UInt8] {
        var b: [UInt8] = [0xD6, 0xBE, 0x89, 0x8E, 0xC5, 0x22]
        b += [0x01, 0x02, 0x03, 0x04, 0x05, 0xC6]
        b += [0x11, 0x12, 0x13, 0x14, 0x15, 0xD6]
        b += accessAddress + [0x7C, 0x5E, 0x01, 0x02, 0x05, 0x00, 0x24, 0x00, 0x01, 0x00, 0xC8, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0x2A]
        return b + crc
    }

    /// One PDU of the session: who sends it, LLID, SN, payload (plaintext).
    struct PDU {
        var c2p: Bool
        var llid: UInt8
        var sn: UInt8
        var payload: [UInt8]
    }

    static let write: [UInt8] = [0x12, 0x10, 0x00] + Array(0x61...0x74)   // Write Request, 20 bytes
    static let notify: [UInt8] = [0x1B, 0x12, 0x00] + Array(0x30...0x60)  // Notification, 49 bytes: two fragments

    /// After LL_START_ENC_REQ: START_ENC_RSP each way, a write (then its retransmission), an
    /// empty PDU, a write response, a notification in two fragments.
    var encryptedPart: [PDU] {
        let writePDU = l2cap(cid: 4, Self.write)
        let notifyPDU = l2cap(cid: 4, Self.notify)
        // SN alternates per direction (LL_ENC_REQ C>P had 0; LL_START_ENC_REQ P>C had 1).
        return [
            PDU(c2p: true, llid: 3, sn: 1, payload: [0x06]),
            PDU(c2p: false, llid: 3, sn: 0, payload: [0x06]),
            PDU(c2p: true, llid: 2, sn: 0, payload: writePDU),
            PDU(c2p: false, llid: 1, sn: 1, payload: []),
            PDU(c2p: true, llid: 2, sn: 0, payload: writePDU),  // retransmitted: same SN, same counter
            PDU(c2p: false, llid: 2, sn: 0, payload: l2cap(cid: 4, [0x13])),
            PDU(c2p: false, llid: 2, sn: 1, payload: Array(notifyPDU[0..<27])),
            PDU(c2p: true, llid: 1, sn: 1, payload: []),
            PDU(c2p: false, llid: 1, sn: 0, payload: Array(notifyPDU[27...])),
        ]
    }

    /// `snifferDecrypted`: indices into `encryptedPart` the nRF Sniffer decrypted itself
    /// (plaintext, flagged encrypted with the MIC checked).
    func session(_ sniffer: Sniffer, key: [UInt8]? = LinkLayerEncryptionTests.ltk, snifferDecrypted: Set<Int> = []) -> [Frame] {
        func info(_ c2p: Bool?, encrypted: Bool = false, micOK: Bool = false) -> LinkLayerInfo {
            var i = LinkLayerInfo()
            i.crcOK = true
            if sniffer == .nordic {
                i.direction = c2p == nil ? .unknown : c2p! ? .centralToPeripheral : .peripheralToCentral
                i.encryptionReported = true
                i.encrypted = encrypted
                i.micOK = encrypted ? micOK : nil
            }
            return i
        }
        func frame(_ c2p: Bool, llid: UInt8, sn: UInt8, nesn: UInt8 = 0, _ payload: [UInt8], encrypted: Bool = false, micOK: Bool = false) -> Frame {
            Frame(bytes: accessAddress + [llid | nesn << 2 | sn << 3, UInt8(payload.count)] + payload + crc,
                  info: info(c2p, encrypted: encrypted, micOK: micOK))
        }
        var frames = [Frame(bytes: connectInd, info: info(nil))]
        frames.append(frame(true, llid: 3, sn: 0, [0x03] + Self.rand + Self.ediv + Self.skdm + Self.ivm))
        frames.append(frame(false, llid: 3, sn: 0, [0x04] + Self.skds + Self.ivs))
        frames.append(frame(false, llid: 3, sn: 1, [0x05]))
        let cipher = key.flatMap { LinkLayerCipher(ltk: $0, skdm: Self.skdm, ivm: Self.ivm, skds: Self.skds, ivs: Self.ivs) }
        var counters = [true: UInt64(0), false: UInt64(0)]
        var lastSN: [Bool: UInt8] = [true: 0, false: 1]
        for (index, p) in encryptedPart.enumerated() {
            guard !p.payload.isEmpty else {
                frames.append(frame(p.c2p, llid: p.llid, sn: p.sn, p.payload))
                lastSN[p.c2p] = p.sn
                continue
            }
            let retransmission = lastSN[p.c2p] == p.sn
            if retransmission { counters[p.c2p]! -= 1 }
            let header = p.llid | p.sn << 3
            let onAir = cipher.map { $0.encrypt(p.payload, header: header, counter: counters[p.c2p]!, centralToPeripheral: p.c2p) }
                ?? p.payload + [0, 0, 0, 0]
            counters[p.c2p]! += 1
            lastSN[p.c2p] = p.sn
            if snifferDecrypted.contains(index) {
                frames.append(frame(p.c2p, llid: p.llid, sn: p.sn, p.payload, encrypted: true, micOK: true))
            } else {
                frames.append(frame(p.c2p, llid: p.llid, sn: p.sn, onAir, encrypted: true))
            }
        }
        return frames
    }

    func decode(_ frames: [Frame], keys: [LinkLayerKey]) -> [[LinkEvent]] {
        let d = LinkDecoder(linkLayerKeys: keys)
        return frames.enumerated().map { n, f in
            d.feed(.linkLayer, f.bytes, number: n + 1, direction: .unknown, time: Int64(n) * 1000, linkLayer: f.info).events
        }
    }

    /// What the session carries above the link layer: (frame, direction, L2CAP payload) per SDU.
    func l2capSDUs(_ frames: [Frame], keys: [LinkLayerKey]) -> [String] {
        let d = LinkDecoder(linkLayerKeys: keys)
        var out: [String] = []
        for (n, f) in frames.enumerated() {
            let r = d.feed(.linkLayer, f.bytes, number: n + 1, direction: .unknown, time: Int64(n) * 1000, linkLayer: f.info)
            for e in r.events {
                if case .l2cap(_, let cid, let direction) = e { out.append("\(n + 1) \(direction) cid \(cid) \(Hex.string(r.payload))") }
                if case .llControl(_, let direction, let opcode) = e { out.append("\(n + 1) \(direction) \(LinkEvent.llControlName(opcode))") }
            }
        }
        return out
    }

    /// The same session unencrypted, as the reference; frames up to `unknownUntil` without a
    /// direction (Ubertooth does not say; decryption learns it).
    func expected(unknownUntil: Int = 0) -> [String] {
        let w = Hex.string(Self.write), n = Hex.string(Self.notify)
        let lines = ["2 central->peripheral LL_ENC_REQ", "3 peripheral->central LL_ENC_RSP", "4 peripheral->central LL_START_ENC_REQ",
                     "5 central->peripheral LL_START_ENC_RSP", "6 peripheral->central LL_START_ENC_RSP",
                     "7 central->peripheral cid 4 \(w)", "9 central->peripheral cid 4 \(w)", "10 peripheral->central cid 4 13",
                     "13 peripheral->central cid 4 \(n)"]
        return lines.map { line in
            let frame = Int(line.prefix { $0 != " " })!
            guard frame <= unknownUntil else { return line }
            return line.replacingOccurrences(of: "central->peripheral", with: "unknown").replacingOccurrences(of: "peripheral->central", with: "unknown")
        }
    }

    var expected: [String] { expected() }

    func testNordicSessionDecryptsWithTheLTK() {
        XCTAssertEqual(l2capSDUs(session(.nordic), keys: [LinkLayerKey(ltk: Secret(Self.ltk, label: "LTK"))]), expected)
    }

    /// The sniffer decrypted some PDUs itself and not others: those still used up their packet
    /// counters, so the key decrypts the rest with the right ones.
    func testPDUsTheSnifferDecryptedCountToo() {
        let key = [LinkLayerKey(ltk: Secret(Self.ltk, label: "LTK"))]
        XCTAssertEqual(l2capSDUs(session(.nordic, snifferDecrypted: [0, 1, 2]), keys: key), expected)
        XCTAssertEqual(l2capSDUs(session(.nordic, snifferDecrypted: [0, 5]), keys: key), expected)
    }

    /// Ubertooth records say neither the direction nor whether a packet is encrypted: the decoder
    /// follows the encryption start, and the MIC settles each PDU's direction.
    func testUbertoothSessionDecryptsAndFindsDirections() {
        XCTAssertEqual(l2capSDUs(session(.ubertooth), keys: [LinkLayerKey(ltk: Secret(Self.ltk, label: "LTK"))]), expected(unknownUntil: 4))
    }

    /// The LTK as HCI logs and key stores print it (least significant octet first) works too,
    /// as does a key for the link's address among keys for other devices.
    func testByteReversedAndAddressedKeys() {
        let reversed = LinkLayerKey(ltk: Secret(Self.ltk.reversed(), label: "LTK"))
        XCTAssertEqual(l2capSDUs(session(.nordic), keys: [reversed]), expected)
        let other = LinkLayerKey(address: BDAddr(string: "AA:BB:CC:DD:EE:FF"), ltk: Secret(Array(repeating: 1, count: 16), label: "LTK"))
        let mine = LinkLayerKey(address: BDAddr(string: "D6:15:14:13:12:11"), ltk: Secret(Self.ltk, label: "LTK"))
        XCTAssertEqual(l2capSDUs(session(.ubertooth), keys: [other, mine]), expected(unknownUntil: 4))
        // A key for another device is not tried.
        let events = decode(session(.nordic), keys: [LinkLayerKey(address: BDAddr(string: "AA:BB:CC:DD:EE:FF"), ltk: Secret(Self.ltk, label: "LTK"))])
        XCTAssertEqual(reasons(events).first, "no-key")
    }

    func reasons(_ events: [[LinkEvent]]) -> [String] {
        events.flatMap { $0 }.compactMap { if case .encrypted(_, _, let p) = $0 { p.reasonName } else { nil } }
    }

    func testWithoutAKeyEveryEncryptedPDUIsReportedNotDecoded() {
        for sniffer in [Sniffer.nordic, .ubertooth] {
            let events = decode(session(sniffer), keys: [])
            // Seven non-empty PDUs after the start, none decoded above the link layer.
            XCTAssertEqual(reasons(events), Array(repeating: "no-key", count: 7), "\(sniffer)")
            let after = events.dropFirst(4).flatMap { $0 }
            XCTAssertFalse(after.contains { if case .l2cap = $0 { true } else if case .llControl = $0 { true } else { false } }, "\(sniffer)")
            XCTAssertFalse(after.contains { if case .malformed = $0 { true } else { false } }, "\(sniffer)")
            guard case .encrypted(_, let direction, let pdu)? = events[4].first else { return XCTFail("\(events[4])") }
            XCTAssertEqual(pdu.llid, 3)
            XCTAssertEqual(pdu.length, 5)
            XCTAssertEqual(direction, sniffer == .nordic ? .centralToPeripheral : .unknown)
        }
    }

    func testAWrongKeyIsReportedThenRejected() {
        let wrong = LinkLayerKey(ltk: Secret(Array(repeating: 0x42, count: 16), label: "LTK"))
        let r = reasons(decode(session(.nordic), keys: [wrong]))
        XCTAssertEqual(r, ["mic-failed", "mic-failed", "mic-failed", "mic-failed", "key-likely-wrong", "key-rejected", "key-rejected"])
    }

    func testSessionEncryptedWithAnotherKeyFailsItsMIC() {
        let other = Array(repeating: UInt8(0x42), count: 16)
        let r = reasons(decode(session(.ubertooth, key: other), keys: [LinkLayerKey(ltk: Secret(Self.ltk, label: "LTK"))]))
        XCTAssertEqual(r.first, "mic-failed")
        XCTAssertTrue(r.contains("key-likely-wrong"))
    }

    /// A copy the sniffer (or crackle) already decrypted carries LL_START_ENC_RSP without a MIC:
    /// what follows is plaintext, decoded as such.
    func testAlreadyDecryptedCopyIsDecodedAsPlaintext() {
        var frames = session(.ubertooth)
        var plain = Array(frames.prefix(4))
        for p in encryptedPart {
            plain.append(Frame(bytes: accessAddress + [p.llid | p.sn << 3, UInt8(p.payload.count)] + p.payload + crc, info: frames[0].info))
        }
        frames = plain
        XCTAssertEqual(l2capSDUs(frames, keys: []), expected(unknownUntil: 13))
    }

    func testDecryptingEventComesOnce() {
        let events = decode(session(.nordic), keys: [LinkLayerKey(ltk: Secret(Self.ltk, label: "LTK"))]).flatMap { $0 }
        XCTAssertEqual(events.filter { if case .decrypting = $0 { true } else { false } }.count, 1)
    }
}
