import ATT
import Emulator
import GATT
import Profiles

/// Faults the emulated speaker can be given for a run.
public enum SpeakerFault: Sendable, Hashable {
    /// The Wi-Fi password is wrong: WIFI_CONNECTING, then ERROR WIFI_CONNECT after the join times out.
    case wrongPassword
    /// The SSID is a 5 GHz-only network the ESP32 cannot see: ERROR WIFI_CONNECT sooner.
    case ssid5GHzOnly
    /// The firmware server cannot be reached: ERROR HTTP_CONNECT after WIFI_CONNECTED.
    case httpConnect
    /// The server answers with an error status: ERROR HTTP_RESPONSE.
    case httpStatus
    /// The download stops at `atPercent` and fails with ERROR DOWNLOAD after `timeout` µs.
    case downloadStall(atPercent: Int, timeout: Int64 = 30_000_000)
    /// The image fails its check: VERIFYING, then ERROR VERIFY.
    case verifyFailure
}

/// Bugs of classes real firmware has had, planted on purpose so a fuzzer can prove it finds
/// them (`gattlab emulate speaker --quirk NAME`). Off by default; a planted crash is the model's
/// `crash` event (the device resets and the link drops), never a trap of the emulator.
public enum SpeakerQuirk: String, CaseIterable, Sendable, Hashable {
    /// The credentials handler copies the SSID into a 32-byte buffer up to the NUL, with no length
    /// check: a value whose first 32 bytes hold no NUL overflows the stack and crashes.
    case ssidOverflow = "ssid-overflow"
    /// OTA_STATUS is writable (an "ack/reset status" feature) and the handler reads 8 bytes
    /// without checking the length: a shorter write crashes.
    case shortStatusWrite = "short-status-write"
    /// The prepare-write queue has no bound: every Prepare Write Request takes more memory.
    case unboundedPrepareQueue = "unbounded-prepare-queue"

    public var summary: String {
        switch self {
        case .ssidOverflow: "a credentials write whose first 32 bytes hold no NUL overflows the SSID buffer (crash)"
        case .shortStatusWrite: "OTA_STATUS is writable; a write shorter than 8 bytes is read past its end (crash)"
        case .unboundedPrepareQueue: "Prepare Write requests are queued without limit (memory grows, never Prepare Queue Full)"
        }
    }
}

/// How an emulated speaker behaves in one run.
public struct SpeakerConfiguration: Sendable, Hashable {
    public var firmwareKB: UInt16 = 1480
    /// The image size first reported with the download: WIFI_CONNECTING and WIFI_CONNECTED say
    /// 0 KB of 0 (a firmware that learns the size from the HTTP response, as the demo capture's
    /// did); by default the size is known from START on.
    public var totalKBFromDownload = false
    /// A progress notification every this many KB downloaded.
    public var progressEveryKB = 128
    public var downloadKBPerSecond = 160
    public var faults: [SpeakerFault] = []
    /// Status notifications cut to this many bytes (a firmware that sends short statuses).
    public var statusCutTo: Int?
    /// The device drops the link as it enters this state.
    public var disconnectAt: SpeakerOTA.State?
    /// With `disconnectAt` DOWNLOADING: the drop comes once progress reaches this percentage
    /// (a recorded device that lost the link at 63 %), not as the download starts.
    public var disconnectAtProgress: UInt8?
    /// The firmware hangs as it enters this state: the link stays up, nothing is answered.
    public var hangAt: SpeakerOTA.State?
    /// OTA_CREDENTIALS answers Insufficient Encryption until the link is encrypted.
    public var credentialsNeedEncryption = false
    /// A firmware bug: OTA_CREDENTIALS is readable (its declaration says Read too), and a Read
    /// returns what was written, "SSID\0password".
    public var credentialsReadable = false
    /// Without VALIDATE this long after the reboot, the device rolls back by itself.
    public var validateTimeout: Int64 = 120_000_000
    /// A recorded device's database to serve instead of the built-in one (`emulate --from`).
    public var recordedTable: RecordedTable?
    /// Planted bugs (see `SpeakerQuirk`); none by default.
    public var quirks: Set<SpeakerQuirk> = []
    public init() {}

