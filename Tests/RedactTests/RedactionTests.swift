import Analysis
import Capture
import Dispatch
import Foundation
import GATT
import Profiles
import Protocols
import TestSupport
import XCTest
@testable import Redact

/// Redaction of every capture the project has passes its own verification (no secret bytes
/// left, GATTLab and tshark read the same records and structure, the audit finds only redacted
/// values), and touches nothing but secret bytes and the CRCs that cover them.
final class RedactionTests: XCTestCase {
    static let keys = ProtocolKeys(["esp-pop": Secret(Array("abcd1234".utf8), label: "PoP"), "esp-client-key": Secret(hexBytes("e85ef1d7abd8e3b078cbfa1e2f08681421ce54995e227725d010d973846dc60f"), label: "key")])

    struct Outcome: Sendable {
        var name: String
        var outcome: RedactionOutcome?
        var failure: String?
        var sizeEqual = false
        var bytesDiffering = 0
    }

    func testEveryCaptureRedactsAndPassesItsChecks() throws {
        let tshark = try Files.tshark
        let paths = try Files.projectCaptures() + Files.realCaptures()
        let dir = try Files.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var options = RedactionOptions(protocols: GATTLabProtocols.all)
        options.keys = Self.keys
        options.tshark = tshark
        let settings = options
        let box = Box(count: paths.count)
        DispatchQueue.concurrentPerform(iterations: paths.count) { i in
            let path = paths[i]
            let name = URL(fileURLWithPath: path).lastPathComponent
            let out = dir.appendingPathComponent("\(i)-\(name)").path
            var o = Outcome(name: name)
            do {
                o.outcome = try Redactor.redact(input: path, output: out, options: settings) { GATTDecoder() }
                let a = (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
                let b = (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data()
                o.sizeEqual = a.count == b.count
                o.bytesDiffering = zip(a, b).filter { $0 != $1 }.count
            } catch {
                o.failure = "\(error)"
            }
            box.set(i, o)
        }
        var secrets = 0, withSecrets = 0
        for o in box.values {
            guard let r = o.outcome else {
                XCTFail("\(o.name): \(o.failure ?? "no result")")
                continue
            }
            XCTAssertEqual(r.checks.count, 4, "\(o.name): every check ran, tshark's included")
            for c in r.checks { XCTAssertTrue(c.passed, "\(o.name): \(c.name): \(c.detail)") }
            XCTAssertTrue(o.sizeEqual, "\(o.name): the redacted file has another size")
            // Only the secrets' bytes (and, for sniffed packets, their CRCs) change.
            XCTAssertLessThanOrEqual(o.bytesDiffering, r.bytesChanged + 3 * r.recordsChanged, o.name)
            XCTAssertEqual(o.bytesDiffering > 0, !r.secrets.isEmpty, o.name)
            secrets += r.secrets.count
            if !r.secrets.isEmpty { withSecrets += 1 }
        }
        print("redaction: \(paths.count) captures, \(withSecrets) held secrets, \(secrets) secret values overwritten; every check passed")
        XCTAssertGreaterThan(withSecrets, 60)
    }

    /// Addresses replaced everywhere, consistently: the same seed gives the same file, a device
    /// keeps one stand-in, and the structure stays what tshark reads.
    func testAnonymizedAddressesAreGoneAndConsistent() throws {
        let dir = try Files.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let paths = try [Files.projectCaptures().first { $0.hasSuffix("speaker-reboot-validate-mtu23.btsnoop") },
                         Files.realCaptures().first { $0.hasSuffix("TesiBLE__Lv4_JW.pcapng") },
                         Files.realCaptures().first { $0.hasSuffix("AndroidPad__btsnoop_hci.cfa") }].compactMap { $0 }
        XCTAssertEqual(paths.count, 3)
        for path in paths {
            var options = RedactionOptions(protocols: GATTLabProtocols.all)
            options.anonymizeAddresses = true
            options.replaceNames = true
            options.anonymizationKey = RedactionOptions.anonymizationKey(seed: "test")
            options.tshark = try Files.tshark
            let a = dir.appendingPathComponent("a").path, b = dir.appendingPathComponent("b").path
            unlink(a); unlink(b)
            let first = try Redactor.redact(input: path, output: a, options: options) { GATTDecoder() }
            _ = try Redactor.redact(input: path, output: b, options: options) { GATTDecoder() }
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: a)), try Data(contentsOf: URL(fileURLWithPath: b)), "same seed, same bytes")
            XCTAssertGreaterThan(first.addressesMapped, 0, path)
            for c in first.checks { XCTAssertTrue(c.passed, "\(path): \(c.name): \(c.detail)") }
            let output = Array(try Data(contentsOf: URL(fileURLWithPath: a)))
            for m in first.addressMap {
                let bytes = hexBytes(m.from.replacingOccurrences(of: ":", with: ""))
                XCTAssertNil(find(Array(bytes.reversed()), in: output), "\(path): \(m.from) still in the file (little-endian)")
                XCTAssertNil(find(Array(m.from.utf8), in: output), "\(path): \(m.from) still in the file as text")
                XCTAssertNotEqual(m.from, m.to)
                // The address type bits (static random, resolvable, non-resolvable) are kept.
                XCTAssertEqual(bytes[0] & 0xC0, hexBytes(m.to.replacingOccurrences(of: ":", with: ""))[0] & 0xC0)
            }
        }
    }

    /// The link-layer CRC as captures store it: recognised on real sniffer packets, and a change
    /// folded in gives the CRC of the changed packet.
    func testLinkLayerCRCMatchesRealPacketsAndFollowsChanges() throws {
        var checked = 0, recognised = 0
        for path in try Files.realCaptures() {
            let reader = try openCapture(path)
            guard reader.linkType.isLinkLayer else { continue }
            while let r = try reader.next() {
                guard r.kind == .linkLayer, r.linkLayer?.crcOK == true, r.linkLayer?.hasCRC == true, r.data.count >= 9,
                      r.data.u32le(0) == 0x8E89_BED6 else { continue }
                let d = Array(r.data)
                let pdu = Array(d[4..<(d.count - 3)]), stored = Array(d[(d.count - 3)...])
                checked += 1
                guard let layout = LinkLayerCRC.layout(of: stored, pdu: pdu, preset: 0x55_5555) else { continue }
                recognised += 1
                var changed = pdu
                changed[changed.count / 2] ^= 0x5A
                let updated = LinkLayerCRC.updated(stored: stored, old: pdu, new: changed, layout: layout)
                XCTAssertEqual(LinkLayerCRC.layout(of: updated, pdu: changed, preset: 0x55_5555), layout, path)
            }
        }
        XCTAssertGreaterThan(checked, 1000)
        XCTAssertGreaterThan(Double(recognised) / Double(checked), 0.95, "\(recognised) of \(checked) advertising CRCs recognised")
    }

    func find(_ needle: [UInt8], in hay: [UInt8]) -> Int? {
        guard !needle.isEmpty, needle.count <= hay.count else { return nil }
        for i in 0...(hay.count - needle.count) where hay[i] == needle[0] && hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
        return nil
    }
}

