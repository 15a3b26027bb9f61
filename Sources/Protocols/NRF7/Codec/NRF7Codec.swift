import Capture
import Foundation
import ProtocolsShared
import SwiftProtobuf
import Profiles

/// Decoding and encoding between the generated protobuf types and GATTLab's values. Decoding
/// never traps: a message the protobuf runtime rejects (truncated, wrong wire type, a length
/// past the end) becomes an `nrf7.malformed` problem saying where, from a walk of the fields.
struct NRF7Decoding {
    var problems: [ProtocolProblem] = []

    /// Parses bytes as `M`, or records why not.
    mutating func parse<M: SwiftProtobuf.Message>(_ type: M.Type, _ bytes: [UInt8], what: String) -> M? {
        ProtoWire.parse(type, bytes, what: what, problemID: "nrf7.malformed", problems: &problems)
    }

    /// An enum field: the generated value when known, else the number kept in the unknown fields.
    mutating func enumValue(has: Bool, raw: Int, field: Int, unknown: inout [UInt8], in message: String, field name: String,
                            _ make: (Int) -> ProtoEnumValue) -> ProtoEnumValue? {
        let value: ProtoEnumValue? = has ? make(raw) : ProtoWire.takeEnum(field, from: &unknown).map(make)
        if let value, !value.isKnown {
            problems.append(.init("nrf7.unknown-enum", "\(message).\(name) has the unknown value \(value.raw)"))
        }
        return value
    }

    /// Reports unknown fields. A known field number among them came with the wrong wire type
    /// (the protobuf runtime sets such fields aside rather than failing): that is malformed.
    mutating func unknownFields(_ unknown: [UInt8], in message: String, known: Set<Int>) {
        guard let list = try? ProtoWire.fields(unknown).get() else { return }
        for f in list where known.contains(f.number) {
            problems.append(.init("nrf7.malformed", "\(message) field \(f.number) has the wrong wire type (\(f.wireType))"))
        }
        let numbers = list.map(\.number).filter { !known.contains($0) }
        guard !numbers.isEmpty else { return }
        problems.append(.init("nrf7.unknown-field", "\(message) has unknown field\(numbers.count == 1 ? "" : "s") \(numbers.map(String.init).joined(separator: ", ")) (kept)"))
    }

    mutating func wifiInfo(_ m: NRF7Proto_WifiInfo, in message: String) -> NRF7.WifiInfo {
        var unknown = [UInt8](m.unknownFields.data)
        let band = enumValue(has: m.hasBand, raw: m.band.rawValue, field: 3, unknown: &unknown, in: message, field: "band", NRF7.band)
        let auth = enumValue(has: m.hasAuth, raw: m.auth.rawValue, field: 5, unknown: &unknown, in: message, field: "auth", NRF7.auth)
        unknownFields(unknown, in: message, known: [1, 2, 3, 4, 5])
        let info = NRF7.WifiInfo(ssid: m.hasSsid ? [UInt8](m.ssid) : nil, bssid: m.hasBssid ? [UInt8](m.bssid) : nil, band: band,
                                 channel: m.hasChannel ? m.channel : nil, auth: auth, unknownFields: unknown)
        if let s = info.ssid, s.count > NRF7.maxSSIDLength {
            problems.append(.init("nrf7.ssid-too-long", "\(message).ssid has \(s.count) bytes; at most \(NRF7.maxSSIDLength)"))
        }
        if let b = info.bssid, b.count != NRF7.bssidLength {
            problems.append(.init("nrf7.bssid-length", "\(message).bssid has \(b.count) bytes; a BSSID has 6"))
        }
        return info
    }

    mutating func scanParams(_ m: NRF7Proto_ScanParams, in message: String) -> NRF7.ScanParams {
        var unknown = [UInt8](m.unknownFields.data)
        let band = enumValue(has: m.hasBand, raw: m.band.rawValue, field: 1, unknown: &unknown, in: message, field: "band", NRF7.band)
        unknownFields(unknown, in: message, known: [1, 2, 3, 4])
        return NRF7.ScanParams(band: band, passive: m.hasPassive ? m.passive : nil, periodMs: m.hasPeriodMs ? m.periodMs : nil,
                               groupChannels: m.hasGroupChannels ? m.groupChannels : nil, unknownFields: unknown)
    }

