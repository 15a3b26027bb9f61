import Capture
import Foundation
import GATT
import Profiles
import Protocols
import TestSupport
import XCTest
@testable import Analysis

/// A timeline keeps its events encoded (`TimelineEvents`), so every protocol message must be written
/// and read back exactly (`SpillableMessage`): equal, spilling again to the same bytes, and with
/// each secret's location, which `Secret`'s `==` ignores. Checked on every message the captures
/// decode to and on random values with every field set, unset, empty and extreme.
final class MessageSpillTests: XCTestCase {
    /// Every message type of the registered protocols (a new protocol adds its own here; the
    /// capture test fails for a decoded message whose type is not a `SpillableMessage`).
    static let types: [any SpillableMessage.Type] = [
        SpeakerOTA.Credentials.self, SpeakerOTA.FirmwareURL.self, SpeakerOTA.ControlCommand.self, SpeakerOTA.Status.self,
        SensorScan.Request.self, SensorScan.Response.self,
        NRF7.Info.self, NRF7.Request.self, NRF7.Response.self, NRF7.Result.self,
        ESPProvisioning.Version.self, ESPProvisioning.SessionMessage.self, ESPProvisioning.ConfigMessage.self,
        ESPProvisioning.ScanMessage.self, ESPProvisioning.OpaquePayload.self,
        Improv.CurrentState.self, Improv.ErrorState.self, Improv.Capabilities.self, Improv.Command.self, Improv.Result.self,
    ]

    static func index(of type: any ProfileMessage.Type) -> Int? {
        types.firstIndex { ObjectIdentifier($0) == ObjectIdentifier(type) }
    }

    /// `NRF7.Request`: the name without its module, which several types share the last part of.
    static func name(_ type: Any.Type) -> String { String(reflecting: type).split(separator: ".").dropFirst().joined(separator: ".") }

    /// A message of any of the types behind its type's tag, as a timeline's events hold them.
    struct Tagged: Spillable {
        var message: any SpillableMessage

        init(_ message: any SpillableMessage) { self.message = message }

        func spill(into w: inout SpillWriter) {
            w.int(MessageSpillTests.index(of: type(of: message))!)
            w.value(message)
        }

        init(unspilling r: inout SpillReader) { message = MessageSpillTests.types[r.int()].init(unspilling: &r) }
    }

    static func spilled(_ v: some Spillable) -> [UInt8] {
        var w = SpillWriter(bytes: [])
        v.spill(into: &w)
        return w.bytes
    }

    /// The secrets anywhere in a value (nested structs, optionals, enum payloads).
    static func secrets(in value: Any) -> [Secret] {
        if let s = value as? Secret { return [s] }
        if value is [UInt8] { return [] }
        return Mirror(reflecting: value).children.flatMap { secrets(in: $0.value) }
    }

    /// Whether `b` holds the secrets of `a` whole: label, bytes and location.
    static func sameSecrets(_ a: Any, _ b: Any) -> Bool {
        let x = secrets(in: a), y = secrets(in: b)
        return x.count == y.count && zip(x, y).allSatisfy { $0.label == $1.label && $0.unsafeBytes == $1.unsafeBytes && $0.location == $1.location }
    }

    /// What is wrong with `m` written and read back, nil when nothing.
    static func fault<T: SpillableMessage>(_ m: T) -> String? {
        let bytes = spilled(m)
        let back = bytes.withUnsafeBytes { buffer in
            var r = SpillReader(buffer)
            return T(unspilling: &r)
        }
        if !back.isEqual(m) { return "read back as another value" }
        if spilled(back) != bytes { return "read back, it spills to other bytes" }
        if !sameSecrets(m, back) { return "a secret read back with another label, bytes or location" }
        return nil
    }

    /// Checks each message alone and all of them from one list spilled to its file at once.
    /// Returns how many of each type (by `types`' index) were checked.
    static func check(_ messages: [any SpillableMessage], _ context: String, file: StaticString = #filePath, line: UInt = #line) -> [Int] {
        var counts = [Int](repeating: 0, count: types.count)
        var faults: [String: (count: Int, first: String)] = [:]
        var list = SpillList<Tagged>(memoryLimit: 0)
        for (i, m) in messages.enumerated() {
            guard let t = index(of: type(of: m)) else {
                XCTFail("\(context): \(name(type(of: m))) is not one of the message types", file: file, line: line)
                return counts
            }
            counts[t] += 1
            list.append(Tagged(m))
            if let f = fault(m) { faults[name(type(of: m)), default: (0, "message \(i): \(f)")].count += 1 }
        }
        XCTAssertTrue(messages.isEmpty || list.hasSpilled, context, file: file, line: line)
        for (i, (m, back)) in zip(messages, list.map(\.message)).enumerated() where !back.isEqual(m) || !sameSecrets(m, back) {
            faults["\(name(type(of: m))) from the file", default: (0, "message \(i) read back as another value")].count += 1
        }
        for (type, f) in faults.sorted(by: { $0.key < $1.key }) {
            XCTFail("\(context): \(f.count) \(type) wrong, first \(f.first)", file: file, line: line)
        }
        return counts
    }

