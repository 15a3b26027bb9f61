import Capture

/// Security Manager Protocol PDUs (L2CAP CID 6), with their fields. Keys are `Secret`s.
public enum SMPPDU: Sendable, Hashable {
    case pairingRequest(PairingFeatures)
    case pairingResponse(PairingFeatures)
    /// Confirm and random values: secrets in a legacy pairing, where both together give the TK by
    /// search (a Just Works 0 or a six-digit passkey), and with it the STK and every key distributed.
    case pairingConfirm(value: Secret)
    case pairingRandom(value: Secret)
    case pairingFailed(reason: UInt8)
    /// Legacy pairing LTK distribution.
    case encryptionInformation(ltk: Secret)
    case centralIdentification(ediv: UInt16, rand: UInt64)
    case identityInformation(irk: Secret)
    case identityAddressInformation(addressType: UInt8, address: BDAddr)
    case signingInformation(csrk: Secret)
    case securityRequest(authReq: UInt8)
    case pairingPublicKey(x: [UInt8], y: [UInt8])
    case pairingDHKeyCheck(value: [UInt8])
    case keypressNotification(type: UInt8)
    case unknown(code: UInt8, parameters: [UInt8])

    /// IO capability, OOB, AuthReq, key size and key distribution of Pairing Request/Response.
    public struct PairingFeatures: Sendable, Hashable {
        public var ioCapability: UInt8
        public var oobDataPresent: Bool
        public var authReq: UInt8
        public var maxKeySize: UInt8
        public var initiatorKeyDistribution: UInt8
        public var responderKeyDistribution: UInt8

        public init(ioCapability: UInt8, oobDataPresent: Bool, authReq: UInt8, maxKeySize: UInt8,
                    initiatorKeyDistribution: UInt8, responderKeyDistribution: UInt8) {
            self.ioCapability = ioCapability
            self.oobDataPresent = oobDataPresent
            self.authReq = authReq
            self.maxKeySize = maxKeySize
            self.initiatorKeyDistribution = initiatorKeyDistribution
            self.responderKeyDistribution = responderKeyDistribution
        }

        public var bonding: Bool { authReq & 0x03 == 0x01 }
        public var mitm: Bool { authReq & 0x04 != 0 }
        public var secureConnections: Bool { authReq & 0x08 != 0 }
        public var keypress: Bool { authReq & 0x10 != 0 }

        public var ioCapabilityName: String {
            ["DisplayOnly", "DisplayYesNo", "KeyboardOnly", "NoInputNoOutput", "KeyboardDisplay"]
                .dropFirst(Int(ioCapability)).first ?? "Reserved (\(ioCapability))"
        }

        public var summary: String {
            var flags: [String] = []
            if bonding { flags.append("bonding") }
            if mitm { flags.append("MITM") }
            if secureConnections { flags.append("SC") }
            if keypress { flags.append("keypress") }
            return "io=\(ioCapabilityName) oob=\(oobDataPresent ? "yes" : "no") auth=[\(flags.joined(separator: ","))] keysize=\(maxKeySize) keys=0x\(Hex.string([initiatorKeyDistribution]))/0x\(Hex.string([responderKeyDistribution]))"
        }
    }

    public var code: UInt8 {
        switch self {
        case .pairingRequest: 0x01
        case .pairingResponse: 0x02
        case .pairingConfirm: 0x03
        case .pairingRandom: 0x04
        case .pairingFailed: 0x05
        case .encryptionInformation: 0x06
        case .centralIdentification: 0x07
        case .identityInformation: 0x08
        case .identityAddressInformation: 0x09
        case .signingInformation: 0x0A
        case .securityRequest: 0x0B
        case .pairingPublicKey: 0x0C
        case .pairingDHKeyCheck: 0x0D
        case .keypressNotification: 0x0E
        case .unknown(let code, _): code
        }
    }

    public static func name(_ code: UInt8) -> String {
        let names = ["", "Pairing Request", "Pairing Response", "Pairing Confirm", "Pairing Random",
                     "Pairing Failed", "Encryption Information", "Central Identification",
                     "Identity Information", "Identity Address Information", "Signing Information",
                     "Security Request", "Pairing Public Key", "Pairing DHKey Check", "Keypress Notification"]
        return code >= 1 && Int(code) < names.count ? names[Int(code)] : "SMP 0x\(Hex.string([code]))"
    }

    public static func failureReason(_ reason: UInt8) -> String {
        let names = ["", "Passkey Entry Failed", "OOB Not Available", "Authentication Requirements",
                     "Confirm Value Failed", "Pairing Not Supported", "Encryption Key Size",
                     "Command Not Supported", "Unspecified Reason", "Repeated Attempts",
                     "Invalid Parameters", "DHKey Check Failed", "Numeric Comparison Failed",
                     "BR/EDR Pairing In Progress", "Cross-transport Key Derivation Not Allowed",
                     "Key Rejected"]
        return reason >= 1 && Int(reason) < names.count ? names[Int(reason)] : "Reserved (0x\(Hex.string([reason])))"
    }

