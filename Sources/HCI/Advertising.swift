import ATT
import Capture

/// An LE PHY, as HCI and the sniffers number them.
public enum LEPHY: UInt8, Sendable, Hashable, CustomStringConvertible {
    case le1M = 1, le2M = 2, coded = 3
    public var description: String {
        switch self {
        case .le1M: "1M"
        case .le2M: "2M"
        case .coded: "Coded"
        }
    }
}

/// One advertisement as a scanner saw it: an HCI LE (Directed, Extended) Advertising Report, or
/// an advertising-channel PDU a sniffer caught. One HCI event may carry several reports; each
/// becomes its own `AdvertisingReport`.
public struct AdvertisingReport: Sendable {
    public enum Origin: String, Sendable, Hashable {
        /// LE Advertising Report (subevent 0x02), LE Directed Advertising Report (0x0B), LE
        /// Extended Advertising Report (0x0D), an over-the-air PDU.
        case hciReport = "hci", hciDirected = "hci-directed", hciExtended = "hci-extended", linkLayer = "ll"
    }

    public var origin: Origin
    /// The advertiser; nil for anonymous extended advertising (and ADV_EXT_IND without AdvA).
    public var address: BDAddr?
    /// nil when the advertiser is anonymous or the PDU has no AdvA.
    public var addressType: AddressType?
    /// The raw type: the legacy report's event type, the extended report's event-type bits, or
    /// the link-layer PDU type.
    public var eventType: UInt16
    /// The PDU it came from: ADV_IND, ADV_DIRECT_IND, ADV_SCAN_IND, ADV_NONCONN_IND, SCAN_RSP,
    /// ADV_EXT_IND, AUX_ADV_IND, AUX_SCAN_RSP.
    public var eventName: String
    public var connectable = false
    public var scannable = false
    public var directed = false
    public var scanResponse = false
    public var legacy = true
    /// Extended reports: "complete", "incomplete" (more reports follow) or "truncated".
    public var dataStatus: String?
    /// The last report of a chain (extended reports whose data continued in the next ones): how
    /// many reports the chain had, this one included. `data` is then the joined data.
    public var fragments: Int?
    public var rssi: Int8?
    public var primaryPHY: LEPHY?
    public var secondaryPHY: LEPHY?
    /// The channel index (37-39 are the primary advertising channels), from a sniffer.
    public var channel: UInt8?
    /// The advertiser's TX power, from the extended report or header (the AD TX Power Level is in `data`).
    public var txPower: Int8?
    public var sid: UInt8?
    /// Directed advertising: whom it was for.
    public var targetAddress: BDAddr?
    public var targetAddressType: AddressType?
    public var data = AdvertisingData()

    public init(origin: Origin, eventType: UInt16, eventName: String) {
        self.origin = origin
        self.eventType = eventType
        self.eventName = eventName
    }

    /// What was wrong with the report's advertising data, if anything.
    public var problem: String? { data.problem }
}

/// One AD structure of advertising data (Core Supplement, part A).
public enum ADStructure: Sendable, Hashable {
    case flags(UInt8)
    case localName(String, complete: Bool)
    /// Service UUID lists: 16-, 32- or 128-bit (the UUIDs keep their width), complete or incomplete.
    case serviceUUIDs([BluetoothUUID], complete: Bool)
    case serviceData(BluetoothUUID, [UInt8])
    case manufacturerData(company: UInt16, [UInt8])
    case txPowerLevel(Int8)
    case appearance(UInt16)
    /// Any other type, kept as type and bytes.
    case other(type: UInt8, [UInt8])

    /// The AD type code.
    public var type: UInt8 {
        switch self {
        case .flags: 0x01
        case .localName(_, let complete): complete ? 0x09 : 0x08
        case .serviceUUIDs(let uuids, let complete):
            switch uuids.first?.bitWidth ?? 16 {
            case 32: complete ? 0x05 : 0x04
            case 128: complete ? 0x07 : 0x06
            default: complete ? 0x03 : 0x02
            }
        case .serviceData(let uuid, _): uuid.bitWidth == 16 ? 0x16 : uuid.bitWidth == 32 ? 0x20 : 0x21
        case .manufacturerData: 0xFF
        case .txPowerLevel: 0x0A
        case .appearance: 0x19
        case .other(let type, _): type
        }
    }

