import ATT
import Capture
import Profiles
@testable import Protocols
@testable import ImprovCodec
import Replay
import XCTest

/// ImprovProtocol: values into events, an RPC joined from several writes, problems, and the
/// password kept a `Secret` wherever the message is shown.
final class ImprovProtocolTests: XCTestCase {
    typealias T = ImprovTestSupport
    let settings = ImprovTestSupport.hex("011e0c4d79576972656c6573734150106d7973656375726570617373776f7264c0")

    func testRegisteredWithItsCharacteristicsAndServices() throws {
        let type = try XCTUnwrap(GATTLabProtocols.all.named("improv"))
        XCTAssertTrue(type == ImprovProtocol.self)
        XCTAssertEqual(type.shortName, "improv")
        XCTAssertEqual(type.characteristics.count, 5)
        XCTAssertTrue(GATTLabProtocols.all.protocols(advertising: Improv.service).contains("improv"))
        XCTAssertTrue(GATTLabProtocols.all.protocols(advertising: BluetoothUUID(uuid16: 0x4677)).contains("improv"))
        XCTAssertTrue(GATTLabProtocols.all.isSecretBearing(Improv.rpcCommand))
        let table = try XCTUnwrap(ImprovProtocol.builtInAttributeTable?.table)
        XCTAssertEqual(table.characteristics.values.map(\.uuid).filter(ImprovProtocol.characteristics.contains).count, 5)
    }

    func testValuesBecomeEvents() {
        var p = ImprovProtocol()
        XCTAssertEqual((p.decode(T.value(Improv.currentState, [0x01], .notify)).first?.message as? Improv.CurrentState)?.state.name, "AUTHORIZATION_REQUIRED")
        XCTAssertEqual((p.decode(T.value(Improv.errorState, [0x03], .notify)).first?.message as? Improv.ErrorState)?.error.name, "UNABLE_TO_CONNECT")
        XCTAssertEqual((p.decode(T.value(Improv.capabilities, [0x01], .read)).first?.message as? Improv.Capabilities)?.names, ["IDENTIFY"])
        let command = p.decode(T.value(Improv.rpcCommand, settings))
        XCTAssertEqual(command.first?.kind, "improv.command")
        XCTAssertEqual((command.first?.message as? Improv.Command)?.writes, 1)
        let result = p.decode(T.value(Improv.rpcResult, T.hex("040004"), .notify))
        XCTAssertEqual(result.first?.kind, "improv.result")
        XCTAssertEqual(p.decode(T.value(Improv.currentState, [0x02], .write)).first?.problems.map(\.id), ["improv.write-to-read-only"])
    }

    /// A client cuts WIFI_SETTINGS into 20-byte writes: one event, from the first write's record
    /// to the last, with the password located across both.
    func testAnRPCSplitAcrossWritesIsJoined() throws {
        var p = ImprovProtocol()
        var first = T.value(Improv.rpcCommand, Array(settings[..<20]), frame: 10)
        first.origin = ByteOrigin(record: 10, offset: 9, count: 20)
        XCTAssertEqual(p.decode(first).count, 0, "the first piece waits for the rest")
        var second = T.value(Improv.rpcCommand, Array(settings[20...]), frame: 12)
        second.origin = ByteOrigin(record: 12, offset: 9, count: settings.count - 20)
        let events = p.decode(second)
        XCTAssertEqual(events.count, 1)
        let e = try XCTUnwrap(events.first)
        XCTAssertEqual(e.firstFrame, 10)
        XCTAssertEqual(e.frame, 12)
        XCTAssertEqual(e.problems, [])
        let c = try XCTUnwrap(e.message as? Improv.Command)
        XCTAssertEqual(c.writes, 2)
        XCTAssertEqual(c.ssid, Array("MyWirelessAP".utf8))
        XCTAssertEqual(c.password?.unsafeBytes, Array("mysecurepassword".utf8))
        // The password (frame bytes 16..<32) lies in both writes' records.
        XCTAssertEqual(c.password?.location?.origin.records, [10, 12])
        // Then a whole command decodes on its own again.
        XCTAssertEqual((p.decode(T.value(Improv.rpcCommand, T.hex("020002"))).first?.message as? Improv.Command)?.writes, 1)
    }

