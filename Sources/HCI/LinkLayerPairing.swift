import Capture
import Foundation

extension LinkLayerState {
    /// A legacy pairing seen on a sniffed link: what c1 and s1 need, as on air.
    struct Pairing {
        var preq: [UInt8]?
        var pres: [UInt8]?
        var mconfirm: [UInt8]?
        var sconfirm: [UInt8]?
        var mrand: [UInt8]?
        var srand: [UInt8]?
        /// The STK once the TK is known (or, unconfirmed, Just Works' when the confirms are
        /// missing), and what to call it when it decrypts.
        var stk: Secret?
        var stkSource = ""
        /// Encryption Information seen, waiting for its Central Identification.
        var pendingLTK: (ltk: Secret, frame: Int)?
    }

    /// An LTK distributed in SMP, for the later links that start encryption with its EDIV and Rand.
    struct DistributedLTK {
        var ediv: UInt16
        var rand: UInt64
        var ltk: Secret
        var frame: Int
    }

    /// The addresses of CONNECT_IND as c1 takes them: initiator's and responder's, with their types.
    struct Addresses {
        var ia: [UInt8]
        var iat: UInt8
        var ra: [UInt8]
        var rat: UInt8
    }

    /// LTKs kept from key distribution: the most recent ones (hostile input cannot grow it).
    static let maxDistributedLTKs = 64
    /// Passkey searches per capture (each up to 1,000,000 c1 evaluations, 0.15-0.2 s here): a
    /// hostile capture of many pairings whose confirms match no passkey cannot make it hang.
    static let maxPasskeySearches = 8
}

/// Legacy pairing on sniffed links, as crackle does it: the TK is recovered from the pairing's
/// confirm and random values (Just Works' 0, or a passkey found in at most 1,000,000 c1
/// evaluations), the STK it gives decrypts the rest of the pairing, and the LTK distributed there
/// decrypts the pair's later links (matched by the EDIV and Rand of LL_ENC_REQ). Each step is said
/// in a note; the keys themselves stay `Secret`s and are never printed.
extension LinkDecoder {
    func followPairing(_ key: ConnectionKey, direction: PacketDirection, _ body: UnsafeRawBufferPointer, pdu: SMPPDU, frame: Int) {
        guard key.isLinkLayer, recoversPairingKeys else { return }
        var p = linkLayer.pairing[key.id] ?? LinkLayerState.Pairing()
        defer { linkLayer.pairing[key.id] = p }
        // Which side sent it: the sniffer says, or the order does (the central's value comes first).
        func central(_ mine: [UInt8]?) -> Bool {
            switch direction {
            case .centralToPeripheral: true
            case .peripheralToCentral: false
            default: mine == nil
            }
        }
        switch pdu {
        case .pairingRequest:
            p = LinkLayerState.Pairing()
            p.preq = body.count >= 7 ? Array(body[0..<7]) : nil
        case .pairingResponse:
            p.pres = body.count >= 7 ? Array(body[0..<7]) : nil
        case .pairingConfirm(let secret):
            let value = secret.unsafeBytes
            if central(p.mconfirm) { p.mconfirm = value } else { p.sconfirm = value }
        case .pairingRandom(let secret):
            let value = secret.unsafeBytes
            if central(p.mrand) { p.mrand = value } else { p.srand = value }
            if p.mrand != nil, p.srand != nil, p.stk == nil { recoverTK(key, &p) }
        case .encryptionInformation(let ltk):
            p.pendingLTK = (Secret(ltk.unsafeBytes, label: "LTK"), frame)
        case .centralIdentification(let ediv, let rand):
            guard let pending = p.pendingLTK else { break }
            p.pendingLTK = nil
            if linkLayer.distributed.count >= LinkLayerState.maxDistributedLTKs { linkLayer.distributed.removeFirst() }
            linkLayer.distributed.append(.init(ediv: ediv, rand: rand, ltk: pending.ltk, frame: pending.frame))
            events.append(.note(key, .smp, "LTK from SMP key distribution (frame \(pending.frame), EDIV 0x\(String(ediv, radix: 16)), Rand 0x\(String(rand, radix: 16))): kept to decrypt the later links that use it"))
        default:
            break
        }
    }

