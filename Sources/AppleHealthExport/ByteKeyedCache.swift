/// A small direct-mapped cache keyed by bytes: an export repeats the same few hundred type names,
/// source names, units and device strings millions of times, so the importer turns each into a
/// `String` (or a parsed value) once instead of allocating one per record. A colliding key simply
/// replaces the slot; memory is bounded by the slot count and `maximumKeyLength`.
struct ByteKeyedCache<Value> {
    private struct Entry {
        var hash: UInt64
        var key: [UInt8]
        var value: Value
    }

    private var slots: [Entry?]
    private let mask: Int
    static var maximumKeyLength: Int { 512 }

    init(slotCountPowerOfTwo: Int = 10) {
        slots = Array(repeating: nil, count: 1 << slotCountPowerOfTwo)
        mask = (1 << slotCountPowerOfTwo) - 1
    }

    /// The cached value for `key`, or `make(key)` (cached unless the key is long).
    mutating func value(for key: UnsafeRawBufferPointer, _ make: (UnsafeRawBufferPointer) -> Value) -> Value {
        guard key.count <= Self.maximumKeyLength else { return make(key) }
        // FNV-1a: keys are short; this is cheaper than seeding a Hasher.
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in key { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        let slot = Int(truncatingIfNeeded: hash ^ (hash >> 29)) & mask
        if let entry = slots[slot], entry.hash == hash, entry.key.count == key.count,
           entry.key.withUnsafeBytes({ XMLTokenizer.equal($0, key) }) {
            return entry.value
        }
        let value = make(key)
        slots[slot] = Entry(hash: hash, key: Array(key), value: value)
        return value
    }
}