    func testSplitInThreeAndUnfinishedAtDisconnection() throws {
        var p = ImprovProtocol()
        XCTAssertTrue(p.decode(T.value(Improv.rpcCommand, Array(settings[..<5]))).isEmpty)
        XCTAssertTrue(p.decode(T.value(Improv.rpcCommand, Array(settings[5..<15]))).isEmpty)
        XCTAssertEqual((p.decode(T.value(Improv.rpcCommand, Array(settings[15...]))).first?.message as? Improv.Command)?.writes, 3)

        XCTAssertTrue(p.decode(T.value(Improv.rpcCommand, Array(settings[..<10]))).isEmpty)
        let ended = p.connectionEnded(T.connection, frame: 40, time: 40_000, reason: "the link ended")
        XCTAssertEqual(ended.first?.problems.map(\.id), ["improv.command-unfinished"])
        XCTAssertNil(ended.first?.message)
    }

    /// A command without its checksum byte is held until the next write tells: one byte is the
    /// checksum of a command cut just before it; another command means it had none.
    func testACommandOneByteShortWaitsForTheNextWrite() throws {
        var p = ImprovProtocol()
        XCTAssertTrue(p.decode(T.value(Improv.rpcCommand, Array(settings.dropLast()), frame: 1)).isEmpty)
        let joined = try XCTUnwrap(p.decode(T.value(Improv.rpcCommand, [settings.last ?? 0], frame: 2)).first)
        XCTAssertEqual((joined.message as? Improv.Command)?.checksum, .valid)
        XCTAssertEqual((joined.message as? Improv.Command)?.writes, 2)

        XCTAssertTrue(p.decode(T.value(Improv.rpcCommand, [0x03, 0x00], frame: 3)).isEmpty)
        let two = p.decode(T.value(Improv.rpcCommand, [0x02, 0x00, 0x02], frame: 4))
        XCTAssertEqual(two.map { ($0.message as? Improv.Command)?.command.raw }, [3, 2])
        XCTAssertEqual((two.first?.message as? Improv.Command)?.checksum, .absent)
        XCTAssertEqual(two.first?.problems.map(\.id), ["improv.checksum-missing"])

        XCTAssertTrue(p.decode(T.value(Improv.rpcCommand, [0x04, 0x00], frame: 5)).isEmpty)
        let ended = p.connectionEnded(T.connection, frame: 6, time: 6000, reason: "the link ended")
        XCTAssertEqual((ended.first?.message as? Improv.Command)?.command.raw, 4)
    }

    /// Seen one write at a time, the pieces of a split WIFI_SETTINGS still say where the
    /// password lies: its part in the first piece, the whole of a continuation.
    func testCredentialsInThePiecesOfASplitCommand() throws {
        let first = Array(settings[..<20]), rest = Array(settings[20...])
        let a = try XCTUnwrap(ImprovProtocol.credentials(in: first, characteristic: Improv.rpcCommand, endpoint: nil))
        XCTAssertEqual(a.format, "improv-wifi-settings-piece")
        XCTAssertEqual(a.secret, [16..<20])
        XCTAssertEqual(a.ssid, Array("MyWirelessAP".utf8))
        let b = try XCTUnwrap(ImprovProtocol.credentials(in: rest, characteristic: Improv.rpcCommand, endpoint: nil))
        XCTAssertEqual(b.secret, [0..<rest.count])
        XCTAssertNil(ImprovProtocol.credentials(in: T.hex("020002"), characteristic: Improv.rpcCommand, endpoint: nil))
        XCTAssertNil(ImprovProtocol.credentials(in: [0x05, 0x04, 0x03], characteristic: Improv.rpcCommand, endpoint: nil))
    }

