import Profiles

/// The timeline's view of one protocol event: a line for people (no secrets) and its fields
/// (secrets as `Secret`), as the message describes itself (`TimelineDescribing`).
enum EventDescription {
    static func describe(kind: String, message: (any ProfileMessage)?, problems list: [ProtocolProblem]) -> (summary: String, fields: [Field]) {
        let problems = list.isEmpty ? "" : " [" + list.map(\.id).joined(separator: ", ") + "]"
        guard let m = message else { return ("\(kind): undecodable" + problems, []) }
        // A message its protocol does not describe still gets a line.
        let (summary, fields) = (m as? any TimelineDescribing)?.timelineDescription() ?? ("message", [])
        return (summary + problems, fields)
    }
}

extension FieldValue {
    /// Scan results as objects: ssid, bssid, channel, rssi, authMode, band (those known).
    public static func networks(_ list: [WiFiNetwork]) -> FieldValue {
        .objects(list.map { n in
            var f = [Field("ssid", .string(n.ssidText))]
            if let b = n.bssidText { f.append(Field("bssid", .string(b))) }
            if let c = n.channel { f.append(Field("channel", .int(c))) }
            if let r = n.rssi { f.append(Field("rssi", .int(r))) }
            if let a = n.authMode { f.append(Field("authMode", .string(a))) }
            if let b = n.band { f.append(Field("band", .string(b))) }
            return f
        })
    }
}