final class Box: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [RedactionTests.Outcome?]
    init(count: Int) { slots = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ o: RedactionTests.Outcome) { lock.lock(); slots[i] = o; lock.unlock() }
    var values: [RedactionTests.Outcome] { lock.lock(); defer { lock.unlock() }; return slots.compactMap { $0 } }
}

/// Hostile input: captures with random bytes changed inside their records still audit and
/// redact without a crash, and a redaction either passes every check or refuses cleanly.
final class RedactionDamageTests: XCTestCase {
    func testRandomlyDamagedCapturesRedactOrRefuseCleanly() throws {
        var rng = SplitMix(seed: 0x5EC2_E75)
        let dir = try Files.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sources = try Files.projectCaptures().filter {
            ["speaker-encrypted-credentials-mtu23", "speaker-url-secrets-mtu23", "speaker-legacy-pairing-mtu23",
             "esp-sec0-provision-mtu23", "nrf7-provision-mtu23", "speaker-credentials-readback-mtu23"].contains(URL(fileURLWithPath: $0).deletingPathExtension().lastPathComponent)
        } + Files.realCaptures().filter { $0.hasSuffix("TesiBLE__Lv4_JW.pcapng") || $0.hasSuffix("fuut__hci_snoop20250125165300.cfa") }
        XCTAssertEqual(sources.count, 8)
        var outcomes: [String: Int] = [:]
        for source in sources {
            let original = Array(try Data(contentsOf: URL(fileURLWithPath: source)))
            for trial in 0..<10 {
                var bytes = original
                for _ in 0..<(1 + Int(rng.next() % 8)) {
                    let position = 64 + Int(rng.next() % UInt64(max(1, bytes.count - 64)))
                    bytes[position] = UInt8(truncatingIfNeeded: rng.next())
                }
                let input = dir.appendingPathComponent("in-\(trial)-\(URL(fileURLWithPath: source).lastPathComponent)")
                try Data(bytes).write(to: input)
                let output = dir.appendingPathComponent("out-\(trial)").path
                unlink(output)
                do {
                    let o = try Redactor.redact(input: input.path, output: output, options: RedactionOptions(protocols: GATTLabProtocols.all)) { GATTDecoder() }
                    for c in o.checks { XCTAssertTrue(c.passed, "\(input.lastPathComponent): \(c.name): \(c.detail)") }
                    outcomes["redacted", default: 0] += 1
                } catch RedactionError.input {
                    outcomes["damaged input refused", default: 0] += 1
                    XCTAssertFalse(FileManager.default.fileExists(atPath: output))
                } catch RedactionError.verification {
                    // Damage can hide a secret from the decoders (a handle no longer names the
                    // credential characteristic) while its bytes stay: the checks catch that.
                    outcomes["refused by its own checks", default: 0] += 1
                    XCTAssertFalse(FileManager.default.fileExists(atPath: output))
                } catch {
                    XCTFail("\(input.lastPathComponent): \(error)")
                }
            }
        }
        print("damaged captures: \(outcomes.sorted { $0.key < $1.key })")
    }

