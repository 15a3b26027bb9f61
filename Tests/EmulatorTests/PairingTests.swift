import Capture
import HCI
import Profiles
@testable import Protocols
import XCTest
@testable import Emulator

/// Recorded pairing: the SMP PDUs as Core Vol 3 Part H §3 lays them out, the HCI sequence a
/// phone's log shows for Secure Connections and legacy pairing, and how the options change it.
final class PairingTests: XCTestCase {
    /// One step of a recording as the tests compare them: `>SMP 01` (an SMP PDU the phone sent,
    /// by code), `<SMP 02`, `cmd 2019`, `evt 0F`; Number of Completed Packets and ATT left out.
    struct Step: Equatable, CustomStringConvertible {
        var text: String
        var bytes: [UInt8]
        var time: Int64
        var description: String { text }
    }

    /// Reassembles L2CAP per direction (PB 0b00/0b10 starts a frame, 0b01 continues it).
    static func steps(_ recording: Recording) -> [Step] {
        var steps: [Step] = []
        var pending: [Bool: [UInt8]] = [:]
        for p in recording.packets {
            let sent = p.direction == .sent
            switch p.kind {
            case .command:
                steps.append(Step(text: "cmd " + Hex.string([p.bytes[1], p.bytes[0]], separator: ""), bytes: Array(p.bytes.dropFirst(3)), time: p.time))
            case .event where p.bytes[0] != 0x13:
                steps.append(Step(text: "evt " + Hex.string([p.bytes[0]]).uppercased(), bytes: Array(p.bytes.dropFirst(2)), time: p.time))
            case .acl:
                let pb = (p.bytes[1] >> 4) & 0x3
                var frame = pb == 0b01 ? pending[sent] ?? [] : []
                frame += p.bytes.dropFirst(4)
                pending[sent] = frame
                guard frame.count >= 4, frame.count - 4 == Int(frame[0]) | Int(frame[1]) << 8 else { continue }
                pending[sent] = nil
                if frame[2] == 0x06 {
                    steps.append(Step(text: (sent ? ">" : "<") + "SMP " + Hex.string([frame[4]]).uppercased(),
                                      bytes: Array(frame.dropFirst(4)), time: p.time))
                }
            default:
                break
            }
        }
        return steps
    }

    /// A connected speaker link, paired with `options`.
    func paired(_ options: PairingOptions, seed: UInt64 = 1) async -> (EmulatedLink, [Step]) {
        let link = EmulatedLink(seed: seed, device: SpeakerDevice.factory(SpeakerConfiguration()))
        await link.connect()
        await link.pair(options)
        let recording = await link.recording()
        return (link, Self.steps(recording).filter { $0.text != "evt 3E" })
    }

    static let ltk: [UInt8] = Array("LTK-MARKER-0123!".utf8)
    static let irk: [UInt8] = Array("IRK-MARKER-4567!".utf8)
    static let csrk: [UInt8] = Array("CSRK-MARKER-89AB".utf8)

