import ATT
import HCI
import XCTest
@testable import Report

/// The pieces decode output is made of, tested where they live (Report) rather than only
/// through the binary: the buffered writer's number and string formats, the filters as the
/// command line gives them, and how PDU values read.
final class DecodeOutputTests: XCTestCase {
    /// What a BufferedOutput writes, read back through a pipe.
    private func written(_ body: (BufferedOutput) -> Void) throws -> String {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]) }
        do {
            let out = BufferedOutput(fd: fds[1])
            body(out)
            out.flush()
        }
        close(fds[1])
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fds[0], &chunk, chunk.count)
            if n <= 0 { break }
            bytes += chunk[..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    func testIntegersSecondsAndHex() throws {
        let text = try written { out in
            for v in [0, 7, 10, 1234567890, -42, Int.min] { out.int(v); out.byte(0x20) }
            for m: Int64 in [0, 1_250_000, -300, 12_000_001] { out.seconds(m); out.byte(0x20) }
            out.hex([0x00, 0x0f, 0xa5, 0xff])
        }
        XCTAssertEqual(text, "0 7 10 1234567890 -42 -9223372036854775808 0.000000 1.250000 -0.000300 12.000001 000fa5ff")
    }

    func testJSONStringsAreEscaped() throws {
        let text = try written { out in
            out.jsonString("plain")
            out.jsonString("a\"b\\c\nd\te\r\u{01}é")
        }
        XCTAssertEqual(text, #""plain""a\"b\\c\nd\te\r\u0001é""#)
    }

    func testLinesEndInNewline() throws {
        XCTAssertEqual(try written { $0.line("one"); $0.line("two") }, "one\ntwo\n")
    }

    /// A write that fails (here a full disk, /dev/full) is kept for the caller to report: an
    /// output file must never be left short without an error.
    func testAFailedWriteIsKept() throws {
        let fd = open("/dev/full", O_WRONLY)
        try XCTSkipIf(fd < 0, "no /dev/full here")
        defer { close(fd) }
        let out = BufferedOutput(fd: fd)
        out.line("a line")
        XCTAssertEqual(out.failure, 0, "nothing is written before a flush")
        out.flush()
        XCTAssertEqual(out.failure, ENOSPC)
        out.line("more")
        out.flush()
        XCTAssertEqual(out.failure, ENOSPC, "the first failure is the one kept")
        let fine = BufferedOutput(fd: open("/dev/null", O_WRONLY))
        fine.line("a line")
        fine.flush()
        XCTAssertEqual(fine.failure, 0)
    }

    func testStyleColoursOnlyWhenEnabled() {
        XCTAssertEqual(Style(enabled: false).red("x"), "x")
        XCTAssertEqual(Style(enabled: true).red("x"), "\u{1B}[31mx\u{1B}[0m")
        XCTAssertEqual(Style(enabled: true).dim("x"), "\u{1B}[2mx\u{1B}[0m")
    }

    func testConnectionFilter() throws {
        let plain = try XCTUnwrap(ConnectionFilter(argument: "0x40"))
        XCTAssertNil(plain.controller)
        XCTAssertTrue(plain.matches(ConnectionKey(controller: 0, handle: 64)))
        XCTAssertTrue(plain.matches(ConnectionKey(controller: 1, handle: 64)))
        XCTAssertFalse(plain.matches(ConnectionKey(controller: 0, handle: 65)))

        let onHCI1 = try XCTUnwrap(ConnectionFilter(argument: "HCI1/64"))
        XCTAssertTrue(onHCI1.matches(ConnectionKey(controller: 1, handle: 64)))
        XCTAssertFalse(onHCI1.matches(ConnectionKey(controller: 0, handle: 64)))

        let sniffed = try XCTUnwrap(ConnectionFilter(argument: "aa:0x50654b3c"))
        XCTAssertTrue(sniffed.matches(ConnectionKey(accessAddress: 0x5065_4B3C)))
        XCTAssertFalse(sniffed.matches(ConnectionKey(controller: 0, handle: 0x4B3C)))

        for bad in ["", "zz", "hcix/1", "0x100000000", "aa:"] {
            XCTAssertNil(ConnectionFilter(argument: bad), bad)
        }
    }

    func testHandleFilter() {
        XCTAssertEqual(HandleFilter(argument: "0x000E")?.handle, 14)
        XCTAssertEqual(HandleFilter(argument: "65535")?.handle, 0xFFFF)
        XCTAssertNil(HandleFilter(argument: "65536"))
        XCTAssertNil(HandleFilter(argument: "-1"))
    }

    func testUUIDFilterByNumberAndByName() throws {
        let battery = try XCTUnwrap(BluetoothUUID(string: "2a19"))
        XCTAssertTrue(try XCTUnwrap(UUIDFilter(argument: "2A19")).matches(battery))
        XCTAssertTrue(try XCTUnwrap(UUIDFilter(argument: "battery level")).matches(battery))
        XCTAssertFalse(try XCTUnwrap(UUIDFilter(argument: "2a1a")).matches(battery))
        XCTAssertFalse(try XCTUnwrap(UUIDFilter(argument: "2a19")).matches(nil))
    }

    func testValuesAndHandlesRead() {
        XCTAssertEqual(PDUDetails.handle(0x2A), "0x002a")
        XCTAssertEqual(PDUDetails.value([], secret: false, reveal: false), "(empty)")
        XCTAssertEqual(PDUDetails.value([0x68, 0x69, 0x00], secret: false, reveal: false), "68 69 00  \"hi.\"")
        XCTAssertEqual(PDUDetails.value([1, 2, 3], secret: true, reveal: false), "<redacted:3 bytes>")
        XCTAssertEqual(PDUDetails.value([1, 2, 3], secret: true, reveal: true), "01 02 03")
        let long = PDUDetails.value([UInt8](repeating: 0x01, count: 70), secret: false, reveal: false)
        XCTAssertTrue(long.hasSuffix(" …(70 bytes)"), long)
    }
}
