import ATT
import Emulator
import Capture
import GATT
import Profiles

/// How an emulated nRF7 device behaves in one run.
public struct NRF7Configuration: Sendable, Hashable {
    /// The networks around it; nil takes `WiFiEnvironment.neighbourhood(seed:)`.
    public var environment: WiFiEnvironment?
    /// The device drops the link (it reset) as it reaches this connection state (raw value).
    public var disconnectAt: Int?
    /// DHCP never answers: OBTAINING_IP, then CONNECTION_FAILED FAIL_IP.
    public var dhcpFails = false
    /// How long a scan takes before its first result.
    public var scanDuration: Int64 = 2_000_000
    /// The protocol version Info reports.
    public var version: UInt32 = 1
    /// The Control Point and both CCCDs need an encrypted link, as Nordic's sample builds them.
    /// False is a misconfigured firmware: provisioning works on a plain link, passphrase and all.
    public var controlPointNeedsEncryption = true
    /// A recorded device's database to serve instead of the built-in one (`emulate --from`).
    public var recordedTable: RecordedTable?
    public init() {}
}

/// The Nordic nRF7002 provisioning service (PROTOCOLS.md §5) as Zephyr runs it: the Control
/// Point and both CCCDs need an encrypted link (an unbonded phone gets Insufficient
/// Authentication), Requests written to the Control Point are answered by an indicated
/// Response, and scan records and connection states are notified on Data Out as Results.
/// Zephyr does not send a notification or indication that does not fit in MTU-3: at MTU 23 the
/// larger Responses and every scan record are lost, as on real hardware.
public final class NRF7Device: DeviceModel {
    public let server: GATTServer
    public var requestedDisconnect: UInt8?
    public var crash: String?
    public let configuration: NRF7Configuration
    public let environment: WiFiEnvironment
    private let scheduler: VirtualScheduler
    private var random: SeededRandom

    /// Connection state (NRF7 ConnectionState raw value) and what the device is provisioned with.
    public private(set) var state = 0
    public private(set) var provisioned: WiFiEnvironment.Network?
    private var provisionedSSID: [UInt8]?
    private var ip4: [UInt8]?
    private var scanParams: NRF7.ScanParams?
    /// Every connection state notified, for tests.
    public private(set) var history: [Int] = [0]
    private var joinGeneration = 0
    private var scanGeneration = 0

    let controlHandle: UInt16
    let dataOutHandle: UInt16

    public init(scheduler: VirtualScheduler, seed: UInt64, configuration: NRF7Configuration = NRF7Configuration(),
                serverMTU: UInt16 = 247) {
        self.scheduler = scheduler
        self.configuration = configuration
        environment = configuration.environment ?? .neighbourhood(seed: seed)
        random = SeededRandom(seed: seed &+ 5)
        server = RecordedTable.server(configuration.recordedTable, builtIn: NRF7Protocol.builtInAttributeTable?.table, serverMTU: serverMTU, values: [
            3: Array("nRF7-Wi-Fi-Prov".utf8), 5: [0x00, 0x00],
            12: NRF7.Info(version: configuration.version).encode(),
        ])
        if configuration.recordedTable != nil, let info = server.valueHandle(of: NRF7.info), server.value(of: info)?.isEmpty ?? true {
            server.setValue(NRF7.Info(version: configuration.version).encode(), for: info)
        }
        server.dropsOversizedValues = true
        server.unencryptedAccessError = .insufficientAuthentication
        controlHandle = server.valueHandle(of: NRF7.controlPoint) ?? 14
        dataOutHandle = server.valueHandle(of: NRF7.dataOut) ?? 17
        if configuration.controlPointNeedsEncryption {
            server.setPermissions([.write, .writeEncrypted], for: controlHandle)
            for h in [controlHandle, dataOutHandle] {
                if let cccd = server.cccd(of: h) { server.setPermissions([.read, .write, .writeEncrypted], for: cccd) }
            }
        }
        server.onWrite(controlHandle) { [weak self] _, w in
            guard let self else { return .unlikelyError }  // the server outlived its model
            return self.request(w.value)
        }
    }

    public static func factory(_ configuration: NRF7Configuration, serverMTU: UInt16 = 247) -> DeviceFactory {
        { scheduler, seed in NRF7Device(scheduler: scheduler, seed: seed, configuration: configuration, serverMTU: serverMTU) }
    }

    public func connected() {}
    public func disconnected() { scanGeneration += 1 }

    // MARK: Requests

    private func respond(_ op: Int, _ status: Int, deviceStatus: NRF7.DeviceStatus? = nil) {
        let r = NRF7.Response(requestOpCode: NRF7.opCode(op), status: NRF7.status(status), deviceStatus: deviceStatus)
        server.indicate(controlHandle, r.encode())
    }

