import Profiles
import SwiftProtobuf

extension ProtoWire {
    /// Parses bytes as `M`, or records why not as a problem with `problemID`, saying where the
    /// wire format broke (from a walk of the fields) when the runtime's error does not.
    package static func parse<M: SwiftProtobuf.Message>(_ type: M.Type, _ bytes: [UInt8], what: String, problemID: String,
                                                 problems: inout [ProtocolProblem]) -> M? {
        do {
            return try M(serializedBytes: bytes)
        } catch {
            var detail = "\(error)"
            if case .failure(let w) = ProtoWire.fields(bytes) { detail = w.description }
            problems.append(.init(problemID, "\(what) of \(bytes.count) bytes is not valid protobuf: \(detail)"))
            return nil
        }
    }
}
