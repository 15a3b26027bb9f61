import Emulator
import GATT
import Profiles
import Protocols
@testable import Replay

// The tests replay with every registered protocol, as the command line does: these give the
// library's entry points the registration list where a test does not name a set.

extension ReplayOptions {
    init(timing: ReplayTiming = .recorded, settings: [String: String] = [:], readOnly: Bool = false,
         attTimeout: Int64 = ScriptedCentral.defaultTransactionTimeout, comparison: ReplayComparison = .progress) {
        self.init(protocols: GATTLabProtocols.all, timing: timing, settings: settings, readOnly: readOnly,
                  attTimeout: attTimeout, comparison: comparison)
    }
}

extension ExtractOptions {
    init(connection: String? = nil, peer: String? = nil, revealSecrets: Bool = false, keys: ProtocolKeys = .init()) {
        self.init(protocols: GATTLabProtocols.all, connection: connection, peer: peer, revealSecrets: revealSecrets, keys: keys)
    }
}

extension ReplayRunner {
    init(script: SessionScript) {
        self.init(script: script, options: ReplayOptions())
    }
}

extension ScriptExtractor {
    static func extract(path: String) throws -> SessionScript {
        try extract(path: path, options: ExtractOptions())
    }

    static func extractWithTable(path: String) throws -> (SessionScript, AttributeTable?) {
        try extractWithTable(path: path, options: ExtractOptions())
    }
}

extension RecordedDevice {
    init(script: SessionScript, table: AttributeTable?) {
        self.init(script: script, table: table, protocols: GATTLabProtocols.all)
    }

    static func read(path: String) throws -> RecordedDevice {
        try read(path: path, options: ExtractOptions())
    }
}

extension RecordedWorld {
    static func from(_ script: SessionScript, values: [Int: [UInt8]], settings: [String: String] = [:]) -> RecordedWorld? {
        from(script, values: values, settings: settings, protocols: GATTLabProtocols.all)
    }
}
