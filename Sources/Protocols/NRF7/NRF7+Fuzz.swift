import Fuzz
import Profiles

/// nRF7 provisioning's protobuf messages as the `nrf7` fuzz target; its values go to its corpus.
extension NRF7Protocol: FuzzableProtocol {
    public static var fuzzTargets: [FuzzTarget] { [nrf7Target] }
    /// Its parsers live in NRF7Codec: a libFuzzer build of its targets instruments that alone.
    public static var codec: Any.Type? { NRF7.self }
    public static var fuzzTargetGroup: FuzzTargetGroup { .messages }

    public static func corpusRouter() -> any FuzzCorpusRouting {
        FuzzCorpusTable(Dictionary(uniqueKeysWithValues: characteristics.map { ($0, "nrf7") }))
    }

    static let nrf7Target = FuzzTarget(
        name: "nrf7", summary: "Nordic nRF7 provisioning messages (protobuf): Request, Response, Result, Info", maxLength: 1024,
        seeds: {
            [NRF7.Request(opCode: NRF7.opCode(1)).encode(),
             NRF7.Request(opCode: NRF7.opCode(4), config: NRF7.WifiConfig(wifi: NRF7.WifiInfo(ssid: "HomeNet", channel: 6, auth: 3),
                                                                         passphrase: "correct horse")).encode(),
             NRF7.Response(requestOpCode: NRF7.opCode(1), status: NRF7.status(0)).encode()]
        },
        mutator: ProtocolMutators.protobuf
    ) { input, f in
        f.add(1, Features.lengthClass(input.count))
        let (request, p1) = NRF7.Request.decode(input)
        let (response, p2) = NRF7.Response.decode(input)
        let (result, p3) = NRF7.Result.decode(input)
        let (info, p4) = NRF7.Info.decode(input)
        f.add(2, problems: p1 + p2 + p3 + p4)
        if let request {
            f.add(3, UInt64(truncatingIfNeeded: request.opCode?.raw ?? -1))
            if NRF7.Request.decode(request.encode()).0 != request { return .finding(kind: "nrf7-round-trip", detail: "Request") }
        }
        if let response, NRF7.Response.decode(response.encode()).0 != response { return .finding(kind: "nrf7-round-trip", detail: "Response") }
        if let result, NRF7.Result.decode(result.encode()).0 != result { return .finding(kind: "nrf7-round-trip", detail: "Result") }
        if let info, NRF7.Info.decode(info.encode()).0 != info { return .finding(kind: "nrf7-round-trip", detail: "Info") }
        return .ok
    }
}
