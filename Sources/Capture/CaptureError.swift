/// Why a capture could not be read, with enough location for a person to find the damage:
/// the file, the 1-based record number (as Wireshark numbers frames) and the byte offset.
public struct CaptureError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The file could not be opened or read (missing, permission, I/O error).
        case cannotOpen
        /// The first bytes match no format GATTLab reads.
        case unknownFormat
        /// A format GATTLab recognises but a link type or datalink it does not decode.
        case unsupported
        /// The file ends inside a record: usually a capture copied while still being written.
        case truncated
        /// A header or length field that cannot be right.
        case corrupt
        /// Writing an output failed.
        case cannotWrite
    }

    public var kind: Kind
    public var path: String
    /// 1-based number of the record that failed, when the failure is inside a record.
    public var record: Int?
    /// Byte offset in the file where the failing structure starts.
    public var offset: Int64?
    public var message: String

    public init(_ kind: Kind, path: String, record: Int? = nil, offset: Int64? = nil, _ message: String) {
        self.kind = kind
        self.path = path
        self.record = record
        self.offset = offset
        self.message = message
    }

    /// One line: `FILE: record N at byte offset X: what`.
    public var description: String {
        var s = path == "-" ? "<stdin>" : path
        if let record { s += ": record \(record)" }
        if let offset { s += record == nil ? ": at byte offset \(offset)" : " at byte offset \(offset)" }
        return s + ": " + message
    }
}
