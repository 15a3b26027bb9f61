import Profiles
import SwiftProtobuf

/// Encoding helpers: a generated message seeded with the unknown fields (and the unknown enum
/// numbers, which proto2 keeps among them), then the known fields set. For the nRF7 and ESP-IDF
/// codecs.
package enum ProtobufEncoding {
    package static func seed<M: SwiftProtobuf.Message>(_ type: M.Type, _ unknown: [UInt8], enums: [(Int, ProtoEnumValue?)]) -> M {
        var extra = unknown
        for (field, value) in enums {
            if let value, !value.isKnown { extra += ProtoWire.enumField(field, value.raw) }
        }
        guard !extra.isEmpty else { return M() }
        return (try? M(serializedBytes: extra)) ?? M()
    }

    package static func bytes(_ m: some SwiftProtobuf.Message) -> [UInt8] {
        (try? m.serializedBytes()) ?? []
    }
}
