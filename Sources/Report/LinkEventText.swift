import Capture
import HCI

/// Text and JSON fields of link events (HCI, SMP, L2CAP, LL) for `decode`: one line each.
public enum LinkEventText {
    /// (connection, category or nil to skip, texts, JSON fields) for a link event.
    public static func describe(_ l: LinkEvent, reveal: Bool) -> (ConnectionKey?, String?, (event: String, line: String, arrow: String), [(String, Any)]) {
        switch l {
        case .controllerAdded(let index, let name, let address):
            return (nil, "link", ("controller-added", "Controller hci\(index) \(name) \(address?.description ?? "")", " "),
                    [("index", Int(index)), ("name", name), ("address", address?.description ?? "")])
        case .controllerRemoved(let index):
            return (nil, "link", ("controller-removed", "Controller hci\(index) removed", " "), [("index", Int(index))])
        case .connectionComplete(let c):
            var s = "Connected"
            if let peer = c.peerAddress { s += " to \(peer) (\(c.peerAddressType?.description ?? "?"))" }
            if let p = c.peripheralAddress, let ce = c.centralAddress { s += " central \(ce) -> peripheral \(p)" }
            if c.role != .unknown { s += " as \(c.role.rawValue)" }
            if let i = c.intervalMicroseconds { s += ", interval \(TimeFormat.duration(Int64(i)))" }
            if let l = c.latency { s += ", latency \(l)" }
            if let t = c.supervisionTimeoutMicroseconds { s += ", timeout \(TimeFormat.duration(Int64(t)))" }
            var fields: [(String, Any)] = [("role", c.role.rawValue)]
            if let peer = c.peerAddress { fields.append(("peer", peer.description)) }
            if let t = c.peerAddressType { fields.append(("peerType", t.description)) }
            if let ce = c.centralAddress { fields.append(("central", ce.description)) }
            if let p = c.peripheralAddress { fields.append(("peripheral", p.description)) }
            if let i = c.intervalMicroseconds { fields.append(("intervalMicros", i)) }
            if let l = c.latency { fields.append(("latency", Int(l))) }
            if let t = c.supervisionTimeoutMicroseconds { fields.append(("supervisionTimeoutMicros", t)) }
            return (c.key, "link", ("connection-complete", s, " "), fields)
        case .connectionFailed(let status, let peer):
            return (nil, "link", ("connection-failed", "Connection to \(peer?.description ?? "?") failed: \(status)", " "),
                    [("status", Int(status.rawValue)), ("statusName", status.name), ("peer", peer?.description ?? "")])
        case .disconnection(let c, let reason):
            return (c.key, "link", ("disconnection", "Disconnected: \(reason)", " "),
                    [("reason", Int(reason.rawValue)), ("reasonName", reason.name)])
        case .encryptionChange(let key, let enabled, let status, let keySize):
            var s = status.rawValue != 0 ? "Encryption change failed: \(status)" : enabled ? "Encryption on" : "Encryption off"
            if let keySize { s += " (key size \(keySize))" }
            var fields: [(String, Any)] = [("enabled", enabled), ("status", Int(status.rawValue))]
            if let keySize { fields.append(("keySize", Int(keySize))) }
            return (key, "link", ("encryption-change", s, " "), fields)
        case .encryptionKeyRefresh(let key, let status):
            return (key, "link", ("encryption-key-refresh", "Encryption key refreshed (\(status.name))", " "), [("status", Int(status.rawValue))])
        case .connectionUpdate(let key, let interval, let latency, let timeout):
            return (key, "link", ("connection-update", "Connection updated: interval \(TimeFormat.duration(Int64(interval) * 1250)), latency \(latency), timeout \(TimeFormat.duration(Int64(timeout) * 10_000))", " "),
                    [("intervalMicros", Int(interval) * 1250), ("latency", Int(latency)), ("supervisionTimeoutMicros", Int(timeout) * 10_000)])
        case .dataLengthChange(let key, let tx, let rx):
            return (key, "link", ("data-length-change", "Data length: tx \(tx), rx \(rx) octets", " "), [("maxTxOctets", Int(tx)), ("maxRxOctets", Int(rx))])
        case .ltkRequest(let key, _, let ediv):
            return (key, "link", ("ltk-request", "LTK requested (EDIV 0x\(String(ediv, radix: 16)))", " "), [("ediv", Int(ediv))])
        case .ltkReply(let key, let ltk):
            return (key, "link", ("ltk-reply", "LTK reply LTK=\(ltk.hex(reveal: reveal))", ">"), [("ltk", ltk.hex(reveal: reveal))])
        case .ltkNegativeReply(let key):
            return (key, "link", ("ltk-negative-reply", "LTK negative reply (no key: pairing needed)", ">"), [])
        case .startEncryption(let key, let ltk, _, let ediv):
            return (key, "link", ("start-encryption", "Start encryption LTK=\(ltk.hex(reveal: reveal)) EDIV 0x\(String(ediv, radix: 16))", ">"),
                    [("ltk", ltk.hex(reveal: reveal)), ("ediv", Int(ediv))])
        case .resolvingListAdd(let peer, let peerIRK, let localIRK):
            let irks = [peerIRK.map { "peer IRK=\($0.hex(reveal: reveal))" }, localIRK.map { "local IRK=\($0.hex(reveal: reveal))" }].compactMap { $0 }
            return (nil, "link", ("resolving-list-add", "Resolving list add \(peer) \(irks.joined(separator: " "))", ">"),
                    [("peer", peer.description), ("peerIRK", peerIRK?.hex(reveal: reveal) ?? ""), ("localIRK", localIRK?.hex(reveal: reveal) ?? "")])
        case .leEncrypt(let key):
            return (nil, "link", ("le-encrypt", "LE Encrypt key=\(key.hex(reveal: reveal))", ">"), [("key", key.hex(reveal: reveal))])
        case .encryptionKeySize(let key, let size):
            return (key, "link", ("encryption-key-size", "Encryption key size \(size)", "<"), [("keySize", Int(size))])
        case .linkKey(let peer, let linkKey, let fromController):
            return (nil, "link", ("link-key", "\(fromController ? "Link key notification" : "Link key reply") for \(peer) key=\(linkKey.hex(reveal: reveal))",
                                  fromController ? "<" : ">"),
                    [("peer", peer.description), ("linkKey", linkKey.hex(reveal: reveal))])
        case .disconnectCommand(let key, let reason):
            return (key, "link", ("disconnect-command", "Host asks to disconnect: \(reason)", ">"), [("reason", Int(reason.rawValue))])
        case .createConnection(let peer, _):
            return (nil, "link", ("create-connection", "Connecting to \(peer)", ">"), [("peer", peer.description)])
        case .commandFailed(let opcode, let status):
            return (nil, "link", ("command-failed", "\(HCINames.command(opcode)) failed: \(status)", "<"),
                    [("command", Int(opcode)), ("commandName", HCINames.command(opcode)), ("status", Int(status.rawValue)), ("statusName", status.name)])
        case .smp(let key, let direction, let pdu):
            return (key, "smp", ("smp", "SMP \(pdu.summary(reveal: reveal))", direction.arrow),
                    [("direction", direction.description), ("code", Int(pdu.code)), ("name", SMPPDU.name(pdu.code)), ("summary", pdu.summary(reveal: reveal))])
        case .signalling(let key, let direction, let code, _):
            return (key, "link", ("signalling", "L2CAP \(LinkEvent.signallingName(code))", direction.arrow),
                    [("direction", direction.description), ("code", Int(code)), ("name", LinkEvent.signallingName(code))])
        case .llControl(let key, let direction, let opcode):
            return (key, "link", ("ll-control", LinkEvent.llControlName(opcode), direction.arrow),
                    [("direction", direction.description), ("llOpcode", Int(opcode)), ("name", LinkEvent.llControlName(opcode))])
        case .encrypted(let key, let direction, let pdu):
            return (key, "link", ("encrypted", pdu.summary, direction.arrow),
                    [("direction", direction.description), ("llid", Int(pdu.llid)), ("length", pdu.length), ("reason", pdu.reasonName)])
        case .decrypting(let key):
            return (key, "link", ("decrypting", "LTK verified (MIC): decrypting the link", " "), [])
        case .malformed(let key, let layer, let reason):
            return (key, "malformed", ("malformed", "[malformed \(layer.rawValue)] \(reason)", " "), [("layer", layer.rawValue), ("reason", reason)])
        case .text(let t):
            return (nil, "note", ("note", "note: \(t)", " "), [("text", t)])
        case .note(let key, let layer, let t):
            return (key, "note", ("note", "note \(layer.rawValue): \(t)", " "), [("layer", layer.rawValue), ("text", t)])
        case .advertising(let r):
            return (nil, "adv", ("adv", AdvertisingText.line(r), " "), [])
        case .l2cap(let key, let cid, let direction):
            return (key, "link", ("l2cap", "L2CAP CID 0x\(String(cid, radix: 16)) SDU", direction.arrow),
                    [("cid", Int(cid)), ("direction", direction.description)])
        }
    }
}