    func testSMPEncodingFollowsTheSpecAndDecodes() throws {
        XCTAssertEqual(SMPEncoding.pairingRequest(io: 0x04, authReq: 0x2D, maxKeySize: 16, initiatorKeys: 0x0B, responderKeys: 0x0F),
                       [0x01, 0x04, 0x00, 0x2D, 0x10, 0x0B, 0x0F])
        XCTAssertEqual(SMPEncoding.centralIdentification(ediv: 0x1234, rand: 0x0102_0304_0506_0708),
                       [0x07, 0x34, 0x12, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01])
        XCTAssertEqual(SMPEncoding.identityAddressInformation(type: 1, address: [1, 2, 3, 4, 5, 0xC6]), [0x09, 0x01, 1, 2, 3, 4, 5, 0xC6])
        XCTAssertEqual(SMPEncoding.pairingPublicKey(x: [1], y: [2]).count, 65)
        XCTAssertEqual(SMPEncoding.encryptionInformation(ltk: [1, 2]), [0x06, 1, 2] + [UInt8](repeating: 0, count: 14))

        func decode(_ bytes: [UInt8]) -> SMPPDU? {
            bytes.withUnsafeBytes { try? SMPPDU.decode($0).get() }
        }
        guard case .pairingResponse(let f)? = decode(SMPEncoding.pairingResponse(io: 0x01, authReq: 0x0D, maxKeySize: 7,
                                                                                  initiatorKeys: 0x02, responderKeys: 0x03))
        else { return XCTFail("Pairing Response") }
        XCTAssertEqual([f.ioCapability, f.maxKeySize, f.initiatorKeyDistribution, f.responderKeyDistribution], [1, 7, 2, 3])
        XCTAssertTrue(f.bonding && f.mitm && f.secureConnections)
        guard case .centralIdentification(let ediv, let rand)? = decode(SMPEncoding.centralIdentification(ediv: 0xBEEF, rand: 42))
        else { return XCTFail("Central Identification") }
        XCTAssertEqual(ediv, 0xBEEF)
        XCTAssertEqual(rand, 42)
        guard case .encryptionInformation(let k)? = decode(SMPEncoding.encryptionInformation(ltk: Self.ltk)) else { return XCTFail("EI") }
        XCTAssertEqual(k.unsafeBytes, Self.ltk)
        guard case .pairingPublicKey(let x, let y)? = decode(SMPEncoding.pairingPublicKey(x: [UInt8](repeating: 1, count: 32),
                                                                                           y: [UInt8](repeating: 2, count: 32)))
        else { return XCTFail("Public Key") }
        XCTAssertEqual(x + y, [UInt8](repeating: 1, count: 32) + [UInt8](repeating: 2, count: 32))
    }

    func testSecureConnectionsNumericComparison() async throws {
        let options = PairingOptions(method: .secureConnections, association: .numericComparison, mitm: true, bonding: true,
                                     keySize: 16, centralKeys: [.idKey], peripheralKeys: [.encKey, .idKey], ltk: Self.ltk)
        let (link, steps) = await paired(options)
        XCTAssertEqual(steps.map(\.text), [
            ">SMP 01", "<SMP 02", ">SMP 0C", "<SMP 0C", "<SMP 03", ">SMP 04", "<SMP 04", ">SMP 0D", "<SMP 0D",
            "cmd 2019", "evt 0F", "evt 08", "cmd 1408", "evt 0E",
            // Secure Connections ignores EncKey: identity keys only, the device's first.
            "<SMP 08", "<SMP 09", ">SMP 08", ">SMP 09",
        ])
        XCTAssertEqual(steps[0].bytes, [0x01, 0x04, 0x00, 0x0D, 16, 0x02, 0x03], "KeyboardDisplay, bonding+MITM+SC, 16")
        XCTAssertEqual(steps[1].bytes, [0x02, 0x01, 0x00, 0x0D, 16, 0x02, 0x03], "DisplayYesNo")
        XCTAssertEqual(steps[2].bytes.count, 65)
        XCTAssertEqual(steps[9].bytes, [0x40, 0x00] + [UInt8](repeating: 0, count: 10) + Self.ltk, "Rand 0, EDIV 0, the LTK")
        XCTAssertEqual(steps[10].bytes, [0x00, 0x01, 0x19, 0x20], "Command Status: success")
        XCTAssertEqual(steps[11].bytes, [0x00, 0x40, 0x00, 0x01], "Encryption Change: enabled")
        XCTAssertEqual(steps[12].bytes, [0x40, 0x00])
        XCTAssertEqual(steps[13].bytes, [0x01, 0x08, 0x14, 0x00, 0x40, 0x00, 16], "Command Complete: key size 16")
        XCTAssertEqual(steps[15].bytes[1], 0x01, "the device's identity address is static random")
        XCTAssertEqual(steps[17].bytes[1], 0x00, "the phone's is public")
        XCTAssertGreaterThanOrEqual(steps[7].time - steps[6].time, PairingPlan.compareTime, "the user compares the numbers")
        let recording = await link.recording()
        let times = recording.packets.map(\.time)
        XCTAssertEqual(times, times.sorted())
        let encrypted = await link.withDevice { $0.server.encrypted }
        XCTAssertTrue(encrypted)
        let bond = await link.bond
        XCTAssertEqual(bond, BondedKeys(ltk: Secret(Self.ltk, label: "LTK"), ediv: 0, rand: 0, keySize: 16))
        XCTAssertFalse("\(options) \(String(describing: bond))".contains("LTK-MARKER"), "keys print redacted")
    }