    private func request(_ value: [UInt8]) -> ATTErrorCode? {
        let (request, problems) = NRF7.Request.decode(value)
        guard let request, problems.isEmpty || request.opCode != nil else {
            respond(0, 2)  // INVALID_PROTO
            return nil
        }
        let op = request.opCode?.raw ?? 0
        switch op {
        case 1:  // GET_STATUS
            respond(op, 0, deviceStatus: deviceStatus())
        case 2:  // START_SCAN
            scanParams = request.scanParams
            respond(op, 0)
            startScan()
        case 3:  // STOP_SCAN
            scanGeneration += 1
            respond(op, 0)
        case 4:  // SET_CONFIG
            guard let config = request.config, let ssid = config.wifi?.ssid, (1...NRF7.maxSSIDLength).contains(ssid.count),
                  (config.passphrase?.count ?? 0) <= NRF7.maxPassphraseLength
            else {
                respond(op, 1)  // INVALID_ARGUMENT
                return nil
            }
            respond(op, 0)
            join(ssid: ssid, passphrase: config.passphrase?.unsafeBytes ?? [])
        case 5:  // FORGET_CONFIG
            joinGeneration += 1
            provisioned = nil
            provisionedSSID = nil
            ip4 = nil
            respond(op, 0)
            set(state: 0)
        default:
            respond(op, 1)
        }
        return nil
    }

    private func deviceStatus() -> NRF7.DeviceStatus {
        var info: NRF7.WifiInfo?
        if let n = provisioned {
            info = NRF7.WifiInfo(ssid: n.ssid, bssid: n.bssid, band: n.band == .ghz5 ? 2 : 1, channel: n.channel, auth: n.auth.rawValue)
        } else if let ssid = provisionedSSID {
            info = NRF7.WifiInfo(ssid: ssid)
        }
        return NRF7.DeviceStatus(state: NRF7.state(state), provisioningInfo: info, ip4Address: ip4, scanInfo: scanParams)
    }

    // MARK: Scans and joins

    private func notify(_ result: NRF7.Result) {
        server.notify(dataOutHandle, result.encode(), setValue: false)
    }

    private func startScan() {
        scanGeneration += 1
        let g = scanGeneration
        var at = scheduler.now + configuration.scanDuration + random.below(300_000)
        for n in environment.visible(dualBand: true) {
            let record = NRF7.ScanRecord(
                wifi: NRF7.WifiInfo(ssid: n.ssid, bssid: n.bssid, band: n.band == .ghz5 ? 2 : 1, channel: n.channel, auth: n.auth.rawValue),
                rssi: n.rssi)
            scheduler.schedule(at: at) { [weak self] in
                guard let self, self.scanGeneration == g else { return }
                self.notify(NRF7.Result(scanRecord: record))
            }
            at += 40_000 + random.below(60_000)
        }
    }

    private func set(state: Int, reason: Int? = nil) {
        self.state = state
        history.append(state)
        notify(NRF7.Result(state: NRF7.state(state), reason: reason.map(NRF7.reason)))
        if configuration.disconnectAt == state {
            joinGeneration += 1
            requestedDisconnect = 0x08
        }
    }

    private func later(_ delay: Int64, _ action: @escaping () -> Void) {
        let g = joinGeneration
        scheduler.schedule(after: delay + random.below(delay / 10 + 1)) { [weak self] in
            guard let self, self.joinGeneration == g else { return }
            action()
        }
    }

    private func join(ssid: [UInt8], passphrase: [UInt8]) {
        joinGeneration += 1
        provisioned = nil
        provisionedSSID = ssid
        ip4 = nil
        switch environment.join(ssid: ssid, passphrase: passphrase, dualBand: true) {
        case .failure(.notFound):
            // The supplicant scans every channel before giving up.
            later(3_500_000) { self.set(state: 5, reason: 1) }
        case .failure(.authentication):
            later(400_000) {
                self.set(state: 1)
                // Authentication and association succeed whatever the passphrase (WPA checks it in
                // the 4-way handshake that follows, as wpa_supplicant reports it): the handshake
                // times out, is retried, and the supplicant gives up.
                self.later(150_000) {
                    self.set(state: 2)
                    self.later(5_000_000) { self.set(state: 5, reason: 0) }
                }
            }
        case .success(let network):
            provisioned = network
            later(400_000) {
                self.set(state: 1)
                self.later(150_000) {
                    self.set(state: 2)
                    self.later(250_000) {
                        self.set(state: 3)
                        if self.configuration.dhcpFails {
                            self.later(10_000_000) { self.set(state: 5, reason: 3) }
                            return
                        }
                        self.later(1_200_000) {
                            self.ip4 = [192, 168, 1, UInt8(20 + self.random.below(200))]
                            self.set(state: 4)
                        }
                    }
                }
            }
        }
    }
}
