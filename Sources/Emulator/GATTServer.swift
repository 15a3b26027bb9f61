import ATT
import GATT

/// What a client may do with one attribute, and the security each operation needs.
public struct AttributePermissions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let read = AttributePermissions(rawValue: 1 << 0)
    public static let write = AttributePermissions(rawValue: 1 << 1)
    /// Reads answer Insufficient Encryption until the link is encrypted.
    public static let readEncrypted = AttributePermissions(rawValue: 1 << 2)
    /// Writes answer Insufficient Encryption until the link is encrypted.
    public static let writeEncrypted = AttributePermissions(rawValue: 1 << 3)
}

/// A write a characteristic handler sees: which value handle, what bytes, and how it came
/// (a Write Request, a Write Command, or an executed long write).
public struct AttributeWrite: Sendable, Hashable {
    public enum Kind: Sendable, Hashable { case request, command, executed }
    public var handle: UInt16
    public var characteristic: BluetoothUUID
    public var value: [UInt8]
    public var kind: Kind
}

/// A GATT server on the ATT codec, serving one attribute table.
///
/// Pure and synchronous: `handle(_:)` takes one request's bytes and returns the PDUs to send back
/// (the response, if any, then notifications queued while handling it); `notify`/`indicate`
/// queue server-initiated PDUs for `takeOutgoing()`. Whatever comes in, it answers with the ATT
/// error a real server sends, or with nothing for commands; it never traps.
///
/// A class rather than a struct so that device models can hold it and register handlers that
/// call back into it; it is not Sendable: one connection's task (or actor) owns it.
public final class GATTServer {
    /// One attribute of the database.
    public struct Attribute: Sendable, Hashable {
        public var handle: UInt16
        public var type: BluetoothUUID
        public var value: [UInt8]
        public var permissions: AttributePermissions
        /// Last handle of the group, for service declarations.
        public var groupEnd: UInt16?
    }

    /// A write hook's answer: nil accepts the value (it is stored), an error code refuses it.
    public typealias WriteHandler = (GATTServer, AttributeWrite) -> ATTErrorCode?

    /// Default ATT_MTU, and the floor of any negotiated value.
    public static let defaultMTU: UInt16 = 23
    /// An attribute value is at most 512 bytes (Core Vol 3, Part F, 3.2.9).
    public static let maxValueLength = 512

    public let table: AttributeTable
    /// The MTU this server offers in Exchange MTU.
    public let serverMTU: UInt16
    /// The connection's ATT_MTU: 23 until Exchange MTU, then the smaller of both, never below 23.
    public private(set) var mtu: UInt16 = GATTServer.defaultMTU
    /// Whether the link is encrypted (set by whoever runs the link, after pairing).
    public var encrypted = false
    /// The firmware hung: requests are taken and never answered, nothing is notified.
    public var hung = false
    /// Prepare Write queue bound (entries): beyond it, Prepare Queue Full. `Int.max` plants the
    /// speaker's unbounded-prepare-queue quirk: the queue grows with every request.
    public var maxPreparedWrites = 32
    /// Value bytes waiting in the Prepare Write queue (what an unbounded queue costs in memory).
    public private(set) var preparedBytes = 0
    /// What the stack does with a notification or indication longer than MTU-3: ESP32's Bluedroid
    /// cuts it (the default); Zephyr (nRF) refuses to send it at all ("ATT MTU exceeded").
    public var dropsOversizedValues = false
    /// The error for an encrypted-only attribute on a plain link. Zephyr answers Insufficient
    /// Authentication when there are no keys to encrypt with (an unbonded phone), Bluedroid
    /// Insufficient Encryption.
    public var unencryptedAccessError: ATTErrorCode = .insufficientEncryption
    /// How many notifications or indications were not sent because they did not fit.
    public private(set) var oversizedDropped = 0

