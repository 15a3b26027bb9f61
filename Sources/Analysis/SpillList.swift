import Crypto
import Foundation
import _CryptoExtras

#if canImport(Glibc)
import Glibc
#endif

/// A value that a `SpillList` can write out and read back exactly.
public protocol Spillable: Sendable {
    func spill(into w: inout SpillWriter)
    init(unspilling r: inout SpillReader)
}

/// An append-only list whose elements live encoded: in memory up to a limit, then in a temporary
/// file, so that the lists an audit or a timeline keeps per connection, per phase and per secret
/// stay a few bytes each in memory (8 per element) however long the capture. The audit of 4
/// million records kept 92 MB of such lists as values, the timeline 29 MB.
///
/// The file is made in `TMPDIR` (or /tmp) with mode 0600 and unlinked at once: nothing is left on
/// disk whatever the exit, and no other user can open it. Its bytes are AES-256-CTR ciphertext
/// under a key made for the list that never leaves memory, since an audit's sightings hold secret
/// values and a deleted file's blocks can outlive it. Where no file can be made (a read-only or
/// full disk, no descriptors left), the list simply stays in memory.
///
/// Copies share the storage, which only grows, and each keeps its own slots: a copy may append
/// without disturbing the other.
public struct SpillList<Element: Spillable>: RandomAccessCollection, ExpressibleByArrayLiteral, Sendable {
    /// Bytes kept in memory before the list starts writing to its file: 64 KiB, or
    /// GATTLAB_SPILL_MEMORY_LIMIT (bytes; tests set 0 to read every element back from the file).
    public static var defaultMemoryLimit: Int { spillMemoryLimit }

    private let storage: SpillStorage
    /// Each element's place in the storage: offset << 24 | length.
    private var slots: [UInt64] = []

    public init(memoryLimit: Int = Self.defaultMemoryLimit) {
        storage = SpillStorage(memoryLimit: memoryLimit)
    }

