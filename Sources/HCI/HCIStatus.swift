import Capture

/// HCI status and error codes (Core 5.4, Vol 1, Part F): disconnect reasons, command failures.
public struct HCIStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ raw: UInt8) { rawValue = raw }

    public var name: String {
        Self.names[Int(rawValue)].map { $0 } ?? "Reserved (0x\(Hex.string([rawValue])))"
    }

    public var description: String { "\(name) (0x\(Hex.string([rawValue])))" }

    static let names: [Int: String] = [
        0x00: "Success", 0x01: "Unknown HCI Command", 0x02: "Unknown Connection Identifier",
        0x03: "Hardware Failure", 0x04: "Page Timeout", 0x05: "Authentication Failure",
        0x06: "PIN or Key Missing", 0x07: "Memory Capacity Exceeded", 0x08: "Connection Timeout",
        0x09: "Connection Limit Exceeded", 0x0A: "Synchronous Connection Limit Exceeded",
        0x0B: "Connection Already Exists", 0x0C: "Command Disallowed",
        0x0D: "Connection Rejected due to Limited Resources", 0x0E: "Connection Rejected due to Security Reasons",
        0x0F: "Connection Rejected due to Unacceptable BD_ADDR", 0x10: "Connection Accept Timeout Exceeded",
        0x11: "Unsupported Feature or Parameter Value", 0x12: "Invalid HCI Command Parameters",
        0x13: "Remote User Terminated Connection", 0x14: "Remote Device Terminated Connection due to Low Resources",
        0x15: "Remote Device Terminated Connection due to Power Off", 0x16: "Connection Terminated by Local Host",
        0x17: "Repeated Attempts", 0x18: "Pairing Not Allowed", 0x19: "Unknown LMP PDU",
        0x1A: "Unsupported Remote Feature", 0x1B: "SCO Offset Rejected", 0x1C: "SCO Interval Rejected",
        0x1D: "SCO Air Mode Rejected", 0x1E: "Invalid LMP/LL Parameters", 0x1F: "Unspecified Error",
        0x20: "Unsupported LMP/LL Parameter Value", 0x21: "Role Change Not Allowed",
        0x22: "LMP/LL Response Timeout", 0x23: "LMP Error Transaction Collision", 0x24: "LMP PDU Not Allowed",
        0x25: "Encryption Mode Not Acceptable", 0x26: "Link Key cannot be Changed", 0x27: "Requested QoS Not Supported",
        0x28: "Instant Passed", 0x29: "Pairing With Unit Key Not Supported", 0x2A: "Different Transaction Collision",
        0x2C: "QoS Unacceptable Parameter", 0x2D: "QoS Rejected", 0x2E: "Channel Classification Not Supported",
        0x2F: "Insufficient Security", 0x30: "Parameter Out Of Mandatory Range", 0x32: "Role Switch Pending",
        0x34: "Reserved Slot Violation", 0x35: "Role Switch Failed", 0x36: "Extended Inquiry Response Too Large",
        0x37: "Secure Simple Pairing Not Supported By Host", 0x38: "Host Busy - Pairing",
        0x39: "Connection Rejected due to No Suitable Channel Found", 0x3A: "Controller Busy",
        0x3B: "Unacceptable Connection Parameters", 0x3C: "Advertising Timeout",
        0x3D: "Connection Terminated due to MIC Failure", 0x3E: "Connection Failed to be Established",
        0x3F: "MAC Connection Failed", 0x40: "Coarse Clock Adjustment Rejected",
        0x41: "Type0 Submap Not Defined", 0x42: "Unknown Advertising Identifier", 0x43: "Limit Reached",
        0x44: "Operation Cancelled by Host", 0x45: "Packet Too Long",
    ]
}

/// Names of the HCI commands and events GATTLab follows, for display.
public enum HCINames {
    public static func command(_ opcode: UInt16) -> String {
        commands[opcode] ?? "Command 0x\(Hex.string([UInt8(opcode >> 8), UInt8(opcode & 0xFF)])) (OGF 0x\(Hex.string([UInt8(opcode >> 10)])))"
    }

    public static func event(_ code: UInt8) -> String {
        events[code] ?? "Event 0x\(Hex.string([code]))"
    }

    public static func leSubevent(_ code: UInt8) -> String {
        leSubevents[code] ?? "LE Meta Subevent 0x\(Hex.string([code]))"
    }

    static let commands: [UInt16: String] = [
        0x0406: "Disconnect", 0x0C03: "Reset", 0x0C01: "Set Event Mask",
        0x1001: "Read Local Version Information", 0x1009: "Read BD_ADDR",
        0x200B: "LE Set Scan Parameters", 0x200C: "LE Set Scan Enable", 0x2006: "LE Set Advertising Parameters",
        0x200A: "LE Set Advertising Enable", 0x2008: "LE Set Advertising Data",
        0x200D: "LE Create Connection", 0x200E: "LE Create Connection Cancel",
        0x2013: "LE Connection Update", 0x2016: "LE Read Remote Features", 0x2019: "LE Start Encryption",
        0x201A: "LE Long Term Key Request Reply", 0x201B: "LE Long Term Key Request Negative Reply",
        0x2022: "LE Set Data Length", 0x2032: "LE Set PHY", 0x2043: "LE Extended Create Connection",
        0x2041: "LE Set Extended Scan Parameters", 0x2042: "LE Set Extended Scan Enable",
    ]

    static let events: [UInt8: String] = [
        0x05: "Disconnection Complete", 0x08: "Encryption Change", 0x0E: "Command Complete",
        0x0F: "Command Status", 0x13: "Number of Completed Packets", 0x30: "Encryption Key Refresh Complete",
        0x3E: "LE Meta", 0x59: "Encryption Change v2", 0x03: "Connection Complete", 0xFF: "Vendor",
    ]

    static let leSubevents: [UInt8: String] = [
        0x01: "LE Connection Complete", 0x02: "LE Advertising Report", 0x03: "LE Connection Update Complete",
        0x04: "LE Read Remote Features Complete", 0x05: "LE Long Term Key Request",
        0x06: "LE Remote Connection Parameter Request", 0x07: "LE Data Length Change",
        0x0A: "LE Enhanced Connection Complete", 0x0C: "LE PHY Update Complete",
        0x0D: "LE Extended Advertising Report", 0x29: "LE Enhanced Connection Complete v2",
    ]
}
