import Capture

/// State for over-the-air captures beyond what `LinkDecoder` keeps for HCI.
struct LinkLayerState {
    static let advertisingAccessAddress: UInt32 = 0x8E89_BED6

    /// Sequence numbers per connection seen opening (CONNECT_IND), to spot retransmissions.
    struct Sequence {
        /// Last SN per direction (central->peripheral, peripheral->central), as Wireshark seeds it.
        var previous: (UInt8, UInt8) = (0, 1)
        var seenData = false
    }

    var sequence: [UInt32: Sequence] = [:]
}

/// The LE link layer as sniffers see it: advertising PDUs (CONNECT_IND opens a connection keyed
/// by its access address), data PDUs (LLID 2 starts an L2CAP PDU, LLID 1 continues it, LLID 3 is
/// link-layer control) and encryption: a PDU the sniffer could not decrypt is counted, not decoded.
extension LinkDecoder {
    func consumeLinkLayer(_ record: CaptureRecord) {
        let ll = record.linkLayer ?? LinkLayerInfo()
        if let problem = ll.problem {
            events.append(.malformed(nil, .record, reason: problem))
            return
        }
        let crcBytes = ll.hasCRC ? 3 : 0
        let d = record.data
        guard d.count >= 6 + crcBytes else {
            events.append(.malformed(nil, .linkLayer, reason: "link-layer packet of \(d.count) bytes is shorter than access address, header and CRC"))
            return
        }
        let accessAddress = d.u32le(0)
        let headerByte = d[4]
        var length = Int(d[5])
        if accessAddress == LinkLayerState.advertisingAccessAddress {
            let available = max(0, d.count - 6 - crcBytes)
            consumeAdvertising(record, header: headerByte, body: d.slice(6, min(length, available)), declared: length)
            return
        }
        let llid = headerByte & 0x03
        let hasCTEInfo = headerByte & 0x20 != 0
        let start = 6 + (hasCTEInfo ? 1 : 0)
        let available = max(0, d.count - start - crcBytes)
        // Wireshark counts the CTEInfo byte inside Length; so do we, to read the same payload.
        if hasCTEInfo { length = max(0, length - 1) }
        let key = ConnectionKey(accessAddress: accessAddress)
        touch(key, record)
        if ll.encrypted && ll.micOK != true {
            // Encrypted and not decrypted by the sniffer: nothing above the link layer can be read.
            return
        }
        if length > available {
            if !record.isCut {
                events.append(.malformed(key, .linkLayer, reason: "LL length \(length) exceeds the \(available) bytes present"))
            }
            length = available
        }
        let payload = d.slice(start, length)
        let direction: PacketDirection = switch ll.direction {
        case .centralToPeripheral: .centralToPeripheral
        case .peripheralToCentral: .peripheralToCentral
        case .unknown: .unknown
        }
        let retransmission = isRetransmission(accessAddress, headerByte: headerByte, direction: direction)
        let fragmentKey = FragmentKey(controller: key.controller, id: key.id, direction: direction.rawValue)
        switch llid {
        case 0x2:
            guard length > 0 else { return }
            guard payload.count >= 2 else {
                events.append(.malformed(key, .l2cap, reason: "L2CAP start of \(payload.count) byte has no length"))
                return
            }
            let total = 4 + Int(payload.u16le(0))
            if total <= length {
                // Complete: decoded at once, retransmission or not, leaving any pending PDU alone.
                deliverL2CAP(key, direction: direction, sdu: payload, record: record)
            } else if !retransmission {
                startFragment(fragmentKey, key: key, total: total, fragment: payload, record: record)
            }
        case 0x1:
            if length > 0 && !retransmission {
                continueFragment(fragmentKey, key: key, direction: direction, fragment: payload, record: record, abandonOnOverflow: true)
            }
        case 0x3:
            consumeControl(key, direction: direction, payload, record: record)
        default:
            events.append(.malformed(key, .linkLayer, reason: "reserved LLID 0"))
        }
    }

