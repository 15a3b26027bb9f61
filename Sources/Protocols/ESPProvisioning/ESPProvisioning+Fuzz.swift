import Fuzz
import Profiles

/// ESP-IDF provisioning's protobuf messages as the `esp` fuzz target; its values (by UUID or by
/// endpoint name) go to its corpus.
extension ESPProvisioningProtocol: FuzzableProtocol {
    public static var fuzzTargets: [FuzzTarget] { [espTarget] }
    /// Its parsers live in ESPProvisioningCodec: a libFuzzer build of its targets instruments that alone.
    public static var codec: Any.Type? { ESPProvisioning.self }
    public static var fuzzTargetGroup: FuzzTargetGroup { .messages }

    public static func corpusRouter() -> any FuzzCorpusRouting {
        FuzzCorpusTable(Dictionary(uniqueKeysWithValues: characteristics.map { ($0, "esp") }),
                        endpoints: Dictionary(uniqueKeysWithValues: ESPProvisioning.Endpoint.allCases.map { ($0.rawValue, "esp") }))
    }

    static let espTarget = FuzzTarget(
        name: "esp", summary: "ESP-IDF provisioning messages (protobuf): session, config, scan, version", maxLength: 1024,
        seeds: {
            [ESPProvisioning.ConfigMessage(.setConfig(.init(ssid: "HomeNet", passphrase: "correct horse"))).encode(),
             ESPProvisioning.ConfigMessage(.getStatus).encode(), ESPProvisioning.ConfigMessage(.applyConfig).encode(),
             Array(#"{"prov":{"ver":"v1.1","sec_ver":1,"cap":["wifi_scan"]}}"#.utf8)]
        },
        mutator: ProtocolMutators.protobuf
    ) { input, f in
        f.add(1, Features.lengthClass(input.count))
        let (session, p1) = ESPProvisioning.SessionMessage.decode(input)
        let (config, p2) = ESPProvisioning.ConfigMessage.decode(input)
        let (scan, p3) = ESPProvisioning.ScanMessage.decode(input)
        let (version, p4) = ESPProvisioning.Version.decode(input)
        f.add(2, problems: p1 + p2 + p3 + p4)
        if let session, ESPProvisioning.SessionMessage.decode(session.encode()).0 != session { return .finding(kind: "esp-round-trip", detail: "SessionData") }
        if let config, ESPProvisioning.ConfigMessage.decode(config.encode()).0 != config { return .finding(kind: "esp-round-trip", detail: "WiFiConfigPayload") }
        if let scan, ESPProvisioning.ScanMessage.decode(scan.encode()).0 != scan { return .finding(kind: "esp-round-trip", detail: "WiFiScanPayload") }
        if version != nil { f.add(3, 1) }
        return .ok
    }
}