    private var attributes: [Attribute] = []
    private var indexByHandle: [UInt16: Int] = [:]
    /// CCCD handle by value handle, and value handle by CCCD handle.
    private var cccdOf: [UInt16: UInt16] = [:]
    private var valueOfCCCD: [UInt16: UInt16] = [:]
    private var propertiesOf: [UInt16: UInt8] = [:]
    private var handlers: [UInt16: WriteHandler] = [:]
    private var subscriptionHandlers: [UInt16: WriteHandler] = [:]
    /// A clone's recorded answers: the answer to a request's exact bytes, or nil for the server's own.
    private var recordedAnswer: (([UInt8]) -> [UInt8]?)?
    /// The handle whose write handler is running, and whether it set that value itself.
    private var handlerHandle: UInt16?
    private var handlerSetValue = false
    private var mtuExchanged = false
    private var prepared: [(handle: UInt16, offset: UInt16, value: [UInt8])] = []
    /// Set by a write handler whose firmware crashed: the request gets no answer.
    private var responseDropped = false
    /// Set by a write handler that answers only when its work is done (`holdResponse()`).
    private var responseHeld = false
    /// The response a handler held, sent by `releaseHeldResponse()`.
    private var heldResponse: [UInt8]?
    private var outgoing: [[UInt8]] = []
    private var pendingIndications: [[UInt8]] = []
    /// An indication was sent and its confirmation has not come.
    public private(set) var awaitingConfirmation = false
    /// Counts for tests and reports.
    public private(set) var notificationsSuppressed = 0

    /// Builds the database from a table: service declarations, characteristic declarations built
    /// from the table's properties, values (permissions from the properties) and descriptors
    /// (CCCDs start at 0x0000; user descriptions read as the table names them).
    public init(table: AttributeTable, serverMTU: UInt16 = 247, values: [UInt16: [UInt8]] = [:]) {
        self.table = table
        self.serverMTU = max(Self.defaultMTU, serverMTU)
        var list: [Attribute] = []
        for s in table.services.values {
            list.append(Attribute(handle: s.startHandle, type: BluetoothUUID(uuid16: s.primary ? 0x2800 : 0x2801),
                                  value: s.uuid.attBytes, permissions: .read, groupEnd: s.endHandle))
        }
        for c in table.characteristics.values {
            let declaration = [c.properties, UInt8(c.valueHandle & 0xFF), UInt8(c.valueHandle >> 8)] + c.uuid.attBytes
            list.append(Attribute(handle: c.declarationHandle, type: BluetoothUUID(uuid16: 0x2803), value: declaration,
                                  permissions: .read, groupEnd: nil))
            var p: AttributePermissions = []
            if c.properties & 0x02 != 0 { p.insert(.read) }
            if c.properties & 0x0C != 0 { p.insert(.write) }
            list.append(Attribute(handle: c.valueHandle, type: c.uuid, value: values[c.valueHandle] ?? [],
                                  permissions: p, groupEnd: nil))
            propertiesOf[c.valueHandle] = c.properties
        }
        for (h, uuid) in table.descriptors {
            var value = values[h] ?? []
            var p: AttributePermissions = .read
            if uuid.uuid16 == 0x2902 {
                value = [0, 0]
                p.insert(.write)
                if let owner = table.owner(ofDescriptor: h) {
                    cccdOf[owner.valueHandle] = h
                    valueOfCCCD[h] = owner.valueHandle
                }
            } else if uuid.uuid16 == 0x2901, let owner = table.owner(ofDescriptor: h),
                      let name = table.userDescriptions[owner.valueHandle], values[h] == nil {
                value = Array(name.utf8)
            }
            list.append(Attribute(handle: h, type: uuid, value: value, permissions: p, groupEnd: nil))
        }
        list.sort { $0.handle < $1.handle }
        // A handle the table names twice keeps its first role.
        var seen = Set<UInt16>()
        attributes = list.filter { seen.insert($0.handle).inserted }
        for (i, a) in attributes.enumerated() { indexByHandle[a.handle] = i }
    }

    // MARK: Database access for device models

    public var allAttributes: [Attribute] { attributes }

    public func value(of handle: UInt16) -> [UInt8]? {
        indexByHandle[handle].map { attributes[$0].value }
    }

