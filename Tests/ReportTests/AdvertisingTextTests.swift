import ATT
import Capture
import GATT
import HCI
import TestSupport
import XCTest

@testable import Report

/// An advertising report's decode line, written as bytes (`AdvertisingText.write`), against the
/// same line built as a string the way it was before (`lineByStrings`, below): random reports
/// with every field set or not, and random advertising data (names with control characters and
/// bytes that are not UTF-8, every AD type, cut structures).
final class AdvertisingTextTests: XCTestCase {
    func testWrittenLinesAreTheStringBuiltLines() {
        var rng = SplitMix(seed: 26)
        func maybe<T>(_ make: () -> T) -> T? { Bool.random(using: &rng) ? make() : nil }
        func byte() -> UInt8 { UInt8.random(in: 0...255, using: &rng) }
        func address() -> BDAddr { BDAddr((byte(), byte(), byte(), byte(), byte(), byte())) }
        let types: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x16, 0x19, 0x20, 0x21, 0xFF, 0x2A, 0x3C]
        let companies: [UInt16] = [0x004C, 0x0059, 0x0006, 0xFFFE]
        var kinds = Set<UInt8>()
        var names = 0
        for _ in 0..<5_000 {
            var r = AdvertisingReport(origin: .linkLayer, eventType: UInt16(byte() & 7),
                                      eventName: ["ADV_IND", "SCAN_RSP", "AUX_ADV_IND", "ADV_DIRECT_IND"][Int(byte() % 4)])
            r.address = maybe(address)
            r.addressType = maybe { AddressType(rawValue: byte() % 4)! }
            r.targetAddress = maybe(address)
            r.rssi = maybe { Int8(bitPattern: byte()) }
            r.primaryPHY = maybe { LEPHY(rawValue: byte() % 3 + 1)! }
            r.channel = maybe { byte() % 40 }
            r.connectable = Bool.random(using: &rng)
            r.scannable = Bool.random(using: &rng)
            r.fragments = maybe { Int(byte() % 40) + 1 }
            r.dataStatus = maybe { ["complete", "incomplete", "truncated"][Int(byte() % 3)] }
            var ad: [UInt8] = []
            for _ in 0..<Int(byte() % 6) {
                let type = types[Int(byte()) % types.count]
                var value: [UInt8] = (0..<Int(byte() % 20)).map { _ in byte() }
                if type == 0xFF, value.count >= 2 {
                    let c = companies[Int(byte()) % companies.count]
                    value[0] = UInt8(c & 0xFF)
                    value[1] = UInt8(c >> 8)
                }
                if type == 0x09, Bool.random(using: &rng) { value = Array("Speaker \u{7}\t\u{7F}é".utf8) }
                ad += [UInt8(value.count + 1), type] + value
            }
            if Bool.random(using: &rng), !ad.isEmpty { ad.removeLast() }  // cut: a problem, or a fragment
            r.data = ad.withUnsafeBytes { AdvertisingData($0, fragment: Bool.random(using: &rng)) }
            for s in r.data.structures {
                kinds.insert(s.type)
                if case .localName = s { names += 1 }
            }
            XCTAssertEqual(AdvertisingText.line(r), lineByStrings(r))
        }
        // Not vacuous: every kind of structure and names were written.
        XCTAssertTrue(Set(types).subtracting([0x2A, 0x3C]).isSubset(of: kinds), "\(kinds.sorted())")
        XCTAssertGreaterThan(names, 500)
    }

    /// The line built as a string, as `AdvertisingText.line` was before it wrote bytes.
    private func lineByStrings(_ r: AdvertisingReport) -> String {
        var s = "ADV \(r.eventName)"
        if let a = r.address { s += " \(a)" + (r.addressType.map { " (\($0))" } ?? "") } else { s += " anonymous" }
        if let t = r.targetAddress { s += " -> \(t)" }
        if let v = r.rssi { s += " RSSI \(v) dBm" }
        if let p = r.primaryPHY { s += " \(p)" }
        if let c = r.channel { s += " ch \(c)" }
        let kind = [r.connectable ? "connectable" : nil, r.scannable ? "scannable" : nil].compactMap { $0 }
        if !kind.isEmpty { s += " " + kind.joined(separator: ",") }
        if let n = r.fragments {
            s += r.dataStatus == "truncated" ? " [\(n) reports joined, truncated: the controller lost the rest]" : " [\(n) reports joined]"
        } else if r.dataStatus == "incomplete" {
            s += " [continues in the next report]"
        } else if r.dataStatus == "truncated" {
            s += " [truncated: the controller lost the rest]"
        }
        for ad in r.data.structures {
            switch ad {
            case .flags(let f): s += " flags 0x" + Hex.string([f])
            case .localName(let n, let complete): s += " name\(complete ? "" : " (short)") \"\(AdvertisingText.printable(n))\""
            case .serviceUUIDs(let us, _):
                s += " services " + us.map { KnownUUIDs.name($0).map { n in "\(n)" } ?? $0.description }.joined(separator: ",")
            case .serviceData(let u, let d): s += " data[\(KnownUUIDs.name(u) ?? u.description)] \(Hex.string(d))"
            case .manufacturerData(let c, let d):
                s += " mfr \(AdvertisingNames.company(c) ?? "0x" + Hex.string([UInt8(c >> 8), UInt8(c & 0xFF)])) \(Hex.string(d))"
            case .txPowerLevel(let p): s += " tx \(p) dBm"
            case .appearance(let a): s += " appearance 0x" + Hex.string([UInt8(a >> 8), UInt8(a & 0xFF)])
            case .other(let t, let d): s += " \(ADStructure.typeName(t)) \(Hex.string(d))"
            }
        }
        if let p = r.problem { s += " [problem: \(p)]" }
        return s
    }
}
