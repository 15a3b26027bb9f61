import Transport

enum InMemoryBearerPair {
    static func make() -> (InMemoryBearer, InMemoryBearer) { InMemoryBearer.pair() }
}
