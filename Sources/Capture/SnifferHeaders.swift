/// Pseudo-headers of over-the-air LE sniffers. Each decoder leaves `record.data` at the access
/// address (access address, PDU header, payload, CRC) and fills `record.linkLayer`.
/// A record too short for its header is left `.other`, for the decoder to report as malformed.
enum SnifferHeaders {
    /// nRF Sniffer (DLT 272). The link-layer packet always starts at byte 17; what comes before
    /// depends on the protocol version:
    /// - v0 (starts 0xBEEF): packet id [2], counter [3..4], payload length [7] (header 8 bytes);
    /// - v1: board [0], header length [1], payload length [2], version [3] (header = [1] + 1);
    /// - v2, v3: board [0], payload length u16 LE [1..2], version [3] (header 7 bytes).
    /// Then from byte 7 (8 for v0): event header length, flags, channel, RSSI (negated dBm),
    /// event counter u16, delta or timestamp u32. Flags: bit 0 CRC ok, bit 1 central to
    /// peripheral, bit 2 encrypted, bit 3 MIC ok, bits 4-6 PHY (2: Coded, whose packets have a
    /// Coding Indicator byte after the access address). A header whose lengths disagree with the
    /// record is reported, and its packet is not decoded (as Wireshark does).
    static func decodeNordicBLE(_ record: inout CaptureRecord) {
        let d = record.data
        guard d.count >= 17 else {
            record.linkLayer = LinkLayerInfo(headerProblem: .nordicRecordShorterThanHeader(recordLength: d.count))
            record.kind = .linkLayer
            return
        }
        let legacy = d[0] == 0xBE && d[1] == 0xEF
        let version = legacy ? 0 : Int(d[3])
        let headerLength: Int
        let payloadLength: Int
        switch version {
        case 0:
            headerLength = 8
            payloadLength = Int(d[7])
        case 1:
            headerLength = Int(d[1]) + 1
            payloadLength = Int(d[2])
        default:
            headerLength = 7
            payloadLength = Int(d.u16le(1))
        }
        var info = LinkLayerInfo()
        record.kind = .linkLayer
        if headerLength + payloadLength != d.count && !record.isCut {
            info.headerProblem = .nordicLengthMismatch(headerSays: headerLength + payloadLength, recordLength: d.count)
            record.linkLayer = info
            return
        }
        let flags = d[8]
        info.channel = d[9]
        info.rssi = Int8(truncatingIfNeeded: -Int(d[10]))
        info.crcOK = flags & 0x01 != 0
        // v3 says whether a packet is advertising (id 2) or data (id 6); for other ids the
        // direction bit means nothing. Older versions carry direction on data packets only.
        let packetID = legacy ? d[2] : d[6]
        if version < 3 || packetID == 0x06 {
            info.direction = flags & 0x02 != 0 ? .centralToPeripheral : .peripheralToCentral
        }
        info.encrypted = flags & 0x04 != 0
        // Flags bits 4-6 (v2 on): 0 LE 1M, 1 LE 2M, 2 LE Coded.
        if version >= 2, (flags >> 4) & 0x7 <= 2 { info.phy = ((flags >> 4) & 0x7) + 1 }
        info.micOK = info.encrypted ? flags & 0x08 != 0 : nil
        info.encryptionReported = true
        // Flags bits 4-6: the PHY (0 1M, 1 2M, 2 Coded).
        info.coded = (flags >> 4) & 0x07 == 2
        record.linkLayer = info
        record.data = d.dropping(17)
    }

    /// DLT 256 BLUETOOTH_LE_LL_WITH_PHDR: channel u8, signal i8, noise i8, access-address
    /// offenses u8, reference access address u32 LE, flags u16 LE, then the packet.
    static func decodeLLWithPHDR(_ record: inout CaptureRecord) {
        let d = record.data
        guard d.count >= 10 else { return }
        let flags = d.u16le(8)
        var info = LinkLayerInfo()
        // The header carries the RF channel (0 = 2402 MHz); keep the channel index instead.
        info.channel = d[0] == 0 ? 37 : d[0] == 12 ? 38 : d[0] == 39 ? 39 : d[0] < 12 ? d[0] - 1 : d[0] < 39 ? d[0] - 2 : d[0]
        if flags & 0x0002 != 0 { info.rssi = Int8(bitPattern: d[1]) }
        if flags & 0x0400 != 0 { info.crcOK = flags & 0x0800 != 0 }
        let pduType = UInt8((flags >> 7) & 0x7)
        info.pduType = pduType
        info.direction = pduType == 2 ? .centralToPeripheral : pduType == 3 ? .peripheralToCentral : .unknown
        if flags & 0x1000 != 0 { info.encrypted = true; info.micOK = flags & 0x2000 != 0; info.encryptionReported = true }
        if flags & 0x0008 != 0 { info.encrypted = true; info.micOK = true; info.encryptionReported = true }
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