    /// Every message the capture decodes to, decoded as `gattlab timeline` decodes it (origins
    /// tracked, so that secrets have locations); fails for one whose type is not a
    /// `SpillableMessage`, and for one the timeline made of them does not give back
    /// whole. (The decoder's messages are the reference: the timeline's own have been spilled.)
    static func messages(_ path: String, keys: ProtocolKeys) throws -> [any SpillableMessage] {
        let reader = try openCapture(path)
        let decoder = GATTDecoder()
        decoder.tracksOrigins = true
        let profiles = ProfileDecoder(protocols: GATTLabProtocols.all, keys: keys)
        let builder = TimelineBuilder(source: path, format: reader.format.description, protocols: GATTLabProtocols.all)
        var decoded: [any SpillableMessage] = []
        // Where each message is in `decoded`, by its event's first and last frame and kind, in
        // order: the timeline's event for it has the same.
        var places: [String: [Int]] = [:]
        while let record = try reader.next() {
            decoder.consume(record)
            profiles.consume(decoder, record: record)
            for e in profiles.events {
                guard let m = e.message else { continue }
                guard let s = m as? any SpillableMessage else {
                    XCTFail("\(path): \(name(type(of: m))) of \(e.protocolName) is not a SpillableMessage")
                    continue
                }
                places["\(e.firstFrame) \(e.frame) \(e.kind)", default: []].append(decoded.count)
                decoded.append(s)
            }
            builder.consume(record, gatt: decoder.events, profile: profiles.events)
        }
        let timeline = builder.finish()
        XCTAssertEqual(timeline.droppedEvents, 0, "\(path): events beyond the cap were not checked")
        var found = 0, wrong = 0
        for e in timeline.events {
            guard let m = e.message else { continue }
            let key = "\(e.frames.first ?? 0) \(e.frames.last ?? 0) \(e.kind)"
            guard let i = places[key]?.first else {
                XCTFail("\(path): the timeline's \(name(type(of: m))) at frames \(e.frames) was not decoded")
                continue
            }
            places[key]?.removeFirst()
            found += 1
            let original = decoded[i]
            if !m.isEqual(original) || !sameSecrets(original, m) { wrong += 1 }
        }
        XCTAssertEqual(found, decoded.count, "\(path): messages the timeline does not have")
        XCTAssertEqual(wrong, 0, "\(path): messages the timeline gives back changed")
        return decoded
    }

    func testEveryMessageOfTheProjectCapturesReadsBack() throws {
        var counts = [Int](repeating: 0, count: Self.types.count)
        var secrets = 0, located = 0
        for path in try Files.projectCaptures() {
            let messages = try Self.messages(path, keys: AuditTests.espKeys)
            for (i, n) in Self.check(messages, path).enumerated() { counts[i] += n }
            let found = messages.flatMap { Self.secrets(in: $0) }
            secrets += found.count
            located += found.filter { $0.location != nil }.count
        }
        print("message spill: " + zip(Self.types, counts).map { "\(Self.name($0)) \($1)" }.joined(separator: ", ") + "; \(secrets) secrets, \(located) located")
        for (type, n) in zip(Self.types, counts) {
            XCTAssertGreaterThanOrEqual(n, 3, "\(Self.name(type)): too few in Captures/ to tell")
        }
        XCTAssertGreaterThan(located, 50, "secrets with a location")
    }

    func testEveryMessageOfTheRealCapturesReadsBack() throws {
        var counts = [Int](repeating: 0, count: Self.types.count)
        for path in try Files.realCaptures() {
            for (i, n) in Self.check(try Self.messages(path, keys: ProtocolKeys()), path).enumerated() { counts[i] += n }
        }
        print("message spill, real captures: \(counts.reduce(0, +)) messages")
    }

    /// Random values: fields empty, long, absent and present, extreme numbers, every case.
    final class Values {
        var random: SplitMix