    mutating func config(_ m: NRF7Proto_WifiConfig, in message: String) -> NRF7.WifiConfig {
        let unknown = [UInt8](m.unknownFields.data)
        unknownFields(unknown, in: message, known: [1, 2, 3, 4])
        let c = NRF7.WifiConfig(wifi: m.hasWifi ? wifiInfo(m.wifi, in: message + ".wifi") : nil,
                                passphrase: m.hasPassphrase ? Secret([UInt8](m.passphrase), label: "Wi-Fi password") : nil,
                                volatileMemory: m.hasVolatileMemory ? m.volatileMemory : nil,
                                certs: m.hasCerts ? [UInt8](m.certs) : nil, unknownFields: unknown)
        if let p = c.passphrase, p.count > NRF7.maxPassphraseLength {
            problems.append(.init("nrf7.passphrase-too-long", "\(message).passphrase has \(p.count) bytes; at most \(NRF7.maxPassphraseLength)"))
        }
        if c.wifi == nil { problems.append(.init("nrf7.missing-field", "\(message) has no wifi (the network to join)")) }
        return c
    }

    mutating func deviceStatus(_ m: NRF7Proto_DeviceStatus, in message: String) -> NRF7.DeviceStatus {
        var unknown = [UInt8](m.unknownFields.data)
        let state = enumValue(has: m.hasState, raw: m.state.rawValue, field: 1, unknown: &unknown, in: message, field: "state", NRF7.state)
        unknownFields(unknown, in: message, known: [1, 10, 11, 12])
        let ciUnknown = [UInt8](m.connectionInfo.unknownFields.data)
        if m.hasConnectionInfo { unknownFields(ciUnknown, in: message + ".connection_info", known: [1]) }
        let ip = m.hasConnectionInfo && m.connectionInfo.hasIp4Addr ? [UInt8](m.connectionInfo.ip4Addr) : nil
        if let ip, ip.count != 4 {
            problems.append(.init("nrf7.ip4-length", "\(message).connection_info.ip4_addr has \(ip.count) bytes; an IPv4 address has 4"))
        }
        return NRF7.DeviceStatus(state: state,
                                 provisioningInfo: m.hasProvisioningInfo ? wifiInfo(m.provisioningInfo, in: message + ".provisioning_info") : nil,
                                 ip4Address: ip, hasConnectionInfo: m.hasConnectionInfo,
                                 scanInfo: m.hasScanInfo ? scanParams(m.scanInfo, in: message + ".scan_info") : nil,
                                 unknownFields: unknown, connectionInfoUnknownFields: m.hasConnectionInfo ? ciUnknown : [])
    }
}

extension NRF7.WifiInfo {
    var proto: NRF7Proto_WifiInfo {
        var m = ProtobufEncoding.seed(NRF7Proto_WifiInfo.self, unknownFields, enums: [(3, band), (5, auth)])
        if let ssid { m.ssid = Data(ssid) }
        if let bssid { m.bssid = Data(bssid) }
        if let b = band, let g = NRF7Proto_Band(rawValue: b.raw), b.isKnown { m.band = g }
        if let channel { m.channel = channel }
        if let a = auth, let g = NRF7Proto_AuthMode(rawValue: a.raw), a.isKnown { m.auth = g }
        return m
    }
}

extension NRF7.ScanParams {
    var proto: NRF7Proto_ScanParams {
        var m = ProtobufEncoding.seed(NRF7Proto_ScanParams.self, unknownFields, enums: [(1, band)])
        if let b = band, let g = NRF7Proto_Band(rawValue: b.raw), b.isKnown { m.band = g }
        if let passive { m.passive = passive }
        if let periodMs { m.periodMs = periodMs }
        if let groupChannels { m.groupChannels = groupChannels }
        return m
    }
}

