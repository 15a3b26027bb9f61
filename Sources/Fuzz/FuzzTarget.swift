import Capture

/// What the oracles said of one input.
public enum FuzzOutcome: Sendable, Equatable {
    case ok
    /// A bug: `kind` is stable (it names the finding file and groups repeats), `detail` says what
    /// was seen, for people.
    case finding(kind: String, detail: String)

    public var isFinding: Bool {
        if case .finding = self { return true }
        return false
    }

    /// The finding's kind; nil for `.ok`.
    public var findingKind: String? {
        if case .finding(let kind, _) = self { return kind }
        return nil
    }
}

/// The behaviour an input showed, as hashed features (decoder outcomes, problem ids, states,
/// length classes): the feedback that keeps an input in the corpus when it shows something new.
/// Without compiler coverage (that is the libFuzzer builds' job) this is what guides the
/// in-process engine. One bitmap for the campaign; `add` counts features never seen before.
public final class Features: @unchecked Sendable {  // used by one execution at a time
    private var bits = [UInt64](repeating: 0, count: 1 << 12)  // 2^18 features
    /// Features the current input showed for the first time.
    public private(set) var novel = 0
    /// Distinct features seen in the campaign.
    public private(set) var total = 0

    public init() {}

    @inline(__always)
    public func add(_ feature: UInt64) {
        let h = (feature &* 0x9E37_79B9_7F4A_7C15) >> 46  // 18 bits
        let word = Int(h >> 6), bit = UInt64(1) << (h & 63)
        if bits[word] & bit == 0 {
            bits[word] |= bit
            novel += 1
            total += 1
        }
    }

    /// A feature from a tag and a value (a problem id's hash, a state, a length class).
    @inline(__always)
    public func add(_ tag: UInt64, _ value: UInt64) { add(tag &* 0x100_0000_01B3 ^ value) }

    public func add(_ tag: UInt64, _ text: String) { add(tag, Self.hash(text)) }

    /// Starts a new input.
    public func reset() { novel = 0 }

    public static func hash(_ text: String) -> UInt64 {
        // Over the contiguous UTF-8 (native and literal strings are): iterating the view a byte
        // at a time was a few percent of a parser target that reports problems per input.
        text.utf8.withContiguousStorageIfAvailable(hash) ?? hash(text.utf8)
    }

    @inline(__always)
    static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01B3 }
        return h
    }

    /// Length classes: 0..16 exactly, then powers of two, so boundaries count and sizes do not explode.
    @inline(__always)
    public static func lengthClass(_ n: Int) -> UInt64 {
        n <= 16 ? UInt64(n) : 16 + UInt64(Int.bitWidth - n.leadingZeroBitCount)
    }
}

