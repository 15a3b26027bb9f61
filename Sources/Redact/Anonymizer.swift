import ATT
import Capture
import Crypto
import GATT
import HCI

/// Finds the device addresses and names a capture holds, and gives each a stand-in: addresses a
/// keyed hash (the same address always maps to the same stand-in within a run, and the two
/// address-type bits are kept, so a static random address stays one), names `Device-N` cut or
/// padded to the original length so every length field stays true.
///
/// Addresses are collected from where the decoder names them (connections, SMP identity
/// addresses, controllers) and from advertising (HCI reports and sniffed advertising PDUs); the
/// redactor then replaces every occurrence, in both byte orders and as text.
struct Anonymizer {
    private(set) var addresses: [[UInt8]: [UInt8]] = [:]
    private(set) var names: [[UInt8]: [UInt8]] = [:]
    private let key: SymmetricKey
    let replaceNames: Bool
    /// Names shorter than this are not replaced (too likely to match unrelated bytes).
    static let minimumNameLength = PatternSet.minimumLength
    static let maximumEntries = 65_536

    init(key: [UInt8], replaceNames: Bool) {
        self.key = SymmetricKey(data: key)
        self.replaceNames = replaceNames
    }

    // MARK: Collecting

    mutating func consume(_ record: CaptureRecord, events: [GATTEvent]) {
        for e in events {
            switch e {
            case .link(let l):
                switch l {
                case .connectionComplete(let info):
                    for a in [info.peerAddress, info.centralAddress, info.peripheralAddress] { add(a) }
                case .connectionFailed(_, let peer): add(peer)
                case .createConnection(let peer, _): add(peer)
                case .controllerAdded(_, _, let address): add(address)
                case .linkKey(let peer, _, _): add(peer)
                case .smp(_, _, .identityAddressInformation(_, let address)): add(address)
                case .resolvingListAdd(let peer, _, _): add(peer)
                default: break
                }
            case .att(let a):
                // The GATT Device Name (0x2A00) read back.
                if replaceNames, a.info?.uuid == BluetoothUUID(uuid16: 0x2A00), case .readResponse(let v)? = a.pdu { addName(v) }
            case .operation:
                break
            }
        }
        switch record.kind {
        case .event: consumeHCIEvent(record.data)
        case .command: consumeHCICommand(record.data)
        case .linkLayer: consumeAdvertisingPDU(record.data, info: record.linkLayer ?? LinkLayerInfo())
        default: break
        }
    }

    private mutating func add(_ address: BDAddr?) {
        guard let address, addresses.count < Self.maximumEntries else { return }
        let a = address.array
        // All-zero and all-ones are placeholders, not devices.
        guard a != [0, 0, 0, 0, 0, 0], a != [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], addresses[a] == nil else { return }
        var mac = Array(HMAC<SHA256>.authenticationCode(for: a, using: key)).prefix(6).map { $0 }
        mac[0] = (mac[0] & 0x3F) | (a[0] & 0xC0)
        addresses[a] = mac
    }

    private mutating func addName(_ bytes: some Collection<UInt8>) {
        var name = Array(bytes)
        while name.last == 0 { name.removeLast() }
        guard replaceNames, name.count >= Self.minimumNameLength, names[name] == nil, names.count < Self.maximumEntries else { return }
        let base = Array("Device-\(names.count + 1)".utf8)
        names[name] = name.count >= base.count ? base + Array(repeating: UInt8(ascii: "_"), count: name.count - base.count)
            : Array(base.prefix(name.count))
    }

    /// Advertising data: AD structures (length, type, data); names are types 0x08 and 0x09.
    private mutating func consumeAdvertisingData(_ d: UnsafeRawBufferPointer) {
        var i = 0
        while i < d.count {
            let length = Int(d[i])
            guard length > 0, i + 1 + length <= d.count else { return }
            let type = d[i + 1]
            if type == 0x08 || type == 0x09 { addName(d[(i + 2)..<(i + 1 + length)]) }
            i += 1 + length
        }
    }