    /// A short name for the AD type, as the Assigned Numbers call it.
    public static func typeName(_ type: UInt8) -> String {
        switch type {
        case 0x01: "flags"
        case 0x02: "incomplete-uuid16"
        case 0x03: "complete-uuid16"
        case 0x04: "incomplete-uuid32"
        case 0x05: "complete-uuid32"
        case 0x06: "incomplete-uuid128"
        case 0x07: "complete-uuid128"
        case 0x08: "shortened-local-name"
        case 0x09: "complete-local-name"
        case 0x0A: "tx-power-level"
        case 0x0D: "class-of-device"
        case 0x10: "device-id"
        case 0x12: "peripheral-connection-interval-range"
        case 0x14: "solicitation-uuid16"
        case 0x15: "solicitation-uuid128"
        case 0x16: "service-data-uuid16"
        case 0x17: "public-target-address"
        case 0x18: "random-target-address"
        case 0x19: "appearance"
        case 0x1A: "advertising-interval"
        case 0x1B: "le-device-address"
        case 0x1C: "le-role"
        case 0x1F: "solicitation-uuid32"
        case 0x20: "service-data-uuid32"
        case 0x21: "service-data-uuid128"
        case 0x24: "uri"
        case 0x29: "mesh-pb-adv"
        case 0x2A: "mesh-message"
        case 0x2B: "mesh-beacon"
        case 0x30: "broadcast-name"
        case 0xFF: "manufacturer-specific"
        default: "type-0x" + Hex.string([type])
        }
    }
}

/// The AD structures of one advertisement or scan response, and what was wrong with them.
public struct AdvertisingData: Sendable, Hashable {
    public var structures: [ADStructure] = []
    /// A structure whose length runs past the end, a list whose size is not a multiple of its
    /// UUID size, a field too short for its type: said once, decoding keeps what came before.
    public var problem: String?

    public init() {}

    /// Parses advertising data. `fragment` says the data may stop mid-structure (an extended
    /// report that continues in the next one): a cut structure is then not a problem.
    public init(_ d: UnsafeRawBufferPointer, fragment: Bool = false) {
        var i = 0
        while i < d.count {
            let length = Int(d[i])
            // A zero length ends the significant part; the rest is padding.
            if length == 0 { break }
            guard i + 1 + length <= d.count else {
                if !fragment {
                    problem = "AD structure at offset \(i) says \(length) bytes, \(d.count - i - 1) remain"
                }
                break
            }
            let type = d[i + 1]
            let v = d.slice(i + 2, length - 1)
            if let s = Self.structure(type, v, problem: &problem) { structures.append(s) }
            i += 1 + length
        }
    }

    private static func structure(_ type: UInt8, _ v: UnsafeRawBufferPointer, problem: inout String?) -> ADStructure? {
        func short(_ need: Int) -> Bool {
            if v.count >= need { return false }
            if problem == nil { problem = "\(ADStructure.typeName(type)) of \(v.count) bytes is shorter than \(need)" }
            return true
        }
        switch type {
        case 0x01:
            return short(1) ? .other(type: type, Array(v)) : .flags(v[0])
        case 0x02...0x07:
            let width = type <= 0x03 ? 2 : type <= 0x05 ? 4 : 16
            if v.count % width != 0, problem == nil {
                problem = "\(ADStructure.typeName(type)) of \(v.count) bytes is not a whole number of \(width)-byte UUIDs"
            }
            var uuids: [BluetoothUUID] = []
            var at = 0
            while at + width <= v.count {
                if let u = BluetoothUUID(littleEndianBytes: v[at..<(at + width)]) { uuids.append(u) }
                at += width
            }
            return .serviceUUIDs(uuids, complete: type & 1 == 1)
        case 0x08, 0x09:
            return .localName(String(decoding: v, as: UTF8.self), complete: type == 0x09)
        case 0x0A:
            return short(1) ? .other(type: type, Array(v)) : .txPowerLevel(Int8(bitPattern: v[0]))
        case 0x19:
            return short(2) ? .other(type: type, Array(v)) : .appearance(v.u16le(0))
        case 0x16, 0x20, 0x21:
            let width = type == 0x16 ? 2 : type == 0x20 ? 4 : 16
            guard !short(width), let u = BluetoothUUID(littleEndianBytes: v[0..<width]) else { return .other(type: type, Array(v)) }
            return .serviceData(u, Array(v[width...]))
        case 0xFF:
            return short(2) ? .other(type: type, Array(v)) : .manufacturerData(company: v.u16le(0), Array(v[2...]))
        default:
            return .other(type: type, Array(v))
        }
    }