    /// Sets an attribute's value (no notification: see `notify`).
    public func setValue(_ value: [UInt8], for handle: UInt16) {
        guard let i = indexByHandle[handle] else { return }
        if handle == handlerHandle { handlerSetValue = true }
        attributes[i].value = value
    }

    public func permissions(of handle: UInt16) -> AttributePermissions? {
        indexByHandle[handle].map { attributes[$0].permissions }
    }

    public func setPermissions(_ permissions: AttributePermissions, for handle: UInt16) {
        guard let i = indexByHandle[handle] else { return }
        attributes[i].permissions = permissions
    }

    /// The value handle of the characteristic with this UUID (the first, if several).
    public func valueHandle(of characteristic: BluetoothUUID) -> UInt16? {
        table.characteristics.values.filter { $0.uuid == characteristic }.map(\.valueHandle).min()
    }

    /// The CCCD of a characteristic value, if it has one.
    public func cccd(of valueHandle: UInt16) -> UInt16? { cccdOf[valueHandle] }

    /// Registers the hook called for each accepted write to `valueHandle` (before the value is stored).
    public func onWrite(_ valueHandle: UInt16, _ handler: @escaping WriteHandler) {
        handlers[valueHandle] = handler
    }

    /// Registers the hook called after each accepted write to the CCCD `cccdHandle` (the value
    /// already stored, so what it sends goes to a subscribed client); an error it returns puts
    /// the previous value back and is the answer.
    public func onSubscriptionWrite(_ cccdHandle: UInt16, _ handler: @escaping WriteHandler) {
        subscriptionHandlers[cccdHandle] = handler
    }

    /// A recorded device's own answers (a clone's): a request whose bytes `answer` knows gets
    /// that answer instead of the server's, then anything queued.
    public func answerAsRecorded(_ answer: @escaping ([UInt8]) -> [UInt8]?) {
        recordedAnswer = answer
    }

    /// Forgets what belongs to one connection: MTU, CCCDs (the client is not bonded), the prepare
    /// queue, queued PDUs, encryption. Values and handlers stay: they are the device's.
    public func resetConnection() {
        mtu = Self.defaultMTU
        mtuExchanged = false
        prepared = []
        preparedBytes = 0
        outgoing = []
        pendingIndications = []
        awaitingConfirmation = false
        encrypted = false
        heldResponse = nil
        for h in valueOfCCCD.keys { setValue([0, 0], for: h) }
    }

    // MARK: Server-initiated PDUs

    /// Whether the client enabled notifications (bit 0) or indications (bit 1) for a value.
    public func isSubscribed(_ valueHandle: UInt16, indications: Bool = false) -> Bool {
        guard let c = cccdOf[valueHandle], let v = value(of: c), v.count >= 1 else { return false }
        return v[0] & (indications ? 0x02 : 0x01) != 0
    }

    /// Queues a notification if the client enabled it in the CCCD, cut to MTU-3 bytes. Also sets
    /// the value. Returns whether it was queued.
    @discardableResult
    public func notify(_ valueHandle: UInt16, _ value: [UInt8], setValue store: Bool = true) -> Bool {
        if store { setValue(value, for: valueHandle) }
        guard isSubscribed(valueHandle) else {
            notificationsSuppressed += 1
            return false
        }
        guard fits(value) else { return false }
        outgoing.append(ATTPDU.handleValueNotification(handle: valueHandle, value: Array(value.prefix(Int(mtu) - 3))).encode())
        return true
    }

    /// Queues an indication if enabled; one is in flight at a time, the rest wait for confirmations.
    @discardableResult
    public func indicate(_ valueHandle: UInt16, _ value: [UInt8]) -> Bool {
        setValue(value, for: valueHandle)
        guard isSubscribed(valueHandle, indications: true) else {
            notificationsSuppressed += 1
            return false
        }
        guard fits(value) else { return false }
        let pdu = ATTPDU.handleValueIndication(handle: valueHandle, value: Array(value.prefix(Int(mtu) - 3))).encode()
        if awaitingConfirmation {
            pendingIndications.append(pdu)
        } else {
            awaitingConfirmation = true
            outgoing.append(pdu)
        }
        return true
    }

