import Analysis
import Capture
import Crypto
import Foundation
import GATT
import HCI
import Profiles

/// What to redact beyond secrets, and how to check the result.
public struct RedactionOptions: Sendable {
    /// Replace device addresses by stand-ins (consistent within the file).
    public var anonymizeAddresses = false
    /// Replace device names (advertised, GATT Device Name, remote names) too.
    public var replaceNames = false
    /// Key of the address mapping; nil draws a random one, so two runs do not link devices.
    public var anonymizationKey: [UInt8]?
    /// The device protocols whose secrets are found and overwritten.
    public var protocols: ProtocolSet
    /// Keys for encrypted protocol sessions (`--esp-pop`...), so their passwords are found too.
    public var keys = ProtocolKeys()
    /// tshark, for the check that Wireshark reads the output as it read the input; nil skips it.
    public var tshark: String?

    public init(protocols: ProtocolSet) {
        self.protocols = protocols
    }

    /// A mapping key from a seed the user chose: the same seed maps addresses the same way.
    public static func anonymizationKey(seed: String) -> [UInt8] {
        Array(SHA256.hash(data: Array("gattlab-anonymize:\(seed)".utf8)))
    }
}

/// One check the redactor ran on its own output.
public struct RedactionCheck: Sendable {
    public var name: String
    public var passed: Bool
    public var detail: String
}

/// What a redaction did.
public struct RedactionOutcome: Sendable {
    public var input: String
    public var output: String
    public var format: String
    public var records = 0
    /// The secrets found, located and overwritten (values are `Secret`s: never printed unless
    /// asked). Encoded, past 64 KiB in an encrypted temporary file (`SpillList`): a rack's day has
    /// tens of thousands of them, and kept as values they were most of the command's memory.
    public var secrets: SpillList<SecretSighting> = []
    /// Copies of secret values found outside decoded fields (text notes, vendor packets) and overwritten.
    public var strayCopies = 0
    public var recordsChanged = 0
    public var bytesChanged = 0
    public var addressesMapped = 0
    public var namesReplaced = 0
    /// Address stand-ins, original to new, for the user's own reference when asked to show them.
    public var addressMap: [(from: String, to: String)] = []
    public var checks: [RedactionCheck] = []
}

