import ATT
import GATT
import Transport

/// Why a scripted central stopped.
public enum CentralError: Error, Sendable, Hashable, CustomStringConvertible {
    case bearer(BearerError)
    /// The device answered with something other than the expected response.
    case unexpected(String)
    /// An ATT error for a request.
    case attError(request: UInt8, handle: UInt16, ATTErrorCode)
    /// The table has no such characteristic.
    case noCharacteristic(BluetoothUUID)
    /// Nothing came within the ATT transaction timeout (30 s).
    case timeout

    public var description: String {
        switch self {
        case .bearer(let e): e.description
        case .unexpected(let s): "unexpected answer: \(s)"
        case .attError(let r, let h, let e): "\(ATTOpcode.name(for: r)) on handle \(h): \(e)"
        case .noCharacteristic(let u): "no characteristic \(u)"
        case .timeout: "ATT transaction timeout"
        }
    }
}

/// A GATT client that runs a script over a timed bearer, as a phone app would: Exchange MTU,
/// discovery, subscriptions, reads and (long) writes, waiting for notifications on virtual time.
/// Notifications that arrive while a request is outstanding are kept for the next wait.
public actor ScriptedCentral {
    public let bearer: any TimedATTBearer & LinkControl
    public private(set) var mtu: UInt16 = 23
    public private(set) var table = AttributeTable()
    /// Notifications and indications received and not yet consumed: (handle, value).
    private var notifications: [(UInt16, [UInt8])] = []
    /// Every notification value received, in order, by handle.
    public private(set) var notified: [(UInt16, [UInt8])] = []

    /// The ATT transaction timeout (Core Vol 3 Part F 3.3.3): 30 s; replay tests shorten it.
    public static let defaultTransactionTimeout: Int64 = 30_000_000
    public let transactionTimeout: Int64

    public init(bearer: any TimedATTBearer & LinkControl, transactionTimeout: Int64 = ScriptedCentral.defaultTransactionTimeout) {
        self.bearer = bearer
        self.transactionTimeout = transactionTimeout
    }

    /// Notifications received and not consumed by a wait, oldest first, and forgets them.
    public func takeUnconsumedNotifications() -> [(handle: UInt16, value: [UInt8])] {
        defer { notifications = [] }
        return notifications.map { (handle: $0.0, value: $0.1) }
    }

    /// Sets the table instead of discovering it (a replay of a capture without discovery).
    public func use(_ table: AttributeTable) { self.table = table }

    public func connect() async {
        await bearer.connect()
        mtu = 23
        notifications = []
    }

    public func disconnect() async { await bearer.close() }

    public func encrypt() async { await bearer.encrypt() }

    /// Pairs (SMP, then encryption and key distribution); see `LinkControl.pair(_:)`.
    public func pair(_ options: PairingOptions) async { await bearer.pair(options) }

    public func isConnected() async -> Bool { await bearer.isConnected() }

    public func wait(_ microseconds: Int64) async throws(CentralError) {
        do { try await bearer.wait(microseconds) } catch { throw .bearer(error) }
    }

    /// Sends a request and returns its response (an Error Response included), keeping
    /// notifications that come first and confirming indications.
    public func request(_ pdu: ATTPDU) async throws(CentralError) -> ATTPDU {
        do { try await bearer.send(pdu.encode()) } catch { throw .bearer(error) }
        while true {
            let bytes: [UInt8]?
            do { bytes = try await bearer.receive(within: transactionTimeout) } catch { throw .bearer(error) }
            guard let bytes else { throw .timeout }
            guard let answer = try? ATTPDU.decode(bytes) else { throw .unexpected("undecodable PDU \(bytes)") }
            if try await keepIfServerInitiated(answer) { continue }
            return answer
        }
    }

    private func keepIfServerInitiated(_ pdu: ATTPDU) async throws(CentralError) -> Bool {
        switch pdu {
        case .handleValueNotification(let h, let v):
            notifications.append((h, v))
            notified.append((h, v))
            return true
        case .handleValueIndication(let h, let v):
            notifications.append((h, v))
            notified.append((h, v))
            do { try await bearer.send(ATTPDU.handleValueConfirmation.encode()) } catch { throw .bearer(error) }
            return true
        default:
            return false
        }
    }

    /// Sends a request and insists on the given success response.
    private func expect(_ pdu: ATTPDU, _ check: (ATTPDU) -> Bool) async throws(CentralError) -> ATTPDU {
        let answer = try await request(pdu)
        if case .errorResponse(let r, let h, let e) = answer { throw .attError(request: r, handle: h, e) }
        guard check(answer) else { throw .unexpected("\(answer)") }
        return answer
    }

    public func exchangeMTU(_ clientMTU: UInt16) async throws(CentralError) -> UInt16 {
        let answer = try await expect(.exchangeMTURequest(clientRxMTU: clientMTU)) {
            if case .exchangeMTUResponse = $0 { true } else { false }
        }
        if case .exchangeMTUResponse(let server) = answer { mtu = max(23, min(clientMTU, server)) }
        return mtu
    }

    /// Primary services, characteristics and descriptors, as Android's BluetoothGatt discovers them.
    @discardableResult
    public func discover() async throws(CentralError) -> AttributeTable {
        var table = AttributeTable()
        var start: UInt16 = 1
        var services: [(UInt16, UInt16)] = []
        while start != 0 {
            let answer = try await request(.readByGroupTypeRequest(startHandle: start, endHandle: 0xFFFF,
                                                                   type: BluetoothUUID(uuid16: 0x2800)))
            guard case .readByGroupTypeResponse(_, let entries) = answer, let last = entries.last else { break }
            for e in entries {
                if let uuid = BluetoothUUID(littleEndianBytes: e.value) {
                    table.addService(start: e.handle, end: e.endGroupHandle, uuid: uuid, primary: true)
                    services.append((e.handle, e.endGroupHandle))
                }
            }
            start = last.endGroupHandle == 0xFFFF ? 0 : last.endGroupHandle + 1
        }
        for (sStart, sEnd) in services {
            var from = sStart
            var declarations: [(decl: UInt16, value: UInt16)] = []
            while from <= sEnd {
                let answer = try await request(.readByTypeRequest(startHandle: from, endHandle: sEnd,
                                                                  type: BluetoothUUID(uuid16: 0x2803)))
                guard case .readByTypeResponse(_, let entries) = answer, let last = entries.last else { break }
                for e in entries where e.value.count >= 5 {
                    let valueHandle = UInt16(e.value[1]) | UInt16(e.value[2]) << 8
                    if let uuid = BluetoothUUID(littleEndianBytes: e.value[3...]) {
                        table.addCharacteristic(declaration: e.handle, properties: e.value[0], valueHandle: valueHandle, uuid: uuid)
                        declarations.append((e.handle, valueHandle))
                    }
                }
                guard last.handle < sEnd else { break }
                from = last.handle + 1
            }
            for (i, d) in declarations.enumerated() {
                let end = i + 1 < declarations.count ? declarations[i + 1].decl - 1 : sEnd
                var from = d.value + 1
                while from <= end {
                    let answer = try await request(.findInformationRequest(startHandle: from, endHandle: end))
                    guard case .findInformationResponse(_, let entries) = answer, let last = entries.last else { break }
                    for e in entries { table.addFoundInformation(handle: e.handle, uuid: e.uuid) }
                    guard last.handle < end else { break }
                    from = last.handle + 1
                }
            }
        }
        self.table = table
        return table
    }

    public func valueHandle(_ uuid: BluetoothUUID) throws(CentralError) -> UInt16 {
        guard let c = table.characteristics.values.filter({ $0.uuid == uuid }).min(by: { $0.valueHandle < $1.valueHandle })
        else { throw .noCharacteristic(uuid) }
        return c.valueHandle
    }

    /// Writes the CCCD: notifications (0x0001) or indications (0x0002).
    public func subscribe(_ uuid: BluetoothUUID, indications: Bool = false) async throws(CentralError) {
        let value = try valueHandle(uuid)
        guard let cccd = table.descriptors.filter({ $0.value.uuid16 == 0x2902 && $0.key > value }).map(\.key).min() else {
            throw .noCharacteristic(BluetoothUUID(uuid16: 0x2902))
        }
        _ = try await expect(.writeRequest(handle: cccd, value: [indications ? 0x02 : 0x01, 0x00])) { $0 == .writeResponse }
    }

    /// Writes a value with a Write Request, or Prepare/Execute Write when it is longer than MTU-3.
    /// Returns the ATT error the device gave, nil on success.
    @discardableResult
    public func write(_ uuid: BluetoothUUID, _ value: [UInt8]) async throws(CentralError) -> ATTErrorCode? {
        let handle = try valueHandle(uuid)
        if value.count <= Int(mtu) - 3 {
            let answer = try await request(.writeRequest(handle: handle, value: value))
            if case .errorResponse(_, _, let e) = answer { return e }
            guard answer == .writeResponse else { throw .unexpected("\(answer)") }
            return nil
        }
        var offset = 0
        let part = Int(mtu) - 5
        while offset < value.count {
            let piece = Array(value[offset..<min(value.count, offset + part)])
            let answer = try await request(.prepareWriteRequest(handle: handle, offset: UInt16(offset), value: piece))
            if case .errorResponse(_, _, let e) = answer {
                _ = try await request(.executeWriteRequest(flags: 0))
                return e
            }
            offset += piece.count
        }
        let answer = try await request(.executeWriteRequest(flags: 1))
        if case .errorResponse(_, _, let e) = answer { return e }
        return nil
    }

    /// Reads a value, continuing with Read Blob while responses are full.
    public func read(_ uuid: BluetoothUUID) async throws(CentralError) -> [UInt8] {
        let handle = try valueHandle(uuid)
        let first = try await request(.readRequest(handle: handle))
        if case .errorResponse(let r, let h, let e) = first { throw .attError(request: r, handle: h, e) }
        guard case .readResponse(var value) = first else { throw .unexpected("\(first)") }
        var last = value.count
        while last == Int(mtu) - 1 {
            let more = try await request(.readBlobRequest(handle: handle, offset: UInt16(value.count)))
            guard case .readBlobResponse(let v) = more else { break }
            value += v
            last = v.count
        }
        return value
    }

    /// Reads one attribute by handle (a descriptor, say); nil when the device answers an ATT error.
    public func read(handle: UInt16) async throws(CentralError) -> [UInt8]? {
        let answer = try await request(.readRequest(handle: handle))
        if case .errorResponse = answer { return nil }
        guard case .readResponse(let value) = answer else { throw .unexpected("\(answer)") }
        return value
    }

    /// Reads every Characteristic User Description (0x2901) of the discovered table, as the ESP
    /// provisioning apps do to find endpoints by name. Returns name by characteristic UUID.
    public func readUserDescriptions() async throws(CentralError) -> [BluetoothUUID: String] {
        var names: [BluetoothUUID: String] = [:]
        for (handle, uuid) in table.descriptors.sorted(by: { $0.key < $1.key }) where uuid.uuid16 == 0x2901 {
            guard let owner = table.owner(ofDescriptor: handle), let value = try await read(handle: handle) else { continue }
            names[owner.uuid] = String(decoding: value, as: UTF8.self)
        }
        return names
    }

    /// The next notification (or indication) on `uuid` within `microseconds`, or nil (also when
    /// the link ends first).
    public func nextNotification(_ uuid: BluetoothUUID, within microseconds: Int64) async throws(CentralError) -> [UInt8]? {
        try await nextNotification(handle: try valueHandle(uuid), within: microseconds)
    }

    /// The next notification (or indication) from `handle` within `microseconds`, or nil: a
    /// device may notify from another handle than the characteristic's value (a descriptor's).
    public func nextNotification(handle: UInt16, within microseconds: Int64) async throws(CentralError) -> [UInt8]? {
        let start = await bearer.now()
        while true {
            if let i = notifications.firstIndex(where: { $0.0 == handle }) {
                return notifications.remove(at: i).1
            }
            let left = start + microseconds - (await bearer.now())
            guard left > 0 else { return nil }
            let bytes: [UInt8]?
            // A link that ends while waiting is an answer too: nothing more will come.
            do { bytes = try await bearer.receive(within: left) } catch { return nil }
            guard let bytes else { return nil }
            guard let pdu = try? ATTPDU.decode(bytes) else { continue }
            _ = try await keepIfServerInitiated(pdu)
        }
    }

    /// Waits for the link to drop (the device reset or hung up) within `microseconds`.
    public func waitForDisconnect(within microseconds: Int64) async -> Bool {
        let deadline = await bearer.now() + microseconds
        while await bearer.isConnected() {
            let left = deadline - (await bearer.now())
            guard left > 0 else { return false }
            do {
                if let bytes = try await bearer.receive(within: left), let pdu = try? ATTPDU.decode(bytes) {
                    _ = try? await keepIfServerInitiated(pdu)
                }
            } catch {
                return true
            }
        }
        return true
    }
}
