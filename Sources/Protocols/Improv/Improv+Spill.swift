import Analysis
import Profiles

// How the Improv messages are kept by a timeline (`TimelineEvents`) and read back: every field, in
// declaration order, so that a message read back is the message decoded. The initialisers name
// a command or state by its number; the value read back is set whole after them, since its name
// may not be the one the number gives (a message made by hand).

extension SpillWriter {
    fileprivate mutating func checksum(_ c: Improv.Checksum) {
        switch c {
        case .valid: int(0)
        case .absent: int(1)
        }
    }
}

extension SpillReader {
    fileprivate mutating func checksum() -> Improv.Checksum {
        switch int() {
        case 0: .valid
        case 1: .absent
        default: preconditionFailure("spilled Improv frame with an unknown checksum tag")
        }
    }
}

extension Improv.CurrentState: SpillableMessage {
    public func spill(into w: inout SpillWriter) { w.value(state) }

    public init(unspilling r: inout SpillReader) {
        let state: ProtoEnumValue = r.value()
        self.init(state.raw)
        self.state = state
    }
}

extension Improv.ErrorState: SpillableMessage {
    public func spill(into w: inout SpillWriter) { w.value(error) }

    public init(unspilling r: inout SpillReader) {
        let error: ProtoEnumValue = r.value()
        self.init(error.raw)
        self.error = error
    }
}

extension Improv.Capabilities: SpillableMessage {
    public func spill(into w: inout SpillWriter) { w.int(Int(raw)) }

    public init(unspilling r: inout SpillReader) { self.init(UInt8(truncatingIfNeeded: r.int())) }
}

extension Improv.Command: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.value(command)
        w.optional(ssid) { $0.bytes($1) }
        w.optional(password) { $0.secret($1) }
        w.array(strings) { $0.bytes($1) }
        w.checksum(checksum)
        w.int(writes)
    }

    public init(unspilling r: inout SpillReader) {
        let command: ProtoEnumValue = r.value(), ssid = r.optional { $0.bytes() }, password = r.optional { $0.secret() }
        self.init(command: command.raw, strings: r.array { $0.bytes() }, ssid: ssid, password: password, checksum: r.checksum(), writes: r.int())
        self.command = command
    }
}

extension Improv.Result: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.value(command)
        w.array(strings) { $0.bytes($1) }
        w.checksum(checksum)
    }

    public init(unspilling r: inout SpillReader) {
        let command: ProtoEnumValue = r.value()
        self.init(command: command.raw, strings: r.array { $0.bytes() }, checksum: r.checksum())
        self.command = command
    }
}
