import ATT
import Capture
import Emulator
import Profiles
import Replay

/// nRF7 provisioning in replay: responses and results by meaning, results folded into the
/// connection states reached and the networks scanned, the configuration rebuilt for `--set`,
/// and the scan's pace and Wi-Fi world read from a recording.
extension NRF7Protocol: ReplayingProtocol {
    public static func describe(_ bytes: [UInt8], characteristic: BluetoothUUID, written: Bool) -> String? {
        switch characteristic {
        case NRF7.controlPoint where !written:
            guard let r = NRF7.Response.decode(bytes).0 else { return nil }
            var text = "response \(r.requestOpCode?.description ?? "?") \(r.status?.description ?? "?")"
            if let state = r.deviceStatus?.state { text += " state \(state)" }
            return text
        case NRF7.dataOut:
            guard let r = NRF7.Result.decode(bytes).0 else { return nil }
            if let record = r.scanRecord { return "network \"\(record.wifi?.ssidText ?? "")\"" }
            if let state = r.state { return "state \(state)\(r.reason.map { " \($0)" } ?? "")" }
            return nil
        default:
            return nil
        }
    }

    public static func sameMeaning(recorded: [UInt8], observed: [UInt8], characteristic: BluetoothUUID, progress: Bool) -> Bool {
        // The answer's operation, status and connection state are the protocol; the IP address,
        // BSSID, channel and scan parameters a status carries are the network's.
        guard progress, characteristic == NRF7.controlPoint,
              let r = NRF7.Response.decode(recorded).0, let o = NRF7.Response.decode(observed).0 else { return false }
        return r.requestOpCode == o.requestOpCode && r.status == o.status && r.deviceStatus?.state == o.deviceStatus?.state
            && r.deviceStatus?.provisioningInfo?.ssid == o.deviceStatus?.provisioningInfo?.ssid
    }

    public static func progressReader(for characteristic: BluetoothUUID) -> (any ProgressReading)? {
        characteristic == NRF7.dataOut ? ResultProgress() : nil
    }

    /// Results fold into the connection states reached, and the networks the scan records named.
    struct ResultProgress: ProgressReading {
        private var networks: Set<String> = []
        var style: ProgressStyle { .phases }

        mutating func read(_ value: [UInt8]) -> ProgressStep {
            guard let r = NRF7.Result.decode(value).0 else { return ProgressStep(phase: "undecodable Result \(Replay.Hex.string(value))") }
            if let ssid = r.scanRecord?.wifi?.ssidText { networks.insert(ssid) }
            guard let state = r.state else { return ProgressStep(networks: networks) }
            var phase = "state \(state)"
            if let reason = r.reason { phase += " \(reason)" }
            // CONNECTED (4) and CONNECTION_FAILED (5), or any failure reason, end the join.
            return ProgressStep(phase: phase, networks: networks, terminal: state.raw == 4 || state.raw == 5 || r.reason != nil)
        }
    }

    public static func rebuildCredentials(_ recorded: [UInt8], format: String, redacted: Bool,
                                          settings: CredentialSettings) throws(CredentialRebuildError) -> [UInt8]? {
        guard format == "nrf7-set-config" else { return nil }
        if redacted, settings.password == nil { throw .needs("password") }
        guard settings.ssid != nil || settings.password != nil else { return recorded }
        guard var request = NRF7.Request.decode(recorded).0, var config = request.config else {
            throw .undecodable("the recorded nRF7 request")
        }
        if let password = settings.password { config.passphrase = Secret(password, label: "Wi-Fi password") }
        if let ssid = settings.ssid {
            var wifi = config.wifi ?? NRF7.WifiInfo()
            wifi.ssid = ssid
            config.wifi = wifi
        }
        request.config = config
        return request.encode()
    }

    /// The time from START_SCAN to the first scan record.
    public static func readCadence(_ steps: [ReplayStep], into c: inout RecordedCadence) {
        guard let start = steps.firstIndex(where: { s in
            s.action == .write && s.characteristic == NRF7.controlPoint.canonicalString
                && s.value.flatMap(Replay.Hex.bytes).flatMap { NRF7.Request.decode($0).0?.opCode?.raw } == 2
        }), let record = steps[(start + 1)...].first(where: { s in
            s.action == .notification && s.characteristic == NRF7.dataOut.canonicalString
                && s.expect?.value.flatMap(Replay.Hex.bytes).flatMap { NRF7.Result.decode($0).0?.scanRecord } != nil
        }) else { return }
        c.scanDuration = max(0, record.at - steps[start].at)
    }

    public static func worldReader() -> (any RecordedWorldReading)? { ProvisioningWorld() }

    /// The networks the scan records named, the SSID and password the phone configured, and
    /// what the results said of the join.
    struct ProvisioningWorld: RecordedWorldReading {
        mutating func read(_ step: RecordedWorldStep, into world: inout RecordedWorld) -> Bool {
            switch (step.characteristic, step.step.action) {
            case (NRF7.dataOut, .notification):
                guard let answer = step.answer, let r = NRF7.Result.decode(answer).0 else { return false }
                var scanned = false
                if let record = r.scanRecord, let wifi = record.wifi, let ssid = wifi.ssid {
                    scanned = true
                    world.add(ssid: ssid, bssid: wifi.bssid, channel: wifi.channel, band: wifi.band?.raw,
                              auth: wifi.auth?.raw, rssi: record.rssi)
                }
                if let state = r.state {
                    if state.raw == 4 { world.join = .joined }
                    if state.raw == 5 || r.reason != nil {
                        world.join = switch r.reason?.raw { case 0?: .wrongPassword; case 1?: .notFound; default: world.join }
                    }
                }
                return scanned
            case (NRF7.controlPoint, .write):
                guard let sent = step.sent, let request = NRF7.Request.decode(sent).0, let config = request.config else { return false }
                world.ssid = config.wifi?.ssid ?? world.ssid
                world.password = config.passphrase?.unsafeBytes ?? world.password
                return false
            default:
                return false
            }
        }
    }
}