    /// The local name, complete preferred over shortened.
    public var localName: String? {
        var shortened: String?
        for case .localName(let n, let complete) in structures {
            if complete { return n }
            shortened = shortened ?? n
        }
        return shortened
    }

    /// Every service UUID listed or carrying service data.
    public var serviceUUIDs: [BluetoothUUID] {
        var out: [BluetoothUUID] = []
        for s in structures {
            switch s {
            case .serviceUUIDs(let us, _): for u in us where !out.contains(u) { out.append(u) }
            case .serviceData(let u, _): if !out.contains(u) { out.append(u) }
            default: break
            }
        }
        return out
    }
}

// MARK: Decoding

extension AdvertisingReport {
    /// Legacy HCI event types (LE Advertising Report).
    static func legacyHCI(_ type: UInt8) -> (name: String, connectable: Bool, scannable: Bool, directed: Bool, scanResponse: Bool) {
        switch type {
        case 0x00: ("ADV_IND", true, true, false, false)
        case 0x01: ("ADV_DIRECT_IND", true, false, true, false)
        case 0x02: ("ADV_SCAN_IND", false, true, false, false)
        case 0x03: ("ADV_NONCONN_IND", false, false, false, false)
        case 0x04: ("SCAN_RSP", false, false, false, true)
        default: ("event type 0x" + Hex.string([type]), false, false, false, false)
        }
    }

    /// The link-layer names of advertising-channel PDU types.
    public static func pduName(_ type: UInt8) -> String {
        switch type {
        case 0x00: "ADV_IND"
        case 0x01: "ADV_DIRECT_IND"
        case 0x02: "ADV_NONCONN_IND"
        case 0x03: "SCAN_REQ"
        case 0x04: "SCAN_RSP"
        case 0x05: "CONNECT_IND"
        case 0x06: "ADV_SCAN_IND"
        case 0x07: "ADV_EXT_IND"
        case 0x08: "AUX_CONNECT_RSP"
        default: "PDU type 0x" + Hex.string([type])
        }
    }

    static func addressType(_ raw: UInt8) -> AddressType? { AddressType(rawValue: raw) }

