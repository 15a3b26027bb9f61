import Capture

/// State for over-the-air captures beyond what `LinkDecoder` keeps for HCI.
struct LinkLayerState {
    /// Passkey searches made (see `maxPasskeySearches`).
    var passkeySearches = 0
    static let advertisingAccessAddress: UInt32 = 0x8E89_BED6

    /// Sequence numbers per connection seen opening (CONNECT_IND), to spot retransmissions.
    struct Sequence {
        /// Last SN per direction (central->peripheral, peripheral->central), as Wireshark seeds it.
        var previous: (UInt8, UInt8) = (0, 1)
        var seenData = false
    }

    var sequence: [UInt32: Sequence] = [:]

    /// The encryption of a sniffed link: the diversifiers of LL_ENC_REQ/LL_ENC_RSP, the session
    /// once a key verifies, and the packet counters (index 0 central to peripheral, 1 back).
    struct Encryption {
        var skdm: [UInt8]?
        var ivm: [UInt8]?
        var skds: [UInt8]?
        var ivs: [UInt8]?
        /// Rand and EDIV of LL_ENC_REQ: which distributed LTK the central asks for.
        var rand: UInt64 = 0
        var ediv: UInt16 = 0
        /// Sessions to try (each candidate LTK in both byte orders) until one's MIC verifies,
        /// each with where its key came from when not given (said once it verifies).
        var candidates: [(cipher: LinkLayerCipher, source: String?)] = []
        var cipher: LinkLayerCipher?
        var source: String?
        /// LL_START_ENC_REQ seen: non-empty PDUs are encrypted (when the sniffer does not say).
        var active = false
        /// The capture holds plaintext after the encryption start (a decrypted copy).
        var plaintext = false
        /// LL_PAUSE_ENC_REQ seen: the plaintext control PDUs of a restart may follow.
        var pausing = false
        var next: [UInt64] = [0, 0]
        var last: [UInt64?] = [nil, nil]
        /// MIC failures in a row, and whether any PDU verified.
        var failures = 0
        var verified = false
        var rejected = false
        var keyExchange: Bool { skdm != nil && ivm != nil && skds != nil && ivs != nil }
    }

    var encryption: [UInt32: Encryption] = [:]
    /// Legacy pairings followed per link, the addresses of their CONNECT_IND, and the LTKs their
    /// key distribution gave (see LinkLayerPairing.swift).
    var pairing: [UInt32: Pairing] = [:]
    var addresses: [UInt32: Addresses] = [:]
    var distributed: [DistributedLTK] = []

    /// MIC failures in a row, with none verified, after which a key is taken to be wrong.
    static let failuresBeforeRejecting = 5
    /// How many PDUs a sniffer may have missed in one direction: counters tried beyond the expected one.
    static let counterWindow: UInt64 = 16
}