    /// Queues a notification or indication as a recording had it (a clone's: the recording is the
    /// device's truth): whatever the CCCD says and however long the value, up to the attribute
    /// maximum. An indication waits for the previous one's confirmation. Also sets the value.
    public func sendAsRecorded(_ valueHandle: UInt16, _ value: [UInt8], indication: Bool) {
        let value = Array(value.prefix(Self.maxValueLength))
        setValue(value, for: valueHandle)
        guard indication else {
            outgoing.append(ATTPDU.handleValueNotification(handle: valueHandle, value: value).encode())
            return
        }
        let pdu = ATTPDU.handleValueIndication(handle: valueHandle, value: value).encode()
        if awaitingConfirmation {
            pendingIndications.append(pdu)
        } else {
            awaitingConfirmation = true
            outgoing.append(pdu)
        }
    }

    /// False (and counted) when the value is longer than MTU-3 on a stack that drops such values.
    private func fits(_ value: [UInt8]) -> Bool {
        guard dropsOversizedValues, value.count > Int(mtu) - 3 else { return true }
        oversizedDropped += 1
        return false
    }

    /// Server-initiated PDUs queued since the last call, in order.
    public func takeOutgoing() -> [[UInt8]] {
        defer { outgoing.removeAll() }
        return outgoing
    }

    // MARK: Requests

    /// Answers one PDU from the client: the response (or Error Response) first, then anything the
    /// request made the device send. Commands, confirmations and PDUs a server never receives get
    /// no response.
    public func handle(_ request: [UInt8]) -> [[UInt8]] {
        // A hung firmware: the link stays up, nothing is answered (the client's ATT timeout ends it).
        if hung { return [] }
        var out: [[UInt8]] = []
        responseDropped = false
        responseHeld = false
        if let recorded = recordedAnswer?(request) {
            out.append(recorded)
        } else if let response = respond(to: request) {
            // A held response waits for `releaseHeldResponse()`; an error is never held.
            if responseHeld, response.opcode != ATTOpcode.errorResponse.rawValue {
                heldResponse = response.encode()
            } else {
                out.append(response.encode())
            }
        }
        responseHeld = false
        out += takeOutgoing()
        if responseDropped {
            // The firmware crashed handling it: no response, and what it queued is lost.
            responseDropped = false
            return []
        }
        return out
    }

    /// Called by a write handler whose firmware answers only when its work is done (ESP-IDF's
    /// protocomm handler blocked in a blocking Wi-Fi scan): the request's response is kept until
    /// `releaseHeldResponse()`, so the client waits for it as it would on the air.
    public func holdResponse() {
        responseHeld = true
    }

    /// Sends the response `holdResponse()` kept, if the link still has one waiting.
    public func releaseHeldResponse() {
        guard let pdu = heldResponse else { return }
        heldResponse = nil
        if !hung { outgoing.append(pdu) }
    }

    /// Whether a response is being held.
    public var holdsResponse: Bool { heldResponse != nil }

    /// Called by a write handler whose firmware just crashed: the request being handled gets no
    /// response and nothing queued so far is sent (the device resets; the phone sees the link drop).
    public func dropResponse() {
        responseDropped = true
        heldResponse = nil
        outgoing.removeAll()
        pendingIndications.removeAll()
        awaitingConfirmation = false
    }

    private func error(_ opcode: UInt8, _ handle: UInt16, _ code: ATTErrorCode) -> ATTPDU {
        .errorResponse(requestOpcode: opcode, handle: handle, error: code)
    }