extension NRF7.WifiConfig {
    var proto: NRF7Proto_WifiConfig {
        var m = ProtobufEncoding.seed(NRF7Proto_WifiConfig.self, unknownFields, enums: [])
        if let wifi { m.wifi = wifi.proto }
        if let passphrase { m.passphrase = Data(passphrase.unsafeBytes) }
        if let volatileMemory { m.volatileMemory = volatileMemory }
        if let certs { m.certs = Data(certs) }
        return m
    }
}

extension NRF7.DeviceStatus {
    var proto: NRF7Proto_DeviceStatus {
        var m = ProtobufEncoding.seed(NRF7Proto_DeviceStatus.self, unknownFields, enums: [(1, state)])
        if let s = state, let g = NRF7Proto_ConnectionState(rawValue: s.raw), s.isKnown { m.state = g }
        if let provisioningInfo { m.provisioningInfo = provisioningInfo.proto }
        if hasConnectionInfo {
            var ci = ProtobufEncoding.seed(NRF7Proto_ConnectionInfo.self, connectionInfoUnknownFields, enums: [])
            if let ip4Address { ci.ip4Addr = Data(ip4Address) }
            m.connectionInfo = ci
        }
        if let scanInfo { m.scanInfo = scanInfo.proto }
        return m
    }
}

extension NRF7.ScanRecord {
    var proto: NRF7Proto_ScanRecord {
        var m = ProtobufEncoding.seed(NRF7Proto_ScanRecord.self, unknownFields, enums: [])
        if let wifi { m.wifi = wifi.proto }
        if let rssi { m.rssi = rssi }
        return m
    }
}

extension NRF7.Info {
    public func encode() -> [UInt8] {
        var m = ProtobufEncoding.seed(NRF7Proto_Info.self, unknownFields, enums: [])
        if let version { m.version = version }
        return ProtobufEncoding.bytes(m)
    }

    public static func decode(_ bytes: [UInt8]) -> (NRF7.Info?, [ProtocolProblem]) {
        var d = NRF7Decoding()
        guard let m = d.parse(NRF7Proto_Info.self, bytes, what: "Info") else { return (nil, d.problems) }
        let unknown = [UInt8](m.unknownFields.data)
        d.unknownFields(unknown, in: "Info", known: [1])
        if !m.hasVersion { d.problems.append(.init("nrf7.missing-field", "Info has no version")) }
        return (NRF7.Info(version: m.hasVersion ? m.version : nil, unknownFields: unknown), d.problems)
    }
}

extension NRF7.Request {
    public func encode() -> [UInt8] {
        var m = ProtobufEncoding.seed(NRF7Proto_Request.self, unknownFields, enums: [(1, opCode)])
        if let o = opCode, let g = NRF7Proto_OpCode(rawValue: o.raw), o.isKnown { m.opCode = g }
        if let scanParams { m.scanParams = scanParams.proto }
        if let config { m.config = config.proto }
        return ProtobufEncoding.bytes(m)
    }

    public static func decode(_ bytes: [UInt8]) -> (NRF7.Request?, [ProtocolProblem]) {
        var d = NRF7Decoding()
        guard let m = d.parse(NRF7Proto_Request.self, bytes, what: "Request") else { return (nil, d.problems) }
        var unknown = [UInt8](m.unknownFields.data)
        let op = d.enumValue(has: m.hasOpCode, raw: m.opCode.rawValue, field: 1, unknown: &unknown, in: "Request", field: "op_code", NRF7.opCode)
        d.unknownFields(unknown, in: "Request", known: [1, 10, 11])
        let r = NRF7.Request(opCode: op, scanParams: m.hasScanParams ? d.scanParams(m.scanParams, in: "Request.scan_params") : nil,
                             config: m.hasConfig ? d.config(m.config, in: "Request.config") : nil, unknownFields: unknown)
        if op == nil { d.problems.append(.init("nrf7.missing-field", "Request has no op_code")) }
        if op?.raw == 4, r.config == nil { d.problems.append(.init("nrf7.missing-field", "SET_CONFIG without config")) }
        if op?.raw == 0 { d.problems.append(.init("nrf7.reserved-op-code", "Request with op_code RESERVED (0)")) }
        return (r, d.problems)
    }
}