/// The LE link layer as sniffers see it: advertising PDUs (CONNECT_IND opens a connection keyed
/// by its access address), data PDUs (LLID 2 starts an L2CAP PDU, LLID 1 continues it, LLID 3 is
/// link-layer control) and encryption: a PDU neither the sniffer nor a given LTK decrypts is
/// reported as `.encrypted`, never decoded (see LinkLayerEncryption.swift for the cipher).
extension LinkDecoder {
    func consumeLinkLayer(_ record: CaptureRecord) {
        let ll = record.linkLayer ?? LinkLayerInfo()
        if let problem = ll.problem {
            events.append(.malformed(nil, .record, reason: problem))
            return
        }
        let crcBytes = ll.hasCRC ? 3 : 0
        // On the LE Coded PHY the Coding Indicator sits between the access address and the header.
        let h = ll.pduOffset
        let d = record.data
        guard d.count >= h + 2 + crcBytes else {
            events.append(.malformed(nil, .linkLayer, reason: "link-layer packet of \(d.count) bytes is shorter than access address, header and CRC"))
            return
        }
        let accessAddress = d.u32le(0)
        let headerByte = d[h]
        var length = Int(d[h + 1])
        if accessAddress == LinkLayerState.advertisingAccessAddress {
            let available = max(0, d.count - h - 2 - crcBytes)
            consumeAdvertising(record, header: headerByte, body: d.slice(h + 2, min(length, available)), declared: length)
            return
        }
        let llid = headerByte & 0x03
        let hasCTEInfo = headerByte & 0x20 != 0
        let start = h + 2 + (hasCTEInfo ? 1 : 0)
        let available = max(0, d.count - start - crcBytes)
        // Wireshark counts the CTEInfo byte inside Length; so do we, to read the same payload.
        if hasCTEInfo { length = max(0, length - 1) }
        let key = ConnectionKey(accessAddress: accessAddress)
        touch(key, record)
        var short = false
        if length > available {
            // The length byte says more than the sniffer received (damaged on air, or a peer
            // lying about it). What is there is read, as Wireshark reads it: a complete L2CAP PDU
            // whose LL length runs past the bytes is malformed (its L2CAP dissector is handed the
            // declared length); a continuation is an unreassembled fragment and a control PDU is
            // read by its own fields, neither of them an error: for those the oddity is a note.
            if !record.isCut {
                let reason = "LL length \(length) exceeds the \(available) bytes present"
                events.append(llid == 0x2 ? .malformed(key, .linkLayer, reason: reason)
                                          : .note(key, .linkLayer, reason + "; read as far as it goes"))
            }
            length = available
            short = true
        }
        var payload = d.slice(start, length)
        var direction: PacketDirection = switch ll.direction {
        case .centralToPeripheral: .centralToPeripheral
        case .peripheralToCentral: .peripheralToCentral
        case .unknown: .unknown
        }
        let retransmission = isRetransmission(accessAddress, headerByte: headerByte, direction: direction)
        if length > 0 {
            // Empty PDUs are never encrypted; others may be, and are decrypted or reported here.
            guard let plain = readable(key, headerByte: headerByte, payload: payload, direction: direction,
                                       retransmission: retransmission, short: short, ll: ll, record: record) else { return }
            payload = plain.payload
            direction = plain.direction
            length = payload.count
        }
        let fragmentKey = FragmentKey(controller: key.controller, id: key.id, direction: direction.rawValue)
        switch llid {
        case 0x2:
            guard length > 0 else { return }
            // A start of one byte holds half of the L2CAP length: its total is known once a
            // continuation brings the other half (Wireshark shows it as an L2CAP Fragment Start).
            let total = payload.count >= 2 ? 4 + Int(payload.u16le(0)) : nil
            if let total, total <= length {
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

    /// The readable form of a non-empty data PDU: itself when it is not encrypted, its
    /// plaintext when a key decrypts it (with its direction, which the MIC settles when the
    /// sniffer does not say), or nil after reporting why it stays encrypted.
    private func readable(_ key: ConnectionKey, headerByte: UInt8, payload: UnsafeRawBufferPointer, direction: PacketDirection,
                          retransmission: Bool, short: Bool, ll: LinkLayerInfo, record: CaptureRecord) -> (payload: UnsafeRawBufferPointer, direction: PacketDirection)? {
        let plain = (payload: payload, direction: direction)
        let llid = headerByte & 0x03
        let state = linkLayer.encryption[key.id]
        if ll.encryptionReported {
            // The sniffer says: plaintext, or decrypted by the sniffer itself (MIC already removed).
            if ll.encrypted, ll.micOK == true, !retransmission, var s = state, s.cipher != nil || !s.candidates.isEmpty,
               direction == .centralToPeripheral || direction == .peripheralToCentral {
                // It used up a packet counter all the same: the next one the sniffer cannot
                // decrypt (and a key here can) needs the right count.
                let i = direction == .centralToPeripheral ? 0 : 1
                s.last[i] = s.next[i]
                s.next[i] += 1
                linkLayer.encryption[key.id] = s
            }
            guard ll.encrypted, ll.micOK != true else { return plain }
        } else {
            guard var s = state, s.active, !s.plaintext else { return plain }
            if !s.verified, s.failures == 0, llid == 3, payload.count == 1, payload[0] == 0x06 {
                // A plaintext LL_START_ENC_RSP (encrypted, it would carry a MIC): a decrypted copy.
                s.plaintext = true
                linkLayer.encryption[key.id] = s
                return plain
            }
            if s.pausing, llid == 3, let opcode = payload.first,
               (opcode == 0x0B && payload.count == 1) || (opcode == 0x03 && payload.count == 23) {
                // The restart after LL_PAUSE_ENC: these control PDUs travel unencrypted.
                s.active = false
                linkLayer.encryption[key.id] = s
                return plain
            }
        }
        func report(_ reason: EncryptedPDU.Reason) -> (payload: UnsafeRawBufferPointer, direction: PacketDirection)? {
            events.append(.encrypted(key, direction, EncryptedPDU(llid: llid, length: payload.count, reason: reason)))
            return nil
        }
        if linkLayerKeys.isEmpty && (state.map { $0.cipher == nil && $0.candidates.isEmpty } ?? true) { return report(.noKey) }
        if short && !record.isCut && llid == 0x2 {
            // Its length is already reported as malformed: damaged, nothing to decrypt.
            return nil
        }
        if short || payload.count <= LinkLayerCipher.micSize { return report(.damaged) }
        guard var s = state, s.keyExchange else { return report(.noKeyExchange) }
        if s.rejected { return report(.keyRejected) }
        let ciphers = s.cipher.map { [($0, s.source)] } ?? s.candidates
        if ciphers.isEmpty { return report(.noKey) }
        let directions: [Bool] = switch direction {
        case .centralToPeripheral: [true]
        case .peripheralToCentral: [false]
        default: [true, false]
        }
        // Counters in the order worth trying: the next one (or, for a retransmission, the last
        // one first), then the last one, then those a sniffer that missed PDUs would need.
        var attempts: [(c2p: Bool, counter: UInt64)] = []
        for c2p in directions {
            let i = c2p ? 0 : 1
            var order: [UInt64] = [s.next[i]]
            if let last = s.last[i] { if retransmission { order.insert(last, at: 0) } else { order.append(last) } }
            order += (1...LinkLayerState.counterWindow).map { s.next[i] + $0 }
            attempts += order.map { (c2p, $0) }
        }
        if directions.count == 2 {
            // Unknown direction: the most likely counters of both directions first.
            attempts.sort { a, b in
                let ra = a.counter >= s.next[a.c2p ? 0 : 1] ? a.counter - s.next[a.c2p ? 0 : 1] : 0
                let rb = b.counter >= s.next[b.c2p ? 0 : 1] ? b.counter - s.next[b.c2p ? 0 : 1] : 0
                return ra < rb
            }
        }
        for attempt in attempts {
            for (cipher, source) in ciphers {
                guard let n = cipher.decrypt(payload, header: headerByte, counter: attempt.counter, centralToPeripheral: attempt.c2p,
                                             into: decrypted) else { continue }
                let i = attempt.c2p ? 0 : 1
                s.cipher = cipher
                s.source = source
                s.candidates = []
                s.next[i] = max(s.next[i], attempt.counter + 1)
                s.last[i] = attempt.counter
                s.failures = 0
                if !s.verified {
                    s.verified = true
                    events.append(.decrypting(key))
                    if let source { events.append(.note(key, .linkLayer, "decrypting with the \(source)")) }
                }
                linkLayer.encryption[key.id] = s
                return (UnsafeRawBufferPointer(rebasing: decrypted[0..<n]), attempt.c2p ? .centralToPeripheral : .peripheralToCentral)
            }
        }
        // A packet with a bad CRC was damaged on air: its MIC says nothing about the key.
        if ll.crcOK != false { s.failures += 1 }
        if !s.verified, s.failures >= LinkLayerState.failuresBeforeRejecting {
            s.rejected = true
            s.candidates = []
            linkLayer.encryption[key.id] = s
            return report(.keyLikelyWrong(failures: s.failures))
        }
        linkLayer.encryption[key.id] = s
        return report(.micFailed)
    }

    /// LL_ENC_REQ, LL_ENC_RSP, LL_START_ENC_REQ and LL_PAUSE_ENC_REQ: what decryption needs to know.
    private func followEncryption(_ key: ConnectionKey, opcode: UInt8, _ p: UnsafeRawBufferPointer) {
        switch opcode {
        case 0x03 where p.count >= 23:  // LL_ENC_REQ: Rand, EDIV, SKDm, IVm
            let skdm = Array(p[11..<19]), ivm = Array(p[19..<23])
            if let s = linkLayer.encryption[key.id], s.skdm == skdm, s.ivm == ivm, !s.active { return }  // retransmitted
            var s = LinkLayerState.Encryption()
            s.skdm = skdm
            s.ivm = ivm
            s.rand = UInt64(p.u32le(1)) | UInt64(p.u32le(5)) << 32
            s.ediv = p.u16le(9)
            linkLayer.encryption[key.id] = s
        case 0x04 where p.count >= 13:  // LL_ENC_RSP: SKDs, IVs
            guard var s = linkLayer.encryption[key.id], let skdm = s.skdm, let ivm = s.ivm else {
                return
            }
            let skds = Array(p[1..<9]), ivs = Array(p[9..<13])
            s.skds = skds
            s.ivs = ivs
            let info = connections[key]
            let addresses = [info?.centralAddress, info?.peripheralAddress].compactMap { $0 }
            s.candidates = []
            for k in linkLayerKeys where k.address.map({ addresses.isEmpty || addresses.contains($0) }) ?? true {
                let ltk = k.ltk.unsafeBytes
                // As written (most significant octet first), then as HCI and key stores keep it.
                for bytes in [ltk, Array(ltk.reversed())] {
                    if let cipher = LinkLayerCipher(ltk: bytes, skdm: skdm, ivm: ivm, skds: skds, ivs: ivs) { s.candidates.append((cipher, nil)) }
                }
            }
            // Keys this capture gave away: the STK of a legacy pairing on this link (its keys are
            // as on air, least significant octet first), and LTKs distributed earlier for this
            // EDIV and Rand.
            var derived: [(Secret, String)] = []
            if let p = linkLayer.pairing[key.id], let stk = p.stk { derived.append((stk, p.stkSource)) }
            for d in linkLayer.distributed.reversed() where d.ediv == s.ediv && d.rand == s.rand {
                derived.append((d.ltk, "LTK from SMP key distribution (frame \(d.frame))"))
            }
            for (k, source) in derived {
                if let cipher = LinkLayerCipher(ltk: k.unsafeBytes.reversed(), skdm: skdm, ivm: ivm, skds: skds, ivs: ivs) {
                    s.candidates.append((cipher, source))
                }
            }
            linkLayer.encryption[key.id] = s
        case 0x05:  // LL_START_ENC_REQ: from the next PDU on, both directions are encrypted
            guard var s = linkLayer.encryption[key.id] else {
                var s = LinkLayerState.Encryption()
                s.active = true
                linkLayer.encryption[key.id] = s
                return
            }
            s.active = true
            s.pausing = false
            s.next = [0, 0]
            s.last = [nil, nil]
            linkLayer.encryption[key.id] = s
        case 0x0A:  // LL_PAUSE_ENC_REQ
            linkLayer.encryption[key.id]?.pausing = true
        default:
            break
        }
    }

    private func consumeAdvertising(_ record: CaptureRecord, header: UInt8, body: UnsafeRawBufferPointer, declared: Int) {
        let pduType = header & 0x0F
        // Advertisements: each a report. One the sniffer received with a bad CRC is noise
        // (Wireshark reads it, and often calls it malformed): no report, no complaint.
        let ll = record.linkLayer ?? LinkLayerInfo()
        if AdvertisingReport.isReportPDUType(pduType), ll.crcOK != false {
            // A PDU longer than the bytes present is read as far as it goes (as Wireshark does,
            // before calling it malformed): its advertiser is still known.
            switch AdvertisingReport.decodeLinkLayer(header: header, body: body, info: ll, withData: reportsAdvertising) {
            case .success(let r): if reportsAdvertising { events.append(.advertising(r)) }
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
        // TxAdd (bit 6) and RxAdd (bit 7): the initiator's and advertiser's address types.
        linkLayer.addresses[accessAddress] = .init(ia: Array(body[0..<6]), iat: header >> 6 & 1, ra: Array(body[6..<12]), rat: header >> 7 & 1)
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
        followEncryption(key, opcode: opcode, p)
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
