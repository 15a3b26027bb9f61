import TestSupport
import Foundation
import XCTest

@testable import Capture

/// Byte builders, temp files and a reader loop shared by the capture tests.

extension Array where Element == UInt8 {
    mutating func be32(_ v: UInt32) { append(contentsOf: [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]) }
    mutating func le32(_ v: UInt32) { append(contentsOf: [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8(v >> 24)]) }
    mutating func be16(_ v: UInt16) { append(contentsOf: [UInt8(v >> 8), UInt8(v & 0xFF)]) }
    mutating func le16(_ v: UInt16) { append(contentsOf: [UInt8(v & 0xFF), UInt8(v >> 8)]) }
    mutating func be64(_ v: Int64) {
        let u = UInt64(bitPattern: v)
        be32(UInt32(u >> 32)); be32(UInt32(u & 0xFFFF_FFFF))
    }
}

/// btsnoop's epoch: microseconds from 0000-01-01 to 1970-01-01.
let btsnoopEpoch: Int64 = 0x00DC_DDB3_0F2F_8000

enum BTSnoopBytes {
    static func header(datalink: UInt32, version: UInt32 = 1) -> [UInt8] {
        var b = Array("btsnoop\0".utf8)
        b.be32(version)
        b.be32(datalink)
        return b
    }

    /// One record: original length, included length, flags, drops, timestamp (Unix µs), data.
    static func record(_ data: [UInt8], flags: UInt32, unixMicros: Int64, original: Int? = nil, drops: UInt32 = 0) -> [UInt8] {
        var b: [UInt8] = []
        b.be32(UInt32(original ?? data.count))
        b.be32(UInt32(data.count))
        b.be32(flags)
        b.be32(drops)
        b.be64(unixMicros + btsnoopEpoch)
        return b + data
    }
}

enum PklgBytes {
    /// One PacketLogger record: length (9 + payload), seconds, microseconds, type, payload.
    static func record(_ payload: [UInt8], type: UInt8, seconds: UInt32, micros: UInt32, bigEndian: Bool) -> [UInt8] {
        var b: [UInt8] = []
        let length = UInt32(9 + payload.count)
        if bigEndian { b.be32(length); b.be32(seconds); b.be32(micros) } else { b.le32(length); b.le32(seconds); b.le32(micros) }
        b.append(type)
        return b + payload
    }
}

enum PcapBytes {
    /// A little-endian microsecond pcap global header.
    static func header(dlt: UInt32, snaplen: UInt32 = 65535) -> [UInt8] {
        var b: [UInt8] = []
        b.le32(0xA1B2_C3D4)
        b.le16(2); b.le16(4)
        b.le32(0); b.le32(0)
        b.le32(snaplen)
        b.le32(dlt)
        return b
    }

    static func record(_ data: [UInt8], seconds: UInt32, micros: UInt32, original: Int? = nil) -> [UInt8] {
        var b: [UInt8] = []
        b.le32(seconds); b.le32(micros)
        b.le32(UInt32(data.count)); b.le32(UInt32(original ?? data.count))
        return b + data
    }
}

/// A record copied out of the reader's buffer.
struct Rec: Equatable {
    var number: Int
    var fileOffset: Int64
    var timestamp: Int64
    var controller: UInt16
    var direction: Direction
    var kind: RecordKind
    var rawType: UInt16
    var originalLength: Int
    var data: [UInt8]
    var linkLayer: LinkLayerInfo?

    init(_ r: CaptureRecord) {
        number = r.number; fileOffset = r.fileOffset; timestamp = r.timestamp; controller = r.controller
        direction = r.direction; kind = r.kind; rawType = r.rawType; originalLength = r.originalLength
        data = Array(r.data); linkLayer = r.linkLayer
    }
}

/// Everything a reader gives: the records before any error, and the error.
struct ReadResult {
    var format: CaptureFormat?
    var linkType: LinkType?
    var records: [Rec] = []
    var openError: CaptureError?
    var error: CaptureError?
}

/// Reads a whole capture; stops at the first error. `limit` guards against a reader that never ends.
func readAll(_ path: String, limit: Int = 1_000_000) -> ReadResult {
    var result = ReadResult()
    let reader: any CaptureReader
    do {
        reader = try openCapture(path)
    } catch {
        result.openError = error
        return result
    }
    result.format = reader.format
    result.linkType = reader.linkType
    do {
        while let r = try reader.next() {
            result.records.append(Rec(r))
            if result.records.count > limit { XCTFail("reader did not stop after \(limit) records: \(path)"); break }
        }
    } catch {
        result.error = error
    }
    return result
}

/// A private directory for one test, removed at the end.
final class TempDir {
    let path: String
    init() {
        let template = NSTemporaryDirectory() + "gattlab-capturetests-XXXXXX"
        var bytes = Array(template.utf8CString)
        let made = bytes.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        path = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }

    @discardableResult
    func write(_ name: String, _ bytes: [UInt8]) -> String {
        let p = file(name)
        writeFile(p, bytes)
        return p
    }

    var entries: [String] { (try? FileManager.default.contentsOfDirectory(atPath: path))?.sorted() ?? [] }
}

/// Writes (or replaces) a file; fails the test when it cannot.
func writeFile(_ path: String, _ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
    if !FileManager.default.createFile(atPath: path, contents: Data(bytes)) {
        XCTFail("cannot write \(path)", file: file, line: line)
    }
}

