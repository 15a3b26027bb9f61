import Capture

/// How the phone and the emulated device pair (Security Manager, Core Vol 3 Part H), as
/// `LinkControl.pair(_:)` records it. The phone is the central and initiator; the values given
/// here for the device are what it answers in its Pairing Response.
public struct PairingOptions: Sendable, Hashable {
    /// LE Secure Connections (P-256 keys, LTK from the DHKey) or LE legacy pairing (STK, then
    /// the LTK handed over in Encryption Information).
    public enum Method: Sendable, Hashable { case secureConnections, legacy }

    /// The association model the users see. It chooses the device's IO capability (Just Works:
    /// NoInputNoOutput, Passkey Entry: DisplayOnly, Numeric Comparison: DisplayYesNo); the phone
    /// is KeyboardDisplay, as Android and iOS are. What is used then follows the spec's table
    /// (Part H 2.3.5.1): see `resultingAssociation`.
    public enum Association: Sendable, Hashable { case justWorks, passkeyEntry, numericComparison }

    /// Key distribution bits of Pairing Request/Response (Part H 3.6.1).
    public struct Keys: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// LTK (Encryption Information) with EDIV and Rand (Central Identification); legacy only,
        /// Secure Connections ignores it.
        public static let encKey = Keys(rawValue: 1 << 0)
        /// IRK (Identity Information) with the identity address (Identity Address Information).
        public static let idKey = Keys(rawValue: 1 << 1)
        /// CSRK (Signing Information).
        public static let signKey = Keys(rawValue: 1 << 2)
    }

    public var method: Method
    public var association: Association
    /// MITM protection asked for (AuthReq bit 2) by the phone and the device alike. Without it the
    /// spec uses Just Works whatever the IO capabilities.
    public var mitm: Bool
    /// Bonding (AuthReq Bonding_Flags 01) by both.
    public var bonding: Bool
    /// The largest key the device accepts (its Pairing Response's Maximum Encryption Key Size,
    /// 7 to 16; clamped). The phone asks for 16; the smaller applies.
    public var keySize: Int
    /// Keys the phone distributes (Initiator Key Distribution), and the device (Responder Key
    /// Distribution). The device agrees to exactly what the phone asks.
    public var centralKeys: Keys
    public var peripheralKeys: Keys
    /// The device's keys as given (16 bytes; shorter is zero-padded, used as given, not cut to
    /// `keySize`); nil derives them from the link's seeded random. `ltk` is the LTK of a Secure
    /// Connections pairing, or the one the device distributes in legacy pairing. The phone's own
    /// keys are always derived. Kept as `Secret`s (the initializer takes bytes).
    public var ltk: Secret?
    public var irk: Secret?
    public var csrk: Secret?
    /// Whether the phone sets the Secure Connections bit in its Pairing Request (every phone
    /// since Android 6 and iOS 9 does; legacy pairing then happens because the device does not).
    /// Without it the pairing is legacy whatever `method` says.
    public var phoneOffersSecureConnections: Bool

    public init(method: Method = .secureConnections, association: Association = .justWorks, mitm: Bool = false,
                bonding: Bool = true, keySize: Int = 16, centralKeys: Keys = [.idKey], peripheralKeys: Keys = [.encKey, .idKey],
                ltk: [UInt8]? = nil, irk: [UInt8]? = nil, csrk: [UInt8]? = nil, phoneOffersSecureConnections: Bool = true) {
        self.method = method
        self.association = association
        self.mitm = mitm
        self.bonding = bonding
        self.keySize = keySize
        self.centralKeys = centralKeys
        self.peripheralKeys = peripheralKeys
        self.ltk = ltk.map { Secret($0, label: "LTK") }
        self.irk = irk.map { Secret($0, label: "IRK") }
        self.csrk = csrk.map { Secret($0, label: "CSRK") }
        self.phoneOffersSecureConnections = phoneOffersSecureConnections
    }

    /// The phone's IO capability: KeyboardDisplay.
    public static let phoneIOCapability: UInt8 = 0x04

    /// The device's IO capability for the association model.
    public var deviceIOCapability: UInt8 {
        switch association {
        case .justWorks: 0x03  // NoInputNoOutput
        case .passkeyEntry: 0x00  // DisplayOnly
        case .numericComparison: 0x01  // DisplayYesNo
        }
    }

    /// Whether the pairing is LE Secure Connections: both sides set the SC bit.
    public var usesSecureConnections: Bool { method == .secureConnections && phoneOffersSecureConnections }

    /// The device's key size, 7 to 16: the pairing's key size (the phone asks for 16).
    public var agreedKeySize: Int { min(16, max(7, keySize)) }

    /// The association model the spec gives for these options: Just Works when neither side
    /// asks for MITM protection; otherwise by IO capability, where a DisplayYesNo device with a
    /// KeyboardDisplay phone gives Numeric Comparison with Secure Connections and Passkey Entry
    /// (the device displays, the user types) with legacy pairing.
    public var resultingAssociation: Association {
        guard mitm else { return .justWorks }
        switch association {
        case .justWorks: return .justWorks
        case .passkeyEntry: return .passkeyEntry
        case .numericComparison: return usesSecureConnections ? .numericComparison : .passkeyEntry
        }
    }

    /// AuthReq of the phone's Pairing Request.
    public var phoneAuthReq: UInt8 {
        (bonding ? 0x01 : 0) | (mitm ? 0x04 : 0) | (phoneOffersSecureConnections ? 0x08 : 0)
    }

    /// AuthReq of the device's Pairing Response.
    public var deviceAuthReq: UInt8 {
        (bonding ? 0x01 : 0) | (mitm ? 0x04 : 0) | (method == .secureConnections ? 0x08 : 0)
    }
}

