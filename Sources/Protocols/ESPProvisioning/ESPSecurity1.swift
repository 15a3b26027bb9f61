import _CryptoExtras
import Capture
import Crypto
import Foundation
import Profiles

/// ESP-IDF security 1: X25519 key agreement, then AES-256-CTR.
///
/// How the CTR stream runs, read from ESP-IDF's sources (protocomm `security1.c` on the device,
/// `tools/esp_prov/security/security1.py` on the phone side):
/// - key = X25519(shared) XOR SHA-256(PoP) (no XOR when the PoP is empty); IV/initial counter
///   block = the 16-byte `device_random` from SessionResp0.
/// - The device keeps ONE `mbedtls_aes_crypt_ctr` context (key, counter block, stream block and
///   `nc_off`) per session, and esp_prov ONE `Cipher(...).encryptor()`; encrypting and decrypting
///   both call the same `update`. So there is a single keystream, not one per direction: it
///   advances byte by byte across messages in both directions, in the order they are processed.
/// - The stream starts in the handshake: SessionCmd1.client_verify_data is the device's public
///   key encrypted with keystream bytes 0..<32; SessionResp1.device_verify_data is the client's
///   public key encrypted with bytes 32..<64. Every later request (phone to device) and response
///   (device to phone) on an encrypted endpoint continues at the next byte, request before its
///   response. Offsets within a block carry over (mbedtls `nc_off`): messages are not block aligned.
/// PROTOCOLS.md describes "one CTR stream in each direction"; the sources show one shared
/// stream, which is what this implements (and what the tests encrypt against).
public enum ESPSecurity1 {
    public enum Failure: Error, Sendable, CustomStringConvertible {
        case badKey(String)
        public var description: String {
            switch self {
            case .badKey(let s): s
            }
        }
    }

    /// The session key from the X25519 shared secret and the proof of possession.
    public static func sessionKey(sharedSecret: [UInt8], proofOfPossession pop: [UInt8]) -> [UInt8] {
        guard !pop.isEmpty else { return sharedSecret }
        let digest = Array(SHA256.hash(data: pop))
        return zip(sharedSecret, digest).map { $0 ^ $1 }
    }

    /// X25519 of a private key (32 bytes) and a peer's public key (32 bytes).
    public static func sharedSecret(privateKey: [UInt8], peerPublicKey: [UInt8]) throws -> [UInt8] {
        do {
            let key = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: privateKey)
            let peer = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: peerPublicKey)
            return try key.sharedSecretFromKeyAgreement(with: peer).withUnsafeBytes { Array($0) }
        } catch {
            throw Failure.badKey("X25519 failed: keys must be 32 bytes (\(privateKey.count) and \(peerPublicKey.count) given)")
        }
    }

    /// The public key of an X25519 private key.
    public static func publicKey(privateKey: [UInt8]) -> [UInt8]? {
        guard let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: privateKey) else { return nil }
        return Array(key.publicKey.rawRepresentation)
    }

    /// The session's keystream: `apply` encrypts or decrypts the next bytes.
    public struct Stream: Sendable {
        let key: Secret
        let iv: [UInt8]
        /// Bytes of keystream used so far.
        public private(set) var offset = 0

        /// nil unless the key has 32 bytes and the IV 16.
        public init?(key: [UInt8], iv: [UInt8]) {
            guard key.count == 32, iv.count == 16 else { return nil }
            self.key = Secret(key, label: "ESP session key")
            self.iv = iv
        }

        public mutating func apply(_ data: [UInt8]) -> [UInt8] {
            guard !data.isEmpty else { return [] }
            let skip = offset % 16
            // The counter block for the block holding `offset`: the IV plus the block index,
            // as a 128-bit big-endian number (mbedtls and OpenSSL increment all 16 bytes).
            var counter = iv
            var carry = UInt64(offset / 16)
            for i in stride(from: 15, through: 0, by: -1) where carry != 0 {
                let sum = UInt64(counter[i]) + (carry & 0xFF)
                counter[i] = UInt8(sum & 0xFF)
                carry = (carry >> 8) + (sum >> 8)
            }
            offset += data.count
            guard let nonce = try? AES._CTR.Nonce(nonceBytes: counter),
                  let keystream = try? AES._CTR.encrypt([UInt8](repeating: 0, count: skip + data.count), using: SymmetricKey(data: key.unsafeBytes), nonce: nonce)
            else { return data }
            return zip(data, keystream.dropFirst(skip)).map { $0 ^ $1 }
        }
    }
}
