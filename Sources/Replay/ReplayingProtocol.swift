import ATT
import Emulator
import Profiles

/// A device protocol whose values replay understands by meaning: how its values read in
/// scripts and reports, which differences between a recording and a run are only the device's
/// cadence, how its credentials are rebuilt for `--set`, and what a recording says of the device's
/// pace and Wi-Fi world. Replay names no protocol: it asks the types of its `ProtocolSet` that
/// conform to this (`ReplayOptions.protocols`, `ExtractOptions.protocols`), in registration order;
/// a protocol without it is replayed byte for byte. Every requirement has a default that knows
/// nothing, so a protocol implements only what it has.
public protocol ReplayingProtocol: DeviceProtocol {
    /// A short description of a value on one of its characteristics (`status DOWNLOADING 63 %`),
    /// for a script's `meaning` and a report's lines; nil for a value it does not describe.
    /// `written`: the phone wrote it (a request), rather than the device sending or giving it.
    static func describe(_ bytes: [UInt8], characteristic: BluetoothUUID, written: Bool) -> String?
    /// Whether an observed value means what the recorded one did although their bytes differ
    /// (progress, kilobytes and RSSI change from run to run; the state and error are the
    /// protocol's meaning). `progress`: comparing by protocol progress, not `--strict`.
    static func sameMeaning(recorded: [UInt8], observed: [UInt8], characteristic: BluetoothUUID, progress: Bool) -> Bool
    /// How a run of notifications on this characteristic folds into protocol progress; nil
    /// when its notifications are compared one to one, as recorded.
    static func progressReader(for characteristic: BluetoothUUID) -> (any ProgressReading)?
    /// A credentials value of one of its formats (`CredentialLayout.format`) rebuilt with what
    /// `--set` gives; nil when the format is not its own. Throws what is missing to rebuild it.
    static func rebuildCredentials(_ recorded: [UInt8], format: String, redacted: Bool,
                                   settings: CredentialSettings) throws(CredentialRebuildError) -> [UInt8]?
    /// A credentials value the phone cut across consecutive writes to one characteristic (a
    /// command longer than the MTU allows), the first write in one of its formats: rebuilt whole
    /// with what `--set` gives and cut again, each piece at most as long as the longest recorded
    /// one (a new password may take more writes or fewer). `consumed`: how many of the given
    /// writes made the value. Nil when the writes are not such a value of its own.
    static func rebuildCutCredentials(_ pieces: [[UInt8]], format: String, redacted: Bool,
                                      settings: CredentialSettings) throws(CredentialRebuildError) -> (consumed: Int, pieces: [[UInt8]])?
    /// Reads the recorded pace of its device from a script's steps into `cadence`.
    static func readCadence(_ steps: [ReplayStep], into cadence: inout RecordedCadence)
    /// What reads the Wi-Fi world (networks scanned, the join) from its steps; nil when its
    /// device neither scans nor joins.
    static func worldReader() -> (any RecordedWorldReading)?
}

extension ReplayingProtocol {
    public static func describe(_ bytes: [UInt8], characteristic: BluetoothUUID, written: Bool) -> String? { nil }
    public static func sameMeaning(recorded: [UInt8], observed: [UInt8], characteristic: BluetoothUUID, progress: Bool) -> Bool { false }
    public static func progressReader(for characteristic: BluetoothUUID) -> (any ProgressReading)? { nil }
    public static func rebuildCredentials(_ recorded: [UInt8], format: String, redacted: Bool,
                                          settings: CredentialSettings) throws(CredentialRebuildError) -> [UInt8]? { nil }
    public static func rebuildCutCredentials(_ pieces: [[UInt8]], format: String, redacted: Bool,
                                             settings: CredentialSettings) throws(CredentialRebuildError) -> (consumed: Int, pieces: [[UInt8]])? { nil }
    public static func readCadence(_ steps: [ReplayStep], into cadence: inout RecordedCadence) {}
    public static func worldReader() -> (any RecordedWorldReading)? { nil }
}

