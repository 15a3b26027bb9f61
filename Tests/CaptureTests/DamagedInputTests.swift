import TestSupport
import Foundation
import XCTest

@testable import Capture

final class DamagedInputTests: XCTestCase {
    // MARK: Whole-file problems

    func testEmptyFile() {
        let dir = TempDir()
        let r = readAll(dir.write("empty.log", []))
        XCTAssertEqual(r.openError?.kind, .unknownFormat)
        XCTAssertEqual(r.openError?.offset, 0)
        XCTAssertNil(r.openError?.record)
    }

    func testWrongMagic() {
        let dir = TempDir()
        let path = dir.write("text.pcap", Array("hello, this is not a capture file\n".utf8))
        let r = readAll(path)
        XCTAssertEqual(r.openError?.kind, .unknownFormat)
        XCTAssertEqual(r.openError?.offset, 0)
        XCTAssertEqual(r.openError?.path, path)
        XCTAssertTrue(r.openError?.message.contains("68 65 6c 6c 6f 2c 20 74") ?? false, r.openError?.message ?? "")
    }

    func testMissingFileAndDirectory() {
        let dir = TempDir()
        XCTAssertEqual(readAll(dir.file("absent.log")).openError?.kind, .cannotOpen)
        XCTAssertEqual(readAll(dir.path).openError?.kind, .cannotOpen)
    }

    func testBTSnoopHeaderProblems() {
        let dir = TempDir()
        let header = BTSnoopBytes.header(datalink: 1002)
        for n in [8, 9, 12, 15] {
            let r = readAll(dir.write("short\(n).log", Array(header.prefix(n))))
            XCTAssertEqual(r.openError?.kind, .truncated, "header cut to \(n) bytes")
            XCTAssertEqual(r.openError?.offset, 0)
        }
        let v2 = readAll(dir.write("v2.log", BTSnoopBytes.header(datalink: 1002, version: 2)))
        XCTAssertEqual(v2.openError?.kind, .corrupt)
        XCTAssertEqual(v2.openError?.offset, 8)
        let dl = readAll(dir.write("dl.log", BTSnoopBytes.header(datalink: 1003)))
        XCTAssertEqual(dl.openError?.kind, .unsupported)
        XCTAssertEqual(dl.openError?.offset, 12)
    }

    func testPcapHeaderProblems() {
        let dir = TempDir()
        let header = PcapBytes.header(dlt: 201)
        for n in [4, 12, 23] {
            let r = readAll(dir.write("short\(n).pcap", Array(header.prefix(n))))
            XCTAssertNotNil(r.openError, "header cut to \(n) bytes")
            XCTAssertTrue([.truncated, .corrupt].contains(r.openError?.kind), "\(String(describing: r.openError))")
            XCTAssertEqual(r.openError?.offset, 0)
        }
        // Link types without Bluetooth, and btsnoop's datalink numbers, which are not DLTs.
        for dlt: UInt32 in [1, 105, 1002] {
            let r = readAll(dir.write("dlt\(dlt).pcap", PcapBytes.header(dlt: dlt)))
            XCTAssertEqual(r.openError?.kind, .unsupported, "DLT \(dlt)")
        }
    }

    func testPacketLoggerRecordCutShort() {
        let dir = TempDir()
        let first = PklgBytes.record([0x03, 0x0C, 0x00], type: 0, seconds: 1, micros: 2, bigEndian: true)
        let second = PklgBytes.record([0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00], type: 1, seconds: 1, micros: 3, bigEndian: true)
        for cut in [1, 12, 13, 18] {
            let r = readAll(dir.write("cut\(cut).pklg", first + second.prefix(cut)))
            XCTAssertEqual(r.records.count, 1)
            XCTAssertEqual(r.error?.kind, .truncated, "cut \(cut)")
            XCTAssertEqual(r.error?.record, 2)
            XCTAssertEqual(r.error?.offset, Int64(first.count))
        }
    }