extension NRF7.Response {
    public func encode() -> [UInt8] {
        var m = ProtobufEncoding.seed(NRF7Proto_Response.self, unknownFields, enums: [(1, requestOpCode), (2, status)])
        if let o = requestOpCode, let g = NRF7Proto_OpCode(rawValue: o.raw), o.isKnown { m.requestOpCode = g }
        if let s = status, let g = NRF7Proto_Status(rawValue: s.raw), s.isKnown { m.status = g }
        if let deviceStatus { m.deviceStatus = deviceStatus.proto }
        return ProtobufEncoding.bytes(m)
    }

    public static func decode(_ bytes: [UInt8]) -> (NRF7.Response?, [ProtocolProblem]) {
        var d = NRF7Decoding()
        guard let m = d.parse(NRF7Proto_Response.self, bytes, what: "Response") else { return (nil, d.problems) }
        var unknown = [UInt8](m.unknownFields.data)
        let op = d.enumValue(has: m.hasRequestOpCode, raw: m.requestOpCode.rawValue, field: 1, unknown: &unknown, in: "Response",
                             field: "request_op_code", NRF7.opCode)
        let status = d.enumValue(has: m.hasStatus, raw: m.status.rawValue, field: 2, unknown: &unknown, in: "Response", field: "status", NRF7.status)
        d.unknownFields(unknown, in: "Response", known: [1, 2, 10])
        let r = NRF7.Response(requestOpCode: op, status: status,
                              deviceStatus: m.hasDeviceStatus ? d.deviceStatus(m.deviceStatus, in: "Response.device_status") : nil,
                              unknownFields: unknown)
        if status == nil { d.problems.append(.init("nrf7.missing-field", "Response has no status")) }
        return (r, d.problems)
    }
}

extension NRF7.Result {
    public func encode() -> [UInt8] {
        var m = ProtobufEncoding.seed(NRF7Proto_Result.self, unknownFields, enums: [(2, state), (3, reason)])
        if let scanRecord { m.scanRecord = scanRecord.proto }
        if let s = state, let g = NRF7Proto_ConnectionState(rawValue: s.raw), s.isKnown { m.state = g }
        if let r = reason, let g = NRF7Proto_ConnectionFailureReason(rawValue: r.raw), r.isKnown { m.reason = g }
        return ProtobufEncoding.bytes(m)
    }

    public static func decode(_ bytes: [UInt8]) -> (NRF7.Result?, [ProtocolProblem]) {
        var d = NRF7Decoding()
        guard let m = d.parse(NRF7Proto_Result.self, bytes, what: "Result") else { return (nil, d.problems) }
        var unknown = [UInt8](m.unknownFields.data)
        let state = d.enumValue(has: m.hasState, raw: m.state.rawValue, field: 2, unknown: &unknown, in: "Result", field: "state", NRF7.state)
        let reason = d.enumValue(has: m.hasReason, raw: m.reason.rawValue, field: 3, unknown: &unknown, in: "Result", field: "reason", NRF7.reason)
        d.unknownFields(unknown, in: "Result", known: [1, 2, 3])
        var record: NRF7.ScanRecord?
        if m.hasScanRecord {
            let ru = [UInt8](m.scanRecord.unknownFields.data)
            d.unknownFields(ru, in: "Result.scan_record", known: [1, 2])
            record = NRF7.ScanRecord(wifi: m.scanRecord.hasWifi ? d.wifiInfo(m.scanRecord.wifi, in: "Result.scan_record.wifi") : nil,
                                     rssi: m.scanRecord.hasRssi ? m.scanRecord.rssi : nil, unknownFields: ru)
        }
        let r = NRF7.Result(scanRecord: record, state: state, reason: reason, unknownFields: unknown)
        if record == nil, state == nil { d.problems.append(.init("nrf7.empty-result", "Result with neither a scan record nor a state")) }
        return (r, d.problems)
    }
}