    /// The TK of a legacy pairing whose randoms are both in: searched against the central's
    /// confirm value, or, with no confirm or no CONNECT_IND, only Just Works' TK 0 left for the
    /// encrypted link's MIC to confirm.
    private func recoverTK(_ key: ConnectionKey, _ p: inout LinkLayerState.Pairing) {
        guard let preq = p.preq, let pres = p.pres, let mrand = p.mrand, let srand = p.srand else {
            events.append(.note(key, .smp, "legacy pairing: Pairing Request or Response not in the capture; the TK cannot be recovered"))
            return
        }
        // AuthReq bit 3 on both sides: LE Secure Connections, whose keys come from ECDH.
        if preq[3] & 0x08 != 0 && pres[3] & 0x08 != 0 {
            events.append(.note(key, .smp, "LE Secure Connections pairing: its keys cannot be recovered from a capture"))
            return
        }
        // `gattlab redact` blanks these values with '*' so that nobody can search them: say so
        // instead of spending a search that cannot succeed.
        if [p.mconfirm, p.sconfirm, mrand, srand].contains(where: { $0.map { !$0.isEmpty && $0.allSatisfy { $0 == 0x2A } } ?? false }) {
            events.append(.note(key, .smp, "legacy pairing: its confirm and random values were redacted (all '*'); its keys cannot be recovered"))
            return
        }
        let missing = p.mconfirm == nil ? "the central's Pairing Confirm is not in the capture" :
            linkLayer.addresses[key.id] == nil ? "the CONNECT_IND (the addresses c1 needs) is not in the capture" : nil
        if let missing {
            p.stk = LegacyPairing.s1(tk: LegacyPairing.tk(passkey: 0), r1: srand, r2: mrand).map { Secret($0, label: "STK") }
            p.stkSource = "STK of Just Works (TK 000000), confirmed by the MIC"
            events.append(.note(key, .smp, "legacy pairing: \(missing), so the TK cannot be searched; Just Works (TK 000000) is tried on the encrypted link"))
            return
        }
        guard let mconfirm = p.mconfirm, let a = linkLayer.addresses[key.id] else { return }
        guard linkLayer.passkeySearches < LinkLayerState.maxPasskeySearches else {
            events.append(.note(key, .smp, "legacy pairing: not searched: this capture's first \(LinkLayerState.maxPasskeySearches) pairings were (each search tries up to a million keys)"))
            return
        }
        linkLayer.passkeySearches += 1
        // No search time in the note: the same capture must decode to the same bytes on every run
        // (a loaded machine made one decode say "in 3 ms" where the next said "in 0 ms").
        let found = LegacyPairing.findPasskey(confirm: mconfirm, r: mrand, preq: preq, pres: pres, iat: a.iat, rat: a.rat, ia: a.ia, ra: a.ra)
        guard let passkey = found else {
            events.append(.note(key, .smp, "legacy pairing: no TK from 000000 to 999999 gives the central's confirm value (out-of-band TK?); not decrypted"))
            return
        }
        let tk = passkey == 0 || revealsPasskeys ? String(format: "%06u", passkey) : "****** (shown with --reveal-secrets)"
        p.stk = LegacyPairing.s1(tk: LegacyPairing.tk(passkey: passkey), r1: srand, r2: mrand).map { Secret($0, label: "STK") }
        p.stkSource = passkey == 0 ? "STK of the legacy pairing (TK 000000)" : "STK of the legacy pairing (its passkey)"
        events.append(.note(key, .smp, "legacy pairing: TK found: \(tk)\(passkey == 0 ? " (Just Works)" : " (passkey)"); the STK decrypts what follows"))
    }
}
