// The entries of the list-carrying ATT responses. Each is a small value so a response can be walked
// with plain `for` loops and built by the emulator without touching bytes.

/// One entry of a Find Information Response: an attribute and its type (how descriptors are discovered).
public struct ATTHandleUUID: Hashable, Sendable {
    public var handle: UInt16
    public var uuid: BluetoothUUID

    public init(handle: UInt16, uuid: BluetoothUUID) {
        self.handle = handle
        self.uuid = uuid
    }
}

/// One entry of a Find By Type Value Response: where a matching attribute's group starts and ends
/// (for a service found by UUID: its declaration handle and its last handle).
public struct ATTHandlesInformation: Hashable, Sendable {
    public var foundHandle: UInt16
    public var groupEndHandle: UInt16

    public init(foundHandle: UInt16, groupEndHandle: UInt16) {
        self.foundHandle = foundHandle
        self.groupEndHandle = groupEndHandle
    }
}

/// An attribute handle with its value: entries of Read By Type Response (characteristic declarations)
/// and of Multiple Handle Value Notification.
public struct ATTHandleValue: Hashable, Sendable {
    public var handle: UInt16
    public var value: [UInt8]

    public init(handle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }
}

/// One entry of a Read By Group Type Response: a group (a service) with its handle range and value
/// (the service UUID).
public struct ATTGroupData: Hashable, Sendable {
    public var handle: UInt16
    public var endGroupHandle: UInt16
    public var value: [UInt8]

    public init(handle: UInt16, endGroupHandle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.endGroupHandle = endGroupHandle
        self.value = value
    }
}
