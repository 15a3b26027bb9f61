import ATT
import Foundation
import HCI
import Profiles

/// Helpers of the Improv tests.
enum ImprovTestSupport {
    /// Bytes from hex digits (pairs; anything else is skipped).
    static func hex(_ s: String) -> [UInt8] {
        let digits = Array(s.utf8).compactMap { c -> UInt8? in
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            case 0x41...0x46: c - 0x41 + 10
            default: nil
            }
        }
        return stride(from: 0, to: digits.count - digits.count % 2, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }

    static let connection = ConnectionKey(controller: 0, handle: 0x40)

    /// A value on one of Improv's characteristics, as the pipeline hands it over.
    static func value(_ characteristic: BluetoothUUID, _ bytes: [UInt8], _ operation: ValueOperation = .write, frame: Int = 1) -> ProfileValue {
        ProfileValue(connection: connection, characteristic: characteristic, endpoint: nil, handle: 18, operation: operation,
                     bytes: bytes, frame: frame, firstFrame: frame, time: Int64(frame) * 1000)
    }

    /// The project's root (this file is Tests/ProtocolsTests/Improv/ImprovTestSupport.swift).
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}

extension ImprovTestSupport {
    static func hexString(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
