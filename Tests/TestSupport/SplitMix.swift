import Capture

/// The tests' seeded generator: Capture's SplitMix64, so a failure reproduces from its seed.
public typealias SplitMix = SplitMix64
