import Capture
import Foundation
import HCI
import TestSupport
import XCTest
@testable import Analysis

/// The audit's and the timeline's growing lists keep their elements encoded, in memory up to a limit and then in an
/// encrypted, unlinked temporary file (`SpillList`): what goes in comes out, in order, whether
/// it was read back from memory or from the file, and the file never holds a secret in clear.
final class SpillListTests: XCTestCase {
    /// Findings, sightings and links with every field set, unset, empty and odd.
    static func samples(_ n: Int, seed: UInt64) -> (findings: [AuditFinding], secrets: [SecretSighting], links: [AuditLink]) {
        var r = SplitMix64(seed: seed)
        func pick(_ k: UInt64) -> Int { Int(r.next() % k) }
        func text() -> String { ["", "a", "Café ✓", "évidence \u{0} with NUL", String(repeating: "x", count: pick(300)), "\u{202e}rtl"][pick(6)] }
        func bytes() -> [UInt8] { (0..<pick(70)).map { _ in UInt8(truncatingIfNeeded: r.next()) } }
        func ints() -> [Int] { (0..<pick(5)).map { _ in [0, 1, -1, Int.max, Int.min, 4_000_000][pick(6)] } }
        func origin() -> ByteOrigin { ByteOrigin((0..<pick(4)).map { _ in .init(record: pick(1_000_000), offset: pick(300), count: 1 + pick(40)) }) }
        var findings: [AuditFinding] = [], secrets: [SecretSighting] = [], links: [AuditLink] = []
        for _ in 0..<n {
            findings.append(AuditFinding(id: text(), severity: AuditFinding.Severity.allCases[pick(3)], title: text(), evidence: text(), fix: text(),
                                         connection: pick(2) == 0 ? nil : text(), records: ints(), time: pick(2) == 0 ? nil : Int64.min + Int64(pick(9))))
            let location: SecretLocation? = pick(3) == 0 ? nil : SecretLocation(
                origin: origin(), mask: pick(2) == 0 ? nil : bytes(),
                copies: (0..<pick(3)).map { _ in .init(index: pick(64), piece: .init(record: pick(9), offset: pick(9), count: 1 + pick(9))) },
                dependents: (0..<pick(3)).map { _ in .init(origin: origin(), bytes: bytes()) })
            let filler = pick(5) == 0
            secrets.append(SecretSighting(kind: SecretKind.allCases[pick(UInt64(SecretKind.allCases.count))],
                                          secret: Secret(filler ? [UInt8](repeating: Redaction.filler, count: 8) : bytes(), label: text(), location: location),
                                          records: ints(), time: Int64(pick(1 << 40)), connection: pick(2) == 0 ? nil : text(), context: text(),
                                          overTheAir: pick(2) == 0, linkEncrypted: [nil, true, false][pick(3)]))
            var link = AuditLink(connection: text(), peer: pick(2) == 0 ? nil : text(), firstRecord: pick(1_000_000))
            link.encryptedAtRecord = pick(2) == 0 ? nil : pick(99)
            link.keySize = pick(2) == 0 ? nil : 7 + pick(10)
            link.pairings = (0..<pick(3)).map { _ in
                PairingSummary(secureConnections: pick(2) == 0, mitm: pick(2) == 0, bonding: pick(2) == 0, method: text(), keySize: pick(17),
                               records: ints(), failed: pick(2) == 0 ? nil : text(), time: pick(2) == 0 ? nil : Int64(pick(99)),
                               ioCapabilities: pick(2) == 0 ? nil : (text(), text()))
            }
            links.append(link)
        }
        return (findings, secrets, links)
    }

    static func same(_ a: AuditFinding, _ b: AuditFinding) -> Bool {
        (a.id, a.severity, a.title, a.evidence, a.fix) == (b.id, b.severity, b.title, b.evidence, b.fix)
            && a.connection == b.connection && a.time == b.time && a.records == b.records
    }

    static func same(_ a: SecretSighting, _ b: SecretSighting) -> Bool {
        a.kind == b.kind && a.secret == b.secret && a.secret.location == b.secret.location && a.records == b.records && a.time == b.time
            && a.connection == b.connection && a.context == b.context && a.overTheAir == b.overTheAir
            && a.linkEncrypted == b.linkEncrypted && a.alreadyRedacted == b.alreadyRedacted
    }