    func testBTSnoopRecordCutShort() {
        let dir = TempDir()
        let header = BTSnoopBytes.header(datalink: 1002)
        let a = BTSnoopBytes.record([0x01, 0x03, 0x0C, 0x00], flags: 2, unixMicros: 1)
        let b = BTSnoopBytes.record([0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00], flags: 3, unixMicros: 2)
        for cut in [1, 23, 24, 30] {
            let r = readAll(dir.write("cut\(cut).log", header + a + b.prefix(cut)))
            XCTAssertEqual(r.records.count, 1)
            XCTAssertEqual(r.error?.kind, .truncated, "cut \(cut)")
            XCTAssertEqual(r.error?.record, 2)
            XCTAssertEqual(r.error?.offset, 44)
            XCTAssertTrue(r.error?.description.hasPrefix(dir.file("cut\(cut).log") + ": record 2 at byte offset 44: ") ?? false,
                          r.error?.description ?? "")
        }
    }

    // MARK: Real captures cut short

    /// Small real captures of every format: btsnoop H4 and monitor, PacketLogger, pcap (µs), pcapng.
    static let realFiles = [
        "revcar__btsnoop_hci.log",
        "ctfusbkbd__rgbctf2020_PI_1_MagicInTheAir.btsnoop",
        "iSAP__hci_dump.pklg",
        "esp32btclassic__hci_dump.pklg",
        "sweyntooth__capture_cc2640_dhcheck_skip.pcap",
        "esp32btclassic__intel_ax200.pcapng",
        "darkelf__test1.pcapng",
        "sweyntooth__noncomplicance_cc2540_malformed_connection_success.pcapng",
    ]

    func testRealCapturesCutAtSeveralOffsets() throws {
        let dir = TempDir()
        var checked = 0
        for name in Self.realFiles {
            let bytes = try RealCaptures.bytes(name)
            let full = readAll(try RealCaptures.path(name))
            XCTAssertNil(full.openError, name)
            XCTAssertNil(full.error, name)
            let records = full.records
            guard records.count >= 3 else { XCTFail("\(name) has \(records.count) records"); continue }
            let offsets = records.map(\.fileOffset)
            XCTAssertEqual(offsets, offsets.sorted(), name)
            XCTAssertEqual(Set(offsets).count, offsets.count, name)
            let path = dir.file("cut-" + name)
            for k in Set([0, 1, records.count / 2, records.count - 1]).sorted() {
                let start = Int(offsets[k])
                let end = k + 1 < records.count ? Int(offsets[k + 1]) : bytes.count
                // A cut at a record boundary is a clean end.
                writeFile(path, Array(bytes[0..<start]))
                let clean = readAll(path)
                XCTAssertNil(clean.error, "\(name) cut at the start of record \(k + 1)")
                XCTAssertEqual(clean.records.count, k, name)
                // Cuts inside the record header and inside its data.
                for j in Set([1, 7, 13, end - start - 1]).sorted() where j > 0 && j < end - start {
                    // PacketLogger has no magic: a file of fewer than 13 bytes cannot be recognised at all.
                    if case .packetLogger = full.format, k == 0, j < 13 { continue }
                    writeFile(path, Array(bytes[0..<(start + j)]))
                    let r = readAll(path)
                    let what = "\(name) cut \(j) bytes into record \(k + 1) (offset \(start))"
                    XCTAssertNil(r.openError, what)
                    XCTAssertEqual(r.records.count, k, what)
                    XCTAssertEqual(r.records, Array(records.prefix(k)), "records before the damage are returned unchanged: \(what)")
                    XCTAssertEqual(r.error?.kind, .truncated, "\(what): \(String(describing: r.error))")
                    XCTAssertEqual(r.error?.record, k + 1, what)
                    XCTAssertEqual(r.error?.offset, Int64(start), what)
                    checked += 1
                }
            }
        }
        XCTAssertGreaterThan(checked, 60)
    }

    // MARK: Impossible lengths

    private func timed(_ body: () -> ReadResult) -> (ReadResult, Double) {
        let start = Date()
        let r = body()
        return (r, Date().timeIntervalSince(start))
    }

