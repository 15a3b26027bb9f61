import ATT
import Capture
import GATT
import HCI

/// Text for advertising reports: one line each in `decode`.
public enum AdvertisingText {
    static let flagBitNames: [StaticString] = ["le-limited-discoverable", "le-general-discoverable", "br-edr-not-supported",
                                               "le-br-edr-controller", "le-br-edr-host"]

    /// The names of the Flags AD bits that are set.
    public static func flagNames(_ f: UInt8) -> [String] {
        flagBitNames.indices.filter { f & (1 << $0) != 0 }.map { flagBitNames[$0].description }
    }

    /// `flagNames(f)` written into the output, separated by commas, each in quotes when
    /// `quoted` (JSON), with no array or string made: nearly every advertisement has flags.
    static func writeFlagNames(_ f: UInt8, quoted: Bool, to out: BufferedOutput) {
        var first = true
        for (bit, name) in flagBitNames.enumerated() where f & (1 << bit) != 0 {
            if !first { out.byte(UInt8(ascii: ",")) }
            first = false
            if quoted { out.byte(UInt8(ascii: "\"")) }
            out.append(name)
            if quoted { out.byte(UInt8(ascii: "\"")) }
        }
    }

    /// Printable text of a name read off the air: control characters as \u{..}.
    public static func printable(_ s: String) -> String {
        String(s.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined())
    }

    public static func line(_ r: AdvertisingReport) -> String {
        let out = BufferedOutput.collecting()
        write(r, to: out)
        return out.text
    }

    /// `line(r)`, written into the output as bytes: a sniffer's capture is mostly advertising,
    /// and building each line as a string (interpolations, joins, hex a scalar at a time) was
    /// half of text `decode`'s time on one. `AdvertisingTextTests` holds it to the same line
    /// built as a string, the way it was.
    static func write(_ r: AdvertisingReport, to out: BufferedOutput) {
        out.append("ADV " as StaticString)
        out.append(r.eventName)
        if let a = r.address {
            out.byte(0x20)
            out.address(a)
            if let t = r.addressType {
                out.append(" (" as StaticString)
                out.append(t.description)
                out.byte(UInt8(ascii: ")"))
            }
        } else {
            out.append(" anonymous" as StaticString)
        }
        if let t = r.targetAddress {
            out.append(" -> " as StaticString)
            out.address(t)
        }
        if let v = r.rssi {
            out.append(" RSSI " as StaticString)
            out.int(Int(v))
            out.append(" dBm" as StaticString)
        }
        if let p = r.primaryPHY {
            out.byte(0x20)
            out.append(p.description)
        }
        if let c = r.channel {
            out.append(" ch " as StaticString)
            out.int(Int(c))
        }
        if r.connectable || r.scannable {
            out.byte(0x20)
            if r.connectable { out.append("connectable" as StaticString) }
            if r.connectable && r.scannable { out.byte(UInt8(ascii: ",")) }
            if r.scannable { out.append("scannable" as StaticString) }
        }
        if let n = r.fragments {
            out.append(" [" as StaticString)
            out.int(n)
            out.append(r.dataStatus == "truncated" ? " reports joined, truncated: the controller lost the rest]" as StaticString : " reports joined]")
        } else if r.dataStatus == "incomplete" {
            out.append(" [continues in the next report]" as StaticString)
        } else if r.dataStatus == "truncated" {
            out.append(" [truncated: the controller lost the rest]" as StaticString)
        }
        for ad in r.data.structures {
            switch ad {
            case .flags(let f):
                out.append(" flags 0x" as StaticString)
                out.hexByte(f)
            case .localName(let n, let complete):
                out.append(complete ? " name \"" as StaticString : " name (short) \"")
                out.append(hasControlCharacters(n) ? printable(n) : n)
                out.byte(UInt8(ascii: "\""))
            case .serviceUUIDs(let us, _):
                out.append(" services " as StaticString)
                for (i, u) in us.enumerated() {
                    if i > 0 { out.byte(UInt8(ascii: ",")) }
                    out.append(KnownUUIDs.name(u) ?? u.description)
                }
            case .serviceData(let u, let d):
                out.append(" data[" as StaticString)
                out.append(KnownUUIDs.name(u) ?? u.description)
                out.append("] " as StaticString)
                out.hex(d)
            case .manufacturerData(let c, let d):
                out.append(" mfr " as StaticString)
                if let name = AdvertisingNames.company(c) {
                    out.append(name)
                } else {
                    out.append("0x" as StaticString)
                    out.hex(UInt64(c), digits: 4)
                }
                out.byte(0x20)
                out.hex(d)
            case .txPowerLevel(let p):
                out.append(" tx " as StaticString)
                out.int(Int(p))
                out.append(" dBm" as StaticString)
            case .appearance(let a):
                out.append(" appearance 0x" as StaticString)
                out.hex(UInt64(a), digits: 4)
            case .other(let t, let d):
                out.byte(0x20)
                out.append(ADStructure.typeName(t))
                out.byte(0x20)
                out.hex(d)
            }
        }
        if let p = r.problem {
            out.append(" [problem: " as StaticString)
            out.append(p)
            out.byte(UInt8(ascii: "]"))
        }
    }

    /// Whether `printable` would change the text: UTF-8 puts no byte below 0x80 inside a
    /// multi-byte character, so looking at the bytes is exact.
    static func hasControlCharacters(_ s: String) -> Bool {
        s.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }
}