    /// The reports of one LE Advertising Report (0x02), Directed (0x0B) or Extended (0x0D)
    /// subevent, read per report as Wireshark and BlueZ do. `q` starts at Num_Reports. Returns
    /// the reports decoded and, when the event ends before its reports do, what was wrong.
    /// Extended reports that continue in the next ones are joined in `chains`: see `AdvertisingChains`.
    /// `withData` false leaves every report's `data` empty (its AD structures unread): for a
    /// consumer that only checks the reports (`LinkDecoder.reportsAdvertising`).
    static func decodeHCI(subevent: UInt8, _ q: UnsafeRawBufferPointer, controller: UInt16 = 0,
                          chains: inout AdvertisingChains, withData: Bool = true) -> (reports: [AdvertisingReport], problem: String?) {
        guard let count = q.first else { return ([], "no Num_Reports") }
        var out: [AdvertisingReport] = []
        var i = 1
        for n in 0..<Int(count) {
            func missing(_ need: Int) -> String {
                "report \(n + 1) of \(count) needs \(need) bytes at offset \(i), \(q.count - i) remain"
            }
            switch subevent {
            case 0x02:
                guard i + 10 <= q.count else { return (out, missing(10)) }
                let length = Int(q[i + 8])
                guard i + 10 + length <= q.count else { return (out, missing(10 + length)) }
                let t = legacyHCI(q[i])
                var r = AdvertisingReport(origin: .hciReport, eventType: UInt16(q[i]), eventName: t.name)
                (r.connectable, r.scannable, r.directed, r.scanResponse) = (t.connectable, t.scannable, t.directed, t.scanResponse)
                r.addressType = addressType(q[i + 1])
                r.address = BDAddr(littleEndian: q, at: i + 2)
                if withData { r.data = AdvertisingData(q.slice(i + 9, length)) }
                if q[i + 9 + length] != 0x7F { r.rssi = Int8(bitPattern: q[i + 9 + length]) }
                r.primaryPHY = .le1M
                out.append(r)
                i += 10 + length
            case 0x0B:
                guard i + 16 <= q.count else { return (out, missing(16)) }
                let t = legacyHCI(q[i])
                var r = AdvertisingReport(origin: .hciDirected, eventType: UInt16(q[i]), eventName: t.name)
                (r.connectable, r.scannable, r.directed, r.scanResponse) = (t.connectable, t.scannable, true, t.scanResponse)
                r.addressType = addressType(q[i + 1])
                r.address = BDAddr(littleEndian: q, at: i + 2)
                r.targetAddressType = addressType(q[i + 8])
                r.targetAddress = BDAddr(littleEndian: q, at: i + 9)
                if q[i + 15] != 0x7F { r.rssi = Int8(bitPattern: q[i + 15]) }
                r.primaryPHY = .le1M
                out.append(r)
                i += 16
            default:  // 0x0D
                guard i + 24 <= q.count else { return (out, missing(24)) }
                let length = Int(q[i + 23])
                guard i + 24 + length <= q.count else { return (out, missing(24 + length)) }
                let type = q.u16le(i)
                var r = AdvertisingReport(origin: .hciExtended, eventType: type, eventName: extendedName(type))
                r.connectable = type & 0x01 != 0
                r.scannable = type & 0x02 != 0
                r.directed = type & 0x04 != 0
                r.scanResponse = type & 0x08 != 0
                r.legacy = type & 0x10 != 0
                let status = (type >> 5) & 0x3
                r.dataStatus = status == 0 ? "complete" : status == 1 ? "incomplete" : "truncated"
                if q[i + 2] != 0xFF {
                    r.addressType = addressType(q[i + 2])
                    r.address = BDAddr(littleEndian: q, at: i + 3)
                }
                r.primaryPHY = LEPHY(rawValue: q[i + 9])
                r.secondaryPHY = LEPHY(rawValue: q[i + 10])
                if q[i + 11] != 0xFF { r.sid = q[i + 11] }
                if q[i + 12] != 0x7F { r.txPower = Int8(bitPattern: q[i + 12]) }
                if q[i + 13] != 0x7F { r.rssi = Int8(bitPattern: q[i + 13]) }
                if r.directed {
                    r.targetAddressType = addressType(q[i + 16])
                    r.targetAddress = BDAddr(littleEndian: q, at: i + 17)
                }
                chains.take(&r, q.slice(i + 24, length), status: status, controller: controller, withData: withData)
                out.append(r)
                i += 24 + length
            }
        }
        return (out, nil)
    }

    /// Names an extended report's event type: the legacy PDU it stands for, or the AUX PDU.
    static func extendedName(_ type: UInt16) -> String {
        if type & 0x10 != 0 {
            switch type & 0x0F {
            case 0x03: return "ADV_IND"
            case 0x05: return "ADV_DIRECT_IND"
            case 0x02: return "ADV_SCAN_IND"
            case 0x00: return "ADV_NONCONN_IND"
            case 0x0B, 0x0A: return "SCAN_RSP"
            default: return "legacy event type 0x" + Hex.string([UInt8(type & 0xFF)])
            }
        }
        return type & 0x08 != 0 ? "AUX_SCAN_RSP" : "AUX_ADV_IND"
    }

