import Analysis

// How the nRF7 messages are kept by a timeline (`TimelineEvents`) and read back: every field, in
// declaration order, unknown fields included, so that a message read back is the message decoded
// (and encodes to the same wire bytes).

extension NRF7.WifiInfo: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.optional(ssid) { $0.bytes($1) }
        w.optional(bssid) { $0.bytes($1) }
        w.optional(band) { $0.value($1) }
        w.optional(channel) { $0.int(Int($1)) }
        w.optional(auth) { $0.value($1) }
        w.bytes(unknownFields)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(ssid: r.optional { $0.bytes() }, bssid: r.optional { $0.bytes() }, band: r.optional { $0.value() },
                  channel: r.optional { UInt32(truncatingIfNeeded: $0.int()) }, auth: r.optional { $0.value() }, unknownFields: r.bytes())
    }
}

extension NRF7.ScanParams: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.optional(band) { $0.value($1) }
        w.optional(passive) { $0.bool($1) }
        w.optional(periodMs) { $0.int(Int($1)) }
        w.optional(groupChannels) { $0.int(Int($1)) }
        w.bytes(unknownFields)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(band: r.optional { $0.value() }, passive: r.optional { $0.bool() }, periodMs: r.optional { UInt32(truncatingIfNeeded: $0.int()) },
                  groupChannels: r.optional { UInt32(truncatingIfNeeded: $0.int()) }, unknownFields: r.bytes())
    }
}

extension NRF7.WifiConfig: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.optional(wifi) { $0.value($1) }
        w.optional(passphrase) { $0.secret($1) }
        w.optional(volatileMemory) { $0.bool($1) }
        w.optional(certs) { $0.bytes($1) }
        w.bytes(unknownFields)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(wifi: r.optional { $0.value() }, passphrase: r.optional { $0.secret() }, volatileMemory: r.optional { $0.bool() },
                  certs: r.optional { $0.bytes() }, unknownFields: r.bytes())
    }
}

extension NRF7.DeviceStatus: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.optional(state) { $0.value($1) }
        w.optional(provisioningInfo) { $0.value($1) }
        w.optional(ip4Address) { $0.bytes($1) }
        w.bool(hasConnectionInfo)
        w.optional(scanInfo) { $0.value($1) }
        w.bytes(unknownFields)
        w.bytes(connectionInfoUnknownFields)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(state: r.optional { $0.value() }, provisioningInfo: r.optional { $0.value() }, ip4Address: r.optional { $0.bytes() },
                  hasConnectionInfo: r.bool(), scanInfo: r.optional { $0.value() }, unknownFields: r.bytes(), connectionInfoUnknownFields: r.bytes())
    }
}

extension NRF7.ScanRecord: Spillable {
    public func spill(into w: inout SpillWriter) {
        w.optional(wifi) { $0.value($1) }
        w.optional(rssi) { $0.int(Int($1)) }
        w.bytes(unknownFields)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(wifi: r.optional { $0.value() }, rssi: r.optional { Int32(truncatingIfNeeded: $0.int()) }, unknownFields: r.bytes())
    }
}

extension NRF7.Info: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.optional(version) { $0.int(Int($1)) }
        w.bytes(unknownFields)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(version: r.optional { UInt32(truncatingIfNeeded: $0.int()) }, unknownFields: r.bytes())
    }
}

extension NRF7.Request: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.optional(opCode) { $0.value($1) }
        w.optional(scanParams) { $0.value($1) }
        w.optional(config) { $0.value($1) }
        w.bytes(unknownFields)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(opCode: r.optional { $0.value() }, scanParams: r.optional { $0.value() }, config: r.optional { $0.value() }, unknownFields: r.bytes())
    }
}

extension NRF7.Response: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.optional(requestOpCode) { $0.value($1) }
        w.optional(status) { $0.value($1) }
        w.optional(deviceStatus) { $0.value($1) }
        w.bytes(unknownFields)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(requestOpCode: r.optional { $0.value() }, status: r.optional { $0.value() }, deviceStatus: r.optional { $0.value() },
                  unknownFields: r.bytes())
    }
}

extension NRF7.Result: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.optional(scanRecord) { $0.value($1) }
        w.optional(state) { $0.value($1) }
        w.optional(reason) { $0.value($1) }
        w.bytes(unknownFields)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(scanRecord: r.optional { $0.value() }, state: r.optional { $0.value() }, reason: r.optional { $0.value() }, unknownFields: r.bytes())
    }
}