/// `gattlab redact`: rewrites a capture with every secret value overwritten in place (same
/// length, so framing, lengths and the record count stay valid), optionally with addresses and
/// names replaced, then proves the result before it takes the output's name.
///
/// Two passes over the input: the first decodes it (origins tracked) and audits it, which
/// locates each secret in the records; the second copies the file and overwrites the located
/// bytes (and any stray copy of a secret value), fixing link-layer CRCs. The copy is checked
/// (no secret byte sequence left, the same records and ATT structure for GATTLab and tshark, an
/// audit that finds only redacted values) and renamed over the output only if every check passes.
public enum Redactor {
    public static func redact(input: String, output: String, options: RedactionOptions,
                              makeDecoder: () -> GATTDecoder) throws(RedactionError) -> RedactionOutcome {
        // Pass 1: find and locate every secret.
        let before = try analyse(input, options: options, makeDecoder: makeDecoder, anonymize: options.anonymizeAddresses)
        var outcome = RedactionOutcome(input: input, output: output, format: before.format)
        outcome.records = before.report.records
        let unlocated = before.report.secrets.filter { !$0.alreadyRedacted && !$0.locatable }
        outcome.secrets = before.report.secrets.picking { !$0.alreadyRedacted && $0.locatable }

        // The bytes to write, in record order (and, within a record, in the order made): read
        // once each as the second pass reaches their record.
        var plan = SpillList<Patch>()
        for s in outcome.secrets {
            guard let location = s.secret.location else { continue }
            for (i, piece) in location.placements {
                let bytes = (i..<(i + piece.count)).map { j in Redaction.filler ^ (location.mask.map { $0.indices.contains(j) ? $0[j] : 0 } ?? 0) }
                plan.append(Patch(record: piece.record, order: plan.count, offset: piece.offset, bytes: bytes))
            }
            // What follows from the secret (a protocol's checksum over the frame) changes with it.
            for dependent in location.dependents {
                for (piece, bytes) in dependent.patches {
                    plan.append(Patch(record: piece.record, order: plan.count, offset: piece.offset, bytes: bytes))
                }
            }
        }
        plan.sort(on: { ($0.record, $0.order) }, by: <)
        // Values worth looking for anywhere else: long enough and varied enough that a match is
        // the secret, not a run of zeros or padding.
        var strayValues = Set<[UInt8]>()
        for s in before.report.secrets where !s.alreadyRedacted && Self.searchable(s.secret.unsafeBytes) { strayValues.insert(s.secret.unsafeBytes) }
        let strays = PatternSet(strayValues.map { ($0, [UInt8](repeating: Redaction.filler, count: $0.count)) })
        let replacements = PatternSet(before.anonymizer?.replacements() ?? [])
        outcome.addressesMapped = before.anonymizer?.addresses.count ?? 0
        outcome.namesReplaced = before.anonymizer?.names.count ?? 0
        outcome.addressMap = (before.anonymizer?.addresses ?? [:]).map { (Hex.string($0.key, separator: ":").uppercased(), Hex.string($0.value, separator: ":").uppercased()) }
            .sorted { $0.from < $1.from }

        // Pass 2: a copy beside the output, rewritten in place.
        let temp = temporaryPath(for: output)
        do {
            try copyFile(input, to: temp)
            let editable = try EditableCapture(path: temp, format: before.formatValue)
            let reader: any CaptureReader
            do { reader = try openCapture(input) } catch let e { throw RedactionError.input(e) }
            var crcInit: [UInt32: UInt32] = [:]
            var stillUnlocated = unlocated
            // The next patch, read once: most records have none, and reading it back from the
            // list for each of them would be a decoding per record.
            var patches = plan.makeIterator()
            var nextPatch = patches.next()
            while let record = try nextRecord(reader) {
                if record.kind == .linkLayer { noteConnectIndication(record, into: &crcInit) }
                let original = Array(record.data)
                var data = original
                while let patch = nextPatch, patch.record <= record.number {
                    nextPatch = patches.next()
                    guard patch.record == record.number, patch.offset >= 0, patch.offset + patch.bytes.count <= data.count else { continue }
                    data.replaceSubrange(patch.offset..<(patch.offset + patch.bytes.count), with: patch.bytes)
                }
                // A secret the decoder saw but could not place: found by value in its own records.
                stillUnlocated.removeAll { s in
                    let value = s.secret.unsafeBytes
                    let byValue = PatternSet([(value, [UInt8](repeating: Redaction.filler, count: value.count))])
                    guard s.records.contains(record.number), byValue.replaceAll(in: &data) > 0 else { return false }
                    outcome.secrets.append(s)
                    return true
                }
                outcome.strayCopies += strays.replaceAll(in: &data)
                replacements.replaceAll(in: &data)
                guard data != original else { continue }
                let packetOffset = try editable.packetOffset(of: record)
                let dataOffset = packetOffset + Int64(record.dataOffsetInPacket)
                if record.kind == .linkLayer, record.linkLayer?.hasCRC ?? false, data.count >= 9 {
                    fixCRC(&data, original: original, preset: linkLayerPreset(original, crcInit), pduOffset: record.linkLayer?.pduOffset ?? 4)
                }
                try editable.write(data, at: dataOffset)
                outcome.recordsChanged += 1
                outcome.bytesChanged += zip(original, data).filter { $0 != $1 }.count
            }
            try editable.sync()
            if !stillUnlocated.isEmpty {
                throw RedactionError.verification(stillUnlocated.map { "\($0.kind.title) seen at record \($0.records.first ?? 0) (\($0.context)) could not be located in the file's bytes" })
            }

            // Checks on the copy, before it takes the output's name.
            outcome.checks = try verify(temp, input: input, before: before, options: options, makeDecoder: makeDecoder, outcome: outcome)
            let failed = outcome.checks.filter { !$0.passed }
            if !failed.isEmpty { throw RedactionError.verification(failed.map { "\($0.name): \($0.detail)" }) }
            guard rename(temp, output) == 0 else { throw RedactionError.output("\(output): cannot write: \(String(cString: strerror(errno)))") }
        } catch let error as RedactionError {
            unlink(temp)
            throw error
        } catch {
            unlink(temp)
            throw .internalError("\(error)")
        }
        return outcome
    }

    /// A value long and varied enough that finding it elsewhere means finding the secret.
    static func searchable(_ value: [UInt8]) -> Bool { value.count >= 6 && Set(value).count >= 4 && !Redaction.isFiller(value) }

    // MARK: Pass 1

    struct Analysis {
        var report: AuditReport
        var format: String
        var formatValue: CaptureFormat
        var anonymizer: Anonymizer?
        /// A running digest of (record, ATT opcode, handle) and SMP codes: the structure tshark also sees.
        var structure: UInt64
        var records: Int
    }

    static func analyse(_ path: String, options: RedactionOptions, makeDecoder: () -> GATTDecoder,
                        anonymize: Bool) throws(RedactionError) -> Analysis {
        let reader: any CaptureReader
        do { reader = try openCapture(path) } catch { throw .input(error) }
        let decoder = makeDecoder()
        decoder.tracksOrigins = true
        // Only bytes the file holds can be overwritten: what a sniffed legacy pairing's keys
        // would decrypt is ciphertext in the file, left as it is (as without --ltk).
        decoder.link.recoversPairingKeys = false
        // Names and addresses in advertising are found in the records themselves (Anonymizer);
        // nothing here reads the decoder's advertising reports.
        decoder.link.reportsAdvertising = false
        let profiles = ProfileDecoder(protocols: options.protocols, keys: options.keys)
        let auditor = Auditor(source: path, format: reader.format.description, protocols: options.protocols)
        var anonymizer = anonymize ? Anonymizer(key: options.anonymizationKey ?? randomKey(), replaceNames: options.replaceNames) : nil
        var digest = Digest()
        var records = 0
        while let record = try nextRecord(reader) {
            records = record.number
            decoder.consume(record)
            profiles.consume(decoder, record: record)
            auditor.consume(record, gatt: decoder.events, profile: profiles.events)
            anonymizer?.consume(record, events: decoder.events)
            for e in decoder.events {
                switch e {
                case .att(let a): digest.add([UInt64(record.number), UInt64(a.opcode), a.handle.map { UInt64($0) } ?? 0xFFFF_FFFF, a.malformed == nil ? 0 : 1])
                case .link(.smp(_, _, let pdu)): digest.add([UInt64(record.number), 0x1_0000 + UInt64(pdu.code)])
                default: break
                }
            }
        }
        return Analysis(report: auditor.finish(), format: reader.format.description, formatValue: reader.format,
                        anonymizer: anonymizer, structure: digest.value, records: records)
    }

