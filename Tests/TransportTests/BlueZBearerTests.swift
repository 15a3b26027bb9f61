import CBlueZ
import Foundation
import XCTest
@testable import Transport

#if canImport(Glibc)
import Glibc
#endif

/// The bluez: bearer without a kernel link: the socket address handed to the kernel, and failing
/// fast with a clear message where the kernel cannot help.
final class BlueZBearerTests: XCTestCase {
    /// What the kernel reads: family, no PSM, bdaddr_t (bytes reversed), CID 4 little-endian, type.
    func testSocketAddressLayout() throws {
        let address = try XCTUnwrap(BlueZAddress("AA:BB:CC:DD:EE:FF"))
        XCTAssertEqual(MemoryLayout<sockaddr_l2>.size, 14)
        for (type, kernelType) in [(BlueZAddressType.public, UInt8(1)), (.random, UInt8(2))] {
            let l2 = l2Address(address, type: type)
            let bytes = withUnsafeBytes(of: l2) { Array($0.prefix(13)) }
            XCTAssertEqual(bytes, [31, 0, 0, 0, 0xFF, 0xEE, 0xDD, 0xCC, 0xBB, 0xAA, 4, 0, kernelType], "\(type)")
            XCTAssertEqual(Int32(l2.l2_family), AF_BLUETOOTH)
            XCTAssertEqual(gattlab_btohs(l2.l2_cid), 4)
            XCTAssertEqual(l2.l2_psm, 0)
        }
        XCTAssertEqual(BlueZAddressType.public.kernelValue, UInt8(BDADDR_LE_PUBLIC))
        XCTAssertEqual(BlueZAddressType.random.kernelValue, UInt8(BDADDR_LE_RANDOM))
        XCTAssertEqual(BlueZAddressType(kernelValue: 2), .random)
        XCTAssertNil(BlueZAddressType(kernelValue: 0), "BR/EDR is not an LE address type")
    }

    /// Durations in connect errors.
    func testTimesInMessages() {
        XCTAssertEqual(seconds(10_000_000), "10 s")
        XCTAssertEqual(seconds(2_500_000), "2.5 s")
        XCTAssertEqual(seconds(0), "0 s")
        XCTAssertEqual(seconds(-5), "0 s")
    }

