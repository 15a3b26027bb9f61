import CPcap
#if canImport(Glibc)
import Glibc
#endif

/// pcap and pcapng through libpcap (`pcap_open_offline` reads both), for the Bluetooth link
/// types: HCI (187, 201), Linux monitor (254) and the over-the-air sniffers (251, 256, 272, and
/// PPI 192 wrapping 147 or 251).
public final class PcapReader: CaptureReader {
    public let path: String
    public let format: CaptureFormat
    public let linkType: LinkType
    private let handle: OpaquePointer
    private var recordNumber = 0
    /// PPI's inner link type, found in the first record.
    private var ppiInner: UInt32?

    /// Opens a capture through the buffer that already holds the bytes format detection looked
    /// at (libpcap reads it as a stdio stream), or, without one, libpcap opens the path itself.
    ///
    /// The buffer is what `openCapture` gives, for files as for standard input: each record's
    /// offset is `ftello` of libpcap's stream, and on a stream libpcap opened itself glibc answers
    /// that with an `lseek` system call every time (it does not remember the position): a quarter
    /// of `info`'s time on a sniffer's pcapng. Through the buffer it is a function call.
    init(path: String, format: CaptureFormat, input: BufferedInput? = nil) throws(CaptureError) {
        self.path = path
        self.format = format
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        let opened: OpaquePointer?
        if let input {
            guard let stream = Self.stream(reading: input) else {
                throw CaptureError(.cannotOpen, path: path, "cannot set up reading standard input")
            }
            opened = pcap_fopen_offline_with_tstamp_precision(stream, UInt32(PCAP_TSTAMP_PRECISION_MICRO), &errbuf)
            if opened == nil { fclose(stream) }
        } else {
            opened = pcap_open_offline_with_tstamp_precision(path, UInt32(PCAP_TSTAMP_PRECISION_MICRO), &errbuf)
        }
        guard let handle = opened
        else {
            let message = String(decoding: errbuf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw CaptureError(.corrupt, path: path, offset: 0, "libpcap cannot open it: \(message)")
        }
        let dlt = UInt32(bitPattern: pcap_datalink(handle))
        guard let linkType = LinkType(rawValue: dlt), dlt < 1000 else {
            pcap_close(handle)
            throw CaptureError(.unsupported, path: path, offset: 0,
                               "link type \(dlt) carries no Bluetooth HCI or LE link-layer packets GATTLab decodes (187, 201, 254, 251, 256, 272, 192)")
        }
        self.handle = handle
        self.linkType = linkType
    }

    deinit { pcap_close(handle) }

    /// A stdio stream over a `BufferedInput` (glibc's fopencookie): reads drain the buffer, and
    /// `ftello` reports the buffer's file offset, so errors still name byte offsets.
    private static func stream(reading input: BufferedInput) -> UnsafeMutablePointer<FILE>? {
        let cookie = Unmanaged.passRetained(input).toOpaque()
        var functions = gattlab_cookie_io_functions()
        functions.read = { cookie, destination, count in
            guard let cookie, let destination else { return -1 }
            let input = Unmanaged<BufferedInput>.fromOpaque(cookie).takeUnretainedValue()
            return (try? input.drain(into: destination, count: count)) ?? -1
        }
        functions.seek = { cookie, position, whence in
            // Only "where am I" is supported: standard input cannot go back.
            guard let cookie, let position, whence == SEEK_CUR, position.pointee == 0 else { return -1 }
            position.pointee = Unmanaged<BufferedInput>.fromOpaque(cookie).takeUnretainedValue().offset
            return 0
        }
        functions.close = { cookie in
            if let cookie { Unmanaged<BufferedInput>.fromOpaque(cookie).release() }
            return 0
        }
        let stream = gattlab_fopencookie(cookie, "r", functions)
        if stream == nil { Unmanaged<BufferedInput>.fromOpaque(cookie).release() }
        return stream
    }

    public func next() throws(CaptureError) -> CaptureRecord? {
        // libpcap reads through a stdio stream; its position before the read is this record's offset.
        let offset: Int64? = pcap_file(handle).map { Int64(ftello($0)) }
        var header: UnsafeMutablePointer<pcap_pkthdr>?
        var bytes: UnsafePointer<UInt8>?
        let rc = pcap_next_ex(handle, &header, &bytes)
        let number = recordNumber + 1
        switch rc {
        case 1:
            break
        case -2, 0:
            return nil
        default:
            let message = String(cString: pcap_geterr(handle))
            let kind: CaptureError.Kind = message.contains("truncated") ? .truncated : .corrupt
            throw CaptureError(kind, path: path, record: number, offset: offset, message)
        }
        guard let header, let bytes else { return nil }
        recordNumber = number
        let h = header.pointee
        let data = UnsafeRawBufferPointer(start: bytes, count: Int(h.caplen))
        // Wrapping: a damaged or hostile timestamp is data, not a reason to trap.
        let timestamp = Int64(h.ts.tv_sec) &* 1_000_000 &+ Int64(h.ts.tv_usec)
        var record = CaptureRecord(number: number, fileOffset: offset ?? -1, timestamp: timestamp,
                                   direction: .unknown, kind: .other,
                                   originalLength: max(Int(h.len), Int(h.caplen)), data: data)
        decapsulate(&record)
        return record
    }

    /// Removes the link type's own header and fills in kind, direction and controller.
    /// A record too short for its header stays `.other` with its bytes, for the decoder to report.
    private func decapsulate(_ record: inout CaptureRecord) {
        let data = record.data
        switch linkType {
        case .bluetoothHCIH4:
            guard let type = data.first else { return }
            record.rawType = UInt16(type)
            record.kind = RecordKind(h4Type: type) ?? .other
            record.direction = record.kind == .command ? .sent : record.kind == .event ? .received : .unknown
            record.data = data.dropping(1)
        case .bluetoothHCIH4WithPHDR:
            guard data.count >= 5 else { return }
            record.direction = data.u32be(0) & 1 == 1 ? .received : .sent
            record.rawType = UInt16(data[4])
            record.kind = RecordKind(h4Type: data[4]) ?? .other
            record.data = data.dropping(5)
        case .bluetoothLinuxMonitor:
            guard data.count >= 4 else { return }
            record.controller = data.u16be(0)
            record.rawType = data.u16be(2)
            (record.kind, record.direction) = MonitorOpcode.classify(record.rawType)
            record.data = data.dropping(4)
        case .bluetoothLELL, .user0:
            record.kind = .linkLayer
            record.linkLayer = LinkLayerInfo()
        case .bluetoothLELLWithPHDR:
            SnifferHeaders.decodeLLWithPHDR(&record)
        case .nordicBLE:
            SnifferHeaders.decodeNordicBLE(&record)
        case .ppi:
            SnifferHeaders.decodePPI(&record)
        default:
            break
        }
        record.originalLength = max(record.data.count, record.originalLength - (data.count - record.data.count))
    }
}
