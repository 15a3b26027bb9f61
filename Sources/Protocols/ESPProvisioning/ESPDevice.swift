import ATT
import Emulator
import Capture
import GATT
import Profiles

/// How an emulated ESP-IDF provisioning device behaves in one run.
public struct ESPConfiguration: Sendable, Hashable {
    /// Security scheme: 0 (plaintext) or 1 (X25519 + AES-CTR with a proof of possession).
    public var security = 1
    /// The proof of possession printed on the device's label (security 1). Empty: security 1
    /// without one (ESP-IDF's `no_pop` capability in proto-ver), the session key is then the
    /// X25519 shared secret alone, and anyone who sees the handshake can run it too.
    public var proofOfPossession = "abcd1234"
    /// The networks around it; nil takes `WiFiEnvironment.neighbourhood(seed:)`.
    public var environment: WiFiEnvironment?
    /// How long a Wi-Fi scan takes.
    public var scanDuration: Int64 = 2_200_000
    /// A recorded device's database to serve instead of the built-in one (`emulate --from`).
    public var recordedTable: RecordedTable?
    /// The proto-ver answer as a recording had it (a replay shapes the device so); nil: made
    /// from `security` and the PoP.
    public var versionText: String?
    public init() {}

    /// The proto-ver answer.
    public var versionJSON: String {
        if let versionText { return versionText }
        var caps = ["wifi_scan"]
        if security == 0 { caps.append("no_sec") }
        if security == 1, proofOfPossession.isEmpty { caps.append("no_pop") }
        let list = caps.map { "\"\($0)\"" }.joined(separator: ",")
        return "{\"prov\":{\"ver\":\"v1.1\",\"sec_ver\":\(security),\"cap\":[\(list)]}}"
    }
}

/// An ESP32 running ESP-IDF's `wifi_provisioning` manager over protocomm BLE (PROTOCOLS.md §6),
/// with the NimBLE host: a request is a write to an endpoint, its response is what the next read
/// of that endpoint returns. Security 1 runs the X25519 handshake and then ONE AES-256-CTR stream
/// for both directions (see `ESPSecurity1`). A request protocomm cannot handle (a handshake that
/// fails verification, an encrypted endpoint before the session) gets Error Response 0x04, as
/// protocomm_nimble answers "Invalid content received". The ESP32 radio is 2.4 GHz only.
public final class ESPDevice: DeviceModel {
    public let server: GATTServer
    public var requestedDisconnect: UInt8?
    public var crash: String?
    public let configuration: ESPConfiguration
    public let environment: WiFiEnvironment
    private let scheduler: VirtualScheduler
    private var random: SeededRandom

    private let handles: [ESPProvisioning.Endpoint: UInt16]
    private let privateKey: [UInt8]
    private var clientPublicKey: [UInt8]?
    private var deviceRandom: [UInt8] = []
    private var stream: ESPSecurity1.Stream?
    private var sessionEstablished = false

    private var scanFinished = false
    /// A scan is under way (ESP-IDF's `prov_ctx->scanning`).
    private var scanRunning = false
    /// How often a blocking scan start looks whether the scan is done (ESP-IDF: 120 ms).
    static let blockingScanPoll: Int64 = 120_000
    private var scanResults: [WiFiEnvironment.Network] = []
    private var scanGeneration = 0
    private var pendingSSID: [UInt8]?
    private var pendingPassphrase: [UInt8]?
    /// Station state (WifiStationState raw value) and the detail RespGetStatus reports.
    public private(set) var stationState = 2
    private var statusDetail = ESPProvisioning.StatusReport.Detail.none
    private var joinGeneration = 0
    /// Every station state, for tests.
    public private(set) var history: [Int] = [2]
    /// Requests protocomm refused, for tests.
    public private(set) var refused: [String] = []

