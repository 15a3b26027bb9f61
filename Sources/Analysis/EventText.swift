/// An event's own summary and fields (a link event's: "connected to ..., interval 30 ms", its
/// handle, address and interval) kept as one byte array, written with `SpillWriter`: as a
/// string, a fields array and a string per text field they took about 450 bytes and four
/// allocations per event, a fifth of a large timeline's memory; encoded they take about 150
/// and one. They are read back (exactly: texts as their UTF-8, numbers by their bits) when a
/// writer or a rule asks.
enum EventText {
    /// Nil when a field is a secret: those stay values (`Secret` is never written out here).
    static func encode(summary: String, fields: [Field]) -> [UInt8]? {
        var w = SpillWriter(bytes: [])
        // Reserved to the byte (lengths and tags take one or two each): an array that doubles
        // as it is written keeps up to twice what it holds, for as long as the event lives.
        var size = summary.utf8.count + 2 + 2
        for f in fields {
            size += f.name.utf8.count + 2 + 1
            switch f.value {
            case .string(let text): size += text.utf8.count + 2
            case .int, .double: size += 10
            case .bool: size += 1
            case .strings, .objects, .secret, .partlySecret: size += 16
            }
        }
        w.bytes.reserveCapacity(size)
        w.string(summary)
        guard write(fields, into: &w) else { return nil }
        return w.bytes
    }

    private static func write(_ fields: [Field], into w: inout SpillWriter) -> Bool {
        w.int(fields.count)
        for f in fields {
            w.string(f.name)
            switch f.value {
            case .string(let s):
                w.int(0)
                w.string(s)
            case .int(let i):
                w.int(1)
                w.int(i)
            case .double(let d):
                w.int(2)
                w.int(Int(Int64(bitPattern: d.bitPattern)))
            case .bool(let b):
                w.int(3)
                w.bool(b)
            case .strings(let list):
                w.int(4)
                w.array(list) { $0.string($1) }
            case .objects(let objects):
                w.int(5)
                w.int(objects.count)
                for o in objects { guard write(o, into: &w) else { return false } }
            case .secret, .partlySecret:
                return false
            }
        }
        return true
    }

    static func summary(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { raw in
            var r = SpillReader(raw)
            return r.string()
        }
    }

    static func decode(_ bytes: [UInt8]) -> (summary: String, fields: [Field]) {
        bytes.withUnsafeBytes { raw in
            var r = SpillReader(raw)
            let summary = r.string()
            return (summary, read(&r))
        }
    }

    private static func read(_ r: inout SpillReader) -> [Field] {
        r.array { r in
            let name = r.string()
            switch r.int() {
            case 0: return Field(name, .string(r.string()))
            case 1: return Field(name, .int(r.int()))
            case 2: return Field(name, .double(Double(bitPattern: UInt64(bitPattern: Int64(r.int())))))
            case 3: return Field(name, .bool(r.bool()))
            case 4: return Field(name, .strings(r.array { $0.string() }))
            case 5:
                let n = r.int()
                var objects: [[Field]] = []
                for _ in 0..<n { objects.append(read(&r)) }
                return Field(name, .objects(objects))
            default: preconditionFailure("an event's encoded field of an unknown kind")
            }
        }
    }
}
