import Capture

/// Something a protocol message does that its specification does not allow, with a stable id
/// (for diagnoses and fuzz oracles) and a sentence for people.
public struct ProtocolProblem: Sendable, Hashable, CustomStringConvertible {
    /// Stable identifier, such as `status.short` or `credentials.missing-nul`.
    public var id: String
    public var message: String

    public init(_ id: String, _ message: String) {
        self.id = id
        self.message = message
    }

    public var description: String { "\(id): \(message)" }
}

/// Text from bytes the way the device protocols need it: UTF-8 when valid, and whether it was;
/// and the same text made safe to show.
public enum ProtocolText {
    /// Text from a device for display: C0 and C1 control characters and DEL shown as \xNN, so a
    /// hostile name cannot move a terminal's cursor or forge lines.
    public static func display(_ bytes: some Collection<UInt8>) -> String {
        display(String(decoding: bytes, as: UTF8.self))
    }

    public static func display(_ s: String) -> String {
        var out = ""
        for u in s.unicodeScalars {
            if u.value < 0x20 || u.value == 0x7F || (0x80..<0xA0).contains(u.value) {
                out += "\\x" + Hex.string([UInt8(truncatingIfNeeded: u.value)])
            } else {
                out.unicodeScalars.append(u)
            }
        }
        return out
    }

    @inlinable
    public static func decode(_ bytes: some Collection<UInt8>) -> (text: String, valid: Bool) {
        var text = String(decoding: bytes, as: UTF8.self)
        // String(decoding:) replaces invalid sequences with U+FFFD; a round trip tells. Compared
        // as contiguous memory when the bytes are (arrays are): decode runs this for every URL
        // and SSID, and the generic element-by-element comparison cost ~25k instructions a call.
        let valid = text.withUTF8 { decoded in
            bytes.withContiguousStorageIfAvailable { decoded.count == $0.count && decoded.elementsEqual($0) }
                ?? decoded.elementsEqual(bytes)
        }
        return (text, valid)
    }

    /// Whether `bytes` are valid UTF-8 (String(decoding:) keeps them as they are), checked
    /// without making a String: parsers that only need to know (a scan's every SSID) run it per
    /// value, and the round trip through a String and an Array was most of their time.
    /// Inlinable, so callers get it specialised for their collection.
    @inlinable
    public static func isValidUTF8(_ bytes: some Sequence<UInt8>) -> Bool {
        var parser = Unicode.UTF8.ForwardParser()
        var input = bytes.makeIterator()
        while true {
            switch parser.parseScalar(from: &input) {
            case .valid: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