    static func same(_ a: AuditLink, _ b: AuditLink) -> Bool {
        guard (a.connection, a.peer, a.firstRecord, a.encryptedAtRecord, a.keySize) == (b.connection, b.peer, b.firstRecord, b.encryptedAtRecord, b.keySize),
              a.pairings.count == b.pairings.count else { return false }
        return zip(a.pairings, b.pairings).allSatisfy { p, q in
            p == q && p.time == q.time && p.ioCapabilities?.initiator == q.ioCapabilities?.initiator && p.ioCapabilities?.responder == q.ioCapabilities?.responder
        }
    }

    func testWhatGoesInComesOutFromMemoryAndFromTheFile() {
        let s = Self.samples(400, seed: 3)
        for limit in [0, 1_000, 1 << 20] {
            var findings = SpillList<AuditFinding>(memoryLimit: limit)
            var secrets = SpillList<SecretSighting>(memoryLimit: limit)
            var links = SpillList<AuditLink>(memoryLimit: limit)
            findings += s.findings
            secrets += s.secrets
            links += s.links
            XCTAssertEqual(findings.count, 400)
            XCTAssertEqual(findings.hasSpilled, limit < 1 << 20, "limit \(limit)")
            for i in 0..<400 {
                XCTAssertTrue(Self.same(findings[i], s.findings[i]), "finding \(i), limit \(limit)")
                XCTAssertTrue(Self.same(secrets[i], s.secrets[i]), "sighting \(i), limit \(limit)")
                XCTAssertTrue(Self.same(links[i], s.links[i]), "link \(i), limit \(limit)")
            }
            // Out of order too: each read may need another window of the file.
            for i in stride(from: 399, through: 0, by: -37) { XCTAssertTrue(Self.same(secrets[i], s.secrets[i]), "sighting \(i) read backwards") }
        }
    }

    func testTheFileHoldsNoSecretInClear() {
        var secrets = SpillList<SecretSighting>(memoryLimit: 0)
        let password = Array("correct horse battery staple".utf8)
        for i in 0..<50 {
            secrets.append(SecretSighting(kind: .wifiPassword, secret: Secret(password, label: "Wi-Fi password"), records: [i], time: 0,
                                          connection: nil, context: "OTA_CREDENTIALS write", overTheAir: true, linkEncrypted: false))
        }
        let file = secrets.fileBytes()
        XCTAssertGreaterThan(file.count, 50 * password.count)
        XCTAssertFalse(file.indices.contains { file[$0...].starts(with: password) }, "the password lies in clear in the temporary file")
        XCTAssertFalse(file.indices.contains { file[$0...].starts(with: Array("OTA_CREDENTIALS".utf8)) }, "the file is not encrypted")
        XCTAssertEqual(secrets[49].secret.unsafeBytes, password)
    }

    /// Sorting moves slots only, and orders as an array's sort would with the same comparison.
    func testSortOrdersAsAnArraySortWould() {
        let s = Self.samples(300, seed: 9)
        var list = SpillList<AuditFinding>(memoryLimit: 500)
        list += s.findings
        let key = { (f: AuditFinding) in (record: f.records.first ?? 0, severity: f.severity) }
        list.sort(on: key) { a, b in (a.record, b.severity) < (b.record, a.severity) }
        let array = s.findings.sorted { ($0.records.first ?? 0, $1.severity) < ($1.records.first ?? 0, $0.severity) }
        XCTAssertEqual(list.count, array.count)
        for (a, b) in zip(list, array) { XCTAssertTrue(Self.same(a, b)) }
    }

    /// A list sorted at its start and not after (how the audit's findings and a redaction's
    /// patches come) sorts as a stable sort does: equal keys keep their order, whether they lie
    /// in the sorted start, in the rest, or across both. The reference breaks ties on the
    /// original position, so it is stable whatever the standard library's sort is.
    func testAListSortedOnlyAtItsStartSortsStably() {
        var r = SplitMix64(seed: 20)
        let order = { (a: (record: Int, severity: AuditFinding.Severity), b: (record: Int, severity: AuditFinding.Severity)) in
            (a.record, b.severity) < (b.record, a.severity)
        }
        let key = { (f: AuditFinding) in (record: f.records.first ?? 0, severity: f.severity) }
        for n in [0, 1, 2, 7, 300] {
            for sortedStart in Set([0, 1, n / 2, max(0, n - 1), n]) where sortedStart <= n {
                // Few distinct keys, so that many are equal; `id` is the original position.
                var findings = (0..<n).map { i in
                    AuditFinding(id: "\(i)", severity: AuditFinding.Severity.allCases[Int(r.next() % 3)], title: "", evidence: "", fix: "",
                                 connection: nil, records: r.next() % 5 == 0 ? [] : [Int(r.next() % 6)], time: nil)
                }
                let start = findings.prefix(sortedStart).enumerated()
                    .sorted { order(key($0.element), key($1.element)) || (!order(key($1.element), key($0.element)) && $0.offset < $1.offset) }
                    .map(\.element)
                findings.replaceSubrange(0..<sortedStart, with: start)
                let expected = findings.enumerated()
                    .sorted { order(key($0.element), key($1.element)) || (!order(key($1.element), key($0.element)) && $0.offset < $1.offset) }
                    .map(\.element.id)
                var list = SpillList<AuditFinding>(memoryLimit: 200)
                list += findings
                list.sort(on: key, by: order)
                XCTAssertEqual(list.map(\.id), expected, "\(n) elements sorted for the first \(sortedStart)")
            }
        }
    }