    private mutating func consumeHCIEvent(_ d: UnsafeRawBufferPointer) {
        // Command Complete of Read BD_ADDR (the controller's own address) and Read Local Name.
        if d.count >= 6, d[0] == 0x0E, d[5] == 0 {
            switch d.u16le(3) {
            case 0x1009 where d.count >= 12: add(BDAddr(littleEndian: d, at: 6))
            case 0x0C14: addName(d[6...].prefix { $0 != 0 })
            default: break
            }
            return
        }
        guard d.count >= 3, d[0] == 0x3E else {
            // Remote Name Request Complete: status, address, name (BR/EDR).
            if d.count >= 9, d[0] == 0x07 {
                add(BDAddr(littleEndian: d, at: 3))
                addName(d[9...].prefix { $0 != 0 })
            }
            return
        }
        let p = d.dropping(3)
        switch d[2] {
        case 0x02:  // LE Advertising Report: per report, type, address type, address, data length, data, RSSI
            guard let count = p.first else { return }
            var i = 1
            for _ in 0..<count {
                guard i + 9 <= p.count else { return }
                add(BDAddr(littleEndian: p, at: i + 2))
                let length = Int(p[i + 8])
                guard i + 9 + length + 1 <= p.count else { return }
                consumeAdvertisingData(p.slice(i + 9, length))
                i += 9 + length + 1
            }
        case 0x0D:  // LE Extended Advertising Report: 24-byte fixed part, then data
            guard let count = p.first else { return }
            var i = 1
            for _ in 0..<count {
                guard i + 24 <= p.count else { return }
                add(BDAddr(littleEndian: p, at: i + 3))
                add(BDAddr(littleEndian: p, at: i + 17))
                let length = Int(p[i + 23])
                guard i + 24 + length <= p.count else { return }
                consumeAdvertisingData(p.slice(i + 24, length))
                i += 24 + length
            }
        case 0x0A where p.count >= 29, 0x29 where p.count >= 29:  // LE Enhanced Connection Complete (v1, v2): local and peer RPAs
            add(BDAddr(littleEndian: p, at: 11))
            add(BDAddr(littleEndian: p, at: 17))
        default:
            break
        }
    }

    /// The local device's own address and name, and addresses the host hands the controller.
    private mutating func consumeHCICommand(_ d: UnsafeRawBufferPointer) {
        guard d.count >= 3 else { return }
        let opcode = d.u16le(0)
        let p = d.dropping(3)
        switch opcode {
        case 0x2005 where p.count >= 6: add(BDAddr(littleEndian: p, at: 0))  // LE Set Random Address
        case 0x2011, 0x2012: if p.count >= 7 { add(BDAddr(littleEndian: p, at: 1)) }  // Filter Accept List add/remove
        case 0x2027, 0x2028: if p.count >= 7 { add(BDAddr(littleEndian: p, at: 1)) }  // Resolving List add/remove
        case 0x2006 where p.count >= 13: add(BDAddr(littleEndian: p, at: 7))  // LE Set Advertising Parameters: peer
        case 0x2035 where p.count >= 7: add(BDAddr(littleEndian: p, at: 1))  // LE Set Advertising Set Random Address
        case 0x0C13: addName(p.prefix { $0 != 0 })  // Write Local Name
        case 0x0C52 where p.count >= 1: consumeAdvertisingData(p.dropping(1))  // Write Extended Inquiry Response
        case 0x2008, 0x2009:  // LE Set Advertising / Scan Response Data: length, data
            if let n = p.first { consumeAdvertisingData(p.slice(1, min(Int(n), p.count - 1))) }
        case 0x2037, 0x2038:  // LE Set Extended Advertising / Scan Response Data
            if p.count >= 4 { consumeAdvertisingData(p.slice(4, min(Int(p[3]), p.count - 4))) }
        default:
            break
        }
    }

    /// Sniffed advertising PDUs: AdvA (and ScanA, InitA, TargetA), and the AD structures.
    private mutating func consumeAdvertisingPDU(_ d: UnsafeRawBufferPointer, info: LinkLayerInfo) {
        let h = info.pduOffset, crc = info.hasCRC ? 3 : 0
        guard d.count >= h + 2 + crc, d.u32le(0) == 0x8E89_BED6 else { return }
        let type = d[h] & 0x0F
        let length = min(Int(d[h + 1]), d.count - h - 2 - crc)
        let body = d.slice(h + 2, length)
        guard body.count >= 6 else { return }
        add(BDAddr(littleEndian: body, at: 0))
        switch type {
        case 0x01, 0x03, 0x05:  // ADV_DIRECT_IND, SCAN_REQ, CONNECT_IND: a second address
            if body.count >= 12 { add(BDAddr(littleEndian: body, at: 6)) }
        case 0x00, 0x02, 0x04, 0x06:  // ADV_IND, ADV_NONCONN_IND, SCAN_RSP, ADV_SCAN_IND: AdvData
            consumeAdvertisingData(body.dropping(6))
        default:
            break
        }
    }

    // MARK: Replacing

    /// Byte patterns to replace, longest first: each address little-endian (as HCI and the link
    /// layer carry it), big-endian, and as text in both cases; each name.
    func replacements() -> [(from: [UInt8], to: [UInt8])] {
        var out: [(from: [UInt8], to: [UInt8])] = []
        for (a, b) in addresses {
            out.append((a.reversed(), b.reversed()))
            out.append((a, b))
            let text = { (x: [UInt8], upper: Bool) -> [UInt8] in
                let s = Hex.string(x, separator: ":")
                return Array((upper ? s.uppercased() : s.lowercased()).utf8)
            }
            out.append((text(a, true), text(b, true)))
            out.append((text(a, false), text(b, false)))
        }
        for (n, m) in names { out.append((n, m)) }
        return out.sorted { $0.from.count > $1.from.count }
    }
}
