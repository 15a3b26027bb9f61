import ATT
import HCI
import TestSupport
import XCTest

@testable import Report

/// An advertising report's decode line, written as bytes (`AdvertisingText.write`), against the
/// same line built as a string the way it was before (`lineByStrings`): random reports with every
/// field set or not, and random advertising data (names with control characters and bytes that
/// are not UTF-8, every AD type, cut structures).
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
            XCTAssertEqual(AdvertisingText.line(r), AdvertisingText.lineByStrings(r))
        }
        // Not vacuous: every kind of structure and names were written.
        XCTAssertTrue(Set(types).subtracting([0x2A, 0x3C]).isSubset(of: kinds), "\(kinds.sorted())")
        XCTAssertGreaterThan(names, 500)
    }
}