    /// Whether a data PDU repeats the last one in its direction (same SN): the central or
    /// peripheral did not see it acknowledged. Known only for links whose CONNECT_IND was
    /// captured and whose direction the sniffer reports; a retransmitted fragment must not be
    /// appended twice.
    private func isRetransmission(_ accessAddress: UInt32, headerByte: UInt8, direction: PacketDirection) -> Bool {
        guard var state = linkLayer.sequence[accessAddress] else { return false }
        defer { linkLayer.sequence[accessAddress] = state }
        let sn = (headerByte >> 3) & 1
        if !state.seenData {
            state.seenData = true
            return false
        }
        switch direction {
        case .centralToPeripheral:
            defer { state.previous.0 = sn }
            return sn == state.previous.0
        case .peripheralToCentral:
            defer { state.previous.1 = sn }
            return sn == state.previous.1
        default:
            return false
        }
    }

    private func consumeAdvertising(_ record: CaptureRecord, header: UInt8, body: UnsafeRawBufferPointer, declared: Int) {
        let pduType = header & 0x0F
        // Advertisements: each a report. One the sniffer received with a bad CRC is noise
        // (Wireshark reads it, and often calls it malformed): no report, no complaint.
        let ll = record.linkLayer ?? LinkLayerInfo()
        if AdvertisingReport.reportPDUTypes.contains(pduType), ll.crcOK != false {
            // A PDU longer than the bytes present is read as far as it goes (as Wireshark does,
            // before calling it malformed): its advertiser is still known.
            switch AdvertisingReport.decodeLinkLayer(header: header, body: body, info: ll) {
            case .success(let r): events.append(.advertising(r))
            case .failure(let p): events.append(.malformed(nil, .linkLayer, reason: p.reason))
            case nil: break
            }
            if declared > body.count && !record.isCut {
                events.append(.malformed(nil, .linkLayer, reason: "\(AdvertisingReport.pduName(pduType)) length \(declared) exceeds the \(body.count) bytes present"))
            }
            return
        }
        // CONNECT_IND (and AUX_CONNECT_REQ): InitA, AdvA, then LLData with the new access address:
        // exactly 34 bytes. One that arrived with a bad CRC was not acted on by the advertiser
        // (and its access address may be noise): no connection follows from it.
        guard pduType == 0x05, body.count == 34, record.linkLayer?.crcOK != false else { return }
        let accessAddress = body.u32le(12)
        let key = ConnectionKey(accessAddress: accessAddress)
        forget(key)
        linkLayer.sequence[accessAddress] = LinkLayerState.Sequence()
        var info = ConnectionInfo(key: key, frame: record.number, time: record.timestamp)
        info.centralAddress = BDAddr(littleEndian: body, at: 0)
        info.peripheralAddress = BDAddr(littleEndian: body, at: 6)
        info.interval = body.u16le(22)
        info.latency = body.u16le(24)
        info.supervisionTimeout = body.u16le(26)
        info.connectedAt = record.timestamp
        info.connectedFrame = record.number
        insert(info)
        events.append(.connectionComplete(info))
    }

    private func consumeControl(_ key: ConnectionKey, direction: PacketDirection, _ p: UnsafeRawBufferPointer, record: CaptureRecord) {
        guard let opcode = p.first else {
            events.append(.malformed(key, .linkLayer, reason: "empty LL control PDU"))
            return
        }
        events.append(.llControl(key, direction, opcode: opcode))
        switch opcode {
        case 0x00 where p.count >= 12:  // LL_CONNECTION_UPDATE_IND: WinSize, WinOffset, Interval, Latency, Timeout, Instant
            connections[key]?.interval = p.u16le(4)
            connections[key]?.latency = p.u16le(6)
            connections[key]?.supervisionTimeout = p.u16le(8)
        case 0x02 where p.count >= 2:  // LL_TERMINATE_IND
            var info = forget(key) ?? ConnectionInfo(key: key, frame: record.number, time: record.timestamp)
            info.disconnectedAt = record.timestamp
            info.disconnectedFrame = record.number
            info.disconnectReason = HCIStatus(p[1])
            events.append(.disconnection(info, reason: HCIStatus(p[1])))
        case 0x05, 0x06:  // LL_START_ENC_REQ / RSP: from here on the link is encrypted
            if connections[key]?.encrypted == false {
                setEncrypted(key, true, frame: record.number, keySize: nil)
                events.append(.encryptionChange(key, enabled: true, status: HCIStatus(0), keySize: nil))
            }
        case 0x0B:  // LL_PAUSE_ENC_RSP
            setEncrypted(key, false, frame: record.number, keySize: nil)
            events.append(.encryptionChange(key, enabled: false, status: HCIStatus(0), keySize: nil))
        default:
            break
        }
    }
}
