import Analysis
import Profiles

// How the ESP-IDF provisioning messages are kept by a timeline (`TimelineEvents`) and read back:
// every field, in declaration order, a payload as its case's tag (in declaration order) then
// the case's values, so that a message read back is the message decoded.

extension ESPProvisioning.Version: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.string(text)
        w.optional(version) { $0.string($1) }
        w.optional(securityVersion) { $0.int($1) }
        w.array(capabilities) { $0.string($1) }
    }

    public init(unspilling r: inout SpillReader) {
        self.init(text: r.string(), version: r.optional { $0.string() }, securityVersion: r.optional { $0.int() },
                  capabilities: r.array { $0.string() })
    }
}

extension ESPProvisioning.SessionMessage.Payload: Spillable {
    public func spill(into w: inout SpillWriter) {
        switch self {
        case .none: w.int(0)
        case .sec0Command: w.int(1)
        case .sec0Response(let status):
            w.int(2)
            w.value(status)
        case .sec1Command0(let clientPublicKey):
            w.int(3)
            w.bytes(clientPublicKey)
        case .sec1Response0(let status, let devicePublicKey, let deviceRandom):
            w.int(4)
            w.value(status)
            w.bytes(devicePublicKey)
            w.bytes(deviceRandom)
        case .sec1Command1(let clientVerifyData):
            w.int(5)
            w.bytes(clientVerifyData)
        case .sec1Response1(let status, let deviceVerifyData):
            w.int(6)
            w.value(status)
            w.bytes(deviceVerifyData)
        case .sec2(let step):
            w.int(7)
            w.value(step)
        }
    }

    public init(unspilling r: inout SpillReader) {
        self = switch r.int() {
        case 0: .none
        case 1: .sec0Command
        case 2: .sec0Response(status: r.value())
        case 3: .sec1Command0(clientPublicKey: r.bytes())
        case 4: .sec1Response0(status: r.value(), devicePublicKey: r.bytes(), deviceRandom: r.bytes())
        case 5: .sec1Command1(clientVerifyData: r.bytes())
        case 6: .sec1Response1(status: r.value(), deviceVerifyData: r.bytes())
        case 7: .sec2(step: r.value())
        default: preconditionFailure("spilled session payload with an unknown tag")
        }
    }
}

extension ESPProvisioning.SessionMessage: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.value(securityVersion)
        w.optional(messageType) { $0.value($1) }
        w.value(payload)
        w.bytes(unknownFields)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(securityVersion: r.value(), messageType: r.optional { $0.value() }, payload: r.value(), unknownFields: r.bytes())
    }
}

extension ESPProvisioning.ConnectedState: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.string(ip4Address)
        w.value(authMode)
        w.bytes(ssid)
        w.bytes(bssid)
        w.int(Int(channel))
    }

    public init(unspilling r: inout SpillReader) {
        self.init(ip4Address: r.string(), authMode: r.value(), ssid: r.bytes(), bssid: r.bytes(), channel: Int32(truncatingIfNeeded: r.int()))
    }
}

extension ESPProvisioning.StatusReport: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.value(status)
        w.value(stationState)
        switch detail {
        case .none: w.int(0)
        case .failReason(let reason):
            w.int(1)
            w.value(reason)
        case .connected(let state):
            w.int(2)
            w.value(state)
        case .attemptFailed(let attemptsRemaining):
            w.int(3)
            w.int(Int(attemptsRemaining))
        }
    }

    public init(unspilling r: inout SpillReader) {
        let status: ProtoEnumValue = r.value(), stationState: ProtoEnumValue = r.value()
        let detail: Detail = switch r.int() {
        case 0: .none
        case 1: .failReason(r.value())
        case 2: .connected(r.value())
        case 3: .attemptFailed(attemptsRemaining: UInt32(truncatingIfNeeded: r.int()))
        default: preconditionFailure("spilled status report with an unknown detail tag")
        }
        self.init(status: status, stationState: stationState, detail: detail)
    }
}