    public init(scheduler: VirtualScheduler, seed: UInt64, configuration: ESPConfiguration = ESPConfiguration(),
                serverMTU: UInt16 = 256) {
        self.scheduler = scheduler
        self.configuration = configuration
        environment = configuration.environment ?? .neighbourhood(seed: seed)
        var random = SeededRandom(seed: seed &+ 7)
        privateKey = (0..<32).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        self.random = random
        server = RecordedTable.server(configuration.recordedTable, builtIn: ESPProvisioningProtocol.builtInAttributeTable?.table, serverMTU: serverMTU,
                                      values: [3: Array("PROV_3C71BF".utf8), 5: [0x00, 0x00]])
        var handles: [ESPProvisioning.Endpoint: UInt16] = [:]
        for endpoint in ESPProvisioning.Endpoint.allCases {
            if let h = server.valueHandle(of: endpoint.defaultUUID) { handles[endpoint] = h }
        }
        self.handles = handles
        for (endpoint, handle) in handles {
            // Weak: the server may outlive its model (a test holding only the server); a write
            // then fails with Unlikely Error instead of touching freed memory.
            server.onWrite(handle) { [weak self] server, w in
                guard let self else { return .unlikelyError }
                guard let response = self.handle(endpoint, w.value) else {
                    self.refused.append(endpoint.rawValue)
                    return .invalidPDU
                }
                server.setValue(response, for: handle)
                return nil
            }
        }
    }

    public static func factory(_ configuration: ESPConfiguration, serverMTU: UInt16 = 256) -> DeviceFactory {
        { scheduler, seed in ESPDevice(scheduler: scheduler, seed: seed, configuration: configuration, serverMTU: serverMTU) }
    }

    public func connected() {}

    /// protocomm closes the session with the link.
    public func disconnected() {
        // A scan under way goes on; a blocking start's held answer went with the link.
        stream = nil
        sessionEstablished = false
        clientPublicKey = nil
    }

    /// The response to one request, or nil when protocomm refuses it.
    private func handle(_ endpoint: ESPProvisioning.Endpoint, _ request: [UInt8]) -> [UInt8]? {
        switch endpoint {
        case .version:
            return Array(configuration.versionJSON.utf8)
        case .session:
            return session(request)
        case .config, .scan:
            guard let plain = decrypt(request) else { return nil }
            guard let answer = endpoint == .config ? config(plain) : scan(plain) else { return nil }
            return encrypt(answer)
        case .control:
            // prov-ctrl (reset, reprovision) is not modelled: acknowledged with an empty response.
            return decrypt(request).map { _ in encrypt([]) }
        }
    }

    // MARK: Session

