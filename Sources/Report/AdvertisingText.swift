import ATT
import Capture
import GATT
import HCI

/// Text for advertising reports: one line each in `decode`.
public enum AdvertisingText {
    /// The names of the Flags AD bits that are set.
    public static func flagNames(_ f: UInt8) -> [String] {
        let names = ["le-limited-discoverable", "le-general-discoverable", "br-edr-not-supported",
                     "le-br-edr-controller", "le-br-edr-host"]
        return names.indices.filter { f & (1 << $0) != 0 }.map { names[$0] }
    }

    /// Printable text of a name read off the air: control characters as \u{..}.
    public static func printable(_ s: String) -> String {
        String(s.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined())
    }

    public static func line(_ r: AdvertisingReport) -> String {
        var s = "ADV \(r.eventName)"
        if let a = r.address { s += " \(a)" + (r.addressType.map { " (\($0))" } ?? "") } else { s += " anonymous" }
        if let t = r.targetAddress { s += " -> \(t)" }
        if let v = r.rssi { s += " RSSI \(v) dBm" }
        if let p = r.primaryPHY { s += " \(p)" }
        if let c = r.channel { s += " ch \(c)" }
        let kind = [r.connectable ? "connectable" : nil, r.scannable ? "scannable" : nil].compactMap { $0 }
        if !kind.isEmpty { s += " " + kind.joined(separator: ",") }
        if let n = r.fragments {
            s += r.dataStatus == "truncated" ? " [\(n) reports joined, truncated: the controller lost the rest]" : " [\(n) reports joined]"
        } else if r.dataStatus == "incomplete" {
            s += " [continues in the next report]"
        } else if r.dataStatus == "truncated" {
            s += " [truncated: the controller lost the rest]"
        }
        for ad in r.data.structures {
            switch ad {
            case .flags(let f): s += " flags 0x" + Hex.string([f])
            case .localName(let n, let complete): s += " name\(complete ? "" : " (short)") \"\(printable(n))\""
            case .serviceUUIDs(let us, _):
                s += " services " + us.map { KnownUUIDs.name($0).map { n in "\(n)" } ?? $0.description }.joined(separator: ",")
            case .serviceData(let u, let d): s += " data[\(KnownUUIDs.name(u) ?? u.description)] \(Hex.string(d))"
            case .manufacturerData(let c, let d):
                s += " mfr \(AdvertisingNames.company(c) ?? "0x" + Hex.string([UInt8(c >> 8), UInt8(c & 0xFF)])) \(Hex.string(d))"
            case .txPowerLevel(let p): s += " tx \(p) dBm"
            case .appearance(let a): s += " appearance 0x" + Hex.string([UInt8(a >> 8), UInt8(a & 0xFF)])
            case .other(let t, let d): s += " \(ADStructure.typeName(t)) \(Hex.string(d))"
            }
        }
        if let p = r.problem { s += " [problem: \(p)]" }
        return s
    }
}