    /// What the kernel of the machine running the tests should make of an absurd controller:
    /// without AF_BLUETOOTH (this project's build hosts) it says so; with it, no such controller.
    static var expectedFailure: String {
        let probe = socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue), BTPROTO_L2CAP)
        if probe < 0, errno == EAFNOSUPPORT {
            return "this kernel has no Bluetooth support (AF_BLUETOOTH); use a machine with Bluetooth, or the VM harness"
        }
        if probe >= 0 { Glibc.close(probe) }
        return "no controller hci65000"
    }

    func testConnectFailsFastWithAClearMessage() async throws {
        let expected = Self.expectedFailure
        let target = BlueZTarget(controller: 65000, address: try XCTUnwrap(BlueZAddress("00:AA:01:01:00:01")))
        let start = Date()
        do {
            let bearer = try await BlueZBearer.connect(target, security: .low, timeout: 30_000_000)
            await bearer.close()
            XCTFail("connected to \(target)")
        } catch {
            guard case .failed(let message) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(message.hasPrefix(expected), message)
            XCTAssertFalse(message.contains("\n"), message)
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 5, "fails at once, not after the connect timeout")
    }

    func testListenerFailsFastWithAClearMessage() {
        let expected = Self.expectedFailure
        let start = Date()
        XCTAssertThrowsError(try BlueZListener(controller: 65000)) { error in
            guard case BearerError.failed(let message) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(message.hasPrefix(expected), message)
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
    }

    /// Two bearers joined by a Unix SEQPACKET pair, which keeps message boundaries as an L2CAP
    /// socket does.
    func bearerPair() throws -> (BlueZBearer, BlueZBearer) {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds), 0)
        let peer = BlueZTarget(controller: 0, address: try XCTUnwrap(BlueZAddress("00:AA:01:01:00:01")))
        return (BlueZBearer(fd: fds[0], peer: peer), BlueZBearer(fd: fds[1], peer: peer))
    }

    /// The message path over a Unix SEQPACKET pair, which keeps boundaries as the L2CAP socket does:
    /// the part of the bearer that does not need a Bluetooth kernel.
    func testMessagesTimeoutsAndCloseOverASeqpacketPair() async throws {
        let (a, b) = try bearerPair()

        try await a.send([0x02, 0x00, 0x02])
        try await a.send([])
        try await a.send([UInt8](repeating: 0x5A, count: maxBearerPDU))
        let first = try await b.receive()
        XCTAssertEqual(first, [0x02, 0x00, 0x02])
        let empty = try await b.receive(within: 1_000_000)
        XCTAssertEqual(empty, [], "an empty message is not a hang-up")
        let largest = try await b.receive()
        XCTAssertEqual(largest.count, maxBearerPDU)
        do {
            try await a.send([UInt8](repeating: 0, count: maxBearerPDU + 1))
            XCTFail("sent more than an SDU")
        } catch { XCTAssertEqual(error, .tooLarge(maxBearerPDU + 1)) }

        let start = await b.now()
        let nothing = try await b.receive(within: 50_000)
        XCTAssertNil(nothing)
        let waited = await b.now() - start
        XCTAssertGreaterThanOrEqual(waited, 40_000)

        // A receive waiting when the peer closes ends with .closed, not at its timeout.
        let pending = Task { try await b.receive(within: 30_000_000) }
        try await Task.sleep(nanoseconds: 20_000_000)
        await a.close()
        do {
            _ = try await pending.value
            XCTFail("received after the peer closed")
        } catch { XCTAssertEqual(error as? BearerError, .closed) }
        do {
            try await a.send([1])
            XCTFail("sent after close")
        } catch { XCTAssertEqual(error, .closed) }
        XCTAssertNil(a.securityLevel, "closed")

        // Closing our own end ends our waiting receive too.
        let own = Task { try await b.receive(within: 30_000_000) }
        await b.close()
        do {
            _ = try await own.value
            XCTFail("received after close")
        } catch { XCTAssertEqual(error as? BearerError, .closed) }
        let took = await b.now() - start
        XCTAssertLessThan(took, 5_000_000, "closing wakes waiting receives")
    }

    /// HCI Disconnect takes only the reasons a host may give: a device's supervision timeout (its
    /// reset) becomes "powered off", anything else not allowed "the user ended it".
    func testDisconnectReasonsAreOnesAHostMayGive() {
        for allowed: UInt8 in [0x05, 0x13, 0x14, 0x15, 0x1A, 0x29, 0x3B] {
            XCTAssertEqual(BlueZBearer.disconnectReason(for: allowed), allowed)
        }
        XCTAssertEqual(BlueZBearer.disconnectReason(for: 0x08), 0x15)
        for other: UInt8 in [0x00, 0x16, 0x22, 0x3E, 0xFF] {
            XCTAssertEqual(BlueZBearer.disconnectReason(for: other), 0x13)
        }
    }

    /// A socket that is no L2CAP link has no link handle: ending the link only closes the socket
    /// (the peer sees it go), without an HCI command or an error.
    func testEndingALinkWithoutAHandleClosesTheSocket() async throws {
        let (a, b) = try bearerPair()
        XCTAssertNil(a.linkHandle)
        try await a.disconnectLink(reason: 0x08)
        do {
            _ = try await b.receive(within: 5_000_000)
            XCTFail("received after the peer ended the link")
        } catch { XCTAssertEqual(error, .closed) }
        await b.hangUp(reason: 0x13)  // the served side's way; closes as well
        do {
            try await b.send([1])
            XCTFail("sent after hanging up")
        } catch { XCTAssertEqual(error, .closed) }
    }
}