        init(seed: UInt64) { random = SplitMix(seed: seed) }

        func pick(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
        func coin() -> Bool { pick(2) == 0 }
        func maybe<T>(_ make: () -> T) -> T? { coin() ? nil : make() }
        func list<T>(_ make: () -> T) -> [T] { (0..<[0, 1, 2, 7][pick(4)]).map { _ in make() } }

        func int() -> Int { [0, 1, -1, Int.max, Int.min, Int(truncatingIfNeeded: random.next()), pick(1_000)][pick(7)] }
        func fixed<T: FixedWidthInteger>() -> T { [T.min, T.max, 0, 1, T(truncatingIfNeeded: random.next())][pick(5)] }

        /// Now and then 70,000 bytes, past the 64 KiB a long write can carry.
        func bytes() -> [UInt8] {
            if pick(50) == 0 { return [UInt8](repeating: UInt8(pick(256)), count: 70_000) }
            return (0..<[0, 1, 4, 6, 32, 64, 255, 256, 4_096, pick(100)][pick(10)]).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        }

        func text() -> String {
            ["", "a", "Café ✓", "a \u{0} NUL", "\u{202e}rtl", String(repeating: "x", count: 300),
             String(decoding: bytes(), as: UTF8.self)][pick(7)]
        }

        func enumValue() -> ProtoEnumValue { ProtoEnumValue(raw: int(), name: maybe(text)) }
        func problem() -> ProtocolProblem { ProtocolProblem(text(), text()) }

        /// Pieces of up to a record's length (the origin sums them), anywhere.
        func origin() -> ByteOrigin {
            ByteOrigin(list { ByteOrigin.Piece(record: int(), offset: int(), count: [0, 1, pick(300), 65_535][pick(4)]) })
        }

        func secret() -> Secret {
            Secret(bytes(), label: text(), location: maybe {
                SecretLocation(origin: origin(), mask: maybe(bytes), copies: list { .init(index: int(), piece: .init(record: int(), offset: int(), count: int())) },
                               dependents: list { .init(origin: origin(), bytes: bytes()) })
            })
        }

        func wifiInfo() -> NRF7.WifiInfo {
            NRF7.WifiInfo(ssid: maybe(bytes), bssid: maybe(bytes), band: maybe(enumValue), channel: maybe { fixed() }, auth: maybe(enumValue),
                          unknownFields: bytes())
        }

        func scanParams() -> NRF7.ScanParams {
            NRF7.ScanParams(band: maybe(enumValue), passive: maybe(coin), periodMs: maybe { fixed() }, groupChannels: maybe { fixed() },
                            unknownFields: bytes())
        }

        func sessionPayload() -> ESPProvisioning.SessionMessage.Payload {
            switch pick(8) {
            case 0: .none
            case 1: .sec0Command
            case 2: .sec0Response(status: enumValue())
            case 3: .sec1Command0(clientPublicKey: bytes())
            case 4: .sec1Response0(status: enumValue(), devicePublicKey: bytes(), deviceRandom: bytes())
            case 5: .sec1Command1(clientVerifyData: bytes())
            case 6: .sec1Response1(status: enumValue(), deviceVerifyData: bytes())
            default: .sec2(step: enumValue())
            }
        }

        func configPayload() -> ESPProvisioning.ConfigMessage.Payload {
            switch pick(7) {
            case 0: .none
            case 1: .getStatus
            case 2: .status(ESPProvisioning.StatusReport(status: enumValue(), stationState: enumValue(), detail: detail()))
            case 3: .setConfig(ESPProvisioning.SetConfig(ssid: bytes(), passphrase: secret(), bssid: bytes(), channel: fixed()))
            case 4: .setConfigResponse(status: enumValue())
            case 5: .applyConfig
            default: .applyConfigResponse(status: enumValue())
            }
        }

        func detail() -> ESPProvisioning.StatusReport.Detail {
            switch pick(4) {
            case 0: .none
            case 1: .failReason(enumValue())
            case 2: .connected(ESPProvisioning.ConnectedState(ip4Address: text(), authMode: enumValue(), ssid: bytes(), bssid: bytes(), channel: fixed()))
            default: .attemptFailed(attemptsRemaining: fixed())
            }
        }

        func scanPayload() -> ESPProvisioning.ScanMessage.Payload {
            switch pick(7) {
            case 0: .none
            case 1: .start(blocking: coin(), passive: coin(), groupChannels: fixed(), periodMs: fixed())
            case 2: .startResponse
            case 3: .status
            case 4: .statusResponse(finished: coin(), resultCount: fixed())
            case 5: .result(startIndex: fixed(), count: fixed())
            default:
                .resultResponse(list { ESPProvisioning.ScanEntry(ssid: bytes(), channel: fixed(), rssi: fixed(), bssid: bytes(), auth: enumValue()) })
            }
        }

        func checksum() -> Improv.Checksum { coin() ? .valid : .absent }

        /// A value of `types[t]`.
        func message(_ t: Int) -> any SpillableMessage {
            switch t {
            case 0: return SpeakerOTA.Credentials(ssid: bytes(), password: secret())
            case 1: return SpeakerOTA.FirmwareURL(bytes: bytes())
            case 2: return SpeakerOTA.ControlCommand(rawCommand: fixed(), parameter: fixed())
            case 3: return SpeakerOTA.Status(rawState: fixed(), rawError: fixed(), progress: fixed(), downloadedKB: fixed(), totalKB: fixed(), rssi: fixed())
            case 4: return SensorScan.Request(bytes: bytes())
            case 5:
                return SensorScan.Response(networks: list { SensorScan.Network(ssid: bytes(), rssi: int()) }, complete: coin(),
                                           problems: list(problem), chunks: int(), markerStyle: text(), markerStyles: list(text))
            case 6: return NRF7.Info(version: maybe { fixed() }, unknownFields: bytes())
            case 7:
                return NRF7.Request(opCode: maybe(enumValue), scanParams: maybe(scanParams),
                                    config: maybe { NRF7.WifiConfig(wifi: maybe(wifiInfo), passphrase: maybe(secret), volatileMemory: maybe(coin),
                                                                    certs: maybe(bytes), unknownFields: bytes()) },
                                    unknownFields: bytes())
            case 8:
                return NRF7.Response(requestOpCode: maybe(enumValue), status: maybe(enumValue),
                                     deviceStatus: maybe { NRF7.DeviceStatus(state: maybe(enumValue), provisioningInfo: maybe(wifiInfo), ip4Address: maybe(bytes),
                                                                             hasConnectionInfo: coin(), scanInfo: maybe(scanParams), unknownFields: bytes(),
                                                                             connectionInfoUnknownFields: bytes()) },
                                     unknownFields: bytes())
            case 9:
                return NRF7.Result(scanRecord: maybe { NRF7.ScanRecord(wifi: maybe(wifiInfo), rssi: maybe { fixed() }, unknownFields: bytes()) },
                                   state: maybe(enumValue), reason: maybe(enumValue), unknownFields: bytes())
            case 10: return ESPProvisioning.Version(text: text(), version: maybe(text), securityVersion: maybe(int), capabilities: list(text))
            case 11:
                return ESPProvisioning.SessionMessage(securityVersion: enumValue(), messageType: maybe(enumValue), payload: sessionPayload(),
                                                      unknownFields: bytes())
            case 12: return ESPProvisioning.ConfigMessage(messageType: enumValue(), payload: configPayload(), unknownFields: bytes())
            case 13: return ESPProvisioning.ScanMessage(messageType: enumValue(), status: enumValue(), payload: scanPayload(), unknownFields: bytes())
            case 14: return ESPProvisioning.OpaquePayload(endpoint: text(), security: maybe(int), encrypted: coin(), length: int(), reason: text())
            case 15:
                // By number (named as the spec names it, or not), or any value at all.
                var s = Improv.CurrentState(int())
                if coin() { s.state = enumValue() }
                return s
            case 16:
                var e = Improv.ErrorState(int())
                if coin() { e.error = enumValue() }
                return e
            case 17: return Improv.Capabilities(fixed())
            case 18:
                var c = Improv.Command(command: int(), strings: list(bytes), ssid: maybe(bytes), password: maybe(secret), checksum: checksum(), writes: int())
                if coin() { c.command = enumValue() }
                return c
            default:
                var r = Improv.Result(command: int(), strings: list(bytes), checksum: checksum())
                if coin() { r.command = enumValue() }
                return r
            }
        }
    }

    func testRandomMessagesReadBack() {
        for seed: UInt64 in [1, 2] {
            let values = Values(seed: seed)
            let messages = (0..<(Self.types.count * 300)).map { values.message($0 % Self.types.count) }
            let counts = Self.check(messages, "seed \(seed)")
            XCTAssertEqual(counts, [Int](repeating: 300, count: Self.types.count))
        }
    }
}