    func has(_ f: SpeakerFault) -> Bool { faults.contains(f) }
    var stall: (Int, Int64)? {
        for f in faults { if case .downloadStall(let p, let t) = f { return (p, t) } }
        return nil
    }
}

/// The ChaoticVolt speaker (PROTOCOLS.md §3): OTA over four characteristics, with the state
/// machine the device team documents, timed on the virtual clock.
public final class SpeakerDevice: DeviceModel {
    public let server: GATTServer
    public var requestedDisconnect: UInt8?
    public var crash: String?
    public let configuration: SpeakerConfiguration
    private let scheduler: VirtualScheduler
    private var random: SeededRandom

    public private(set) var status = SpeakerOTA.Status(state: .idle)
    public private(set) var credentials: SpeakerOTA.Credentials?
    public private(set) var url: SpeakerOTA.FirmwareURL?
    /// The states notified (or set) so far, in order, for tests.
    public private(set) var history: [SpeakerOTA.State] = [.idle]
    /// Bumped to cancel the timers of an operation in progress.
    private var generation = 0
    private var newImageBooted = false
    private let rssi: Int8

    let statusHandle: UInt16
    let credentialsHandle: UInt16
    let urlHandle: UInt16
    let controlHandle: UInt16

    public init(scheduler: VirtualScheduler, seed: UInt64, configuration: SpeakerConfiguration = SpeakerConfiguration(),
                serverMTU: UInt16 = 247) {
        self.scheduler = scheduler
        self.configuration = configuration
        random = SeededRandom(seed: seed &+ 1)
        rssi = Int8(-40 - Int(random.below(30)))
        var table = configuration.recordedTable?.table ?? SpeakerOTAProtocol.builtInAttributeTable?.table ?? AttributeTable()
        if configuration.credentialsReadable,
           let c = table.characteristics.values.first(where: { $0.uuid == SpeakerOTA.credentials }) {
            table.addCharacteristic(declaration: c.declarationHandle, properties: c.properties | 0x02, valueHandle: c.valueHandle, uuid: c.uuid)
        }
        if configuration.quirks.contains(.shortStatusWrite),
           let c = table.characteristics.values.first(where: { $0.uuid == SpeakerOTA.status }) {
            // The ack/reset feature: the status declaration says Write too.
            table.addCharacteristic(declaration: c.declarationHandle, properties: c.properties | 0x08, valueHandle: c.valueHandle, uuid: c.uuid)
        }
        if var recorded = configuration.recordedTable {
            recorded.table = table
            server = RecordedTable.server(recorded, builtIn: nil, serverMTU: serverMTU, values: [:])
        } else {
            server = GATTServer(table: table, serverMTU: serverMTU, values: [
                3: Array("CV-Speaker".utf8), 5: [0x41, 0x08],
                12: [0x00, 0x32, 0x00, 0x00],  // DSP settings
            ])
        }
        statusHandle = server.valueHandle(of: SpeakerOTA.status) ?? 20
        credentialsHandle = server.valueHandle(of: SpeakerOTA.credentials) ?? 14
        urlHandle = server.valueHandle(of: SpeakerOTA.url) ?? 16
        controlHandle = server.valueHandle(of: SpeakerOTA.control) ?? 18
        server.setValue(status.encode(), for: statusHandle)
        if configuration.quirks.contains(.unboundedPrepareQueue) { server.maxPreparedWrites = .max }
        if configuration.credentialsNeedEncryption {
            var p: AttributePermissions = [.write, .writeEncrypted]
            if configuration.credentialsReadable { p.formUnion([.read, .readEncrypted]) }
            server.setPermissions(p, for: credentialsHandle)
        }
        server.onWrite(credentialsHandle) { [weak self] _, w in
            guard let self else { return .unlikelyError }  // the server outlived its model
            return self.credentialsWritten(w.value)
        }
        server.onWrite(urlHandle) { [weak self] _, w in
            guard let self else { return .unlikelyError }  // the server outlived its model
            return self.urlWritten(w.value)
        }
        server.onWrite(controlHandle) { [weak self] _, w in
            guard let self else { return .unlikelyError }  // the server outlived its model
            return self.controlWritten(w.value)
        }
        if configuration.quirks.contains(.shortStatusWrite) {
            server.onWrite(statusHandle) { [weak self] _, w in
                guard let self else { return .unlikelyError }  // the server outlived its model
                return self.statusWritten(w.value)
            }
        }
    }

