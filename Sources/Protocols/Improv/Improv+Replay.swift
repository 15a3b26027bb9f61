import ATT
import Capture
import Emulator
import Profiles
import Replay

/// Improv in replay: values by meaning, Current State notifications folded into the states
/// reached, WIFI_SETTINGS rebuilt (with a new checksum) for `--set ssid=... password=...`, and
/// the networks and join a recording shows.
extension ImprovProtocol: ReplayingProtocol {
    public static func describe(_ bytes: [UInt8], characteristic: BluetoothUUID, written: Bool) -> String? {
        switch characteristic {
        case Improv.currentState: Improv.CurrentState.decode(bytes).0.map { "state \($0.state)" }
        case Improv.errorState: Improv.ErrorState.decode(bytes).0.map { "error \($0.error)" }
        case Improv.capabilities: Improv.Capabilities.decode(bytes).0.map { "capabilities \($0.names.joined(separator: ","))" }
        case Improv.rpcCommand:
            // Never the password: only the command and SSID.
            Improv.Command.decode(bytes).0.map { c in "command \(c.command)" + (c.ssid.map { " \"\(ProtocolText.display($0))\"" } ?? "") }
        case Improv.rpcResult:
            Improv.Result.decode(bytes).0.map { r in
                r.command.raw == 0x04 ? (r.endsScan ? "networks end" : "network \(r.networks.map(\.ssidText).joined(separator: ","))")
                    : "result \(r.command)"
            }
        default: nil
        }
    }

    /// A result's command is the protocol; device info strings and the redirect URL differ
    /// between devices of one model. So it is for results cut at the MTU: another device's
    /// device info or URL is cut elsewhere, or before its first string ends.
    public static func sameMeaning(recorded: [UInt8], observed: [UInt8], characteristic: BluetoothUUID, progress: Bool) -> Bool {
        guard progress, characteristic == Improv.rpcResult else { return false }
        guard let r = Improv.Result.decode(recorded).0, let o = Improv.Result.decode(observed).0 else {
            guard isCut(recorded), isCut(observed), recorded.first == observed.first else { return false }
            guard recorded.first == 0x04 else { return true }
            // A network cut at the MTU: what arrived is the command and its whole leading strings
            // (the SSID); the length byte speaks of strings that never came.
            let (rs, os) = (ProvisioningWorld.leadingStrings(recorded), ProvisioningWorld.leadingStrings(observed))
            return !rs.isEmpty && rs == os
        }
        return r.command == o.command && r.command.raw != 0x04
    }

    /// A result frame whose length byte promises more than arrived: cut at the MTU, not damaged.
    static func isCut(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && bytes.count < Int(bytes[1]) + 3 && Improv.Result.decode(bytes).0 == nil
    }

    public static func progressReader(for characteristic: BluetoothUUID) -> (any ProgressReading)? {
        characteristic == Improv.currentState ? StateProgress() : nil
    }

    /// Current State notifications fold into the states reached; PROVISIONED ends the run.
    struct StateProgress: ProgressReading {
        var style: ProgressStyle { .phases }

        mutating func read(_ value: [UInt8]) -> ProgressStep {
            guard let s = Improv.CurrentState.decode(value).0 else { return ProgressStep(phase: "undecodable state \(Replay.Hex.string(value))") }
            return ProgressStep(phase: "state \(s.state)", terminal: s.state.raw == 4)
        }
    }

    public static func rebuildCredentials(_ recorded: [UInt8], format: String, redacted: Bool,
                                          settings: CredentialSettings) throws(CredentialRebuildError) -> [UInt8]? {
        if format == "improv-wifi-settings-piece" {
            // One write of a command cut across several that `rebuildCutCredentials` could not
            // join (its other pieces missing): rebuilding it needs the whole command.
            guard redacted || settings.ssid != nil || settings.password != nil else { return recorded }
            throw .undecodable("a piece of an Improv WIFI_SETTINGS whose other pieces are not the next writes")
        }
        guard format == "improv-wifi-settings" else { return nil }
        if redacted, settings.password == nil { throw .needs("password") }
        guard settings.ssid != nil || settings.password != nil else { return recorded }
        guard var c = Improv.Command.decode(recorded).0, c.command.raw == 0x01 else { throw .undecodable("the recorded Improv WIFI_SETTINGS") }
        if let ssid = settings.ssid { c.ssid = ssid; c.strings = [ssid] }
        if let password = settings.password { c.password = Secret(password, label: "Wi-Fi password") }
        c.checksum = .valid
        guard let bytes = c.encode() else { throw .undecodable("WIFI_SETTINGS with an SSID and password over 255 bytes together") }
        return bytes
    }