    func testLegacyJustWorksDistributesTheLTK() async throws {
        let options = PairingOptions(method: .legacy, association: .justWorks, mitm: false, bonding: true, keySize: 7,
                                     centralKeys: [.idKey, .signKey], peripheralKeys: [.encKey, .idKey, .signKey],
                                     ltk: Self.ltk, irk: Self.irk, csrk: Self.csrk)
        let (link, steps) = await paired(options)
        XCTAssertEqual(steps.map(\.text), [
            ">SMP 01", "<SMP 02", ">SMP 03", "<SMP 03", ">SMP 04", "<SMP 04",
            "cmd 2019", "evt 0F", "evt 08", "cmd 1408", "evt 0E",
            "<SMP 06", "<SMP 07", "<SMP 08", "<SMP 09", "<SMP 0A", ">SMP 08", ">SMP 09", ">SMP 0A",
        ])
        XCTAssertEqual(steps[0].bytes, [0x01, 0x04, 0x00, 0x09, 16, 0x06, 0x07], "the phone still offers SC")
        XCTAssertEqual(steps[1].bytes, [0x02, 0x03, 0x00, 0x01, 7, 0x06, 0x07], "NoInputNoOutput, bonding only, 7 bytes")
        // The STK encrypts: 7 significant bytes, the rest zero; not the LTK.
        let stk = Array(steps[6].bytes[12..<28])
        XCTAssertEqual(Array(steps[6].bytes[0..<12]), [0x40, 0x00] + [UInt8](repeating: 0, count: 10))
        XCTAssertEqual(Array(stk[7...]), [UInt8](repeating: 0, count: 9))
        XCTAssertNotEqual(stk, Self.ltk)
        XCTAssertEqual(steps[10].bytes.last, 7)
        XCTAssertEqual(Array(steps[11].bytes.dropFirst()), Self.ltk, "Encryption Information carries the marker LTK")
        XCTAssertEqual(Array(steps[13].bytes.dropFirst()), Self.irk)
        XCTAssertEqual(Array(steps[15].bytes.dropFirst()), Self.csrk)
        XCTAssertNotEqual(Array(steps[16].bytes.dropFirst()), Self.irk, "the phone's IRK is its own")
        let ident = steps[12].bytes
        let ediv = UInt16(ident[1]) | UInt16(ident[2]) << 8
        let rand = (0..<8).reduce(UInt64(0)) { $0 | UInt64(ident[3 + $1]) << (8 * UInt64($1)) }
        let bond = await link.bond
        XCTAssertEqual(bond, BondedKeys(ltk: Secret(Self.ltk, label: "LTK"), ediv: ediv, rand: rand, keySize: 7))

        // A bonded reconnection encrypts with that LTK, EDIV and Rand.
        await link.close()
        await link.connect()
        let earlier = await link.recording()
        let before = earlier.packets.count
        let resumed = await link.resumeEncryption()
        XCTAssertTrue(resumed)
        var again = Recording()
        let later = await link.recording()
        again.packets = Array(later.packets.dropFirst(before))
        let more = Self.steps(again)
        XCTAssertEqual(more.map(\.text), ["cmd 2019", "evt 0F", "evt 08", "cmd 1408", "evt 0E"])
        XCTAssertEqual(more[0].bytes, [0x40, 0x00] + ident[3..<11] + ident[1..<3] + Self.ltk)
    }