    public static func factory(_ configuration: SpeakerConfiguration, serverMTU: UInt16 = 247) -> DeviceFactory {
        { scheduler, seed in SpeakerDevice(scheduler: scheduler, seed: seed, configuration: configuration, serverMTU: serverMTU) }
    }

    public func connected() {}
    public func disconnected() {}

    private var busy: Bool {
        switch status.state {
        case .wifiConnecting, .wifiConnected, .downloading, .verifying: true
        default: false
        }
    }

    /// Sets and notifies the status (cut when the fault says so); drops the link if this is the
    /// state the run disconnects at.
    private func set(_ state: SpeakerOTA.State, error: SpeakerOTA.ErrorCode = .none, progress: UInt8? = nil,
                     downloadedKB: UInt16? = nil) {
        status = SpeakerOTA.Status(state: state, error: error, progress: progress ?? status.progress,
                                   downloadedKB: downloadedKB ?? status.downloadedKB,
                                   totalKB: status.totalKB, rssi: state == .idle ? 0 : status.rssi)
        history.append(state)
        var bytes = status.encode()
        if let n = configuration.statusCutTo { bytes = Array(bytes.prefix(max(0, n))) }
        server.notify(statusHandle, bytes)
        if configuration.hangAt == state {
            generation += 1
            server.hung = true
        }
        if configuration.disconnectAt == state, status.progress >= (configuration.disconnectAtProgress ?? 0) {
            generation += 1
            requestedDisconnect = 0x08
        }
    }

    private func later(_ delay: Int64, _ action: @escaping () -> Void) {
        let g = generation
        scheduler.schedule(after: delay + random.below(delay / 20 + 1)) { [weak self] in
            guard let self, self.generation == g else { return }
            action()
        }
    }

    // MARK: Writes

    private func credentialsWritten(_ value: [UInt8]) -> ATTErrorCode? {
        // The quirk's strcpy runs as the value arrives, before any state check.
        if configuration.quirks.contains(.ssidOverflow), !value.prefix(32).contains(0) {
            return crashed("stack buffer overflow copying the SSID (\(value.count)-byte credentials, no NUL in the first 32 bytes)")
        }
        if busy { return .procedureAlreadyInProgress }
        let (c, _) = SpeakerOTA.Credentials.decode(value)
        guard let c, value.count <= SpeakerOTA.maxCredentialsLength else { return .valueNotAllowed }
        credentials = c
        set(.credentialsReceived)
        return nil
    }

    private func urlWritten(_ value: [UInt8]) -> ATTErrorCode? {
        if busy { return .procedureAlreadyInProgress }
        guard !value.isEmpty, value.count <= SpeakerOTA.maxURLLength else { return .valueNotAllowed }
        url = SpeakerOTA.FirmwareURL(bytes: value)
        if credentials == nil {
            set(.error, error: .noCredentials)
        } else {
            set(.urlReceived)
        }
        return nil
    }

    /// OTA_STATUS written (short-status-write quirk only): the handler reads 8 bytes unchecked.
    private func statusWritten(_ value: [UInt8]) -> ATTErrorCode? {
        guard value.count >= 8 else {
            return crashed("out-of-bounds read of a \(value.count)-byte OTA_STATUS write (8 expected)")
        }
        if busy { return .procedureAlreadyInProgress }
        // The ack: the status goes back to IDLE.
        generation += 1
        set(.idle, progress: 0, downloadedKB: 0)
        return nil
    }

