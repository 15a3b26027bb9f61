import ATT
import Emulator
import GATT
import Profiles

/// A device protocol whose replay needs a session of its own run alongside the script: the
/// recorded bytes are not enough when the protocol encrypts with per-session keys (ESP-IDF
/// security 1 makes a new key pair each time, so the recorded ciphertext only works against the
/// recorded keys). The replay engine names no protocol: it takes the types of its `ProtocolSet`
/// that conform to this, at extraction (`annotate`) and at run time (`sessionDriver`).
public protocol ReplaySessionDriving: DeviceProtocol {
    /// The script's JSON member that holds this protocol's session data (`esp`). Scripts on disk
    /// carry it, so it never changes once released.
    static var scriptKey: String { get }

    /// What one connection's discovery tells the session, kept until extraction ends (when the
    /// connection's table may be gone): for ESP-IDF the endpoint names of the 0x2901 descriptors,
    /// by characteristic UUID. Bounded: the table is hostile input.
    static func discoveredNames(_ table: AttributeTable) -> [String: String]

    /// At the end of extraction: gives the protocol's steps what the live session needs (the
    /// plaintext of encrypted values) and the script its session data (`script.sessions[scriptKey]`).
    /// `discovered`: the chosen connections' `discoveredNames`, the first connection's winning.
    static func annotate(_ script: inout SessionScript, discovered: [String: String], options: ExtractOptions)

    /// Decodes the script's session data as this protocol reads it, so `SessionScript.parse`
    /// refuses a malformed one with the member and field that is wrong. Throws the decoding error.
    static func checkSessionData(_ value: ScriptValue) throws

    /// The session for one run of `script`; nil when the script has no steps for it. Throws what
    /// the run needs and was not given (a redacted secret with no `--set`): `ReplayRunner.values()`
    /// calls it before anything is sent.
    static func sessionDriver(for script: SessionScript, options: ReplayOptions) throws(ReplayError) -> (any ReplaySessionDriver)?

    /// The emulated device `replay run --target emu:NAME` runs for this script, shaped like the
    /// recorded one (its scheme, its PoP); nil to leave `spec` as it is.
    static func emulatedDevice(_ spec: EmulatedDeviceSpec, for script: SessionScript, settings: [String: String]) -> DeviceFactory?

    /// One line for people after `replay extract` wrote the script (how the session will run); nil
    /// when the script has nothing of this protocol.
    static func extractionSummary(_ script: SessionScript) -> String?

    /// A warning before `replay run` starts (a session that cannot run live); nil when none.
    static func runWarning(_ script: SessionScript) -> String?
}

extension ReplaySessionDriving {
    public static func discoveredNames(_ table: AttributeTable) -> [String: String] { [:] }
    public static func checkSessionData(_ value: ScriptValue) throws {}
    public static func emulatedDevice(_ spec: EmulatedDeviceSpec, for script: SessionScript, settings: [String: String]) -> DeviceFactory? { nil }
    public static func extractionSummary(_ script: SessionScript) -> String? { nil }
    public static func runWarning(_ script: SessionScript) -> String? { nil }
}

/// One run's session of a protocol (`ReplaySessionDriving.sessionDriver`): stateful, used by the
/// run's one task from start to end. The runner offers it every step before performing the step
/// itself, and tells it when a link opens.
public protocol ReplaySessionDriver: AnyObject {
    /// A new connection: sessions that end with the link (protocomm's) start over.
    func linkOpened()
    /// Performs `step` (at `index` in the script) when it is the session's to perform, recording
    /// what happened in `outcome`; false leaves it to the runner.
    func perform(_ step: ReplayStep, _ index: Int, _ outcome: inout StepOutcome, run: Run) async throws(Run.Stop) -> Bool
}

extension ProtocolSet {
    /// The protocols whose replay runs a session of its own, in registration order.
    public var replaySessions: [any ReplaySessionDriving.Type] {
        conforming(to: (any ReplaySessionDriving.Type).self)
    }
}

extension EmulatedDeviceSpec {
    /// The device `replay run --target emu:NAME` runs for `script`: shaped by the first protocol
    /// session that claims it, else this spec's device as it is.
    public func replayDevice(for script: SessionScript, settings: [String: String], protocols: ProtocolSet) -> DeviceFactory {
        for type in protocols.replaySessions {
            if let device = type.emulatedDevice(self, for: script, settings: settings) { return device }
        }
        return factory
    }
}