    func respond(to bytes: [UInt8]) -> ATTPDU? {
        guard let opcodeByte = bytes.first else { return nil }
        let isCommand = opcodeByte & 0x40 != 0
        guard let opcode = ATTOpcode(rawValue: opcodeByte) else {
            return isCommand ? nil : error(opcodeByte, 0, .requestNotSupported)
        }
        switch opcode.kind {
        case .request, .command, .confirmation: break
        case .response, .notification, .indication: return nil  // not for a server: ignored
        }
        // A PDU longer than the MTU cannot arrive on a real bearer; answer it as malformed.
        if bytes.count > Int(mtu), opcode != .exchangeMTURequest {
            return opcode.kind == .request ? error(opcodeByte, 0, .invalidPDU) : nil
        }
        let pdu: ATTPDU
        do {
            let (decoded, trailing) = try ATTPDU.decodeWithTrailing(bytes)
            guard trailing == 0 else {
                return opcode.kind == .request ? error(opcodeByte, 0, .invalidPDU) : nil
            }
            pdu = decoded
        } catch {
            return opcode.kind == .request ? self.error(opcodeByte, 0, .invalidPDU) : nil
        }
        switch pdu {
        case .exchangeMTURequest(let clientMTU):
            if !mtuExchanged {
                mtuExchanged = true
                mtu = max(Self.defaultMTU, min(clientMTU, serverMTU))
            }
            return .exchangeMTUResponse(serverRxMTU: serverMTU)
        case .findInformationRequest(let start, let end):
            return findInformation(opcodeByte, start, end)
        case .findByTypeValueRequest(let start, let end, let type, let value):
            return findByTypeValue(opcodeByte, start, end, BluetoothUUID(uuid16: type), value)
        case .readByTypeRequest(let start, let end, let type):
            return readByType(opcodeByte, start, end, type)
        case .readByGroupTypeRequest(let start, let end, let type):
            return readByGroupType(opcodeByte, start, end, type)
        case .readRequest(let handle):
            switch readable(handle) {
            case .failure(let code): return error(opcodeByte, handle, code)
            case .success(let value): return .readResponse(value: Array(value.prefix(Int(mtu) - 1)))
            }
        case .readBlobRequest(let handle, let offset):
            switch readable(handle) {
            case .failure(let code): return error(opcodeByte, handle, code)
            case .success(let value):
                if Int(offset) > value.count { return error(opcodeByte, handle, .invalidOffset) }
                if offset > 0, value.count <= Int(mtu) - 3 { return error(opcodeByte, handle, .attributeNotLong) }
                return .readBlobResponse(value: Array(value[Int(offset)...].prefix(Int(mtu) - 1)))
            }
        case .readMultipleRequest(let handles):
            guard handles.count >= 2 else { return error(opcodeByte, 0, .invalidPDU) }
            var joined: [UInt8] = []
            for h in handles {
                switch readable(h) {
                case .failure(let code): return error(opcodeByte, h, code)
                case .success(let value): joined += value
                }
            }
            return .readMultipleResponse(values: Array(joined.prefix(Int(mtu) - 1)))
        case .readMultipleVariableRequest(let handles):
            guard handles.count >= 2 else { return error(opcodeByte, 0, .invalidPDU) }
            var values: [[UInt8]] = []
            var room = Int(mtu) - 1
            for h in handles {
                switch readable(h) {
                case .failure(let code): return error(opcodeByte, h, code)
                case .success(let value):
                    guard room > 2 else { continue }
                    values.append(Array(value.prefix(room - 2)))
                    room -= 2 + min(value.count, room - 2)
                }
            }
            return .readMultipleVariableResponse(values: values)
        case .writeRequest(let handle, let value):
            if let code = write(handle, value, kind: .request) { return error(opcodeByte, handle, code) }
            return .writeResponse
        case .writeCommand(let handle, let value):
            _ = write(handle, value, kind: .command)
            return nil
        case .signedWriteCommand:
            return nil  // no signing keys: a server without them ignores signed writes
        case .prepareWriteRequest(let handle, let offset, let value):
            guard let i = indexByHandle[handle] else { return error(opcodeByte, handle, .invalidHandle) }
            if let code = writeSecurity(attributes[i]) { return error(opcodeByte, handle, code) }
            guard prepared.count < maxPreparedWrites else { return error(opcodeByte, handle, .prepareQueueFull) }
            prepared.append((handle, offset, value))
            preparedBytes += value.count
            return .prepareWriteResponse(handle: handle, offset: offset, value: value)
        case .executeWriteRequest(let flags):
            switch flags {
            case 0x00:
                prepared = []
                preparedBytes = 0
                return .executeWriteResponse
            case 0x01:
                return executeWrites(opcodeByte)
            default:
                return error(opcodeByte, 0, .invalidPDU)
            }
        case .handleValueConfirmation:
            guard awaitingConfirmation else { return nil }
            awaitingConfirmation = false
            if !pendingIndications.isEmpty {
                awaitingConfirmation = true
                outgoing.append(pendingIndications.removeFirst())
            }
            return nil
        default:
            return opcode.kind == .request ? error(opcodeByte, 0, .requestNotSupported) : nil
        }
    }

