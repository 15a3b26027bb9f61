import ATT
import Capture
import HCI

/// One ATT PDU in its connection's context.
public struct ATTEvent: Sendable {
    public var connection: ConnectionKey
    public var direction: PacketDirection
    /// L2CAP channel: 0x0004, or a dynamic channel for enhanced ATT.
    public var cid: UInt16
    public var opcode: UInt8
    /// The decoded PDU; nil when malformed, and for a value PDU when the decoder does not report
    /// values (`GATTDecoder.reportsValues`).
    public var pdu: ATTPDU?
    /// Why the PDU is malformed, in the sense Wireshark marks a PDU malformed.
    public var malformed: String?
    public var handle: UInt16?
    /// What the table knows of `handle`.
    public var info: HandleInfo?
    /// MTU in force on the connection when the PDU was sent.
    public var mtu: Int
    /// Parameter bytes of the PDU (after the opcode), for display of what did not decode.
    public var length: Int
    /// Where the PDU's `value` lies in the capture, when the decoder tracks origins.
    public var valueOrigin: ByteOrigin?
}

/// A logical GATT operation that spans several PDUs, reported at its last PDU.
public enum GATTOperation: Sendable {
    case mtuExchanged(ConnectionKey, clientMTU: UInt16, serverMTU: UInt16, mtu: Int)
    /// Prepare Write Requests joined by an Execute Write Request.
    case longWrite(ConnectionKey, handle: UInt16, info: HandleInfo?, value: [UInt8], firstFrame: Int, parts: Int, origin: ByteOrigin? = nil)
    case longWriteCancelled(ConnectionKey, parts: Int)
    /// A Read Request and the Read Blob Requests that continued it.
    case longRead(ConnectionKey, handle: UInt16, info: HandleInfo?, value: [UInt8], firstFrame: Int, parts: Int, origin: ByteOrigin? = nil)
    /// A CCCD write: notifications and/or indications switched on or off for a characteristic.
    case subscription(ConnectionKey, cccdHandle: UInt16, characteristic: BluetoothUUID?, notify: Bool, indicate: Bool)
    /// Discovery taught the table something new about this connection's device.
    case tableUpdated(ConnectionKey)
}

/// Everything the pipeline reports for one record, in order.
public enum GATTEvent: Sendable {
    case link(LinkEvent)
    case att(ATTEvent)
    case operation(GATTOperation)
}

/// Where a connection's attribute table came from, so output can say so.
public enum TableSource: Sendable, Hashable, CustomStringConvertible {
    case discovered
    case file(String)
    case builtIn(String)
    case none

    public var description: String {
        switch self {
        case .discovered: "discovered in the capture"
        case .file(let p): "from \(p) (--gatt-table)"
        case .builtIn(let n): "built-in profile '\(n)' (--profile)"
        case .none: "none (the capture has no discovery; handles are shown without UUIDs; try --gatt-table or --profile)"
        }
    }
}
