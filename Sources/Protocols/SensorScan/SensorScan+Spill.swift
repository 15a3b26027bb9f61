import Analysis

// How the scan messages are kept by a timeline (`TimelineEvents`) and read back: every field, in
// declaration order, so that a message read back is the message decoded.

extension SensorScan.Request: SpillableMessage {
    public func spill(into w: inout SpillWriter) { w.bytes(bytes) }

    public init(unspilling r: inout SpillReader) { self.init(bytes: r.bytes()) }
}

extension SensorScan.Response: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.array(networks) { w, n in
            w.bytes(n.ssid)
            w.int(n.rssi)
        }
        w.bool(complete)
        w.array(problems) { $0.value($1) }
        w.int(chunks)
        w.string(markerStyle)
        w.array(markerStyles) { $0.string($1) }
    }

    public init(unspilling r: inout SpillReader) {
        self.init(networks: r.array { r in SensorScan.Network(ssid: r.bytes(), rssi: r.int()) }, complete: r.bool(),
                  problems: r.array { $0.value() }, chunks: r.int(), markerStyle: r.string(), markerStyles: r.array { $0.string() })
    }
}
