import ATT
import Capture
import Fuzz
import Profiles

/// Improv's RPC framing as the `improv` fuzz target: commands and results decoded, encoded again
/// and decoded once more; the password never in a command's description; the credentials layout
/// inside the value. Its characteristics' captured values go to its corpus.
extension ImprovProtocol: FuzzableProtocol {
    public static var fuzzTargets: [FuzzTarget] { [improvTarget] }
    /// Its parsers live in ImprovCodec: a libFuzzer build of its targets instruments that alone.
    public static var codec: Any.Type? { Improv.self }

    public static func corpusRouter() -> any FuzzCorpusRouting {
        FuzzCorpusTable(Dictionary(uniqueKeysWithValues: characteristics.map { ($0, "improv") }))
    }

    static let improvTarget = FuzzTarget(
        name: "improv", summary: "Improv Wi-Fi RPC frames (command, length, data, checksum): commands and results, split or cut",
        maxLength: 600,
        seeds: {
            [Improv.Command.wifiSettings(ssid: Array("HomeNet".utf8), password: Array("correct horse battery".utf8)).encode(),
             Improv.Command(command: 0x02).encode(), Improv.Command(command: 0x03).encode(), Improv.Command(command: 0x04).encode(),
             Improv.Result(command: 0x01, strings: [Array("http://improv-light.local".utf8)]).encode(),
             Improv.Result(command: 0x04, strings: [Array("HomeNet".utf8), Array("-52".utf8), Array("YES".utf8)]).encode(),
             Improv.Frame(command: 0x02, data: [], checksum: .absent).encode()].compactMap { $0 }
        },
        mutator: mutateFrame
    ) { input, f in
        f.add(1, Features.lengthClass(input.count))
        let (command, p1) = Improv.Command.decode(input)
        let (result, p2) = Improv.Result.decode(input)
        f.add(2, problems: p1 + p2)
        if let command {
            f.add(3, UInt64(truncatingIfNeeded: command.command.raw))
            // The redacted reading of a '*' password keeps its command, not the bytes it came with.
            if let again = command.encode(), Improv.Command.decode(again).0 != command {
                return .finding(kind: "improv-round-trip", detail: "Command 0x\(Hex.string([input.first ?? 0]))")
            }
            if let password = command.password, password.count >= 6, Set(password.unsafeBytes).count >= 4,
               "\(command)".utf8.contains(Array(password.unsafeBytes)) {
                return .finding(kind: "secret-in-description", detail: "a WIFI_SETTINGS command's description shows its password")
            }
        }
        if let result {
            f.add(4, UInt64(truncatingIfNeeded: result.command.raw))
            if let again = result.encode(), Improv.Result.decode(again).0 != result {
                return .finding(kind: "improv-round-trip", detail: "Result 0x\(Hex.string([input.first ?? 0]))")
            }
        }
        if let layout = credentials(in: input, characteristic: Improv.rpcCommand, endpoint: nil),
           layout.secret.contains(where: { $0.lowerBound < 0 || $0.upperBound > input.count }) {
            return .finding(kind: "credentials-out-of-bounds", detail: "\(layout.format): \(layout.secret) in \(input.count) bytes")
        }
        return .ok
    }

    /// A frame near its edges: a known command or none, strings of every length about the
    /// limits, the length byte one off, the checksum right, wrong or missing, pieces as a client
    /// writes them at MTU 23.
    @Sendable static func mutateFrame(_ value: inout [UInt8], _ r: inout FuzzRandom) {
        let letters = Array("abcdefghijklmnopqrstuvwxyz0123456789 -_*".utf8)
        let command: UInt8 = r.chance(80) ? UInt8(r.pick([0x01, 0x02, 0x03, 0x04, 0x05, 0x06]) ?? 1) : r.byte()
        var strings: [[UInt8]] = []
        for _ in 0..<r.below(4) {
            let n = r.pick([0, 1, 31, 32, 33, 63, 64, 65, 127, 255]) ?? 8
            strings.append((0..<n).map { _ in letters[r.below(letters.count)] })
        }
        var data: [UInt8] = []
        for s in strings { data += [UInt8(truncatingIfNeeded: s.count)] + s }
        var frame = [command, UInt8(truncatingIfNeeded: data.count)] + data
        switch r.below(6) {
        case 0: frame[1] = frame[1] &+ 1
        case 1: frame[1] = frame[1] &- 1
        default: break
        }
        switch r.below(4) {
        case 0: break  // no checksum byte
        case 1: frame.append(r.byte())
        default: frame.append(Improv.checksum(frame))
        }
        if r.chance(20) { frame = Array(frame.prefix(20 * (1 + r.below(3)))) }  // one piece of a split write
        value = Array(frame.prefix(600))
    }
}