    /// HCI events cut short where the anonymizer looks for addresses (an LE Enhanced Connection
    /// Complete of 5 bytes, v1 and v2; an advertising report and a Remote Name Request Complete
    /// missing their ends) are read only as far as they go: no read past the record (which
    /// trapped on the v1 event), and the capture still redacts with its addresses anonymized.
    func testShortEventsAreNotReadPastTheirEnd() throws {
        let dir = try Files.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func be32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * UInt32($0))) } }
        var file = Array("btsnoop\0".utf8) + be32(1) + be32(1002)
        let events: [[UInt8]] = [
            [0x04, 0x3E, 0x06, 0x0A, 0x00, 0x40, 0x00, 0x00, 0x01],
            [0x04, 0x3E, 0x06, 0x29, 0x00, 0x40, 0x00, 0x00, 0x01],
            [0x04, 0x3E, 0x05, 0x02, 0x01, 0x00, 0x00, 0x11],
            [0x04, 0x07, 0x05, 0x00, 0x11, 0x22, 0x33, 0x44],
        ]
        for (i, event) in events.enumerated() {
            let time = UInt64(0x00E0_3AB4_4A67_6000) + UInt64(i) * 1000
            file += be32(UInt32(event.count)) + be32(UInt32(event.count)) + be32(3) + be32(0)
            file += be32(UInt32(time >> 32)) + be32(UInt32(time & 0xFFFF_FFFF)) + event
        }
        let input = dir.appendingPathComponent("short.btsnoop")
        try Data(file).write(to: input)
        var options = RedactionOptions(protocols: GATTLabProtocols.all)
        options.anonymizeAddresses = true
        options.replaceNames = true
        let output = dir.appendingPathComponent("out.btsnoop").path
        do {
            let o = try Redactor.redact(input: input.path, output: output, options: options) { GATTDecoder() }
            for c in o.checks { XCTAssertTrue(c.passed, "\(c.name): \(c.detail)") }
        } catch RedactionError.input {
            XCTAssertFalse(FileManager.default.fileExists(atPath: output))
        }
    }

    /// tshark's structure check keeps a digest per record, not the line: it must still tell two
    /// captures apart and say where they part, and still read the malformed column as a yes/no.
    func testTsharkStructureTellsCapturesApart() throws {
        let tshark = try Files.tshark
        let demo = Files.root.appendingPathComponent("Captures/speaker-ota-demo.btsnoop").path
        let scan = Files.root.appendingPathComponent("Captures/emulated/sensor-scan-mtu23.btsnoop").path
        let a = Redactor.tsharkStructure(tshark, demo), again = Redactor.tsharkStructure(tshark, demo)
        let b = Redactor.tsharkStructure(tshark, scan)
        XCTAssertNil(a.error)
        XCTAssertGreaterThan(a.lines.count, 50)
        XCTAssertEqual(a.lines, again.lines)
        XCTAssertNotEqual(a.lines, b.lines)
        XCTAssertEqual(Set(a.lines).count, a.lines.count, "each record's line holds its number, so no two digests are equal")

        func digest(_ s: String) -> UInt64 { Redactor.structureDigest(Array(s.utf8)) }
        XCTAssertEqual(digest("7\t31\t0x12\t0x0003\t\tExpert Info: garbage A"), digest("7\t31\t0x12\t0x0003\t\tother garbage"))
        XCTAssertNotEqual(digest("7\t31\t0x12\t0x0003\t\tExpert Info"), digest("7\t31\t0x12\t0x0003\t\t"))
        XCTAssertNotEqual(digest("7\t31\t0x12\t0x0003\t\t"), digest("7\t32\t0x12\t0x0003\t\t"))
        XCTAssertNotEqual(digest("7\t31\t0x12\t0x0003\t\t"), digest("7\t31\t0x52\t0x0003\t\t"))
    }
}