/// Security Manager PDUs encoded as Core Vol 3 Part H §3 lays them out (code, then fields,
/// multi-byte values little-endian). HCI's `SMPPDU` decodes them.
enum SMPEncoding {
    static func pairingRequest(io: UInt8, authReq: UInt8, maxKeySize: UInt8, initiatorKeys: UInt8, responderKeys: UInt8) -> [UInt8] {
        [0x01, io, 0x00, authReq, maxKeySize, initiatorKeys, responderKeys]
    }

    static func pairingResponse(io: UInt8, authReq: UInt8, maxKeySize: UInt8, initiatorKeys: UInt8, responderKeys: UInt8) -> [UInt8] {
        [0x02, io, 0x00, authReq, maxKeySize, initiatorKeys, responderKeys]
    }

    static func pairingConfirm(_ value: [UInt8]) -> [UInt8] { [0x03] + sixteen(value) }
    static func pairingRandom(_ value: [UInt8]) -> [UInt8] { [0x04] + sixteen(value) }
    static func encryptionInformation(ltk: [UInt8]) -> [UInt8] { [0x06] + sixteen(ltk) }

    static func centralIdentification(ediv: UInt16, rand: UInt64) -> [UInt8] {
        [0x07, UInt8(ediv & 0xFF), UInt8(ediv >> 8)] + (0..<8).map { UInt8(truncatingIfNeeded: rand >> (8 * $0)) }
    }

    static func identityInformation(irk: [UInt8]) -> [UInt8] { [0x08] + sixteen(irk) }

    /// Address type 0 public, 1 static random; the address little-endian as HCI carries it.
    static func identityAddressInformation(type: UInt8, address: [UInt8]) -> [UInt8] {
        [0x09, type] + Array((address + [UInt8](repeating: 0, count: 6)).prefix(6))
    }

    static func signingInformation(csrk: [UInt8]) -> [UInt8] { [0x0A] + sixteen(csrk) }

    /// X and Y of the P-256 public key, 32 bytes each, little-endian.
    static func pairingPublicKey(x: [UInt8], y: [UInt8]) -> [UInt8] {
        [0x0C] + Array((x + [UInt8](repeating: 0, count: 32)).prefix(32)) + Array((y + [UInt8](repeating: 0, count: 32)).prefix(32))
    }

    static func pairingDHKeyCheck(_ value: [UInt8]) -> [UInt8] { [0x0D] + sixteen(value) }

    /// Exactly 16 bytes: zero-padded or cut.
    static func sixteen(_ bytes: [UInt8]) -> [UInt8] {
        Array((bytes + [UInt8](repeating: 0, count: 16)).prefix(16))
    }
}

/// The keys a bonded phone keeps to encrypt a later connection with `EmulatedLink.resumeEncryption()`:
/// the LTK with the EDIV and Rand that identify it (both 0 for Secure Connections).
public struct BondedKeys: Sendable, Hashable {
    public var ltk: Secret
    public var ediv: UInt16
    public var rand: UInt64
    /// The key size the pairing agreed on.
    public var keySize: Int
}

/// One pairing as the phone's HCI log shows it, in order: SMP PDUs each way, time the users
/// take, the encryption (LE Enable Encryption, Command Status, Encryption Change), the key size
/// read, then key distribution. Built from the options and the link's seeded random; the
/// values are not cryptographically related (the recording is what matters, not the math).
struct PairingPlan {
    enum Step: Equatable {
        /// An SMP PDU, phone to device (`sent`) or device to phone.
        case smp(sent: Bool, [UInt8])
        /// Time passing without traffic (a user comparing numbers or typing a passkey).
        case pause(Int64)
        /// The phone starts encryption with this key (the STK for legacy pairing, else the LTK).
        case encrypt(rand: UInt64, ediv: UInt16, key: [UInt8])
        /// The phone reads the key size (HCI Read Encryption Key Size) and gets this one.
        case readKeySize(Int)
    }

    var steps: [Step] = []
    /// What the phone can re-encrypt with later; nil when no usable LTK was bonded.
    var bond: BondedKeys?

