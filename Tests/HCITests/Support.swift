import XCTest

@testable import Capture
@testable import HCI

/// What one record gave: the events and a copy of the payload of its `.l2cap` event.
struct Decoded {
    var events: [LinkEvent]
    var payload: [UInt8]
}

extension LinkDecoder {
    /// Feeds one record built from `bytes` (its payload, without H4 byte or pseudo-header).
    @discardableResult
    func feed(_ kind: RecordKind, _ bytes: [UInt8], number: Int = 1, direction: Direction = .received,
              controller: UInt16 = 0, time: Int64 = 1_000_000, originalLength: Int? = nil,
              linkLayer: LinkLayerInfo? = nil) -> Decoded {
        bytes.withUnsafeBytes { buffer in
            consume(CaptureRecord(number: number, fileOffset: 0, timestamp: time, controller: controller,
                                  direction: direction, kind: kind, rawType: UInt16(kind.h4Type ?? 0),
                                  originalLength: originalLength ?? bytes.count, data: buffer, linkLayer: linkLayer))
            return Decoded(events: events, payload: Array(payload))
        }
    }
}

/// ACL packet: handle with packet-boundary flag, length, data.
func acl(handle: UInt16, pb: UInt16, _ data: [UInt8], length: Int? = nil) -> [UInt8] {
    let hf = handle | pb << 12
    let n = UInt16(length ?? data.count)
    return [UInt8(hf & 0xFF), UInt8(hf >> 8), UInt8(n & 0xFF), UInt8(n >> 8)] + data
}

/// L2CAP basic frame: length, CID, payload.
func l2cap(cid: UInt16, _ payload: [UInt8], length: Int? = nil) -> [UInt8] {
    let n = UInt16(length ?? payload.count)
    return [UInt8(n & 0xFF), UInt8(n >> 8), UInt8(cid & 0xFF), UInt8(cid >> 8)] + payload
}

extension LinkEvent {
    var malformed: (key: ConnectionKey?, layer: Layer, reason: String)? {
        if case .malformed(let k, let l, let r) = self { return (k, l, r) }
        return nil
    }

    var l2capChannel: (key: ConnectionKey, cid: UInt16, direction: PacketDirection)? {
        if case .l2cap(let k, let c, let d) = self { return (k, c, d) }
        return nil
    }

    var smpPDU: (key: ConnectionKey, direction: PacketDirection, pdu: SMPPDU)? {
        if case .smp(let k, let d, let p) = self { return (k, d, p) }
        return nil
    }
}

extension Decoded {
    var malformedLayers: [Layer] { events.compactMap { $0.malformed?.layer } }
    var l2capEvents: [(key: ConnectionKey, cid: UInt16, direction: PacketDirection)] { events.compactMap(\.l2capChannel) }
    /// A one-line list of the events, for failure messages.
    var summary: String { events.map { "\($0)" }.joined(separator: " | ") }
}

func key(_ handle: UInt16, controller: UInt16 = 0) -> ConnectionKey {
    ConnectionKey(controller: controller, handle: handle)
}