    public init(arrayLiteral elements: Element...) {
        self.init()
        append(contentsOf: elements)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { slots.count }

    public subscript(position: Int) -> Element {
        storage.read(slot: slots[position]) { r in Element(unspilling: &r) }
    }

    public mutating func append(_ element: Element) {
        slots.append(storage.append(slot: { w in element.spill(into: &w) }))
    }

    /// Puts `element` at `position` in place of what was there. The old bytes stay where they lie
    /// (the storage only grows), so this is for values that change a few times, not in a loop:
    /// a timeline writes a connection once when it opens and once when it ends.
    public mutating func replace(at position: Int, with element: Element) {
        slots[position] = storage.append(slot: { w in element.spill(into: &w) })
    }

    /// The elements for which `isIncluded` is true, in order: a list sharing this one's storage
    /// (`filter` makes an array of values).
    public func picking(where isIncluded: (Element) throws -> Bool) rethrows -> SpillList {
        var positions: [Int] = []
        for i in indices where try isIncluded(self[i]) { positions.append(i) }
        return picking(positions)
    }

    public mutating func append(contentsOf elements: some Sequence<Element>) {
        for e in elements { append(e) }
    }

    public static func += (list: inout SpillList, elements: some Sequence<Element>) {
        list.append(contentsOf: elements)
    }

    /// The elements at `positions`, in that order: a list sharing this one's storage, so nothing
    /// is copied.
    public func picking(_ positions: [Int]) -> SpillList {
        var list = self
        list.slots = positions.map { slots[$0] }
        return list
    }

    /// Sorts as `[Element].sort(by:)` would with `areInIncreasingOrder` applied to the keys (a
    /// stable sort), and only the slots move.
    ///
    /// Lists are mostly appended in order (an audit's findings connection by connection, a
    /// redaction's patches record by record), so this first walks the sorted start of the list
    /// keeping one key, and holds keys only for the rest: sorted, it is merged into the start,
    /// whose keys are read a second time. A sorted list costs one read and no memory; the keys
    /// of a whole list held at once were the audit's largest allocation at 4M records.
    public mutating func sort<Key>(on key: (Element) -> Key, by areInIncreasingOrder: (Key, Key) -> Bool) {
        guard count > 1 else { return }
        var sortedCount = 1
        var last = key(self[0])
        while sortedCount < count {
            let next = key(self[sortedCount])
            if areInIncreasingOrder(next, last) { break }
            last = next
            sortedCount += 1
        }
        guard sortedCount < count else { return }
        var rest: [(key: Key, slot: UInt64)] = []
        rest.reserveCapacity(count - sortedCount)
        for i in sortedCount..<count { rest.append((key(self[i]), slots[i])) }
        rest.sort { areInIncreasingOrder($0.key, $1.key) }
        // An element of the rest goes before one of the start only when its key is smaller: on
        // equal keys the start, which came first, stays first.
        var merged: [UInt64] = []
        merged.reserveCapacity(count)
        var r = 0
        for i in 0..<sortedCount {
            let k = r < rest.count ? key(self[i]) : nil
            while let k, r < rest.count, areInIncreasingOrder(rest[r].key, k) {
                merged.append(rest[r].slot)
                r += 1
            }
            merged.append(slots[i])
        }
        while r < rest.count {
            merged.append(rest[r].slot)
            r += 1
        }
        slots = merged
    }

    /// Whether any element went to the file (for tests).
    var hasSpilled: Bool { storage.spilledBytes > 0 }
    /// The file's bytes as they lie on disk (for tests).
    func fileBytes() -> [UInt8] { storage.rawFileBytes() }
}

private let spillMemoryLimit = ProcessInfo.processInfo.environment["GATTLAB_SPILL_MEMORY_LIMIT"].flatMap { Int($0) } ?? 64 << 10

/// The bytes behind one or more `SpillList`s: a memory buffer, then the file.
final class SpillStorage: @unchecked Sendable {
    private let lock = NSLock()
    private let memoryLimit: Int
    /// Bytes not written yet: logical offsets `spilledBytes ..< spilledBytes + pending.count`.
    private var pending: [UInt8] = []
    private(set) var spilledBytes = 0
    private var fd: Int32 = -1
    /// No file could be made: everything stays in `pending`.
    private var memoryOnly = false
    private var key: SymmetricKey?
    /// The high 8 bytes of every counter block; the low 8 count 16-byte blocks from offset 0.
    private var nonce: [UInt8] = []
    /// Windows of the file's plaintext, the most recently read first: reading in order costs one
    /// read and one decryption per window, and so does reading by turns from a few places of the
    /// file (a sorted list alternates between the stretches its elements were appended in; with
    /// one window, a timeline's sorted phases read each window back some forty times).
    private var windows: [(start: Int, bytes: Data)] = []
    private static let window = 64 << 10
    private static let maxWindows = 4

    init(memoryLimit: Int) { self.memoryLimit = max(0, memoryLimit) }

    deinit {
        if fd >= 0 {
            close(fd)
            Self.filesLock.withLock { Self.openFiles -= 1 }
        }
    }

    /// Files open at once, over every list of the process: an audit of a folder keeps every
    /// capture's report until it writes the document, and descriptors are few (1024 by default);
    /// past this many, lists stay in memory rather than leave none to open the next capture with.
    static let maxFiles = 64
    private static let filesLock = NSLock()
    nonisolated(unsafe) private static var openFiles = 0

    func append(_ encode: (inout SpillWriter) -> Void) -> (offset: Int, count: Int) {
        lock.lock()
        defer { lock.unlock() }
        var w = SpillWriter(bytes: pending)
        pending = []
        let start = w.bytes.count
        encode(&w)
        pending = w.bytes
        let count = pending.count - start
        let offset = spilledBytes + start
        if pending.count > memoryLimit, !memoryOnly { flush() }
        return (offset, count)
    }

    /// Appends an element and gives its place, offset << 24 | length, the 8 bytes a list keeps.
    /// Elements are bounded far below 16 MiB whatever the capture: a secret's value or a
    /// protocol message by the 64 KiB long-write cap (a scan's joined answer by its 16 KiB),
    /// evidence and record lists by `appendCapped`, a link event's fields by their PDU, a
    /// timeline's phase detail by the message it quotes.
    func append(slot encode: (inout SpillWriter) -> Void) -> UInt64 {
        let (offset, count) = append(encode)
        precondition(count < 1 << 24, "a spilled element of \(count) bytes")
        return UInt64(offset) << 24 | UInt64(count)
    }

