import ATT
import Fuzz
import HCI
import Profiles
import Protocols
import XCTest

/// `gattlab corpus import` asks each protocol's router which target a captured value feeds: the
/// routers claim only their own characteristics, and the scan router joins a response's
/// notifications per connection before it gives one input.
final class CorpusRoutingTests: XCTestCase {
    func route(_ routers: inout [any FuzzCorpusRouting], _ value: [UInt8], _ uuid: BluetoothUUID, endpoint: String? = nil,
               connection: ConnectionKey = ConnectionKey(controller: 0, handle: 0x40), notified: Bool = false) -> [String] {
        for i in routers.indices {
            if let inputs = routers[i].route(value, characteristic: uuid, endpoint: endpoint, connection: connection, notified: notified) {
                return inputs.map(\.target)
            }
        }
        return []
    }

    func testEachValueGoesToItsProtocolsTarget() {
        var routers = GATTLabProtocols.all.conforming(to: (any FuzzableProtocol.Type).self).map { $0.corpusRouter() }
        XCTAssertEqual(route(&routers, [1, 2, 3], SpeakerOTA.status), ["status"])
        XCTAssertEqual(route(&routers, [1], SpeakerOTA.control), ["control"])
        XCTAssertEqual(route(&routers, [0x08, 0x01], NRF7.controlPoint), ["nrf7"])
        XCTAssertEqual(route(&routers, [0x08, 0x01], BluetoothUUID(uuid16: 0xFFFF), endpoint: "prov-config"), ["esp"], "an ESP endpoint by its 0x2901 name")
        XCTAssertEqual(route(&routers, Array("SCAN".utf8), SensorScan.characteristic), [], "a write of SCAN is no response")
        XCTAssertEqual(route(&routers, [1], BluetoothUUID(uuid16: 0x2A00)), [])
    }

    func testAScanResponseIsJoinedPerConnection() throws {
        var routers = GATTLabProtocols.all.conforming(to: (any FuzzableProtocol.Type).self).map { $0.corpusRouter() }
        let chunks = SensorScan.encode([SensorScan.Network("HomeNet", rssi: -41), SensorScan.Network("Cafe", rssi: -70)], chunkSize: 8)
        XCTAssertGreaterThan(chunks.count, 2)
        let a = ConnectionKey(controller: 0, handle: 0x40), b = ConnectionKey(controller: 0, handle: 0x41)
        var given: [[UInt8]] = []
        for (i, chunk) in chunks.enumerated() {
            // Another connection's response starts in the middle and stays open.
            if i == 1 { XCTAssertEqual(route(&routers, chunks[0], SensorScan.characteristic, connection: b, notified: true), []) }
            for i in routers.indices {
                if let inputs = routers[i].route(chunk, characteristic: SensorScan.characteristic, endpoint: nil, connection: a, notified: true) {
                    given += inputs.map(\.input)
                    break
                }
            }
        }
        XCTAssertEqual(given, [[UInt8(chunks.map(\.count).max() ?? 0)] + chunks.joined()])
    }
}