/// What `replay run --set` gives for credentials, as bytes.
public struct CredentialSettings: Sendable {
    public var ssid: [UInt8]?
    public var password: [UInt8]?
    public var url: [UInt8]?

    public init(_ settings: [String: String]) {
        ssid = settings["ssid"].map { Array($0.utf8) }
        password = settings["password"].map { Array($0.utf8) }
        url = settings["url"].map { Array($0.utf8) }
    }
}

/// Why a protocol could not rebuild a credentials value.
public enum CredentialRebuildError: Error, Sendable {
    /// The recorded value of this `--set` field was redacted and no `--set` gives it.
    case needs(String)
    /// The recorded value does not decode (`the recorded nRF7 request`), so it cannot be rebuilt.
    case undecodable(String)
}

/// How a protocol's notifications fold into progress (`ProgressFold`): read one value at a time,
/// each telling what it shows. One reader per fold, so it may keep state (a scan's joiner).
public protocol ProgressReading: Sendable {
    /// Phases reached in order (a status), or a scan: a set of networks that ends.
    var style: ProgressStyle { get }
    /// A detail that may differ between devices of one protocol without changing its meaning,
    /// with what to call it (`marker style`, `end-marker`); nil when it has none yet.
    var variant: (label: String, value: String)? { get }
    /// Reads the next notification.
    mutating func read(_ value: [UInt8]) -> ProgressStep
}

extension ProgressReading {
    public var variant: (label: String, value: String)? { nil }
}

public enum ProgressStyle: Sendable {
    /// The phases reached in order; the last one is what a run waits for.
    case phases
    /// Networks found, compared as a set; the run waits for the scan to end.
    case scan
}

/// What one notification shows.
public struct ProgressStep: Sendable {
    /// The phase it is in (`status DOWNLOADING`); nil: it shows none.
    public var phase: String?
    /// How far within the phase (percent); a new phase starts it again.
    public var progress: Int?
    /// Where progress is reported, for the line on progress that fell (`downloading`).
    public var progressPhase: String
    /// Every network found so far (a reader keeps them); nil: unchanged.
    public var networks: Set<String>?
    /// Whether the protocol has reached a phase it does not leave by itself (an error,
    /// SUCCESS, END); nil: unchanged.
    public var terminal: Bool?

    public init(phase: String? = nil, progress: Int? = nil, progressPhase: String = "", networks: Set<String>? = nil, terminal: Bool? = nil) {
        self.phase = phase
        self.progress = progress
        self.progressPhase = progressPhase
        self.networks = networks
        self.terminal = terminal
    }
}

/// Reads a protocol's part of the Wi-Fi world from a script's steps (`RecordedWorld.from`): each
/// step once, in order, then `finish`. One reader per script, so it may keep state.
public protocol RecordedWorldReading: Sendable {
    /// Reads one step on a characteristic; true when the step showed a scan (even of nothing).
    mutating func read(_ step: RecordedWorldStep, into world: inout RecordedWorld) -> Bool
    /// Every step was read; true when what it kept showed a scan.
    mutating func finish(into world: inout RecordedWorld) -> Bool
}

extension RecordedWorldReading {
    public mutating func finish(into world: inout RecordedWorld) -> Bool { false }
}

/// One script step as the world readers see it.
public struct RecordedWorldStep: Sendable {
    public var step: ReplayStep
    public var characteristic: BluetoothUUID
    /// The device's recorded answer (the plaintext, when the session was decrypted).
    public var answer: [UInt8]?
    /// What the phone sent: as recorded, or in a redacted script what the replay sends.
    public var sent: [UInt8]?
    /// The step's secret was redacted at extraction.
    public var redacted: Bool
    /// `--set` values, which stand in for redacted ones.
    public var settings: [String: String]
}

extension ProtocolSet {
    /// The protocols replay understands by meaning, in registration order.
    var replaying: [any ReplayingProtocol.Type] { conforming(to: (any ReplayingProtocol.Type).self) }
}