    /// Copies share the storage, which only grows: each keeps its own elements.
    func testCopiesAreIndependent() {
        let s = Self.samples(20, seed: 1)
        var a = SpillList<AuditLink>(memoryLimit: 0)
        a += s.links.prefix(10)
        var b = a
        b += s.links.suffix(10)
        a.append(s.links[0])
        XCTAssertEqual(a.count, 11)
        XCTAssertEqual(b.count, 20)
        XCTAssertTrue(Self.same(a[10], s.links[0]))
        XCTAssertTrue(Self.same(b[10], s.links[10]))
    }

    /// Picking positions gives those elements in that order, from the same storage.
    func testPickingReordersWithoutCopying() {
        let s = Self.samples(30, seed: 6)
        var list = SpillList<AuditLink>(memoryLimit: 200)
        list += s.links
        let order = [29, 0, 7, 7, 15]
        let picked = list.picking(order)
        XCTAssertEqual(picked.count, order.count)
        for (i, p) in order.enumerated() { XCTAssertTrue(Self.same(picked[i], s.links[p]), "position \(p)") }
        XCTAssertEqual(picked.fileBytes(), list.fileBytes(), "picking wrote nothing")
    }

    /// A replaced element reads as its new value from then on, in this list only; its neighbours
    /// do not move, whether the old bytes lie in memory or in the file.
    func testReplaceChangesOneElementOfOneList() {
        let s = Self.samples(60, seed: 8)
        for limit in [0, 700, 1 << 20] {
            var list = SpillList<AuditLink>(memoryLimit: limit)
            list += s.links.prefix(30)
            let before = list
            var expected = Array(s.links.prefix(30))
            for (i, j) in [(0, 59), (17, 40), (29, 31), (17, 33)] {
                list.replace(at: i, with: s.links[j])
                expected[i] = s.links[j]
            }
            list += s.links.suffix(5)
            expected += s.links.suffix(5)
            XCTAssertEqual(list.count, expected.count)
            for i in expected.indices { XCTAssertTrue(Self.same(list[i], expected[i]), "element \(i), limit \(limit)") }
            for i in 0..<30 { XCTAssertTrue(Self.same(before[i], s.links[i]), "the copy taken before changed at \(i)") }
        }
    }

    func testPickingWhereKeepsTheOrder() {
        let s = Self.samples(80, seed: 12)
        var list = SpillList<AuditFinding>(memoryLimit: 300)
        list += s.findings
        let kept = list.picking { $0.severity == .error }
        let expected = s.findings.filter { $0.severity == .error }
        XCTAssertGreaterThan(expected.count, 5)
        XCTAssertEqual(kept.count, expected.count)
        for (a, b) in zip(kept, expected) { XCTAssertTrue(Self.same(a, b)) }
    }

