import ATT
import Emulator
import HCI
import Profiles
@testable import Replay
import XCTest

/// Replay names no protocol: what it knows of a value comes from the `ReplayingProtocol` types of
/// the set it is given. A protocol of the test's own (a counter that notifies `n/10`) shows that
/// a new protocol plugs in through the hook alone, and that without it values compare as bytes.
final class ReplayingProtocolTests: XCTestCase {
    static let counter = BluetoothUUID(string: "12345678-0000-1000-8000-00805f9b34fb")!

    /// Notifies `STEP n/10`, then `DONE` or `FAIL`; the step number is its progress.
    struct CounterProtocol: ReplayingProtocol {
        static let name = "counter"
        static let characteristics: Set<BluetoothUUID> = [counter]
        init() {}
        mutating func decode(_ value: ProfileValue) -> [ProfileEvent] { [] }
        mutating func connectionEnded(_ connection: ConnectionKey, frame: Int, time: Int64, reason: String) -> [ProfileEvent] { [] }

        static func describe(_ bytes: [UInt8], characteristic: BluetoothUUID, written: Bool) -> String? {
            characteristic == counter ? "counter " + String(decoding: bytes, as: UTF8.self) : nil
        }

        static func sameMeaning(recorded: [UInt8], observed: [UInt8], characteristic: BluetoothUUID, progress: Bool) -> Bool {
            characteristic == counter && recorded.starts(with: Array("STEP".utf8)) && observed.starts(with: Array("STEP".utf8))
        }

        static func progressReader(for characteristic: BluetoothUUID) -> (any ProgressReading)? {
            characteristic == counter ? Reader() : nil
        }

        struct Reader: ProgressReading {
            var style: ProgressStyle { .phases }
            mutating func read(_ value: [UInt8]) -> ProgressStep {
                let text = String(decoding: value, as: UTF8.self)
                guard text.hasPrefix("STEP ") else { return ProgressStep(phase: text, terminal: true) }
                let n = Int(text.dropFirst(5).prefix { $0 != "/" }) ?? 0
                return ProgressStep(phase: "counting", progress: n * 10, progressPhase: "counting", terminal: false)
            }
        }

        static func rebuildCredentials(_ recorded: [UInt8], format: String, redacted: Bool,
                                       settings: CredentialSettings) throws(CredentialRebuildError) -> [UInt8]? {
            guard format == "counter-secret" else { return nil }
            if redacted, settings.password == nil { throw .needs("password") }
            return settings.password ?? recorded
        }
    }

    let counterSet = ProtocolSet([CounterProtocol.self])
    let none = ProtocolSet([])

    func testMeaningsComeFromTheHook() {
        let (a, b) = (Array("STEP 1/10".utf8), Array("STEP 7/10".utf8))
        XCTAssertEqual(ValueMeaning.describe(a, characteristic: Self.counter, written: false, protocols: counterSet), "counter STEP 1/10")
        XCTAssertNil(ValueMeaning.difference(recorded: a, observed: b, characteristic: Self.counter, protocols: counterSet))
        XCTAssertEqual(ValueMeaning.difference(recorded: a, observed: Array("FAIL".utf8), characteristic: Self.counter, protocols: counterSet),
                       "recorded counter STEP 1/10, observed counter FAIL")
        // Without the protocol the bytes are all there is.
        XCTAssertNil(ValueMeaning.describe(a, characteristic: Self.counter, written: false, protocols: none))
        XCTAssertEqual(ValueMeaning.difference(recorded: a, observed: b, characteristic: Self.counter, protocols: none),
                       "recorded \(Hex.string(a)), observed \(Hex.string(b))")
    }

    func testProgressFoldsThroughTheReader() throws {
        XCTAssertNil(ProgressFold(characteristic: Self.counter, protocols: none), "no reader: compared one to one")
        var recorded = try XCTUnwrap(ProgressFold(characteristic: Self.counter, protocols: counterSet))
        var observed = recorded
        for v in ["STEP 1/10", "STEP 2/10", "STEP 3/10", "DONE"] { recorded.add(Array(v.utf8)) }
        for v in ["STEP 2/10", "DONE"] { observed.add(Array(v.utf8)) }
        XCTAssertEqual(recorded.phases, ["counting", "DONE"])
        XCTAssertTrue(observed.reached(recorded))
        XCTAssertTrue(observed.differences(from: recorded).isEmpty, "another cadence, the same progress")
        XCTAssertEqual(observed.tolerated(against: recorded, name: "counter"), ["counter: 4 notifications recorded, 2 observed"])

        var fell = try XCTUnwrap(ProgressFold(characteristic: Self.counter, protocols: counterSet))
        for v in ["STEP 5/10", "STEP 2/10", "FAIL"] { fell.add(Array(v.utf8)) }
        let why = fell.differences(from: recorded).map(\.why)
        XCTAssertTrue(why.contains("progress fell from 50 % to 20 % while counting"), "\(why)")
        XCTAssertTrue(why.contains { $0.hasPrefix("recorded counting -> DONE, observed counting -> FAIL: the protocol ends in FAIL") }, "\(why)")
    }

    func testCredentialsAreRebuiltByTheProtocolThatOwnsTheFormat() throws {
        let field = ReplayStep.CredentialField(format: "counter-secret", fields: ["password"], ssid: nil, redacted: true)
        XCTAssertEqual(try CredentialValues.rebuild([0x2A], field, settings: ["password": "x"], step: 3, protocols: counterSet), [0x78])
        XCTAssertThrowsError(try CredentialValues.rebuild([0x2A], field, settings: [:], step: 3, protocols: counterSet)) { error in
            XCTAssertEqual("\(error)", "step 3 writes counter-secret whose password was redacted at extraction; give it with --set password=...")
        }
        XCTAssertThrowsError(try CredentialValues.rebuild([0x2A], field, settings: ["password": "x"], step: 3, protocols: none)) { error in
            XCTAssertEqual("\(error)", "step 3: unknown credentials format 'counter-secret'")
        }
    }
}