    /// `--set` on a WIFI_SETTINGS cut across writes: the pieces that make the frame are joined,
    /// rebuilt and cut again at the longest recorded piece; pieces that do not make one frame
    /// are left alone; a redacted SSID that ran past the first piece must be given.
    func testACutWiFiSettingsIsRebuiltWholeForSet() throws {
        let pieces = [Array(settings[..<20]), Array(settings[20...])]
        let set = CredentialSettings(["password": "0123456789abcdefghijklmnopqrstuvwxyz"])
        let cut = try XCTUnwrap(try ImprovProtocol.rebuildCutCredentials(pieces + [[0x02, 0x00, 0x02]], format: "improv-wifi-settings-piece",
                                                                          redacted: false, settings: set))
        XCTAssertEqual(cut.consumed, 2, "the next command is not part of it")
        XCTAssertEqual(cut.pieces.map(\.count), [20, 20, 13])
        let c = try XCTUnwrap(Improv.Command.decode(cut.pieces.flatMap { $0 }).0)
        XCTAssertEqual(c.password?.unsafeBytes, Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8))
        XCTAssertEqual(c.ssid, Array("MyWirelessAP".utf8))
        XCTAssertEqual(c.checksum, .valid)
        let same = try XCTUnwrap(try ImprovProtocol.rebuildCutCredentials(pieces, format: "improv-wifi-settings-piece", redacted: false,
                                                                           settings: CredentialSettings([:])))
        XCTAssertEqual(same.pieces, pieces, "no --set: the recorded writes")
        XCTAssertNil(try ImprovProtocol.rebuildCutCredentials([pieces[0], pieces[1] + [0]], format: "improv-wifi-settings-piece",
                                                              redacted: false, settings: set), "a piece that overruns the frame")
        XCTAssertNil(try ImprovProtocol.rebuildCutCredentials(pieces, format: "speaker-credentials", redacted: false, settings: set))
        // An SSID of 18 bytes runs past a first piece of 20 (3 header bytes).
        let long = Improv.Command.wifiSettings(ssid: Array("ABCDEFGHIJKLMNOPQR".utf8), password: Array("secret-pass".utf8)).encode() ?? []
        XCTAssertThrowsError(try ImprovProtocol.rebuildCutCredentials([Array(long[..<20]), Array(long[20...])], format: "improv-wifi-settings-piece",
                                                                      redacted: true, settings: set)) { error in
            guard case CredentialRebuildError.needs("ssid") = error else { return XCTFail("\(error)") }
        }
    }

    func testBadFramesBecomeProblems() {
        var p = ImprovProtocol()
        var bad = settings
        bad[bad.count - 1] &+= 1
        let e = p.decode(T.value(Improv.rpcCommand, bad))
        XCTAssertNil(e.first?.message)
        XCTAssertEqual(e.first?.problems.map(\.id), ["improv.bad-checksum"])
        XCTAssertEqual(p.decode(T.value(Improv.rpcCommand, [0x09, 0x00, 0x09])).first?.problems.map(\.id), ["improv.unknown-command"])
        XCTAssertEqual(p.decode(T.value(Improv.rpcCommand, [0x02, 0x00, 0x02, 0xAA])).first?.problems.map(\.id), ["improv.frame-trailing"])
        XCTAssertEqual(p.decode(T.value(Improv.rpcResult, [0x01, 0x05, 0x00], .notify)).first?.problems.map(\.id), ["improv.frame-cut"])
    }

    /// Whatever describes a decoded command, the password is `<redacted:N bytes>`.
    func testThePasswordIsRedactedInEveryDescription() throws {
        var p = ImprovProtocol()
        let e = try XCTUnwrap(p.decode(T.value(Improv.rpcCommand, settings)).first)
        let c = try XCTUnwrap(e.message as? Improv.Command)
        for text in ["\(c)", String(reflecting: c), "\(e)", String(describing: c.password)] {
            XCTAssertFalse(text.contains("mysecurepassword"), text)
        }
        XCTAssertTrue("\(c)".contains("<redacted:16 bytes>"), "\(c)")
        XCTAssertEqual(GATTLabProtocols.all.redactingCredentials(settings, characteristic: Improv.rpcCommand, endpoint: nil),
                       Array(settings[..<16]) + [UInt8](repeating: 0x2A, count: 16) + [settings[32]])
    }
}
