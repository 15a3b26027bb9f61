import Analysis

// How the OTA messages are kept by a timeline (`TimelineEvents`) and read back: every field, in
// declaration order, so that a message read back is the message decoded.

extension SpeakerOTA.Credentials: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.bytes(ssid)
        w.secret(password)
    }

    public init(unspilling r: inout SpillReader) {
        self.init(ssid: r.bytes(), password: r.secret())
    }
}

extension SpeakerOTA.FirmwareURL: SpillableMessage {
    public func spill(into w: inout SpillWriter) { w.bytes(bytes) }

    public init(unspilling r: inout SpillReader) { self.init(bytes: r.bytes()) }
}

extension SpeakerOTA.ControlCommand: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.int(Int(rawCommand))
        w.int(Int(parameter))
    }

    public init(unspilling r: inout SpillReader) {
        self.init(rawCommand: UInt8(truncatingIfNeeded: r.int()), parameter: UInt8(truncatingIfNeeded: r.int()))
    }
}

extension SpeakerOTA.Status: SpillableMessage {
    public func spill(into w: inout SpillWriter) {
        w.int(Int(rawState))
        w.int(Int(rawError))
        w.int(Int(progress))
        w.int(Int(downloadedKB))
        w.int(Int(totalKB))
        w.int(Int(rssi))
    }

    public init(unspilling r: inout SpillReader) {
        self.init(rawState: UInt8(truncatingIfNeeded: r.int()), rawError: UInt8(truncatingIfNeeded: r.int()),
                  progress: UInt8(truncatingIfNeeded: r.int()), downloadedKB: UInt16(truncatingIfNeeded: r.int()),
                  totalKB: UInt16(truncatingIfNeeded: r.int()), rssi: Int8(truncatingIfNeeded: r.int()))
    }
}
