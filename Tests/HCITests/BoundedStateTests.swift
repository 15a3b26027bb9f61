import TestSupport
import Foundation
import XCTest

@testable import Capture
@testable import HCI

/// Hostile input must not grow the decoder's live state without bound.
final class BoundedStateTests: XCTestCase {
    func testRandomACLStartsStayBounded() {
        let d = LinkDecoder()
        var rng = SplitMix(seed: 7)
        let start = Date()
        var bytes: [UInt8] = [0, 0, 3, 0, 0x20, 0x00, 0x04]  // a start of an L2CAP PDU of 36 bytes, 3 present
        for i in 0..<100_000 {
            let handle = UInt16.random(in: 0...0x0EFF, using: &rng)
            bytes[0] = UInt8(handle & 0xFF)
            bytes[1] = UInt8(handle >> 8) | 0x20
            let controller = UInt16.random(in: 0...63, using: &rng)
            let direction: Direction = Bool.random(using: &rng) ? .sent : .received
            d.feed(.acl, bytes, number: i + 1, direction: direction, controller: controller)
            if i % 10_000 == 0 {
                XCTAssertLessThanOrEqual(d.connections.count, LinkDecoder.maxConnections)
                XCTAssertLessThanOrEqual(d.pending.count, LinkDecoder.maxPendingReassemblies)
            }
        }
        let seconds = Date().timeIntervalSince(start)
        // About 5.5 s in a debug build (0.7 s with -O); without saturation the same loop takes
        // 0.45 s. The slowdown comes from evicting `connections.first(where:)`: always removing the
        // lowest bucket of Swift's open-addressing table packs the survivors into its upper part,
        // so every lookup probes long runs. The limit only catches a further (super-linear) regression.
        XCTAssertLessThanOrEqual(d.connections.count, LinkDecoder.maxConnections)
        XCTAssertGreaterThan(d.connections.count, LinkDecoder.maxConnections / 2, "the random keys did fill the table")
        XCTAssertLessThanOrEqual(d.pending.count, LinkDecoder.maxPendingReassemblies)
        XCTAssertLessThan(seconds, 10, "100 000 records took \(seconds) s")
    }
}

extension BoundedStateTests {
    func testRandomConnectionCompletesStayBounded() {
        let d = LinkDecoder()
        var rng = SplitMix(seed: 11)
        var bytes: [UInt8] = [0x3E, 0x13, 0x01, 0x00, 0x40, 0x00, 0x01, 0x01, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
                              0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00]
        for i in 0..<20_000 {
            let handle = UInt16.random(in: 0...0x0EFF, using: &rng)
            bytes[4] = UInt8(handle & 0xFF)
            bytes[5] = UInt8(handle >> 8)
            d.feed(.event, bytes, number: i + 1, controller: UInt16.random(in: 0...63, using: &rng))
        }
        XCTAssertLessThanOrEqual(d.connections.count, LinkDecoder.maxConnections)
    }

    func testRandomConnectIndsStayBounded() {
        let d = LinkDecoder()
        var rng = SplitMix(seed: 13)
        var bytes: [UInt8] = [0xD6, 0xBE, 0x89, 0x8E, 0xC5, 0x22]
        bytes += [0x01, 0x02, 0x03, 0x04, 0x05, 0xC6, 0x11, 0x12, 0x13, 0x14, 0x15, 0xD6]
        bytes += [0x2A, 0x4B, 0x65, 0x50, 0x7C, 0x5E, 0x01, 0x02, 0x05, 0x00, 0x24, 0x00, 0x01, 0x00, 0xC8, 0x00,
                  0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0x2A, 0xC1, 0xC2, 0xC3]
        var ll = LinkLayerInfo()
        ll.crcOK = true
        for i in 0..<20_000 {
            let aa = UInt32.random(in: 0...UInt32.max, using: &rng)
            bytes[18] = UInt8(aa & 0xFF); bytes[19] = UInt8((aa >> 8) & 0xFF)
            bytes[20] = UInt8((aa >> 16) & 0xFF); bytes[21] = UInt8(aa >> 24)
            d.feed(.linkLayer, bytes, number: i + 1, linkLayer: ll)
        }
        XCTAssertLessThanOrEqual(d.connections.count, LinkDecoder.maxConnections)
        XCTAssertLessThanOrEqual(d.linkLayer.sequence.count, LinkDecoder.maxConnections)
    }

    /// A day of a test rack: one device reconnecting on the same handle, 20,000 times. The list
    /// kept to evict the oldest connection must not keep one entry per reconnection (it did, and
    /// each compaction kept them all and ran again on the next connection: quadratic).
    func testReconnectingOnOneHandleKeepsOneArrival() {
        let d = LinkDecoder()
        let complete: [UInt8] = [0x3E, 0x13, 0x01, 0x00, 0x40, 0x00, 0x00, 0x01, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
                                 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00]
        let disconnect: [UInt8] = [0x05, 0x04, 0x00, 0x40, 0x00, 0x13]
        for i in 0..<20_000 {
            d.feed(.event, complete, number: 2 * i + 1)
            if i % 2 == 0 { d.feed(.event, disconnect, number: 2 * i + 2) }  // half end without a Disconnection Complete
        }
        XCTAssertEqual(d.connections.count, 1)
        XCTAssertLessThanOrEqual(d.arrivals.count, 2 * LinkDecoder.maxConnections + 1)
        XCTAssertLessThanOrEqual(d.compactions, 20_000 / LinkDecoder.maxConnections, "each compaction leaves one entry, not one per reconnection")
    }
}