    /// The timeline's connections, phases and progress read back as they went in, every field
    /// (compared through their full descriptions, so a field added later and not spilled fails).
    func testTimelineListsComeBackAsTheyWent() {
        var r = SplitMix64(seed: 21)
        func pick(_ k: UInt64) -> Int { Int(r.next() % k) }
        func big() -> Int64 { [0, 1, -1, Int64.max, Int64.min, 1_700_000_000_000_000][pick(6)] }
        func maybe<T>(_ v: @autoclosure () -> T) -> T? { pick(2) == 0 ? nil : v() }
        var connections: [TimelineConnection] = [], phases: [Phase] = [], progress: [ProgressPoint] = []
        for i in 0..<300 {
            let key = pick(2) == 0 ? ConnectionKey(controller: UInt16(pick(3)), handle: UInt16(pick(0x0F00)))
                                   : ConnectionKey(accessAddress: UInt32(truncatingIfNeeded: r.next()))
            var c = TimelineConnection(id: i, device: pick(9), key: key, start: big(), firstFrame: pick(1 << 40), lastFrame: Int.max - pick(9))
            c.end = maybe(big())
            c.mtu = [23, 247, 517, 65_535][pick(4)]
            c.encrypted = pick(2) == 0
            c.encryptedAt = maybe(big())
            c.keySize = maybe(pick(17))
            c.paired = pick(2) == 0
            c.disconnectReason = maybe(HCIStatus(UInt8(pick(256))))
            c.hostDisconnectReason = maybe(HCIStatus(UInt8(pick(256))))
            c.implicit = pick(2) == 0
            c.classic = pick(2) == 0
            c.carriedATT = pick(2) == 0
            connections.append(c)
            phases.append(Phase(device: pick(5), connection: maybe(pick(99)), name: ["download", "wifi-join", "", "Café ✓"][pick(4)],
                                start: big(), end: big(), outcome: [.ok, .failed, .interrupted, .open][pick(4)],
                                detail: maybe(["SET_CONFIG \u{0}ssid", String(repeating: "é", count: pick(200))][pick(2)]),
                                firstFrame: pick(1 << 30), lastFrame: pick(1 << 30)))
            progress.append(ProgressPoint(device: pick(5), time: big(), percent: pick(256) - 100, kb: pick(1 << 33)))
        }
        for limit in [0, 1_000, 1 << 20] {
            var c = SpillList<TimelineConnection>(memoryLimit: limit), p = SpillList<Phase>(memoryLimit: limit)
            var g = SpillList<ProgressPoint>(memoryLimit: limit)
            c += connections
            p += phases
            g += progress
            XCTAssertEqual(c.map { "\($0)" }, connections.map { "\($0)" }, "limit \(limit)")
            XCTAssertEqual(p.map { "\($0)" }, phases.map { "\($0)" }, "limit \(limit)")
            XCTAssertEqual(g.map { "\($0)" }, progress.map { "\($0)" }, "limit \(limit)")
        }
    }

    /// Where no file can be made, the list keeps everything in memory and works the same.
    func testWithoutATemporaryFolderItStaysInMemory() {
        let saved = ProcessInfo.processInfo.environment["TMPDIR"]
        setenv("TMPDIR", "/nonexistent/gattlab-spill-test", 1)
        defer { if let saved { setenv("TMPDIR", saved, 1) } else { unsetenv("TMPDIR") } }
        let s = Self.samples(100, seed: 4)
        var list = SpillList<SecretSighting>(memoryLimit: 0)
        list += s.secrets
        XCTAssertFalse(list.hasSpilled)
        for i in 0..<100 { XCTAssertTrue(Self.same(list[i], s.secrets[i]), "sighting \(i)") }
    }

    /// Past `maxFiles` files open at once, lists stay in memory: an audit of a folder of long
    /// captures must leave descriptors to open the next capture with.
    func testAtMostSoManyFilesAtOnce() {
        let s = Self.samples(3, seed: 2)
        var lists: [SpillList<AuditLink>] = []
        for _ in 0..<(SpillStorage.maxFiles + 6) {
            var list = SpillList<AuditLink>(memoryLimit: 0)
            list += s.links
            lists.append(list)
        }
        XCTAssertEqual(lists.filter(\.hasSpilled).count, SpillStorage.maxFiles)
        for list in lists { for i in 0..<3 { XCTAssertTrue(Self.same(list[i], s.links[i])) } }
        lists.removeAll()
        // Closed with their lists: another may open one again.
        var again = SpillList<AuditLink>(memoryLimit: 0)
        again += s.links
        XCTAssertTrue(again.hasSpilled)
    }

    /// A report from the auditor: the same whether its lists stayed in memory or went to the file.
    func testAnAuditReadsTheSameFromItsFile() throws {
        for path in try Files.projectCaptures() {
            let a = try AuditTests.audit(path)
            let b = try AuditTests.audit(path, memoryLimit: 0)
            XCTAssertEqual(a.findings.count, b.findings.count, path)
            XCTAssertEqual(a.secrets.count, b.secrets.count, path)
            XCTAssertEqual(a.links.count, b.links.count, path)
            for (x, y) in zip(a.findings, b.findings) { XCTAssertTrue(Self.same(x, y), path) }
            for (x, y) in zip(a.secrets, b.secrets) { XCTAssertTrue(Self.same(x, y), path) }
            for (x, y) in zip(a.links, b.links) { XCTAssertTrue(Self.same(x, y), path) }
        }
    }
}