/// One thing the fuzzer can aim at: a decoder of the project or an emulated device's request
/// handling, with its seeds and its structure-aware mutations.
public struct FuzzTarget: Sendable {
    public let name: String
    public let summary: String
    /// Seed inputs from the codecs (the committed Corpus/ adds inputs from Captures/).
    public let seeds: @Sendable () -> [[UInt8]]
    /// Tokens the target's format is made of ("MORE\n", a file magic): libFuzzer's `-dict`, one
    /// file per target (`gattlab-fuzz --dictionary`, `fuzz-<name>.dict` for ClusterFuzzLite).
    /// Empty when the format has none worth naming (a libFuzzer build finds single-byte opcodes
    /// and compared constants by itself).
    public let dictionary: [[UInt8]]
    /// Structure-aware mutations (nil: generic ones only).
    public let mutator: (@Sendable (inout [UInt8], inout FuzzRandom) -> Void)?
    /// Runs one input through the target and its oracles.
    public let execute: @Sendable ([UInt8], Features) -> FuzzOutcome
    /// The largest input the target is given (a libFuzzer -max_len too).
    public let maxLength: Int
    /// How many executions minimizing a finding may take (a black-box execution is a connection).
    public let minimizeTries: Int
    /// Saves what shows the last execution beside a finding (a black-box exchange as btsnoop),
    /// given the finding's path and kind.
    public let artifact: (@Sendable (_ path: String, _ kind: String) -> Void)?
    /// The device a black-box target reaches (`unix:PATH`, `bluez:hci0/ADDR`); nil in-process. Its
    /// findings are reproduced against that device, not by `gattlab fuzz reproduce`: the fault is
    /// the device's (an emulator's --quirk the campaign does not know).
    public let remote: String?
    /// The units of an input (its operations), removed whole before single bytes when
    /// minimising; nil: bytes only.
    public let units: (@Sendable ([UInt8]) -> [Range<Int>])?
    /// How many times a minimised finding is run again before it is reported: a finding that
    /// does not come again is a flake of the device or the link, not a bug to report (0: none,
    /// for in-process targets, which are deterministic).
    public let confirmations: Int
    /// Inputs run one after another as one input (a black-box device's operations, a
    /// reconnect between): a device keeps what it was told across links, so a finding that does
    /// not come again alone may need what the inputs before it did. nil: each input stands alone.
    public let join: (@Sendable ([[UInt8]]) -> [UInt8])?
    /// The modules a libFuzzer build of this target instruments for coverage (`gattlab-fuzz
    /// --list`, `GATTLAB_FUZZ_MODULES` in Package.swift); nil: every module the targets exercise.
    /// libFuzzer reads and clears every counter of the binary after each input, so a target whose
    /// code is one codec runs about twice as fast with that codec alone instrumented.
    public var instrumentedModules: [String]?

    public init(name: String, summary: String, maxLength: Int = 4096, seeds: @escaping @Sendable () -> [[UInt8]],
                dictionary: [[UInt8]] = [],
                mutator: (@Sendable (inout [UInt8], inout FuzzRandom) -> Void)? = nil, minimizeTries: Int = 4000,
                execute: @escaping @Sendable ([UInt8], Features) -> FuzzOutcome,
                artifact: (@Sendable (_ path: String, _ kind: String) -> Void)? = nil, remote: String? = nil,
                units: (@Sendable ([UInt8]) -> [Range<Int>])? = nil, confirmations: Int = 0,
                join: (@Sendable ([[UInt8]]) -> [UInt8])? = nil) {
        self.remote = remote
        self.join = join
        self.units = units
        self.confirmations = confirmations
        self.name = name
        self.summary = summary
        self.maxLength = maxLength
        self.seeds = seeds
        self.dictionary = dictionary
        self.mutator = mutator
        self.minimizeTries = minimizeTries
        self.execute = execute
        self.artifact = artifact
    }

    /// The target, instrumented in a libFuzzer build only in the module that defines `type` (a
    /// codec's namespace type: its <Name>Codec module).
    public func instrumenting(moduleOf type: Any.Type) -> FuzzTarget {
        var t = self
        t.instrumentedModules = [String(String(reflecting: type).prefix { $0 != "." })]
        return t
    }

    /// Runs one input outside a campaign (a reproducer, a libFuzzer harness).
    public func run(_ input: [UInt8]) -> FuzzOutcome {
        execute(Array(input.prefix(maxLength)), Features())
    }
}

/// The fuzzer's only source of randomness (the project's SplitMix64): the same seed gives the
/// same campaign.
public struct FuzzRandom: Sendable {
    private var generator: SplitMix64
    public init(seed: UInt64) { generator = SplitMix64(seed: seed ^ 0xA076_1D64_78BD_642F) }

    @inline(__always)
    public mutating func next() -> UInt64 { generator.next() }

    /// 0..<n (0 when n <= 0).
    @inline(__always)
    public mutating func below(_ n: Int) -> Int { n > 0 ? Int(next() % UInt64(n)) : 0 }

    public mutating func chance(_ percent: Int) -> Bool { below(100) < percent }

    public mutating func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[below(items.count)] }

    public mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next()) }
}