    /// Reads the element at a place `append(slot:)` gave.
    func read<T>(slot: UInt64, _ decode: (inout SpillReader) -> T) -> T {
        read(offset: Int(slot >> 24), count: Int(slot & 0xFF_FFFF), decode)
    }

    func read<T>(offset: Int, count: Int, _ decode: (inout SpillReader) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        if offset >= spilledBytes {
            return pending.withUnsafeBytes { all in
                var r = SpillReader(UnsafeRawBufferPointer(rebasing: all[(offset - spilledBytes)..<(offset - spilledBytes + count)]))
                return decode(&r)
            }
        }
        if let i = windows.firstIndex(where: { offset >= $0.start && offset + count <= $0.start + $0.bytes.count }) {
            if i > 0 { windows.insert(windows.remove(at: i), at: 0) }
        } else {
            windows.insert(fill(from: offset, count: count), at: 0)
            if windows.count > Self.maxWindows { windows.removeLast() }
        }
        let start = windows[0].start
        return windows[0].bytes.withUnsafeBytes { (all: UnsafeRawBufferPointer) in
            var r = SpillReader(UnsafeRawBufferPointer(rebasing: all[(offset - start)..<(offset - start + count)]))
            return decode(&r)
        }
    }

    /// Writes `pending` to the end of the file, encrypted; on any failure the list stays in memory.
    private func flush() {
        if fd < 0 {
            let allowed = Self.filesLock.withLock {
                guard Self.openFiles < Self.maxFiles else { return false }
                Self.openFiles += 1
                return true
            }
            guard allowed else { memoryOnly = true; return }
            let folder = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
            var template = Array("\(folder)/gattlab-spill-XXXXXX".utf8CString)
            let made = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard made >= 0 else {
                Self.filesLock.withLock { Self.openFiles -= 1 }
                memoryOnly = true
                return
            }
            // Unlinked at once: the open descriptor is the file's only name.
            template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
            fd = made
            key = SymmetricKey(size: .bits256)
            nonce = (0..<8).map { _ in UInt8.random(in: 0...255) }
        }
        var bytes = pending
        guard crypt(&bytes, at: spilledBytes) else { memoryOnly = true; return }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + written, bytes.count - written, off_t(spilledBytes + written)) }
            if n < 0, errno == EINTR { continue }
            // A full disk: what is written stays there, the rest stays in memory from here on.
            guard n > 0 else { memoryOnly = true; return }
            written += n
        }
        spilledBytes += bytes.count
        pending.removeAll(keepingCapacity: true)
    }

    /// Reads and decrypts a window of the file that holds `offset ..< offset + count`.
    /// (Read into a buffer that is not zeroed first, and kept as the `Data` the decryption makes:
    /// a timeline's events are read back some twenty times over, and the zeroing and the copies
    /// were as costly as the decryption.)
    private func fill(from offset: Int, count: Int) -> (start: Int, bytes: Data) {
        let start = offset - offset % 16
        let length = min(max(Self.window, offset + count - start), spilledBytes - start)
        let bytes = [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            var got = 0
            while got < length {
                let n = pread(fd, buffer.baseAddress! + got, length - got, off_t(start + got))
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { fatalError("gattlab: a spilled list's temporary file could not be read back (\(String(cString: strerror(errno))))") }
                got += n
            }
            initialized = length
        }
        // `start` is a multiple of 16: the window begins on a counter block.
        guard let key, let nonce = counterNonce(at: start),
              let plain = try? AES._CTR.encrypt(bytes, using: key, nonce: nonce) else {
            fatalError("gattlab: a spilled list's temporary file could not be decrypted")
        }
        return (start, plain)
    }

    /// The counter block of the 16 bytes at `offset` (a multiple of 16): nonce || offset / 16.
    private func counterNonce(at offset: Int) -> AES._CTR.Nonce? {
        var counter = nonce
        let block = UInt64(offset / 16)
        for i in 0..<8 { counter.append(UInt8(truncatingIfNeeded: block >> (56 - 8 * UInt64(i)))) }
        return try? AES._CTR.Nonce(nonceBytes: counter)
    }

    /// AES-CTR over `bytes`, which lie at `offset` of the file (encrypting and decrypting are
    /// the same XOR): the counter block of the 16 bytes at offset o is nonce || o / 16.
    private func crypt(_ bytes: inout [UInt8], at offset: Int) -> Bool {
        guard let key, !bytes.isEmpty else { return key != nil }
        let skip = offset % 16
        guard let n = counterNonce(at: offset - skip),
              let out = try? AES._CTR.encrypt([UInt8](repeating: 0, count: skip) + bytes, using: key, nonce: n) else { return false }
        bytes = Array(out.dropFirst(skip))
        return true
    }

    /// The file as it lies on disk, ciphertext (for tests).
    func rawFileBytes() -> [UInt8] {
        lock.lock()
        defer { lock.unlock() }
        guard fd >= 0, spilledBytes > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: spilledBytes)
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, spilledBytes, 0) }
        return n == spilledBytes ? bytes : []
    }
}

