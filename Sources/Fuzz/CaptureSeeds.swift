import ATT
import Profiles

/// Small btsnoop files made by hand for the capture and timeline targets: a connection, MTU,
/// a protocol's session (discovery answers, writes, notifications) and the disconnection. The
/// committed Corpus/ adds real recordings (`gattlab corpus import`).
enum CaptureSeeds {
    static func header() -> [UInt8] { Array("btsnoop\0".utf8) + be32(1) + be32(1002) }

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    /// One record: H4 packet, flags (bit 0 received, bit 1 command/event), time in µs.
    static func record(_ h4: [UInt8], received: Bool, control: Bool, time: Int64) -> [UInt8] {
        let t = UInt64(bitPattern: time + 0x00DC_DDB3_0F2F_8000)
        let flags: UInt32 = (received ? 1 : 0) | (control ? 2 : 0)
        return be32(UInt32(h4.count)) + be32(UInt32(h4.count)) + be32(flags) + be32(0) + be32(UInt32(t >> 32)) + be32(UInt32(t & 0xFFFF_FFFF)) + h4
    }

    static func att(_ pdu: ATTPDU, received: Bool, time: Int64) -> [UInt8] {
        let a = pdu.encode()
        let l2 = [UInt8(a.count & 0xFF), UInt8(a.count >> 8), 0x04, 0x00] + a
        return record([0x02, 0x40, 0x20, UInt8(l2.count & 0xFF), UInt8(l2.count >> 8)] + l2, received: received, control: false, time: time)
    }

    /// A whole session for each protocol that gives one (its `captureSeedExchange`, between the
    /// MTU exchange and the disconnection), a connection with nothing in it, and an empty file.
    static func small(_ protocols: ProtocolSet) -> [[UInt8]] {
        let t0: Int64 = 1_748_772_000_000_000
        let connected = record([0x04, 0x3E, 19, 0x01, 0x00, 0x40, 0x00, 0x00, 0x01, 0x3D, 0xC5, 0x3A, 0x0E, 0xF9, 0xF0, 0x0C, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00],
                               received: true, control: true, time: t0)
        let mtu = att(.exchangeMTURequest(clientRxMTU: 247), received: false, time: t0 + 1000) + att(.exchangeMTUResponse(serverRxMTU: 247), received: true, time: t0 + 2000)
        let disconnected = record([0x04, 0x05, 4, 0x00, 0x40, 0x00, 0x08], received: true, control: true, time: t0 + 90_000)
        let sessions = protocols.conforming(to: (any FuzzableProtocol.Type).self).map { $0.captureSeedExchange }.filter { !$0.isEmpty }.map { exchange in
            header() + connected + mtu + exchange.flatMap { att($0.pdu, received: $0.received, time: t0 + $0.time) } + disconnected
        }
        return sessions + [header() + connected + disconnected, header()]
    }
}