    private func rangeError(_ op: UInt8, _ start: UInt16, _ end: UInt16) -> ATTPDU? {
        start == 0 || start > end ? error(op, start, .invalidHandle) : nil
    }

    private func inRange(_ start: UInt16, _ end: UInt16) -> ArraySlice<Attribute> {
        let lo = attributes.firstIndex { $0.handle >= start } ?? attributes.count
        let hi = attributes.lastIndex { $0.handle <= end }.map { $0 + 1 } ?? 0
        return lo < hi ? attributes[lo..<hi] : []
    }

    private func findInformation(_ op: UInt8, _ start: UInt16, _ end: UInt16) -> ATTPDU {
        if let e = rangeError(op, start, end) { return e }
        let found = inRange(start, end)
        guard let first = found.first else { return error(op, start, .attributeNotFound) }
        let short = first.type.bitWidth == 16
        let entrySize = short ? 4 : 18
        var entries: [ATTHandleUUID] = []
        for a in found {
            guard (a.type.bitWidth == 16) == short, 2 + (entries.count + 1) * entrySize <= Int(mtu) else { break }
            entries.append(ATTHandleUUID(handle: a.handle, uuid: a.type))
        }
        return .findInformationResponse(format: short ? 1 : 2, entries: entries)
    }

    private func findByTypeValue(_ op: UInt8, _ start: UInt16, _ end: UInt16, _ type: BluetoothUUID,
                                 _ value: [UInt8]) -> ATTPDU {
        if let e = rangeError(op, start, end) { return e }
        var entries: [ATTHandlesInformation] = []
        for a in inRange(start, end) where a.type == type && a.value == value {
            guard 1 + (entries.count + 1) * 4 <= Int(mtu) else { break }
            entries.append(ATTHandlesInformation(foundHandle: a.handle, groupEndHandle: a.groupEnd ?? a.handle))
        }
        return entries.isEmpty ? error(op, start, .attributeNotFound) : .findByTypeValueResponse(entries: entries)
    }

    private func readByType(_ op: UInt8, _ start: UInt16, _ end: UInt16, _ type: BluetoothUUID) -> ATTPDU {
        if let e = rangeError(op, start, end) { return e }
        var entries: [ATTHandleValue] = []
        var length = 0
        for a in inRange(start, end) where a.type == type {
            if let code = readSecurity(a) {
                if entries.isEmpty { return error(op, a.handle, code) }
                break
            }
            let value = Array(a.value.prefix(min(Int(mtu) - 4, 253)))
            if entries.isEmpty {
                length = value.count
            } else if value.count != length || 2 + (entries.count + 1) * (length + 2) > Int(mtu) {
                break
            }
            entries.append(ATTHandleValue(handle: a.handle, value: value))
        }
        return entries.isEmpty ? error(op, start, .attributeNotFound)
            : .readByTypeResponse(length: UInt8(length + 2), entries: entries)
    }

    private func readByGroupType(_ op: UInt8, _ start: UInt16, _ end: UInt16, _ type: BluetoothUUID) -> ATTPDU {
        if let e = rangeError(op, start, end) { return e }
        guard let short = type.uuid16, short == 0x2800 || short == 0x2801 else {
            return error(op, start, .unsupportedGroupType)
        }
        var entries: [ATTGroupData] = []
        var length = 0
        for a in inRange(start, end) where a.type == type {
            let value = Array(a.value.prefix(min(Int(mtu) - 6, 251)))
            if entries.isEmpty {
                length = value.count
            } else if value.count != length || 2 + (entries.count + 1) * (length + 4) > Int(mtu) {
                break
            }
            entries.append(ATTGroupData(handle: a.handle, endGroupHandle: a.groupEnd ?? a.handle, value: value))
        }
        return entries.isEmpty ? error(op, start, .attributeNotFound)
            : .readByGroupTypeResponse(length: UInt8(length + 4), entries: entries)
    }

