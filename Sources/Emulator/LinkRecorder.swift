import Capture

/// One HCI packet of a recording, as the phone's HCI log holds it.
public struct RecordedPacket: Sendable, Hashable {
    public var time: Int64
    public var kind: RecordKind
    public var direction: Direction
    /// The HCI packet without the H4 byte.
    public var bytes: [UInt8]
}

/// What a phone's HCI snoop log would hold for one emulated session: HCI events for the link,
/// ACL packets fragmented at the controller's buffer size, Number of Completed Packets for what
/// was sent. Written as btsnoop 1002 by `write(to:)`.
public struct Recording: Sendable {
    public var packets: [RecordedPacket] = []
    public init() {}

    /// Writes btsnoop (datalink 1002, as Android writes it), replacing `path` if `overwrite`.
    public func write(to path: String, overwrite: Bool = true) throws(CaptureError) {
        let writer = try CaptureWriter(path: path, format: .btsnoopH4, overwrite: overwrite)
        var failure: CaptureError?
        forEachRecord { r in
            guard failure == nil else { return }
            do throws(CaptureError) {
                try writer.write(r, sourceIsMonitor: false)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        try writer.finish()
    }

    /// Feeds every packet as a capture record to `body`, numbered from 1: the decoders can read a
    /// recording without a file.
    public func forEachRecord(_ body: (CaptureRecord) -> Void) {
        for (i, p) in packets.enumerated() {
            p.bytes.withUnsafeBytes { raw in
                body(CaptureRecord(number: i + 1, fileOffset: 0, timestamp: p.time, direction: p.direction,
                                   kind: p.kind, rawType: UInt16(p.kind.h4Type ?? 0), originalLength: p.bytes.count,
                                   data: raw))
            }
        }
    }
}

/// Builds the HCI packets of a recording.
struct HCIRecorder {
    var recording = Recording()
    let handle: UInt16
    /// Controller ACL buffer size: the largest ACL payload per packet.
    let aclBufferSize: Int

    mutating func event(_ code: UInt8, _ parameters: [UInt8], at time: Int64) {
        recording.packets.append(RecordedPacket(time: time, kind: .event, direction: .received,
                                                bytes: [code, UInt8(parameters.count)] + parameters))
    }

    mutating func command(_ opcode: UInt16, _ parameters: [UInt8], at time: Int64) {
        recording.packets.append(RecordedPacket(time: time, kind: .command, direction: .sent,
                                                bytes: [UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(parameters.count)] + parameters))
    }

    var handleBytes: [UInt8] { [UInt8(handle & 0xFF), UInt8(handle >> 8)] }

    /// LE Connection Complete (LE Meta 0x3E, subevent 0x01), the phone as central.
    mutating func connectionComplete(peer: [UInt8], interval: UInt16, at time: Int64) {
        var p: [UInt8] = [0x01, 0x00] + handleBytes + [0x00, 0x01] + peer
        p += [UInt8(interval & 0xFF), UInt8(interval >> 8), 0x00, 0x00, 0xF4, 0x01, 0x00]
        event(0x3E, p, at: time)
    }

    mutating func disconnectionComplete(reason: UInt8, at time: Int64) {
        event(0x05, [0x00] + handleBytes + [reason], at: time)
    }

    mutating func encryptionChange(at time: Int64) {
        event(0x08, [0x00] + handleBytes + [0x01], at: time)
    }

    mutating func completedPackets(_ count: Int, at time: Int64) {
        event(0x13, [0x01] + handleBytes + [UInt8(count & 0xFF), UInt8(count >> 8)], at: time)
    }

    /// An HCI command the controller accepted with Command Status (0x0F): status 0, one command
    /// packet allowed, the opcode.
    mutating func commandStatus(_ opcode: UInt16, at time: Int64) {
        event(0x0F, [0x00, 0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8)], at: time)
    }

    /// Command Complete (0x0E): one command packet allowed, the opcode, then the return
    /// parameters (status first).
    mutating func commandComplete(_ opcode: UInt16, _ returnParameters: [UInt8], at time: Int64) {
        event(0x0E, [0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8)] + returnParameters, at: time)
    }

    /// LE Enable Encryption (0x2019, "LE Start Encryption" in older specs): handle, Rand (8),
    /// EDIV (2), the key (16), all little-endian as HCI carries them.
    mutating func startEncryption(rand: UInt64, ediv: UInt16, key: [UInt8], at time: Int64) {
        let randBytes = (0..<8).map { UInt8(truncatingIfNeeded: rand >> (8 * $0)) }
        command(0x2019, handleBytes + randBytes + [UInt8(ediv & 0xFF), UInt8(ediv >> 8)] + key, at: time)
    }

    /// HCI Read Encryption Key Size (0x1408): the handle.
    mutating func readEncryptionKeySize(at time: Int64) {
        command(0x1408, handleBytes, at: time)
    }

    /// One ATT PDU on CID 4, fragmented; returns the number of ACL packets.
    @discardableResult
    mutating func att(_ pdu: [UInt8], sent: Bool, at time: Int64) -> Int {
        l2cap(pdu, cid: 0x0004, sent: sent, at: time)
    }

    /// One SMP PDU on CID 6, fragmented; returns the number of ACL packets.
    @discardableResult
    mutating func smp(_ pdu: [UInt8], sent: Bool, at time: Int64) -> Int {
        l2cap(pdu, cid: 0x0006, sent: sent, at: time)
    }

    /// One L2CAP basic frame on a fixed channel (length, CID, payload), fragmented at the
    /// controller's ACL buffer size; returns the number of ACL packets.
    @discardableResult
    mutating func l2cap(_ payload: [UInt8], cid: UInt16, sent: Bool, at time: Int64) -> Int {
        let l2cap = [UInt8(payload.count & 0xFF), UInt8(payload.count >> 8), UInt8(cid & 0xFF), UInt8(cid >> 8)] + payload
        var offset = 0
        var count = 0
        let size = max(1, aclBufferSize)
        while offset < l2cap.count || count == 0 {
            let piece = l2cap[offset..<min(l2cap.count, offset + size)]
            // First fragment: 0b00 from the host, 0b10 from the controller; continuations 0b01.
            let pb: UInt16 = offset == 0 ? (sent ? 0b00 : 0b10) : 0b01
            let hf = handle | pb << 12
            recording.packets.append(RecordedPacket(
                time: time, kind: .acl, direction: sent ? .sent : .received,
                bytes: [UInt8(hf & 0xFF), UInt8(hf >> 8), UInt8(piece.count & 0xFF), UInt8(piece.count >> 8)] + piece))
            offset += piece.count
            count += 1
        }
        return count
    }
}
