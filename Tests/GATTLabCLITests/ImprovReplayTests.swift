import Foundation
import XCTest

/// Improv sessions replayed against emulated devices, at both MTUs: at 23 the phone writes
/// WIFI_SETTINGS in pieces and the device cuts its results at 20 bytes, which the replay must read
/// as the recording's device did (the Wi-Fi world from the pieces joined, a cut result by the
/// strings that arrived) instead of calling every such session diverged.
final class ImprovReplayTests: XCTestCase {
    static let emulated = Harness.root.appendingPathComponent("Captures/emulated")

    func testEveryImprovRecordingReplaysAgainstItsScenariosDevice() throws {
        let captures = try FileManager.default.contentsOfDirectory(atPath: Self.emulated.path)
            .filter { $0.hasPrefix("improv-") && $0.hasSuffix(".btsnoop") }.sorted()
        XCTAssertEqual(captures.count, 12, "\(captures)")
        for name in captures {
            let scenario = name.replacingOccurrences(of: #"-mtu\d+\.btsnoop$"#, with: "", options: .regularExpression)
            let r = try Harness.gattlab(["replay", "run", Self.emulated.appendingPathComponent(name).path, "--target", "emu:\(scenario)"])
            XCTAssertEqual(r.status, 0, "\(name) against emu:\(scenario):\n\(r.stdout)\(r.stderr)")
        }
    }

    func testADeviceThatNeverAuthorizesDiverges() throws {
        for mtu in [23, 247] {
            let path = Self.emulated.appendingPathComponent("improv-provision-mtu\(mtu).btsnoop").path
            let r = try Harness.gattlab(["replay", "run", path, "--target", "emu:improv-not-authorized"])
            XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
            XCTAssertTrue(r.stdout.contains("AUTHORIZATION_REQUIRED"), r.stdout)
        }
    }
}
