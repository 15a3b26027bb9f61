import ATT
import GATT

/// A recorded device's GATT database: its table as the phone discovered it (handles, UUIDs,
/// properties, descriptors), the values it returned to reads, the MTU its stack accepted and the
/// prepare-queue size at which it answered Prepare Queue Full. A device model given one serves
/// that database instead of its built-in one, so a phone (or a replay) meets the recorded
/// device's handles and extra services.
public struct RecordedTable: Sendable, Hashable {
    public var table: AttributeTable
    /// Values by handle (characteristic values and descriptors), as last read in the recording.
    public var values: [UInt16: [UInt8]]
    /// The largest MTU the recorded stack agreed to, when the recording shows it capped one.
    public var serverMTU: UInt16?
    /// Prepare Write requests the recorded device queued before answering Prepare Queue Full.
    public var maxPreparedWrites: Int?
    /// Handles whose writes (and reads) the recorded device refused on a link not yet encrypted,
    /// and the error it gave (Insufficient Encryption or Insufficient Authentication).
    public var encryptedWrites: Set<UInt16>
    public var encryptedReads: Set<UInt16>
    public var unencryptedAccessError: ATTErrorCode?

    public init(table: AttributeTable, values: [UInt16: [UInt8]] = [:], serverMTU: UInt16? = nil, maxPreparedWrites: Int? = nil,
                encryptedWrites: Set<UInt16> = [], encryptedReads: Set<UInt16> = [], unencryptedAccessError: ATTErrorCode? = nil) {
        self.table = table
        self.values = values
        self.serverMTU = serverMTU
        self.maxPreparedWrites = maxPreparedWrites
        self.encryptedWrites = encryptedWrites
        self.encryptedReads = encryptedReads
        self.unencryptedAccessError = unencryptedAccessError
    }

    /// A server over this database, for a device model whose protocol characteristics are found
    /// in it by UUID; without one, over the model's `builtIn` table (its protocol's
    /// `builtInAttributeTable`) with `values` (a device name, an appearance) at its handles. With a
    /// recorded table only recorded values are used, since the built-in handles mean other things there.
    /// Public for the device models in the protocols' folders.
    public static func server(_ recorded: RecordedTable?, builtIn: AttributeTable?, serverMTU: UInt16, values: [UInt16: [UInt8]]) -> GATTServer {
        guard let recorded else {
            return GATTServer(table: builtIn ?? AttributeTable(), serverMTU: serverMTU, values: values)
        }
        let server = GATTServer(table: recorded.table, serverMTU: min(serverMTU, recorded.serverMTU ?? serverMTU), values: recorded.values)
        if let limit = recorded.maxPreparedWrites { server.maxPreparedWrites = max(1, limit) }
        for h in recorded.encryptedWrites { server.setPermissions((server.permissions(of: h) ?? [.write]).union(.writeEncrypted), for: h) }
        for h in recorded.encryptedReads { server.setPermissions((server.permissions(of: h) ?? [.read]).union(.readEncrypted), for: h) }
        if let code = recorded.unencryptedAccessError { server.unencryptedAccessError = code }
        return server
    }
}