    func testOptionsChangeThePDUs() async throws {
        // Secure Connections Passkey Entry: the device displays, 20 rounds of Confirm and Random.
        let passkey = await paired(PairingOptions(association: .passkeyEntry, mitm: true)).1
        XCTAssertEqual(passkey[1].bytes[1], 0x00, "DisplayOnly")
        XCTAssertEqual(passkey.filter { $0.text.hasSuffix("SMP 03") }.count, 40)
        XCTAssertEqual(passkey.filter { $0.text.hasSuffix("SMP 04") }.count, 40)
        XCTAssertEqual(passkey.filter { $0.text.hasSuffix("SMP 0D") }.count, 2)

        // Secure Connections Just Works: one Confirm (the device's), no MITM bit.
        let justWorks = await paired(PairingOptions(association: .justWorks, mitm: false, bonding: false, centralKeys: [], peripheralKeys: [])).1
        XCTAssertEqual(justWorks.map(\.text), [">SMP 01", "<SMP 02", ">SMP 0C", "<SMP 0C", "<SMP 03", ">SMP 04", "<SMP 04",
                                               ">SMP 0D", "<SMP 0D", "cmd 2019", "evt 0F", "evt 08", "cmd 1408", "evt 0E"])
        XCTAssertEqual(justWorks[0].bytes, [0x01, 0x04, 0x00, 0x08, 16, 0x00, 0x00], "SC only: no bonding, no MITM, no keys")
        XCTAssertGreaterThanOrEqual(justWorks[9].bytes.count, 28)
        XCTAssertLessThan(justWorks[7].time - justWorks[6].time, PairingPlan.compareTime, "nobody compares anything")

        // A phone that does not offer SC pairs legacy, whatever the device says.
        let old = await paired(PairingOptions(method: .secureConnections, phoneOffersSecureConnections: false)).1
        XCTAssertEqual(old[0].bytes[3], 0x01)
        XCTAssertFalse(old.contains { $0.text.hasSuffix("SMP 0C") }, "no public keys")

        // The spec's table: legacy with a DisplayYesNo device is Passkey Entry; without MITM, Just Works.
        XCTAssertEqual(PairingOptions(method: .legacy, association: .numericComparison, mitm: true).resultingAssociation, .passkeyEntry)
        XCTAssertEqual(PairingOptions(association: .numericComparison, mitm: true).resultingAssociation, .numericComparison)
        XCTAssertEqual(PairingOptions(association: .passkeyEntry, mitm: false).resultingAssociation, .justWorks)
        XCTAssertEqual(PairingOptions(keySize: 3).agreedKeySize, 7)
        XCTAssertEqual(PairingOptions(keySize: 40).agreedKeySize, 16)

        // Derived keys: the same seed gives the same bytes, another seed others.
        let a = await paired(PairingOptions(), seed: 3).1
        let b = await paired(PairingOptions(), seed: 3).1
        let c = await paired(PairingOptions(), seed: 4).1
        XCTAssertEqual(a, b)
        XCTAssertNotEqual(a.first { $0.text == "cmd 2019" }?.bytes, c.first { $0.text == "cmd 2019" }?.bytes)
    }

    /// GATTLab's own decoder reads the pairing: SMP by name in both directions, the LTK of
    /// LE Enable Encryption, nothing malformed.
    func testThePairingDecodes() async throws {
        let options = PairingOptions(method: .legacy, peripheralKeys: [.encKey, .idKey, .signKey], ltk: Self.ltk)
        let (link, _) = await paired(options)
        await link.close()
        let decoder = LinkDecoder()
        var smp: [String] = []
        var keys: [[UInt8]] = []
        var malformed: [String] = []
        let recording = await link.recording()
        recording.forEachRecord { record in
            decoder.consume(record)
            for e in decoder.events {
                switch e {
                case .smp(_, let direction, let pdu): smp.append("\(direction.arrow)\(SMPPDU.name(pdu.code))")
                case .startEncryption(_, let ltk, _, _): keys.append(ltk.unsafeBytes)
                case .malformed(_, _, let reason): malformed.append(reason)
                default: break
                }
            }
        }
        XCTAssertEqual(malformed, [])
        XCTAssertEqual(smp.first, ">Pairing Request")
        XCTAssertTrue(smp.contains("<Encryption Information") && smp.contains("<Signing Information") && smp.contains(">Identity Information"), "\(smp)")
        XCTAssertEqual(keys.count, 1)
    }

    /// `encrypt()` stays what it was: one Encryption Change, no SMP, no commands.
    func testEncryptIsUnchanged() async throws {
        let link = EmulatedLink(seed: 1, device: SpeakerDevice.factory(SpeakerConfiguration()))
        await link.connect()
        await link.encrypt()
        let recording = await link.recording()
        XCTAssertEqual(Self.steps(recording).map(\.text), ["evt 3E", "evt 08"])
        let bond = await link.bond
        XCTAssertNil(bond)
        let resumed = await link.resumeEncryption()
        XCTAssertFalse(resumed, "no bond to encrypt with")
    }
}