    private func controlWritten(_ value: [UInt8]) -> ATTErrorCode? {
        guard value.count == 2 else { return .invalidAttributeValueLength }
        switch SpeakerOTA.Command(rawValue: value[0]) {
        case .start:
            if busy { return .procedureAlreadyInProgress }
            guard credentials != nil else { set(.error, error: .noCredentials); return nil }
            guard url != nil else { set(.error, error: .noURL); return nil }
            start()
        case .cancel:
            generation += 1
            set(.error, error: .cancelled)
        case .reboot:
            generation += 1
            let success = status.state == .success
            // The write is answered, then the device resets and the phone loses it.
            scheduler.schedule(after: 50_000) { [weak self] in
                guard let self else { return }
                self.rebooted(intoNewImage: success)
            }
        case .getVersion:
            server.notify(statusHandle, status.encode())
        case .rollback:
            generation += 1
            newImageBooted = false
            set(.idle, progress: 0, downloadedKB: 0)
        case .validate:
            if status.state == .pendingVerify {
                generation += 1
                newImageBooted = false
                set(.idle, progress: 0, downloadedKB: 0)
            } else {
                server.notify(statusHandle, status.encode())
            }
        case nil:
            return .valueNotAllowed
        }
        return nil
    }

    // MARK: The update

    private func start() {
        generation += 1
        status.totalKB = configuration.totalKBFromDownload ? 0 : configuration.firmwareKB
        status.rssi = rssi
        set(.wifiConnecting, progress: 0, downloadedKB: 0)
        if configuration.has(.wrongPassword) || configuration.has(.ssid5GHzOnly) {
            // A wrong password fails after the 4-way handshake retries; an unseen SSID after the scan.
            later(configuration.has(.wrongPassword) ? 8_000_000 : 3_000_000) { self.set(.error, error: .wifiConnect) }
            return
        }
        later(2_200_000) {
            self.set(.wifiConnected)
            self.later(400_000) {
                if self.configuration.has(.httpConnect) {
                    self.later(5_000_000) { self.set(.error, error: .httpConnect) }
                } else if self.configuration.has(.httpStatus) {
                    self.later(300_000) { self.set(.error, error: .httpResponse) }
                } else {
                    self.status.totalKB = self.configuration.firmwareKB
                    self.set(.downloading, progress: 0, downloadedKB: 0)
                    self.download(from: 0)
                }
            }
        }
    }

    private func download(from kb: Int) {
        let total = Int(configuration.firmwareKB)
        let step = max(1, configuration.progressEveryKB)
        let next = min(total, kb + step)
        let percent = total > 0 ? next * 100 / total : 100
        if let (stallAt, timeout) = configuration.stall, percent >= stallAt, kb * 100 / max(1, total) < stallAt {
            // Nothing more arrives; the HTTP client gives up after its timeout.
            later(timeout) { self.set(.error, error: .download) }
            return
        }
        let duration = Int64(next - kb) * 1_000_000 / Int64(max(1, configuration.downloadKBPerSecond))
        later(duration) {
            self.set(.downloading, progress: UInt8(min(100, percent)), downloadedKB: UInt16(next))
            if next >= total {
                self.later(300_000) { self.verify() }
            } else {
                self.download(from: next)
            }
        }
    }

    private func verify() {
        set(.verifying)
        later(1_200_000) {
            if self.configuration.has(.verifyFailure) {
                self.set(.error, error: .verify)
            } else {
                self.set(.success, progress: 100)
            }
        }
    }

    /// The firmware crashed in a handler: the request is not answered, the watchdog resets the
    /// device to its power-on state (timers dead, nothing received kept) and the phone sees a
    /// supervision timeout. The error returned only keeps the server from storing the value.
    private func crashed(_ why: String) -> ATTErrorCode {
        crash = why
        server.dropResponse()
        generation += 1
        newImageBooted = false
        credentials = nil
        url = nil
        status = SpeakerOTA.Status(state: .idle)
        history.append(.idle)
        server.setValue(status.encode(), for: statusHandle)
        server.hung = false
        requestedDisconnect = 0x08
        return .unlikelyError
    }

    private func rebooted(intoNewImage: Bool) {
        requestedDisconnect = 0x08
        generation += 1
        newImageBooted = intoNewImage
        status = SpeakerOTA.Status(state: intoNewImage ? .pendingVerify : .idle, rssi: 0)
        history.append(status.state ?? .idle)
        server.setValue(status.encode(), for: statusHandle)
        if intoNewImage {
            later(configuration.validateTimeout) {
                // Not validated in time: the bootloader goes back to the old image.
                self.newImageBooted = false
                self.set(.idle)
            }
        }
    }
}