    /// Decodes one SMP PDU; nil with a reason when it is too short for its fields.
    public static func decode(_ d: UnsafeRawBufferPointer) -> Result<SMPPDU, MalformedReason> {
        guard let code = d.first else { return .failure(MalformedReason("empty SMP PDU")) }
        let p = d.dropping(1)
        func need(_ n: Int) -> MalformedReason? {
            p.count < n ? MalformedReason("\(name(code)) needs \(n) parameter bytes, has \(p.count)") : nil
        }
        func bytes(_ from: Int, _ n: Int) -> [UInt8] { Array(p[from..<(from + n)]) }
        switch code {
        case 0x01, 0x02:
            if let e = need(6) { return .failure(e) }
            let f = PairingFeatures(ioCapability: p[0], oobDataPresent: p[1] != 0, authReq: p[2],
                                    maxKeySize: p[3], initiatorKeyDistribution: p[4], responderKeyDistribution: p[5])
            return .success(code == 1 ? .pairingRequest(f) : .pairingResponse(f))
        case 0x03, 0x04, 0x0D:
            if let e = need(16) { return .failure(e) }
            let v = bytes(0, 16)
            switch code {
            case 3: return .success(.pairingConfirm(value: Secret(v, label: "pairing confirm value")))
            case 4: return .success(.pairingRandom(value: Secret(v, label: "pairing random value")))
            default: return .success(.pairingDHKeyCheck(value: v))
            }
        case 0x05:
            if let e = need(1) { return .failure(e) }
            return .success(.pairingFailed(reason: p[0]))
        case 0x06, 0x08, 0x0A:
            if let e = need(16) { return .failure(e) }
            let label = code == 6 ? "LTK" : code == 8 ? "IRK" : "CSRK"
            let s = Secret(bytes(0, 16), label: label)
            return .success(code == 6 ? .encryptionInformation(ltk: s) : code == 8 ? .identityInformation(irk: s) : .signingInformation(csrk: s))
        case 0x07:
            if let e = need(10) { return .failure(e) }
            let rand = UInt64(p.u32le(2)) | UInt64(p.u32le(6)) << 32
            return .success(.centralIdentification(ediv: p.u16le(0), rand: rand))
        case 0x09:
            if let e = need(7) { return .failure(e) }
            return .success(.identityAddressInformation(addressType: p[0], address: BDAddr(littleEndian: p, at: 1)))
        case 0x0B:
            if let e = need(1) { return .failure(e) }
            return .success(.securityRequest(authReq: p[0]))
        case 0x0C:
            if let e = need(64) { return .failure(e) }
            return .success(.pairingPublicKey(x: bytes(0, 32), y: bytes(32, 32)))
        case 0x0E:
            if let e = need(1) { return .failure(e) }
            return .success(.keypressNotification(type: p[0]))
        default:
            return .success(.unknown(code: code, parameters: Array(p)))
        }
    }

    /// The same PDU with its key (bytes 1-16 of the PDU) located at `origin`, which describes
    /// the whole PDU.
    public func located(_ origin: ByteOrigin?) -> SMPPDU {
        guard let keyOrigin = origin?.slice(1..<17) else { return self }
        switch self {
        case .encryptionInformation(let k): return .encryptionInformation(ltk: k.located(keyOrigin))
        case .identityInformation(let k): return .identityInformation(irk: k.located(keyOrigin))
        case .signingInformation(let k): return .signingInformation(csrk: k.located(keyOrigin))
        case .pairingConfirm(let v): return .pairingConfirm(value: v.located(keyOrigin))
        case .pairingRandom(let v): return .pairingRandom(value: v.located(keyOrigin))
        default: return self
        }
    }

    /// One line for people; secrets redacted unless `reveal`.
    public func summary(reveal: Bool) -> String {
        switch self {
        case .pairingRequest(let f), .pairingResponse(let f): "\(SMPPDU.name(code)) \(f.summary)"
        case .pairingFailed(let r): "Pairing Failed: \(SMPPDU.failureReason(r))"
        case .encryptionInformation(let k): "Encryption Information LTK=\(k.hex(reveal: reveal))"
        case .identityInformation(let k): "Identity Information IRK=\(k.hex(reveal: reveal))"
        case .signingInformation(let k): "Signing Information CSRK=\(k.hex(reveal: reveal))"
        case .centralIdentification(let ediv, let rand): "Central Identification EDIV=0x\(String(ediv, radix: 16)) Rand=0x\(String(rand, radix: 16))"
        case .identityAddressInformation(let t, let a): "Identity Address Information \(a) (\(t == 0 ? "public" : "random"))"
        case .securityRequest(let auth): "Security Request auth=0x\(Hex.string([auth]))"
        case .keypressNotification(let t): "Keypress Notification \(t)"
        default: SMPPDU.name(code)
        }
    }
}

/// Why a PDU could not be decoded, for a "malformed" event.
public struct MalformedReason: Error, Sendable, Hashable, CustomStringConvertible {
    public var text: String
    public init(_ text: String) { self.text = text }
    public var description: String { text }
}