    /// A WIFI_SETTINGS the phone cut across writes (at MTU 23 every one is): the pieces that
    /// make the frame's length joined, rebuilt as one command, and cut again at the longest
    /// recorded piece (the phone's write size).
    public static func rebuildCutCredentials(_ pieces: [[UInt8]], format: String, redacted: Bool,
                                             settings: CredentialSettings) throws(CredentialRebuildError) -> (consumed: Int, pieces: [[UInt8]])? {
        guard format == "improv-wifi-settings-piece", let first = pieces.first, first.count >= 2, first[0] == 0x01 else { return nil }
        let total = Int(first[1]) + 3
        var joined: [UInt8] = []
        var consumed = 0
        for p in pieces where joined.count < total {
            joined += p
            consumed += 1
        }
        // Pieces that overrun the frame, or too few of them, are not one command: each is then
        // left to `rebuildCredentials` alone.
        guard joined.count == total, consumed > 1 else { return nil }
        let recorded = Array(pieces.prefix(consumed))
        // A redacted script stars a continuation piece whole: an SSID that runs past the first
        // piece lost its tail there.
        if redacted, settings.ssid == nil, first.count >= 3, 3 + Int(first[2]) > first.count { throw .needs("ssid") }
        guard let whole = try rebuildCredentials(joined, format: "improv-wifi-settings", redacted: redacted, settings: settings) else { return nil }
        if whole == joined { return (consumed, recorded) }
        let size = max(1, recorded.map(\.count).max() ?? 20)
        return (consumed, stride(from: 0, to: whole.count, by: size).map { Array(whole[$0..<min(whole.count, $0 + size)]) })
    }

    public static func worldReader() -> (any RecordedWorldReading)? { ProvisioningWorld() }

    /// The networks GET_WIFI_NETWORKS listed, the SSID and password of WIFI_SETTINGS, and the
    /// join's end (PROVISIONED, or UNABLE_TO_CONNECT: Improv gives no reason, so a wrong password).
    struct ProvisioningWorld: RecordedWorldReading {
        /// The pieces of a command written so far.
        private var pending: [UInt8] = []
        /// The whole strings at the start of a frame cut short of its length byte.
        static func leadingStrings(_ bytes: [UInt8]) -> [[UInt8]] {
            guard bytes.count > 2 else { return [] }
            let end = min(bytes.count, 2 + Int(bytes[1]))
            var out: [[UInt8]] = []
            var i = 2
            while i < end {
                let n = Int(bytes[i])
                guard i + 1 + n <= end else { break }
                out.append(Array(bytes[(i + 1)..<(i + 1 + n)]))
                i += 1 + n
            }
            return out
        }

        mutating func read(_ step: RecordedWorldStep, into world: inout RecordedWorld) -> Bool {
            switch (step.characteristic, step.step.action) {
            case (Improv.rpcResult, .notification):
                guard let answer = step.answer, answer.first == 0x04 else { return false }
                // A result the device cut at the MTU (one notification, as esp32_improv sends it)
                // still names its network when the SSID arrived whole.
                let strings = Improv.Result.decode(answer).0?.strings ?? Self.leadingStrings(answer)
                guard !strings.isEmpty else { return false }
                for i in stride(from: 0, to: strings.count, by: 3) {
                    let rssi = strings.indices.contains(i + 1) ? Int32(String(decoding: strings[i + 1], as: UTF8.self)) : nil
                    let auth = strings.indices.contains(i + 2) ? Improv.authRaw(strings[i + 2]) : nil
                    world.add(ssid: strings[i], bssid: nil, channel: nil, band: nil, auth: auth, rssi: rssi)
                }
                return true
            case (Improv.currentState, .notification):
                if let answer = step.answer, Improv.CurrentState.decode(answer).0?.state.raw == 4 { world.join = .joined }
                return false
            case (Improv.errorState, .notification):
                if let answer = step.answer, Improv.ErrorState.decode(answer).0?.error.raw == 3 { world.join = .wrongPassword }
                return false
            case (Improv.rpcCommand, .write):
                // A command cut across writes (a phone at MTU 23) is read once its pieces join.
                guard let sent = step.sent else { return false }
                pending += sent
                guard let c = Improv.Command.decode(pending).0 else {
                    if pending.count > 257 || (pending.count >= 2 && pending.count >= Int(pending[1]) + 3) { pending = [] }
                    return false
                }
                pending = []
                guard c.command.raw == 0x01 else { return false }
                world.ssid = c.ssid ?? world.ssid
                world.password = c.password?.unsafeBytes ?? world.password
                return false
            default:
                return false
            }
        }
    }
}
