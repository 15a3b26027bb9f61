/// Pseudo-headers of over-the-air LE sniffers. Each decoder leaves `record.data` at the access
/// address (access address, PDU header, payload, CRC) and fills `record.linkLayer`.
/// A record too short for its header is left `.other`, for the decoder to report as malformed.
enum SnifferHeaders {
    /// nRF Sniffer (DLT 272). Protocol versions 2 and 3 (nRF Sniffer 2.x-4.x): board u8, payload
    /// length u16 LE, protocol version u8, packet counter u16 LE, packet id u8; then the packet
    /// header: its length u8 (10), flags u8, channel u8, RSSI u8 (negated dBm), event counter u16
    /// LE, timestamp or delta u32 LE. Versions 0 and 1 have a header-length byte after the board
    /// and a one-byte payload length. Flags: bit 0 CRC ok, bit 1 central to peripheral, bit 2
    /// encrypted, bit 3 MIC ok, bits 4-6 PHY.
    static func decodeNordicBLE(_ record: inout CaptureRecord) {
        let d = record.data
        guard d.count >= 2 else { return }
        var packetHeaderStart: Int
        if d.count >= 4, d[3] >= 2 {
            packetHeaderStart = 7
        } else {
            // Legacy: board, header length, payload length, protocol version, counter u16, id.
            guard d.count >= 2 else { return }
            packetHeaderStart = 1 + Int(d[1])
        }
        guard d.count > packetHeaderStart else { return }
        let packetHeaderLength = Int(d[packetHeaderStart])
        guard packetHeaderLength >= 4, d.count >= packetHeaderStart + packetHeaderLength else { return }
        let flags = d[packetHeaderStart + 1]
        var info = LinkLayerInfo()
        info.channel = d[packetHeaderStart + 2]
        info.rssi = Int8(truncatingIfNeeded: -Int(d[packetHeaderStart + 3]))
        info.crcOK = flags & 0x01 != 0
        info.direction = flags & 0x02 != 0 ? .centralToPeripheral : .peripheralToCentral
        info.encrypted = flags & 0x04 != 0
        info.micOK = info.encrypted ? flags & 0x08 != 0 : nil
        record.kind = .linkLayer
        record.linkLayer = info
        record.data = d.dropping(packetHeaderStart + packetHeaderLength)
    }

    /// DLT 256 BLUETOOTH_LE_LL_WITH_PHDR: channel u8, signal i8, noise i8, access-address
    /// offenses u8, reference access address u32 LE, flags u16 LE, then the packet.
    static func decodeLLWithPHDR(_ record: inout CaptureRecord) {
        let d = record.data
        guard d.count >= 10 else { return }
        let flags = d.u16le(8)
        var info = LinkLayerInfo()
        info.channel = d[0]
        if flags & 0x0002 != 0 { info.rssi = Int8(bitPattern: d[1]) }
        if flags & 0x0400 != 0 { info.crcOK = flags & 0x0800 != 0 }
        let pduType = UInt8((flags >> 7) & 0x7)
        info.pduType = pduType
        info.direction = pduType == 2 ? .centralToPeripheral : pduType == 3 ? .peripheralToCentral : .unknown
        if flags & 0x1000 != 0 { info.encrypted = true; info.micOK = flags & 0x2000 != 0 }
        if flags & 0x0008 != 0 { info.encrypted = true; info.micOK = true }
        record.kind = .linkLayer
        record.linkLayer = info
        record.data = d.dropping(10)
    }

    /// PPI (DLT 192): version u8, flags u8, header length u16 LE, inner link type u32 LE, fields.
    /// Old Ubertooth files wrap LE link-layer packets as DLT 147 (USER0) or 251.
    static func decodePPI(_ record: inout CaptureRecord) {
        let d = record.data
        guard d.count >= 8 else { return }
        let headerLength = Int(d.u16le(2))
        let inner = d.u32le(4)
        guard headerLength >= 8, headerLength <= d.count, inner == 147 || inner == 251 else { return }
        record.kind = .linkLayer
        record.linkLayer = LinkLayerInfo()
        record.data = d.dropping(headerLength)
    }
}