    private func session(_ bytes: [UInt8]) -> [UInt8]? {
        let (message, _) = ESPProvisioning.SessionMessage.decode(bytes)
        guard let message, message.securityVersion.raw == configuration.security else { return nil }
        switch message.payload {
        case .sec0Command:
            sessionEstablished = true
            return ESPProvisioning.SessionMessage(.sec0Response(status: ESPProvisioning.status(0))).encode()
        case .sec1Command0(let clientKey):
            guard clientKey.count == 32, let devicePublic = ESPSecurity1.publicKey(privateKey: privateKey),
                  let shared = try? ESPSecurity1.sharedSecret(privateKey: privateKey, peerPublicKey: clientKey)
            else { return nil }
            deviceRandom = (0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let key = ESPSecurity1.sessionKey(sharedSecret: shared, proofOfPossession: Array(configuration.proofOfPossession.utf8))
            stream = ESPSecurity1.Stream(key: key, iv: deviceRandom)
            clientPublicKey = clientKey
            sessionEstablished = false
            return ESPProvisioning.SessionMessage(.sec1Response0(status: ESPProvisioning.status(0), devicePublicKey: devicePublic,
                                                                 deviceRandom: deviceRandom)).encode()
        case .sec1Command1(let verify):
            guard var s = stream, let clientKey = clientPublicKey, let devicePublic = ESPSecurity1.publicKey(privateKey: privateKey)
            else { return nil }
            // The phone proves it has the key by encrypting our public key; a wrong PoP gives
            // another key and this check fails ("Key mismatch. Close connection").
            guard s.apply(verify) == devicePublic else {
                stream = nil
                return nil
            }
            let answer = s.apply(clientKey)
            stream = s
            sessionEstablished = true
            return ESPProvisioning.SessionMessage(.sec1Response1(status: ESPProvisioning.status(0), deviceVerifyData: answer)).encode()
        default:
            return nil
        }
    }

    private func decrypt(_ bytes: [UInt8]) -> [UInt8]? {
        guard sessionEstablished else { return nil }
        guard configuration.security == 1 else { return bytes }
        guard var s = stream else { return nil }
        let plain = s.apply(bytes)
        stream = s
        return plain
    }

    private func encrypt(_ bytes: [UInt8]) -> [UInt8] {
        guard configuration.security == 1, var s = stream else { return bytes }
        let cipher = s.apply(bytes)
        stream = s
        return cipher
    }

    // MARK: prov-config

    private func config(_ bytes: [UInt8]) -> [UInt8]? {
        let (message, _) = ESPProvisioning.ConfigMessage.decode(bytes)
        guard let message else { return nil }
        let success = ESPProvisioning.status(0)
        switch message.payload {
        case .getStatus:
            let report = ESPProvisioning.StatusReport(status: success, stationState: ESPProvisioning.stationState(stationState),
                                                      detail: statusDetail)
            return ESPProvisioning.ConfigMessage(.status(report)).encode()
        case .setConfig(let c):
            guard !c.ssid.isEmpty, c.ssid.count <= 32, c.passphrase.count <= 64 else {
                return ESPProvisioning.ConfigMessage(.setConfigResponse(status: ESPProvisioning.status(4))).encode()
            }
            pendingSSID = c.ssid
            pendingPassphrase = c.passphrase.unsafeBytes
            return ESPProvisioning.ConfigMessage(.setConfigResponse(status: success)).encode()
        case .applyConfig:
            guard let ssid = pendingSSID else {
                return ESPProvisioning.ConfigMessage(.applyConfigResponse(status: ESPProvisioning.status(4))).encode()
            }
            join(ssid: ssid, passphrase: pendingPassphrase ?? [])
            return ESPProvisioning.ConfigMessage(.applyConfigResponse(status: success)).encode()
        default:
            return nil
        }
    }

    private func setStation(_ state: Int, _ detail: ESPProvisioning.StatusReport.Detail) {
        stationState = state
        statusDetail = detail
        history.append(state)
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
        setStation(1, .none)
        switch environment.join(ssid: ssid, passphrase: passphrase, dualBand: false) {
        case .failure(.notFound):
            later(3_000_000) { self.setStation(3, .failReason(ESPProvisioning.failReason(1))) }
        case .failure(.authentication):
            later(5_500_000) { self.setStation(3, .failReason(ESPProvisioning.failReason(0))) }
        case .success(let n):
            later(2_800_000) {
                let state = ESPProvisioning.ConnectedState(
                    ip4Address: "192.168.1.\(20 + self.random.below(200))", authMode: ESPProvisioning.auth(n.auth.rawValue),
                    ssid: Array(n.ssid.utf8), bssid: n.bssid, channel: Int32(n.channel))
                self.setStation(0, .connected(state))
            }
        }
    }

    // MARK: prov-scan

    private func scan(_ bytes: [UInt8]) -> [UInt8]? {
        let (message, _) = ESPProvisioning.ScanMessage.decode(bytes)
        guard let message else { return nil }
        switch message.payload {
        case .start(let blocking, _, _, _):
            // wifi_prov_mgr_wifi_scan_start: a start while a scan runs is answered at once and
            // changes nothing; a blocking start returns only when the scan is done (its handler
            // polls every 120 ms), so the Write Response waits for the scan, as on the air.
            guard !scanRunning else { return ESPProvisioning.ScanMessage(.startResponse).encode() }
            scanGeneration += 1
            scanFinished = false
            scanRunning = true
            scanResults = []
            let g = scanGeneration
            let duration = configuration.scanDuration + random.below(400_000)
            scheduler.schedule(after: duration) { [weak self] in
                guard let self, self.scanGeneration == g else { return }
                self.scanResults = self.environment.visible(dualBand: false)
                self.scanFinished = true
                self.scanRunning = false
            }
            if blocking {
                server.holdResponse()
                let polled = (duration / Self.blockingScanPoll + 1) * Self.blockingScanPoll
                scheduler.schedule(after: polled) { [weak self] in
                    guard let self, self.scanGeneration == g else { return }
                    self.server.releaseHeldResponse()
                }
            }
            return ESPProvisioning.ScanMessage(.startResponse).encode()
        case .status:
            return ESPProvisioning.ScanMessage(.statusResponse(finished: scanFinished, resultCount: UInt32(scanResults.count))).encode()
        case .result(let start, let count):
            let from = min(Int(start), scanResults.count)
            let to = min(scanResults.count, from + Int(min(count, 16)))
            let entries = scanResults[from..<to].map {
                ESPProvisioning.ScanEntry(ssid: Array($0.ssid.utf8), channel: $0.channel, rssi: $0.rssi, bssid: $0.bssid,
                                          auth: ESPProvisioning.auth($0.auth.rawValue))
            }
            return ESPProvisioning.ScanMessage(.resultResponse(entries)).encode()
        default:
            return nil
        }
    }
}