    /// The next record; a damaged file stops redaction: what follows the damage cannot be checked.
    static func nextRecord(_ reader: any CaptureReader) throws(RedactionError) -> CaptureRecord? {
        do { return try reader.next() } catch { throw .input(error) }
    }

    static func randomKey() -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }
    }

    /// FNV-1a over 64-bit words: enough to tell two structures apart, cheap to keep running.
    struct Digest {
        var value: UInt64 = 0xCBF2_9CE4_8422_2325
        mutating func add(_ words: [UInt64]) {
            for w in words {
                for shift in stride(from: 0, to: 64, by: 8) {
                    value ^= (w >> UInt64(shift)) & 0xFF
                    value = value &* 0x0000_0100_0000_01B3
                }
            }
        }
    }

    // MARK: Pass 2

    /// CONNECT_IND gives a connection's access address and CRC preset (CRCInit). Its header is
    /// where decoding finds it (after the Coding Indicator on the Coded PHY).
    static func noteConnectIndication(_ record: CaptureRecord, into map: inout [UInt32: UInt32]) {
        let d = record.data
        let h = record.linkLayer?.pduOffset ?? 4, body = h + 2
        guard d.count >= body + 34, d.u32le(0) == 0x8E89_BED6, d[h] & 0x0F == 0x05, d[h + 1] == 34 else { return }
        let accessAddress = d.u32le(body + 12)
        map[accessAddress] = UInt32(d[body + 16]) | UInt32(d[body + 17]) << 8 | UInt32(d[body + 18]) << 16
    }

    static func linkLayerPreset(_ data: [UInt8], _ map: [UInt32: UInt32]) -> UInt32? {
        guard data.count >= 4 else { return nil }
        let aa = UInt32(data[0]) | UInt32(data[1]) << 8 | UInt32(data[2]) << 16 | UInt32(data[3]) << 24
        return aa == 0x8E89_BED6 ? 0x55_5555 : map[aa]
    }

    /// Folds the change of the PDU (header and payload, from `pduOffset` to the CRC) into the
    /// stored CRC, in the layout the capture used for this packet.
    static func fixCRC(_ data: inout [UInt8], original: [UInt8], preset: UInt32?, pduOffset: Int) {
        guard data.count >= pduOffset + 3 else { return }
        let pduRange = pduOffset..<(data.count - 3)
        let crcRange = (data.count - 3)..<data.count
        let stored = Array(original[crcRange])
        let layout = preset.flatMap { LinkLayerCRC.layout(of: stored, pdu: Array(original[pduRange]), preset: $0) } ?? .littleEndian
        let crc = LinkLayerCRC.updated(stored: stored, old: Array(original[pduRange]), new: Array(data[pduRange]), layout: layout)
        data.replaceSubrange(crcRange, with: crc)
    }

    // MARK: Files

    static func temporaryPath(for output: String) -> String {
        let url = URL(fileURLWithPath: output)
        return url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).gattlab-\(getpid()).tmp").path
    }

    static func copyFile(_ from: String, to: String) throws(RedactionError) {
        unlink(to)
        guard let source = FileHandle(forReadingAtPath: from) else { throw .output("\(from): cannot read") }
        defer { try? source.close() }
        guard FileManager.default.createFile(atPath: to, contents: nil), let sink = FileHandle(forWritingAtPath: to) else {
            throw .output("\(to): cannot create (is the folder writable?)")
        }
        defer { try? sink.close() }
        do {
            while let chunk = try source.read(upToCount: 1 << 20), !chunk.isEmpty { try sink.write(contentsOf: chunk) }
        } catch {
            throw .output("\(to): cannot write: \(error.localizedDescription)")
        }
    }
}

/// Bytes to write over one record's data: the `order`-th made, so that patches of one record
/// apply in the order they were planned whatever the sort.
struct Patch: Spillable {
    var record: Int
    var order: Int
    var offset: Int
    var bytes: [UInt8]

    func spill(into w: inout SpillWriter) {
        w.int(record)
        w.int(order)
        w.int(offset)
        w.bytes(bytes)
    }

    init(record: Int, order: Int, offset: Int, bytes: [UInt8]) {
        self.record = record
        self.order = order
        self.offset = offset
        self.bytes = bytes
    }

    init(unspilling r: inout SpillReader) {
        self.init(record: r.int(), order: r.int(), offset: r.int(), bytes: r.bytes())
    }
}