    private func readSecurity(_ a: Attribute) -> ATTErrorCode? {
        if !a.permissions.contains(.read) { return .readNotPermitted }
        if a.permissions.contains(.readEncrypted), !encrypted { return unencryptedAccessError }
        return nil
    }

    private func writeSecurity(_ a: Attribute) -> ATTErrorCode? {
        if !a.permissions.contains(.write) { return .writeNotPermitted }
        if a.permissions.contains(.writeEncrypted), !encrypted { return unencryptedAccessError }
        return nil
    }

    private enum Readable {
        case success([UInt8])
        case failure(ATTErrorCode)
    }

    private func readable(_ handle: UInt16) -> Readable {
        guard let i = indexByHandle[handle] else { return .failure(.invalidHandle) }
        if let code = readSecurity(attributes[i]) { return .failure(code) }
        return .success(attributes[i].value)
    }

    /// Checks and performs one write; nil on success.
    private func write(_ handle: UInt16, _ value: [UInt8], kind: AttributeWrite.Kind) -> ATTErrorCode? {
        guard let i = indexByHandle[handle] else { return .invalidHandle }
        if let code = writeSecurity(attributes[i]) { return code }
        if kind == .command, let p = propertiesOf[handle], p & 0x04 == 0, valueOfCCCD[handle] == nil {
            // Write Without Response on a characteristic that does not offer it: a command gets no
            // error, so it is dropped, as real stacks drop it.
            return .writeNotPermitted
        }
        if value.count > Self.maxValueLength { return .invalidAttributeValueLength }
        if let owner = valueOfCCCD[handle] {
            guard value.count == 2 else { return .invalidAttributeValueLength }
            let props = propertiesOf[owner] ?? 0
            if value[0] & 0x01 != 0, props & 0x10 == 0 { return .cccdImproperlyConfigured }
            if value[0] & 0x02 != 0, props & 0x20 == 0 { return .cccdImproperlyConfigured }
            let before = attributes[i].value
            attributes[i].value = value
            if let handler = subscriptionHandlers[handle],
               let code = handler(self, AttributeWrite(handle: handle, characteristic: attributes[i].type, value: value, kind: kind)) {
                attributes[i].value = before
                return code
            }
            return nil
        }
        if let handler = handlers[handle] {
            let w = AttributeWrite(handle: handle, characteristic: attributes[i].type, value: value, kind: kind)
            handlerHandle = handle
            handlerSetValue = false
            defer { handlerHandle = nil }
            if let code = handler(self, w) { return code }
            // The handler may have set the value itself (ESP protocomm leaves its response there
            // for the phone to read): store what was written only if it did not.
            if handlerSetValue { return nil }
        }
        attributes[i].value = value
        return nil
    }

    private func executeWrites(_ op: UInt8) -> ATTPDU {
        let queue = prepared
        prepared = []
        preparedBytes = 0
        var order: [UInt16] = []
        var joined: [UInt16: [UInt8]] = [:]
        for item in queue {
            var current = joined[item.handle] ?? []
            if joined[item.handle] == nil { order.append(item.handle) }
            guard Int(item.offset) <= current.count else { return error(op, item.handle, .invalidOffset) }
            current.replaceSubrange(Int(item.offset)..<min(current.count, Int(item.offset) + item.value.count), with: item.value)
            guard current.count <= Self.maxValueLength else { return error(op, item.handle, .invalidAttributeValueLength) }
            joined[item.handle] = current
        }
        for h in order {
            if let code = write(h, joined[h] ?? [], kind: .executed) { return error(op, h, code) }
        }
        return .executeWriteResponse
    }
}

extension BluetoothUUID {
    /// The bytes ATT carries for this UUID: 2 for 16-bit, else the 16-byte form.
    var attBytes: [UInt8] { bitWidth == 16 ? littleEndianBytes : littleEndianBytes128 }
}