    /// The PDU types an advertising report comes from, over the air.
    public static let reportPDUTypes: Set<UInt8> = [0x00, 0x01, 0x02, 0x04, 0x06, 0x07]

    /// `reportPDUTypes.contains(type)` without hashing: asked of every advertising-channel PDU
    /// a sniffer caught (a `Set` lookup there was 3% of `info` on an nRF Sniffer capture).
    @inline(__always)
    static func isReportPDUType(_ type: UInt8) -> Bool {
        type < 8 && (0b1101_0111 as UInt8) >> type & 1 == 1
    }

    /// An advertising-channel PDU as a report, or a reason it is malformed; nil for PDU types
    /// that are not advertisements (SCAN_REQ, CONNECT_IND, AUX_CONNECT_RSP, reserved).
    /// `header` is the PDU header's first byte; `body` the payload after the 2-byte header.
    static func decodeLinkLayer(header: UInt8, body: UnsafeRawBufferPointer, info: LinkLayerInfo,
                                withData: Bool = true) -> Result<AdvertisingReport, AdvertisingProblem>? {
        let type = header & 0x0F
        guard isReportPDUType(type) else { return nil }
        let txRandom = header & 0x40 != 0
        let rxRandom = header & 0x80 != 0
        let onPrimary = info.channel.map { $0 >= 37 } ?? true
        var r = AdvertisingReport(origin: .linkLayer, eventType: UInt16(type),
                                  eventName: type == 0x07 && !onPrimary ? "AUX_ADV_IND" : pduName(type))
        r.rssi = info.rssi
        r.channel = info.channel
        r.primaryPHY = info.phy.flatMap(LEPHY.init(rawValue:)) ?? (type == 0x07 ? nil : .le1M)
        switch type {
        case 0x07:
            r.legacy = false
            guard body.count >= 1 else { return .failure(AdvertisingProblem(reason: "\(r.eventName) has no extended header length")) }
            let headerLength = Int(body[0] & 0x3F)
            let mode = body[0] >> 6
            r.connectable = mode == 1
            r.scannable = mode == 2
            guard 1 + headerLength <= body.count else {
                return .failure(AdvertisingProblem(reason: "extended header of \(headerLength) bytes exceeds the \(body.count - 1) present"))
            }
            let h = body.slice(1, headerLength)
            if headerLength > 0 {
                let flags = h[0]
                var at = 1
                func take(_ n: Int) -> Int? {
                    guard at + n <= h.count else { return nil }
                    defer { at += n }
                    return at
                }
                let fields: [(bit: UInt8, size: Int)] = [(0x01, 6), (0x02, 6), (0x04, 1), (0x08, 2), (0x10, 3), (0x20, 18), (0x40, 1)]
                for (bit, size) in fields where flags & bit != 0 {
                    guard let o = take(size) else {
                        return .failure(AdvertisingProblem(reason: "extended header flags 0x\(Hex.string([flags])) need more than its \(headerLength) bytes"))
                    }
                    switch bit {
                    case 0x01:
                        r.address = BDAddr(littleEndian: h, at: o)
                        r.addressType = txRandom ? .randomDevice : .publicDevice
                    case 0x02:
                        r.directed = true
                        r.targetAddress = BDAddr(littleEndian: h, at: o)
                        r.targetAddressType = rxRandom ? .randomDevice : .publicDevice
                    case 0x08:
                        r.sid = UInt8(h.u16le(o) >> 12)
                    case 0x40:
                        r.txPower = Int8(bitPattern: h[o])
                    default:
                        break
                    }
                }
            }
            if withData { r.data = AdvertisingData(body.dropping(1 + headerLength)) }
            return .success(r)
        default:
            guard body.count >= 6 else {
                return .failure(AdvertisingProblem(reason: "\(r.eventName) of \(body.count) bytes has no AdvA"))
            }
            r.address = BDAddr(littleEndian: body, at: 0)
            r.addressType = txRandom ? .randomDevice : .publicDevice
            switch type {
            case 0x00: r.connectable = true; r.scannable = true
            case 0x06: r.scannable = true
            case 0x04: r.scanResponse = true
            case 0x01:
                r.connectable = true
                r.directed = true
                guard body.count >= 12 else {
                    return .failure(AdvertisingProblem(reason: "ADV_DIRECT_IND of \(body.count) bytes has no TargetA"))
                }
                r.targetAddress = BDAddr(littleEndian: body, at: 6)
                r.targetAddressType = rxRandom ? .randomDevice : .publicDevice
                return .success(r)
            default: break
            }
            if withData { r.data = AdvertisingData(body.dropping(6)) }
            return .success(r)
        }
    }
}