    /// How long a user takes to compare two six-digit numbers and tap, or to type a passkey.
    static let compareTime: Int64 = 3_200_000
    static let passkeyTime: Int64 = 6_500_000

    init(_ options: PairingOptions, random: inout SeededRandom, deviceAddress: [UInt8], phoneAddress: [UInt8]) {
        func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: random.next()) } }
        let size = options.agreedKeySize
        /// A derived key, shortened to the key size as the spec masks it (the most significant
        /// octets zero; little-endian, so the last ones).
        func key() -> [UInt8] { bytes(16).enumerated().map { $0.offset < size ? $0.element : 0 } }
        func smp(_ sent: Bool, _ pdu: [UInt8]) { steps.append(.smp(sent: sent, pdu)) }
        func given(_ key: Secret?) -> [UInt8]? { key.map { SMPEncoding.sixteen($0.unsafeBytes) } }

        let sc = options.usesSecureConnections
        let association = options.resultingAssociation
        smp(true, SMPEncoding.pairingRequest(io: PairingOptions.phoneIOCapability, authReq: options.phoneAuthReq, maxKeySize: 16,
                                             initiatorKeys: options.centralKeys.rawValue, responderKeys: options.peripheralKeys.rawValue))
        smp(false, SMPEncoding.pairingResponse(io: options.deviceIOCapability, authReq: options.deviceAuthReq, maxKeySize: UInt8(size),
                                               initiatorKeys: options.centralKeys.rawValue, responderKeys: options.peripheralKeys.rawValue))
        if sc {
            smp(true, SMPEncoding.pairingPublicKey(x: bytes(32), y: bytes(32)))
            smp(false, SMPEncoding.pairingPublicKey(x: bytes(32), y: bytes(32)))
            if association == .passkeyEntry {
                // The device shows the passkey, the user types it; then 20 rounds, one per bit.
                steps.append(.pause(Self.passkeyTime))
                for _ in 0..<20 {
                    smp(true, SMPEncoding.pairingConfirm(bytes(16)))
                    smp(false, SMPEncoding.pairingConfirm(bytes(16)))
                    smp(true, SMPEncoding.pairingRandom(bytes(16)))
                    smp(false, SMPEncoding.pairingRandom(bytes(16)))
                }
            } else {
                smp(false, SMPEncoding.pairingConfirm(bytes(16)))
                smp(true, SMPEncoding.pairingRandom(bytes(16)))
                smp(false, SMPEncoding.pairingRandom(bytes(16)))
                if association == .numericComparison { steps.append(.pause(Self.compareTime)) }
            }
            smp(true, SMPEncoding.pairingDHKeyCheck(bytes(16)))
            smp(false, SMPEncoding.pairingDHKeyCheck(bytes(16)))
            let ltk = given(options.ltk) ?? key()
            steps.append(.encrypt(rand: 0, ediv: 0, key: ltk))
            if options.bonding { bond = BondedKeys(ltk: Secret(ltk, label: "LTK"), ediv: 0, rand: 0, keySize: size) }
        } else {
            if association == .passkeyEntry { steps.append(.pause(Self.passkeyTime)) }
            smp(true, SMPEncoding.pairingConfirm(bytes(16)))
            smp(false, SMPEncoding.pairingConfirm(bytes(16)))
            smp(true, SMPEncoding.pairingRandom(bytes(16)))
            smp(false, SMPEncoding.pairingRandom(bytes(16)))
            steps.append(.encrypt(rand: 0, ediv: 0, key: key()))
        }
        steps.append(.readKeySize(size))

        // Key distribution, the device first (Part H 3.6.1), each side in the spec's order.
        for device in [true, false] {
            let keys = device ? options.peripheralKeys : options.centralKeys
            if keys.contains(.encKey), !sc {
                let ltk = device ? given(options.ltk) ?? key() : key()
                let ediv = UInt16(truncatingIfNeeded: random.next())
                let rand = random.next()
                smp(!device, SMPEncoding.encryptionInformation(ltk: ltk))
                smp(!device, SMPEncoding.centralIdentification(ediv: ediv, rand: rand))
                // The central re-encrypts with the key the peripheral gave it.
                if device, options.bonding { bond = BondedKeys(ltk: Secret(ltk, label: "LTK"), ediv: ediv, rand: rand, keySize: size) }
            }
            if keys.contains(.idKey) {
                smp(!device, SMPEncoding.identityInformation(irk: device ? given(options.irk) ?? bytes(16) : bytes(16)))
                smp(!device, SMPEncoding.identityAddressInformation(type: device ? 0x01 : 0x00, address: device ? deviceAddress : phoneAddress))
            }
            if keys.contains(.signKey) {
                smp(!device, SMPEncoding.signingInformation(csrk: device ? given(options.csrk) ?? bytes(16) : bytes(16)))
            }
        }
    }
}
