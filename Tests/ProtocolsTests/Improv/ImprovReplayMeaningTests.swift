import ATT
import Profiles
@testable import Protocols
@testable import ImprovCodec
import XCTest

/// What replay counts as the same RPC result from another device. At MTU 23 both devices cut their
/// results at 20 bytes; a device info or redirect URL of another firmware is cut elsewhere (Bumble's
/// Improv peripheral, Tests/Bumble/improv_device.py, says "bumble-improv" where the recording says
/// "ESPHome"), which is as much the same answer as the whole frames are. Networks still compare by
/// the SSIDs that arrived.
final class ImprovReplayMeaningTests: XCTestCase {
    let hex = ImprovTestSupport.hex

    func same(_ recorded: String, _ observed: String) -> Bool {
        ImprovProtocol.sameMeaning(recorded: hex(recorded), observed: hex(observed), characteristic: Improv.rpcResult, progress: true)
    }

    func testCutResultsOfAnotherDeviceKeepTheirMeaning() {
        // GET_DEVICE_INFO: "ESPHome" "2024.6.0" cut vs "bumble-improv" "1.0" cut.
        XCTAssertTrue(same("032707455350486f6d6508323032342e362e3008", "03280d62756d626c652d696d70726f7605312e30"))
        // WIFI_SETTINGS' URL, cut before its only string ends in both.
        XCTAssertTrue(same("011a19687474703a2f2f696d70726f762d6c6967", "012120687474703a2f2f62756d626c652d696d70"))
    }

    func testCutResultsStillDifferByCommandNetworkOrDamage() {
        // Device info vs URL.
        XCTAssertFalse(same("032707455350486f6d6508323032342e362e3008", "012120687474703a2f2f62756d626c652d696d70"))
        // Two networks cut: the strings that arrived differ ("HomeNet" vs "HomeNot"), or are
        // the same ones cut at another byte.
        XCTAssertFalse(same("041f07486f6d654e6574032d353104575041", "041f07486f6d654e6f74032d353104575041"))
        XCTAssertTrue(same("041f07486f6d654e6574032d353104575041", "041f07486f6d654e6574032d3531045750"))
        // A whole frame with a wrong checksum is damaged, not cut.
        XCTAssertFalse(same("0300fe", "032707455350486f6d6508323032342e362e3008"))
        // Not the result characteristic, or not a progress comparison.
        XCTAssertFalse(ImprovProtocol.sameMeaning(recorded: hex("0300"), observed: hex("0300"), characteristic: Improv.rpcCommand, progress: true))
    }
}