    func testHugeBTSnoopIncludedLength() throws {
        let dir = TempDir()
        let bytes = try RealCaptures.bytes("revcar__btsnoop_hci.log")
        let full = readAll(try RealCaptures.path("revcar__btsnoop_hci.log"))
        let k = 5
        let start = Int(full.records[k].fileOffset)
        for value: UInt32 in [0xFFFF_FFFF, 0x7FFF_FFFF, 0x8000_0000, 65_601, 1 << 24] {
            var damaged = bytes
            damaged.replaceSubrange((start + 4)..<(start + 8), with: [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)])
            let path = dir.write("huge.log", damaged)
            let (r, seconds) = timed { readAll(path) }
            XCTAssertEqual(r.records, Array(full.records.prefix(k)))
            XCTAssertEqual(r.error?.kind, .corrupt, "included length \(value)")
            XCTAssertEqual(r.error?.record, k + 1)
            XCTAssertEqual(r.error?.offset, Int64(start))
            XCTAssertLessThan(seconds, 0.5, "an impossible length is refused, not allocated or read")
        }
        // The original length alone may be anything: it only marks the record as cut.
        var damaged = bytes
        damaged.replaceSubrange(start..<(start + 4), with: [0xFF, 0xFF, 0xFF, 0xFF])
        let r = readAll(dir.write("orig.log", damaged))
        XCTAssertNil(r.error)
        XCTAssertEqual(r.records.count, full.records.count)
        XCTAssertEqual(r.records[k].originalLength, 0xFFFF_FFFF - 1)
    }

    func testHugePacketLoggerLength() throws {
        let dir = TempDir()
        let name = "iSAP__hci_dump.pklg"
        let bytes = try RealCaptures.bytes(name)
        let full = readAll(try RealCaptures.path(name))
        let k = 4
        let start = Int(full.records[k].fileOffset)
        for value: UInt32 in [0xFFFF_FFFF, 0x8000_0000, 65_610, 8, 0] {
            var damaged = bytes
            damaged.replaceSubrange(start..<(start + 4), with: [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)])
            let path = dir.write("huge.pklg", damaged)
            let (r, seconds) = timed { readAll(path) }
            XCTAssertEqual(r.records, Array(full.records.prefix(k)))
            XCTAssertEqual(r.error?.kind, .corrupt, "length \(value)")
            XCTAssertEqual(r.error?.record, k + 1)
            XCTAssertEqual(r.error?.offset, Int64(start))
            XCTAssertLessThan(seconds, 0.5)
        }
    }

    func testHugePcapCaptureLength() throws {
        let dir = TempDir()
        let name = "sweyntooth__capture_cc2640_dhcheck_skip.pcap"
        let bytes = try RealCaptures.bytes(name)
        let full = readAll(try RealCaptures.path(name))
        let k = 3
        let start = Int(full.records[k].fileOffset)
        for value: UInt32 in [0xFFFF_FFF0, 0x7FFF_FFFF, 0x0100_0000] {
            var damaged = bytes
            // Little-endian file: caplen is the third u32 of the record header.
            damaged.replaceSubrange((start + 8)..<(start + 12), with: [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)])
            let path = dir.write("huge.pcap", damaged)
            let (r, seconds) = timed { readAll(path) }
            XCTAssertEqual(r.records, Array(full.records.prefix(k)))
            XCTAssertEqual(r.error?.kind, .corrupt, "caplen \(value): \(String(describing: r.error))")
            XCTAssertEqual(r.error?.record, k + 1)
            XCTAssertEqual(r.error?.offset, Int64(start))
            XCTAssertLessThan(seconds, 0.5)
        }
    }

    func testHugePcapngBlockLength() throws {
        let dir = TempDir()
        let name = "darkelf__test1.pcapng"
        let bytes = try RealCaptures.bytes(name)
        let full = readAll(try RealCaptures.path(name))
        let k = 3
        let start = Int(full.records[k].fileOffset)
        // Enhanced Packet Block type 6, then the block total length (little-endian section).
        XCTAssertEqual(Array(bytes[start..<(start + 4)]), [6, 0, 0, 0])
        var damaged = bytes
        damaged.replaceSubrange((start + 4)..<(start + 8), with: [0xF0, 0xFF, 0xFF, 0xFF])
        let path = dir.write("huge.pcapng", damaged)
        let (r, seconds) = timed { readAll(path) }
        XCTAssertEqual(r.records, Array(full.records.prefix(k)))
        XCTAssertEqual(r.error?.kind, .corrupt, "\(String(describing: r.error))")
        XCTAssertEqual(r.error?.record, k + 1)
        XCTAssertEqual(r.error?.offset, Int64(start))
        XCTAssertLessThan(seconds, 0.5)
    }

    // MARK: Random mutation property

    /// Mutates record headers and length fields of a small real file thousands of times (seeded, so
    /// every run is the same); reading must never trap or loop, and every error must name the record
    /// that follows the last one returned and an offset inside the file.
    private func mutate(_ name: String, headerSize: Int, recordHeader: Int, iterations: Int, seed: UInt64) throws {
        let bytes = try RealCaptures.bytes(name)
        let full = readAll(try RealCaptures.path(name))
        XCTAssertNil(full.error)
        let starts = full.records.map { Int($0.fileOffset) }
        var rng = SplitMix(seed: seed)
        let dir = TempDir()
        let path = dir.file("mutant")
        var errors = 0, clean = 0
        let specials: [UInt32] = [0, 1, 8, 9, 12, 13, 23, 24, 25, 65_599, 65_600, 65_601, 65_609, 65_610, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFE, 0xFFFF_FFFF]
        for iteration in 0..<iterations {
            var m = bytes
            let mutations = Int.random(in: 1...3, using: &rng)
            for _ in 0..<mutations where !m.isEmpty {
                switch Int.random(in: 0..<10, using: &rng) {
                case 0...5:  // a u32 field of a record header
                    let start = starts.randomElement(using: &rng)!
                    let field = Int.random(in: 0..<(recordHeader / 4), using: &rng) * 4
                    guard start + field + 4 <= m.count else { continue }
                    var value: UInt32
                    if Bool.random(using: &rng) {
                        value = specials.randomElement(using: &rng)!
                    } else {
                        let current = m[start + field..<start + field + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                        value = current &+ UInt32(bitPattern: Int32.random(in: -40...40, using: &rng))
                    }
                    let be = [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
                    m.replaceSubrange((start + field)..<(start + field + 4), with: be)
                case 6:  // a byte of the file header or of the first record header
                    let i = Int.random(in: 0..<min(m.count, headerSize + recordHeader), using: &rng)
                    m[i] = UInt8.random(in: 0...255, using: &rng)
                case 7:  // any byte
                    let i = Int.random(in: 0..<m.count, using: &rng)
                    m[i] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &rng)
                case 8:  // cut anywhere
                    m.removeLast(Int.random(in: 0..<m.count, using: &rng))
                default:  // remove or insert a few bytes in the middle, shifting every later record
                    guard m.count > 2 else { continue }
                    let i = Int.random(in: 0..<(m.count - 1), using: &rng)
                    if Bool.random(using: &rng) {
                        m.removeSubrange(i..<min(m.count, i + Int.random(in: 1...5, using: &rng)))
                    } else {
                        m.insert(contentsOf: (0..<Int.random(in: 1...5, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: i)
                    }
                }
            }
            writeFile(path, m)
            let r = readAll(path, limit: m.count / 13 + 1)
            let what = "\(name) mutant \(iteration) (seed \(seed))"
            if let e = r.openError {
                XCTAssertNil(e.record, what)
                if let offset = e.offset { XCTAssertTrue(offset >= 0 && offset <= Int64(m.count), what) }
                continue
            }
            for (i, rec) in r.records.enumerated() {
                XCTAssertEqual(rec.number, i + 1, what)
                XCTAssertTrue(rec.fileOffset >= Int64(headerSize) && rec.fileOffset < Int64(m.count), what)
                XCTAssertLessThanOrEqual(rec.data.count, 65_600, what)
                if i > 0 { XCTAssertGreaterThan(rec.fileOffset, r.records[i - 1].fileOffset, what) }
            }
            if let e = r.error {
                errors += 1
                XCTAssertTrue(e.kind == .truncated || e.kind == .corrupt, "\(what): \(e)")
                XCTAssertEqual(e.record, r.records.count + 1, "\(what): \(e)")
                XCTAssertNotNil(e.offset, what)
                if let offset = e.offset {
                    XCTAssertTrue(offset >= Int64(headerSize) && offset < Int64(m.count), "\(what): \(e) in \(m.count) bytes")
                    if let last = r.records.last { XCTAssertGreaterThan(offset, last.fileOffset, what) }
                }
            } else {
                clean += 1
            }
        }
        // The mutations must actually exercise both outcomes.
        XCTAssertGreaterThan(errors, iterations / 4, name)
        XCTAssertGreaterThan(clean, iterations / 50, name)
    }

    func testMutatedBTSnoopNeverTraps() throws {
        try mutate("revcar__btsnoop_hci.log", headerSize: 16, recordHeader: 24, iterations: 2500, seed: 0x6A77_1AB0)
    }

    func testMutatedPacketLoggerNeverTraps() throws {
        try mutate("iSAP__hci_dump.pklg", headerSize: 0, recordHeader: 12, iterations: 2500, seed: 0x9E1A_B0C5)
    }
}
