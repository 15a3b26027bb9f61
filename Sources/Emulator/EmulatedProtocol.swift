import Profiles

/// A device protocol the emulator can serve: its device models, the scenarios a scripted phone
/// runs against them, and the bugs that can be planted in them. The emulator names no protocol;
/// it works with the types of the `ProtocolSet` it is given that conform to this, in
/// registration order (the order of every list it shows).
public protocol EmulatedProtocol: DeviceProtocol {
    /// The name of the protocol's device model (`speaker`): the kind of its devices, the first
    /// word of its scenarios' names, the prefix of its quirks in `gattlab emulate list`.
    static var deviceKind: String { get }
    /// The devices a user can name (`emu:NAME`, `gattlab emulate NAME`), the plain model first.
    static var devices: [EmulatedDeviceSpec] { get }
    /// The protocol's own sessions, each named after its device kind (`speaker-ota`).
    static var scenarios: [Scenario] { get }
    /// Sessions for the credential-handling audit, each showing one way credentials leak; they
    /// are listed after every protocol's own scenarios.
    static var auditScenarios: [Scenario] { get }
    /// The bugs that can be planted in the protocol's devices (`--quirk NAME`), by name with a
    /// line on each; `DeviceConfiguring.planting(quirks:)` plants them.
    static var quirks: [(name: String, summary: String)] { get }
}

extension EmulatedProtocol {
    public static var auditScenarios: [Scenario] { [] }
    public static var quirks: [(name: String, summary: String)] { [] }
}

/// The configuration of a device model: what a device spec, a scenario or a replay changes
/// (planted quirks, the recording's Wi-Fi world, its faults, pace and GATT table) before the
/// model is built with it.
public protocol DeviceConfiguring: Sendable {
    /// The model's defaults: a healthy device.
    init()
    /// The device model with this configuration, on a stack that accepts at most `serverMTU`.
    func factory(serverMTU: UInt16) -> DeviceFactory
    /// This configuration with the quirks named planted (names the protocol's `quirks` list).
    func planting(quirks: [String]) -> Self
    /// The same device in another Wi-Fi world (what its scans find, which joins succeed); nil
    /// for a model that neither scans nor joins.
    func inEnvironment(_ environment: WiFiEnvironment) -> Self?
    /// Failing as the recorded device did, with what it will do for the device's summary; nil
    /// when the model cannot fail so.
    func withFault(_ fault: RecordedFault) -> (configuration: Self, sentence: String)?
    /// Keeping the recorded device's pace, where the model has one.
    func withCadence(_ cadence: RecordedCadence) -> Self
    /// A recorded device's database, served instead of the model's built-in one.
    var recordedTable: RecordedTable? { get set }
}

extension DeviceConfiguring {
    public func planting(quirks: [String]) -> Self { self }
    public func inEnvironment(_ environment: WiFiEnvironment) -> Self? { nil }
    public func withFault(_ fault: RecordedFault) -> (configuration: Self, sentence: String)? { nil }
    public func withCadence(_ cadence: RecordedCadence) -> Self { self }
}
