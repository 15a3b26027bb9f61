import CBlueZ
import XCTest
@testable import Transport

/// `bluez:` target text, device addresses against libbluetooth's byte order, security levels.
final class BlueZTargetTests: XCTestCase {
    func testParsesTargets() throws {
        let plain = try BlueZTarget(parsing: "hci0/AA:BB:CC:DD:EE:FF")
        XCTAssertEqual(plain.controller, 0)
        XCTAssertEqual(plain.address.bytes, [0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF])
        XCTAssertEqual(plain.addressType, .public, "public unless told")
        XCTAssertEqual(plain.description, "hci0/AA:BB:CC:DD:EE:FF/public")

        let random = try BlueZTarget(parsing: "hci65535/c0:00:0a:Bc:de:01/random")
        XCTAssertEqual(random.controller, 65535)
        XCTAssertEqual(random.address.bytes, [0xC0, 0x00, 0x0A, 0xBC, 0xDE, 0x01])
        XCTAssertEqual(random.addressType, .random)
        XCTAssertEqual(random.description, "hci65535/C0:00:0A:BC:DE:01/random")

        XCTAssertEqual(try BlueZTarget(parsing: "hci1/00:AA:01:00:00:00/public").addressType, .public)
        for target in [plain, random] {
            XCTAssertEqual(try BlueZTarget(parsing: target.description), target, "description parses back")
        }
    }

    func testRejectsBadTargetsSayingWhatIsWrong() {
        let form = "expected hciN/AA:BB:CC:DD:EE:FF[/public|random]"
        let controller = "the controller must be hciN with N from 0 to 65535"
        let address = "the address must be six hex bytes like AA:BB:CC:DD:EE:FF"
        let type = "the address type must be public or random"
        let cases: [(String, String)] = [
            ("", "empty; \(form)"),
            ("hci0", "a controller and an address separated by '/'"),
            ("AA:BB:CC:DD:EE:FF", "a controller and an address separated by '/'"),
            ("hci0/AA:BB:CC:DD:EE:FF/public/x", "too many '/' parts"),
            ("hci/AA:BB:CC:DD:EE:FF", controller),
            ("hcix/AA:BB:CC:DD:EE:FF", "\(controller), like hci0, not 'hcix'"),
            ("HCI0/AA:BB:CC:DD:EE:FF", controller),
            ("hci65536/AA:BB:CC:DD:EE:FF", controller),
            ("hci-1/AA:BB:CC:DD:EE:FF", controller),
            ("hci+1/AA:BB:CC:DD:EE:FF", controller),
            ("hci 0/AA:BB:CC:DD:EE:FF", controller),
            ("hci000001/AA:BB:CC:DD:EE:FF", controller),
            ("hci0/AA:BB", address),
            ("hci0/", address),
            ("hci0/AA:BB:CC:DD:EE:FG", address),
            ("hci0/AA:BB:CC:DD:EE:F", address),
            ("hci0/AA:BB:CC:DD:EE:FFF", address),
            ("hci0/AABBCCDDEEFF", address),
            ("hci0/AA:BB:CC:DD:EE:FF:00", address),
            ("hci0/AA-BB-CC-DD-EE-FF", address),
            ("hci0/AA:BB:CC:DD:EE:+F", address),
            ("hci0/AA:BB:CC:DD::FF", address),
            ("hci0/ AA:BB:CC:DD:EE:FF", address),
            ("hci0/AA:BB:CC:DD:EE:FF/", "\(type), not ''"),
            ("hci0/AA:BB:CC:DD:EE:FF/static", "\(type), not 'static'"),
            ("hci0/AA:BB:CC:DD:EE:FF/Public", type),
        ]
        for (text, expected) in cases {
            XCTAssertThrowsError(try BlueZTarget(parsing: text), text) { error in
                guard case BearerError.failed(let message) = error else { return XCTFail("\(text): \(error)") }
                XCTAssertTrue(message.hasPrefix("bluez target '\(text)': "), message)
                XCTAssertTrue(message.contains(expected), "\(text): \(message)")
            }
        }
        XCTAssertThrowsError(try BlueZTarget(parsing: "hci0/AA:BB")) { error in
            XCTAssertEqual("\(error)", "bluez target 'hci0/AA:BB': the address must be six hex bytes like AA:BB:CC:DD:EE:FF")
        }
    }

    func testErrorMessagesDoNotCarryControlCharacters() {
        XCTAssertThrowsError(try BlueZTarget(parsing: "hci0/\u{1B}[2J\n")) { error in
            let message = String(describing: error)
            XCTAssertFalse(message.unicodeScalars.contains { $0.properties.generalCategory == .control }, message)
            XCTAssertTrue(message.contains("\\u{1b}[2J\\u{a}"), message)
        }
        XCTAssertThrowsError(try BlueZTarget(parsing: String(repeating: "x", count: 10_000))) { error in
            XCTAssertLessThan(String(describing: error).count, 300, "long input is cut in the message")
        }
    }

    /// libbluetooth's own str2ba/ba2str are the reference for the byte order of bdaddr_t.
    func testAddressMatchesLibbluetooth() throws {
        for text in ["AA:BB:CC:DD:EE:FF", "00:AA:01:00:00:01", "C0:00:00:00:00:01"] {
            let address = try XCTUnwrap(BlueZAddress(text))
            var reference = bdaddr_t()
            XCTAssertEqual(str2ba(text, &reference), 0)
            var ours = address.bdaddr
            XCTAssertEqual(bacmp(&ours, &reference), 0, text)
            var buffer = [CChar](repeating: 0, count: 18)
            _ = ba2str(&ours, &buffer)
            XCTAssertEqual(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), text)
            XCTAssertEqual(BlueZAddress(reference), address, "back from bdaddr_t")
        }
        XCTAssertNil(BlueZAddress(bytes: [1, 2, 3]))
        XCTAssertEqual(BlueZAddress(bytes: [0, 1, 2, 3, 4, 0xAB])?.description, "00:01:02:03:04:AB")
    }

    func testSecurityLevels() {
        XCTAssertEqual(BlueZSecurity.low.level, 1)
        XCTAssertEqual(BlueZSecurity.medium.level, 2)
        XCTAssertEqual(BlueZSecurity.high.level, 3)
        XCTAssertEqual(BlueZSecurity.allCases.map { Int32($0.level) }, [BT_SECURITY_LOW, BT_SECURITY_MEDIUM, BT_SECURITY_HIGH])
        for security in BlueZSecurity.allCases {
            XCTAssertEqual(BlueZSecurity(level: security.level), security)
            XCTAssertEqual(BlueZSecurity(rawValue: security.rawValue), security)
        }
        XCTAssertNil(BlueZSecurity(level: UInt8(BT_SECURITY_SDP)))
        XCTAssertNil(BlueZSecurity(level: UInt8(BT_SECURITY_FIPS)))
        XCTAssertEqual(BlueZSecurity(rawValue: "medium"), .medium)
    }
}
