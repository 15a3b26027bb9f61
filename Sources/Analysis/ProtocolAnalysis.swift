import ATT
import Profiles

/// A protocol message as the timeline shows it. Each protocol's message types conform in the
/// protocol's folder; the timeline names no protocol.
public protocol TimelineDescribing: ProfileMessage {
    /// A line for people (never a secret) and the message's fields (secrets as `Secret`).
    func timelineDescription() -> (summary: String, fields: [Field])
}

/// What the analysis knows of a device protocol beyond its messages. The engine picks the
/// registered types that conform (`protocols.conforming(to: (any ProtocolAnalysis.Type).self)`);
/// every requirement has a default, so a protocol gives only what it has.
public protocol ProtocolAnalysis: DeviceProtocol {
    /// The timeline lane of the protocol's events.
    static var lane: TimelineEvent.Lane { get }
    /// A new tracker of one device's phases in this protocol, fed its events as they come;
    /// nil when the protocol's phases come from elsewhere.
    static func phaseTracker(device: Int) -> (any PhaseTracking)?
    /// A new reader of one device's provisioning phases in the finished timeline; nil when the
    /// protocol has none.
    static func provisioningPhaseReader() -> (any ProvisioningPhaseReading)?
    /// Whether the message tells the device to reboot: its next connection is the reconnection.
    static func asksToReboot(_ message: any ProfileMessage) -> Bool
    /// Whether the event is a value the phone writes whole, which a plain write longer than
    /// MTU-3 cuts (`att.write-truncated`).
    static func isWholeValueWrite(_ e: ProfileEvent) -> Bool
    /// The protocol's own diagnosis rules, ids `<protocol>.*`.
    static var diagnoses: [Diagnoses.Rule] { get }
    /// Problem ids the generic `protocol.*` rule leaves out, told by a rule of their own.
    static var problemsToldElsewhere: Set<String> { get }
    /// The characteristic whose notifications or indications carry the answers to this
    /// message, and its name for evidence: `gatt.not-subscribed` fires when the phone sent the
    /// message without subscribing to it. Nil for a message that expects no answer.
    static func answersNeedSubscription(to message: any ProfileMessage) -> (characteristic: BluetoothUUID, name: String)?
    /// The device's outcome and one-line summary as this protocol tells it, ending with `links`
    /// ("2 connections, 1 encrypted, 35.7 s"); nil when the device did not speak it. The first
    /// protocol in registration order with a story tells the device's.
    static func story(of events: TimelineEventSelection, in timeline: Timeline, device: Int, links: String) -> (TimelineDevice.Outcome, String)?
}

extension ProtocolAnalysis {
    public static var lane: TimelineEvent.Lane { .provisioning }
    public static func phaseTracker(device: Int) -> (any PhaseTracking)? { nil }
    public static func provisioningPhaseReader() -> (any ProvisioningPhaseReading)? { nil }
    public static func asksToReboot(_ message: any ProfileMessage) -> Bool { false }
    public static func isWholeValueWrite(_ e: ProfileEvent) -> Bool { false }
    public static var diagnoses: [Diagnoses.Rule] { [] }
    public static var problemsToldElsewhere: Set<String> { [] }
    public static func answersNeedSubscription(to message: any ProfileMessage) -> (characteristic: BluetoothUUID, name: String)? { nil }
    public static func story(of events: TimelineEventSelection, in timeline: Timeline, device: Int, links: String) -> (TimelineDevice.Outcome, String)? { nil }
}

/// A protocol message that a timeline can keep encoded (`Spillable`): every field, written and
/// read back so that the message read back is equal (`isEqual`) to the one written, a secret's
/// label and location included. A timeline keeps its events encoded (`TimelineEvents`), past
/// 64 KiB in an encrypted temporary file; a message whose type does not conform stays a value
/// in memory, so a new protocol works without it, but its messages then cost memory.
public protocol SpillableMessage: ProfileMessage, Spillable {}

extension SpillableMessage {
    /// Spills `message`, which is a `Self`: called on the type found once, so that an event's
    /// message is not cast to `any SpillableMessage` (a conformance lookup) every time.
    static func spill(_ message: any ProfileMessage, into w: inout SpillWriter) {
        guard let m = message as? Self else { preconditionFailure("a message spilled as another type") }
        m.spill(into: &w)
    }
}

/// Follows one device's state through its protocol's messages while the timeline is built,
/// adding the phases (and progress points) it sees to the timeline.
public protocol PhaseTracking {
    /// A message of the protocol from the device, on connection `connection`.
    mutating func add(_ message: any ProfileMessage, connection: Int, time: Int64, frame: Int, to timeline: inout Timeline)
    /// The phone's link `connection` to the device ended.
    mutating func linkEnded(connection: Int, time: Int64, frame: Int, to timeline: inout Timeline)
    /// The capture ended at `end`: close what is still open.
    mutating func finish(at end: Int64, to timeline: inout Timeline)
}