extension ESPProvisioning.SetConfig: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.bytes(ssid)
        w.secret(passphrase)
        w.bytes(bssid)
        w.int(Int(channel))
    }

    public init(unspilling r: inout SpillReader) {
        self.init(ssid: r.bytes(), passphrase: r.secret(), bssid: r.bytes(), channel: Int32(truncatingIfNeeded: r.int()))
    }
}

extension ESPProvisioning.ConfigMessage.Payload: Spillable {
    public func spill(into w: inout SpillWriter) {
        switch self {
        case .none: w.int(0)
        case .getStatus: w.int(1)
        case .status(let report):
            w.int(2)
            w.value(report)
        case .setConfig(let config):
            w.int(3)
            w.value(config)
        case .setConfigResponse(let status):
            w.int(4)
            w.value(status)
        case .applyConfig: w.int(5)
        case .applyConfigResponse(let status):
            w.int(6)
            w.value(status)
        }
    }

    public init(unspilling r: inout SpillReader) {
        self = switch r.int() {
        case 0: .none
        case 1: .getStatus
        case 2: .status(r.value())
        case 3: .setConfig(r.value())
        case 4: .setConfigResponse(status: r.value())
        case 5: .applyConfig
        case 6: .applyConfigResponse(status: r.value())
        default: preconditionFailure("spilled config payload with an unknown tag")
        }
    }
}

extension ESPProvisioning.ConfigMessage: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.value(messageType)
        w.value(payload)
        w.bytes(unknownFields)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(messageType: r.value(), payload: r.value(), unknownFields: r.bytes())
    }
}

extension ESPProvisioning.ScanEntry: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.bytes(ssid)
        w.int(Int(channel))
        w.int(Int(rssi))
        w.bytes(bssid)
        w.value(auth)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(ssid: r.bytes(), channel: UInt32(truncatingIfNeeded: r.int()), rssi: Int32(truncatingIfNeeded: r.int()), bssid: r.bytes(),
                  auth: r.value())
    }
}

extension ESPProvisioning.ScanMessage.Payload: Spillable {
    public func spill(into w: inout SpillWriter) {
        switch self {
        case .none: w.int(0)
        case .start(let blocking, let passive, let groupChannels, let periodMs):
            w.int(1)
            w.bool(blocking)
            w.bool(passive)
            w.int(Int(groupChannels))
            w.int(Int(periodMs))
        case .startResponse: w.int(2)
        case .status: w.int(3)
        case .statusResponse(let finished, let resultCount):
            w.int(4)
            w.bool(finished)
            w.int(Int(resultCount))
        case .result(let startIndex, let count):
            w.int(5)
            w.int(Int(startIndex))
            w.int(Int(count))
        case .resultResponse(let entries):
            w.int(6)
            w.array(entries) { $0.value($1) }
        }
    }

    public init(unspilling r: inout SpillReader) {
        self = switch r.int() {
        case 0: .none
        case 1: .start(blocking: r.bool(), passive: r.bool(), groupChannels: UInt32(truncatingIfNeeded: r.int()),
                       periodMs: UInt32(truncatingIfNeeded: r.int()))
        case 2: .startResponse
        case 3: .status
        case 4: .statusResponse(finished: r.bool(), resultCount: UInt32(truncatingIfNeeded: r.int()))
        case 5: .result(startIndex: UInt32(truncatingIfNeeded: r.int()), count: UInt32(truncatingIfNeeded: r.int()))
        case 6: .resultResponse(r.array { $0.value() })
        default: preconditionFailure("spilled scan payload with an unknown tag")
        }
    }
}

extension ESPProvisioning.ScanMessage: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.value(messageType)
        w.value(status)
        w.value(payload)
        w.bytes(unknownFields)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(messageType: r.value(), status: r.value(), payload: r.value(), unknownFields: r.bytes())
    }
}

extension ESPProvisioning.OpaquePayload: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.string(endpoint)
        w.optional(security) { $0.int($1) }
        w.bool(encrypted)
        w.int(length)
        w.string(reason)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(endpoint: r.string(), security: r.optional { $0.int() }, encrypted: r.bool(), length: r.int(), reason: r.string())
    }
}
