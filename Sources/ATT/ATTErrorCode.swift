/// The error code of an Error Response (Core 5.4 Vol 3, Part F, 3.4.1.1, and Core Specification
/// Supplement Part B for 0xE0-0xFF).
///
/// A struct rather than an enum because every byte is legal on the air: applications define
/// 0x80-0x9F, profiles 0xE0-0xFF, and a decoder must keep whatever came.
public struct ATTErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8

    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    public static let invalidHandle = ATTErrorCode(rawValue: 0x01)
    public static let readNotPermitted = ATTErrorCode(rawValue: 0x02)
    public static let writeNotPermitted = ATTErrorCode(rawValue: 0x03)
    public static let invalidPDU = ATTErrorCode(rawValue: 0x04)
    public static let insufficientAuthentication = ATTErrorCode(rawValue: 0x05)
    public static let requestNotSupported = ATTErrorCode(rawValue: 0x06)
    public static let invalidOffset = ATTErrorCode(rawValue: 0x07)
    public static let insufficientAuthorization = ATTErrorCode(rawValue: 0x08)
    public static let prepareQueueFull = ATTErrorCode(rawValue: 0x09)
    public static let attributeNotFound = ATTErrorCode(rawValue: 0x0A)
    public static let attributeNotLong = ATTErrorCode(rawValue: 0x0B)
    /// Called "Encryption Key Size Too Short" since Core 5.3; the older name is the one tools print.
    public static let insufficientEncryptionKeySize = ATTErrorCode(rawValue: 0x0C)
    /// The Core 5.3+ name of `insufficientEncryptionKeySize`.
    public static let encryptionKeySizeTooShort = insufficientEncryptionKeySize
    public static let invalidAttributeValueLength = ATTErrorCode(rawValue: 0x0D)
    public static let unlikelyError = ATTErrorCode(rawValue: 0x0E)
    public static let insufficientEncryption = ATTErrorCode(rawValue: 0x0F)
    public static let unsupportedGroupType = ATTErrorCode(rawValue: 0x10)
    public static let insufficientResources = ATTErrorCode(rawValue: 0x11)
    public static let databaseOutOfSync = ATTErrorCode(rawValue: 0x12)
    public static let valueNotAllowed = ATTErrorCode(rawValue: 0x13)
    /// Common profile and service error codes (Core Specification Supplement, Part B).
    public static let writeRequestRejected = ATTErrorCode(rawValue: 0xFC)
    public static let cccdImproperlyConfigured = ATTErrorCode(rawValue: 0xFD)
    public static let procedureAlreadyInProgress = ATTErrorCode(rawValue: 0xFE)
    public static let outOfRange = ATTErrorCode(rawValue: 0xFF)

    /// The name Wireshark prints ("Insufficient Encryption", "Application Error 0x80"), or
    /// "Reserved (0x14)" for codes no specification assigns.
    public var name: String {
        switch rawValue {
        case 0x01: "Invalid Handle"
        case 0x02: "Read Not Permitted"
        case 0x03: "Write Not Permitted"
        case 0x04: "Invalid PDU"
        case 0x05: "Insufficient Authentication"
        case 0x06: "Request Not Supported"
        case 0x07: "Invalid Offset"
        case 0x08: "Insufficient Authorization"
        case 0x09: "Prepare Queue Full"
        case 0x0A: "Attribute Not Found"
        case 0x0B: "Attribute Not Long"
        case 0x0C: "Insufficient Encryption Key Size"
        case 0x0D: "Invalid Attribute Value Length"
        case 0x0E: "Unlikely Error"
        case 0x0F: "Insufficient Encryption"
        case 0x10: "Unsupported Group Type"
        case 0x11: "Insufficient Resources"
        case 0x12: "Database Out of Sync"
        case 0x13: "Value Not Allowed"
        case 0x80...0x9F: "Application Error \(hexByte(rawValue, uppercase: true))"
        case 0xFC: "Write Request Rejected"
        case 0xFD: "Improper Client Characteristic Configuration Descriptor"
        case 0xFE: "Procedure Already In Progress"
        case 0xFF: "Out of Range"
        default: "Reserved (\(hexByte(rawValue)))"
        }
    }

    /// Whether the peer refused because the link lacks security: the cue that the client should pair
    /// or encrypt and try again (and a typical cause of "it works on one phone and not another").
    public var meansPairFirst: Bool {
        self == .insufficientAuthentication || self == .insufficientEncryption
            || self == .insufficientEncryptionKeySize || self == .insufficientAuthorization
    }

    /// What a security refusal asks for. The four are different stories: authentication, encryption
    /// and key size are the link's (pair, encrypt, or pair with more protection), authorization is
    /// the device's own decision that pairing alone does not change.
    public enum SecurityRequirement: String, Sendable {
        case authentication, encryption, encryptionKeySize = "key-size", authorization
    }

    /// The security a refusal asks for, if it is one of the four security errors.
    public var securityRequirement: SecurityRequirement? {
        switch self {
        case .insufficientAuthentication: .authentication
        case .insufficientEncryption: .encryption
        case .insufficientEncryptionKeySize: .encryptionKeySize
        case .insufficientAuthorization: .authorization
        default: nil
        }
    }

    /// 0x80-0x9F: defined by the application (the device's own protocol), not by Bluetooth.
    public var isApplicationError: Bool { (0x80...0x9F).contains(rawValue) }

    /// 0xE0-0xFF: the range of common profile and service errors.
    public var isCommonProfileError: Bool { rawValue >= 0xE0 }

    /// The name with the code, e.g. "Insufficient Encryption (0x0f)", so logs can be searched either way.
    public var description: String {
        switch rawValue {
        case 0x01...0x13, 0xFC...0xFF: "\(name) (\(hexByte(rawValue)))"
        default: name
        }
    }
}