/// Writes values compactly: integers as zigzag varints, byte strings and texts with their length.
public struct SpillWriter {
    @usableFromInline var bytes: [UInt8]

    @usableFromInline init(bytes: [UInt8]) { self.bytes = bytes }

    @inlinable public mutating func int(_ v: Int) {
        var z = UInt64(bitPattern: Int64(v) << 1 ^ Int64(v) >> 63)
        while z >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: z) | 0x80)
            z >>= 7
        }
        bytes.append(UInt8(z))
    }

    @inlinable public mutating func int64(_ v: Int64) { int(Int(v)) }
    @inlinable public mutating func bool(_ v: Bool) { bytes.append(v ? 1 : 0) }

    @inlinable public mutating func bytes(_ b: [UInt8]) {
        int(b.count)
        bytes += b
    }

    @inlinable public mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { u in
            int(u.count)
            bytes.append(contentsOf: u)
        }
    }

    @inlinable public mutating func optional<T>(_ v: T?, _ write: (inout SpillWriter, T) -> Void) {
        bool(v != nil)
        if let v { write(&self, v) }
    }

    @inlinable public mutating func array<T>(_ a: [T], _ write: (inout SpillWriter, T) -> Void) {
        int(a.count)
        for e in a { write(&self, e) }
    }
}

/// Reads what `SpillWriter` wrote. The bytes are the list's own, so a mismatch is a bug, not
/// hostile input: it stops the program rather than guess.
public struct SpillReader {
    @usableFromInline let base: UnsafeRawBufferPointer
    @usableFromInline var at = 0

    @usableFromInline init(_ base: UnsafeRawBufferPointer) { self.base = base }

    @inlinable mutating func byte() -> UInt8 {
        precondition(at < base.count, "spilled element read past its end")
        defer { at += 1 }
        return base[at]
    }

    @inlinable public mutating func int() -> Int {
        var z: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = byte()
            z |= UInt64(b & 0x7F) << shift
            if b < 0x80 { break }
            shift += 7
        }
        return Int(Int64(bitPattern: z >> 1) ^ -Int64(bitPattern: z & 1))
    }

    @inlinable public mutating func int64() -> Int64 { Int64(int()) }
    @inlinable public mutating func bool() -> Bool { byte() != 0 }

    @inlinable public mutating func bytes() -> [UInt8] {
        let n = int()
        precondition(n >= 0 && at + n <= base.count, "spilled bytes past the element's end")
        defer { at += n }
        return Array(base[at..<(at + n)])
    }

    @inlinable public mutating func string() -> String {
        let n = int()
        precondition(n >= 0 && at + n <= base.count, "spilled text past the element's end")
        defer { at += n }
        return String(decoding: UnsafeRawBufferPointer(rebasing: base[at..<(at + n)]), as: UTF8.self)
    }

    @inlinable public mutating func optional<T>(_ read: (inout SpillReader) -> T) -> T? {
        bool() ? read(&self) : nil
    }

    @inlinable public mutating func array<T>(_ read: (inout SpillReader) -> T) -> [T] {
        let n = int()
        precondition(n >= 0 && n <= base.count - at, "spilled list longer than its element")
        var out: [T] = []
        out.reserveCapacity(n)
        for _ in 0..<n { out.append(read(&self)) }
        return out
    }
}