/// Extended Advertising Reports whose data continues in the next reports (Data Status 01,
/// "incomplete, more data to come"), joined per advertiser: the next reports from the same
/// controller, address, address type, SID and kind (advertising data or scan response) carry the
/// rest, until one says complete or truncated. Each report keeps its own AD structures (a cut
/// one is no problem); the last one gets the structures of the whole chain and its length.
///
/// Input is hostile: a chain keeps at most `maxData` bytes (the most advertising data an
/// advertiser can send), and at most `maxChains` chains wait at once, the oldest dropped first.
struct AdvertisingChains {
    /// Core 5.x, Vol 4, Part E, 7.8.54: Advertising_Data_Length is at most 1650 octets.
    static let maxData = 1650
    static let maxChains = 32

    struct Key: Hashable {
        var controller: UInt16
        var address: BDAddr?
        var addressType: AddressType?
        var sid: UInt8?
        var scanResponse: Bool
    }

    struct Chain {
        var data: [UInt8] = []
        var fragments = 0
        /// Bytes beyond `maxData`, left out.
        var dropped = 0
    }

    private(set) var chains: [Key: Chain] = [:]
    /// Keys in the order their chains began, for dropping the oldest.
    private var order: [Key] = []

    /// Sets `r.data` from `own`, the report's data, joining it to the chain it continues.
    /// `status` is the report's Data Status (0 complete, 1 more to come, 2 truncated).
    /// Without `withData` the chain is followed all the same, and `r.data` stays empty.
    mutating func take(_ r: inout AdvertisingReport, _ own: UnsafeRawBufferPointer, status: UInt16, controller: UInt16,
                       withData: Bool = true) {
        let key = Key(controller: controller, address: r.address, addressType: r.addressType, sid: r.sid, scanResponse: r.scanResponse)
        let more = status == 1
        if withData { r.data = AdvertisingData(own, fragment: status != 0) }
        guard more || chains[key] != nil else { return }
        if chains[key] == nil {
            if chains.count >= Self.maxChains, !order.isEmpty { chains[order.removeFirst()] = nil }
            order.append(key)
        }
        var chain = chains[key] ?? Chain()
        let room = max(0, Self.maxData - chain.data.count)
        chain.data.append(contentsOf: own.prefix(room))
        chain.dropped += own.count - min(room, own.count)
        chain.fragments += 1
        if more {
            chains[key] = chain
            return
        }
        chains[key] = nil
        order.removeAll { $0 == key }
        r.fragments = chain.fragments
        guard withData else { return }
        r.data = chain.data.withUnsafeBytes { AdvertisingData($0, fragment: status != 0 || chain.dropped > 0) }
        if chain.dropped > 0, r.data.problem == nil {
            r.data.problem = "the \(chain.fragments) reports of the chain carry \(chain.data.count + chain.dropped) bytes, more than the \(Self.maxData) an advertisement can; the last \(chain.dropped) are left out"
        }
    }
}

/// Why an advertising PDU could not be read at all.
struct AdvertisingProblem: Error {
    var reason: String
}
