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
}

extension ProtocolAnalysis {
    public static var lane: TimelineEvent.Lane { .provisioning }
}
