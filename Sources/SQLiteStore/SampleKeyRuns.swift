import HealthStore
import HealthModel

/// How a sample's (user, uuid) becomes the 32-bit key of the uuid key runs (`SampleKeyIndex`).
/// Different uuids may share a key: whoever finds a key compares the full uuid of the row it
/// points to, so a shared key costs a row read, never a wrong answer. A store opened by tests can
/// narrow the key to a few bits to force such collisions.
package struct SampleKeyDerivation: Sendable {
    /// Keys are kept to the low `bits` bits (32 in production).
    package let bits: Int

    package static let standard = SampleKeyDerivation(bits: 32)

    /// For tests: keys of only `bits` bits, so different uuids collide often.
    package static func narrowed(to bits: Int) -> SampleKeyDerivation {
        SampleKeyDerivation(bits: max(0, min(32, bits)))
    }

    private init(bits: Int) { self.bits = bits }

    /// A SplitMix64 finalizer over both halves and the user: version-7 (time-ordered) and import
    /// uuids share their leading bytes, so no single part of the uuid can serve as the key.
    @inline(__always)
    package func key(userRowID: Int64, uuid: HealthUUID) -> UInt32 {
        var z = uuid.high ^ (uuid.low &* 0x9E37_79B9_7F4A_7C15) ^ (UInt64(bitPattern: userRowID) &* 0xD6E8_FEB8_6659_FD93)
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        let full = UInt32(truncatingIfNeeded: z >> 32)
        return bits >= 32 ? full : full & ((1 << UInt32(bits)) &- 1)
    }
}

/// One sorted run of (key, seq) entries: what a batch adds to a user's uuid key runs, and what a
/// merge of runs produces. Sorted by key, then seq; a key may repeat (uuids sharing a key).
package struct SampleKeyRun: Sendable, Equatable {
    package private(set) var keys: [UInt32]
    package private(set) var seqs: [Int64]

    package var count: Int { keys.count }

    package init() {
        keys = []
        seqs = []
    }

    /// Already sorted by (key, seq).
    package init(sortedKeys keys: [UInt32], seqs: [Int64]) {
        precondition(keys.count == seqs.count)
        self.keys = keys
        self.seqs = seqs
    }

    /// Sorts `entries` by (key, seq).
    package init(unsorted entries: [(key: UInt32, seq: Int64)]) {
        // One 64-bit word per entry (key above a 32-bit position) sorts faster than tuples.
        var packed = [UInt64](repeating: 0, count: entries.count)
        for index in entries.indices { packed[index] = UInt64(entries[index].key) << 32 | UInt64(index) }
        packed.sort()
        keys = packed.map { UInt32(truncatingIfNeeded: $0 >> 32) }
        let positions = packed.map { Int(truncatingIfNeeded: $0 & 0xFFFF_FFFF) }
        seqs = positions.map { entries[$0].seq }
        // Equal keys came out in entry order; a run wants them by seq.
        var start = 0
        while start < keys.count {
            var end = start + 1
            while end < keys.count, keys[end] == keys[start] { end += 1 }
            if end - start > 1 { seqs[start..<end].sort() }
            start = end
        }
    }

    /// All entries of `runs` in one sorted run (pairwise merges: O(n log k)).
    package static func merged(_ runs: [SampleKeyRun]) -> SampleKeyRun {
        var level = runs.filter { $0.count > 0 }
        if level.isEmpty { return SampleKeyRun() }
        while level.count > 1 {
            var next: [SampleKeyRun] = []
            next.reserveCapacity((level.count + 1) / 2)
            var index = 0
            while index + 1 < level.count {
                next.append(mergedPair(level[index], level[index + 1]))
                index += 2
            }
            if index < level.count { next.append(level[index]) }
            level = next
        }
        return level[0]
    }

    private static func mergedPair(_ a: SampleKeyRun, _ b: SampleKeyRun) -> SampleKeyRun {
        var keys: [UInt32] = []
        var seqs: [Int64] = []
        keys.reserveCapacity(a.count + b.count)
        seqs.reserveCapacity(a.count + b.count)
        var i = 0
        var j = 0
        while i < a.count, j < b.count {
            if a.keys[i] < b.keys[j] || (a.keys[i] == b.keys[j] && a.seqs[i] <= b.seqs[j]) {
                keys.append(a.keys[i]); seqs.append(a.seqs[i]); i += 1
            } else {
                keys.append(b.keys[j]); seqs.append(b.seqs[j]); j += 1
            }
        }
        keys.append(contentsOf: a.keys[i...]); seqs.append(contentsOf: a.seqs[i...])
        keys.append(contentsOf: b.keys[j...]); seqs.append(contentsOf: b.seqs[j...])
        return SampleKeyRun(sortedKeys: keys, seqs: seqs)
    }

    /// This run without the entries whose seq is in `seqs`, and the seqs it left out (in run order).
    package func removing(_ seqs: Set<Int64>) -> (run: SampleKeyRun, removed: [Int64]) {
        var keys: [UInt32] = []
        var kept: [Int64] = []
        var removed: [Int64] = []
        keys.reserveCapacity(count)
        kept.reserveCapacity(count)
        for index in self.keys.indices {
            if seqs.contains(self.seqs[index]) {
                removed.append(self.seqs[index])
            } else {
                keys.append(self.keys[index])
                kept.append(self.seqs[index])
            }
        }
        return (SampleKeyRun(sortedKeys: keys, seqs: kept), removed)
    }

    /// The seqs stored under `key`.
    package func seqs(for key: UInt32) -> ArraySlice<Int64> {
        let start = SampleKeyFilter.lowerBound(key, in: keys, from: 0)
        var end = start
        while end < keys.count, keys[end] == key { end += 1 }
        return seqs[start..<end]
    }

    // MARK: Chunks: how a run is stored

    /// Entries per stored chunk: a chunk row (8 bytes an entry) fits one 4 KiB page, so an exact
    /// check reads one page. Entries with the same key never straddle two chunks (a lookup reads
    /// the one chunk whose first key is the greatest at or below the key), so a chunk may hold a
    /// few more.
    package static let chunkEntries = 480

    /// The run cut into chunks: (first key, encoded entries), in key order.
    package func chunks(entriesPerChunk: Int = SampleKeyRun.chunkEntries) -> [(firstKey: UInt32, entries: [UInt8])] {
        var chunks: [(firstKey: UInt32, entries: [UInt8])] = []
        var start = 0
        while start < count {
            var end = min(count, start + max(1, entriesPerChunk))
            while end < count, keys[end] == keys[end - 1] { end += 1 }
            chunks.append((keys[start], Self.encode(keys[start..<end], seqs[start..<end])))
            start = end
        }
        return chunks
    }

    /// A chunk's bytes: a format byte, the base seq (8 bytes, little-endian), then every key
    /// (4 bytes, little-endian), then every seq: as 4-byte offsets from the base (format 1), or in
    /// full as 8 bytes (format 2) when the chunk's seqs span more than 32 bits.
    static func encode(_ keys: ArraySlice<UInt32>, _ seqs: ArraySlice<Int64>) -> [UInt8] {
        let base = seqs.min() ?? 0
        let narrow = seqs.allSatisfy { UInt64(bitPattern: $0 &- base) <= UInt64(UInt32.max) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(9 + keys.count * (narrow ? 8 : 12))
        bytes.append(narrow ? 1 : 2)
        appendLittleEndian(UInt64(bitPattern: base), byteCount: 8, to: &bytes)
        for key in keys { appendLittleEndian(UInt64(key), byteCount: 4, to: &bytes) }
        for seq in seqs {
            if narrow {
                appendLittleEndian(UInt64(bitPattern: seq &- base), byteCount: 4, to: &bytes)
            } else {
                appendLittleEndian(UInt64(bitPattern: seq), byteCount: 8, to: &bytes)
            }
        }
        return bytes
    }

    private static func appendLittleEndian(_ value: UInt64, byteCount: Int, to bytes: inout [UInt8]) {
        var value = value
        for _ in 0..<byteCount {
            bytes.append(UInt8(truncatingIfNeeded: value))
            value >>= 8
        }
    }

    /// A chunk's entry count, seq width and base seq; nil for bytes that are not a chunk.
    private static func layout(_ chunk: UnsafeRawBufferPointer) -> (entries: Int, width: Int, base: Int64)? {
        guard chunk.count >= 9 else { return nil }
        let format = chunk[0]
        let width = format == 1 ? 4 : format == 2 ? 8 : 0
        guard width != 0, (chunk.count - 9) % (4 + width) == 0 else { return nil }
        let base = Int64(bitPattern: UInt64(littleEndian: chunk.loadUnaligned(fromByteOffset: 1, as: UInt64.self)))
        return ((chunk.count - 9) / (4 + width), width, base)
    }

    @inline(__always)
    private static func key(at index: Int, in chunk: UnsafeRawBufferPointer) -> UInt32 {
        UInt32(littleEndian: chunk.loadUnaligned(fromByteOffset: 9 + 4 * index, as: UInt32.self))
    }

    @inline(__always)
    private static func seq(at index: Int, in chunk: UnsafeRawBufferPointer, entries: Int, width: Int, base: Int64) -> Int64 {
        let offset = 9 + 4 * entries + width * index
        if width == 4 { return base &+ Int64(UInt32(littleEndian: chunk.loadUnaligned(fromByteOffset: offset, as: UInt32.self))) }
        return Int64(bitPattern: UInt64(littleEndian: chunk.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
    }

    /// Appends a chunk's entries to `keys` and `seqs` (`seqs` nil: keys only, for a filter).
    /// False for bytes that are not a chunk (a damaged file): the caller reports it.
    package static func decode(_ chunk: UnsafeRawBufferPointer, keys: inout [UInt32], seqs: inout [Int64]?) -> Bool {
        guard let (entries, width, base) = layout(chunk) else { return false }
        keys.reserveCapacity(keys.count + entries)
        for index in 0..<entries { keys.append(key(at: index, in: chunk)) }
        // Taken out of the optional while appending, so the array is not copied.
        guard var values = seqs else { return true }
        seqs = nil
        values.reserveCapacity(values.count + entries)
        for index in 0..<entries { values.append(seq(at: index, in: chunk, entries: entries, width: width, base: base)) }
        seqs = values
        return true
    }

    /// The seqs a chunk holds under `key`, found by binary search in its bytes (a read by uuid
    /// decodes nothing else); nil for bytes that are not a chunk.
    package static func seqs(for key: UInt32, inChunk chunk: UnsafeRawBufferPointer) -> [Int64]? {
        guard let (entries, width, base) = layout(chunk) else { return nil }
        var low = 0
        var high = entries
        while low < high {
            let middle = (low &+ high) >> 1
            if Self.key(at: middle, in: chunk) < key { low = middle + 1 } else { high = middle }
        }
        var seqs: [Int64] = []
        while low < entries, Self.key(at: low, in: chunk) == key {
            seqs.append(seq(at: low, in: chunk, entries: entries, width: width, base: base))
            low += 1
        }
        return seqs
    }
}

/// The keys of one run, held in memory so that a new key costs no read of the database: a key
/// not among them is certainly not in the run. 4 bytes per sample.
package enum SampleKeyFilter {
    /// The first index at or after `from` whose key is >= `key`.
    @inline(__always)
    static func lowerBound(_ key: UInt32, in keys: [UInt32], from: Int) -> Int {
        var low = from
        var high = keys.count
        while low < high {
            let middle = (low &+ high) >> 1
            if keys[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// For each of `query` (ascending) present in `keys` (ascending), calls `found` with its index
    /// in `query`. Galloping from the previous match: about log2(keys / query) steps a query key
    /// for a large run, a merge walk for a small one.
    package static func forEachPresent(_ query: [UInt32], in keys: [UInt32], _ found: (Int) -> Void) {
        keys.withUnsafeBufferPointer { keys in
            query.withUnsafeBufferPointer { query in
                let n = keys.count
                guard n > 0, let lowest = keys.first, let highest = keys.last else { return }
                var position = 0
                for index in 0..<query.count {
                    let key = query[index]
                    if key < lowest { continue }
                    if key > highest { return }
                    if keys[position] < key {
                        // Gallop: find a bound past `key`, then binary search below it.
                        var step = 1
                        var low = position
                        while position + step < n, keys[position + step] < key {
                            low = position + step
                            step &<<= 1
                        }
                        var high = min(n, position + step + 1)
                        low += 1
                        while low < high {
                            let middle = (low &+ high) >> 1
                            if keys[middle] < key { low = middle + 1 } else { high = middle }
                        }
                        position = low
                        if position >= n { return }
                    }
                    if keys[position] == key { found(index) }
                }
            }
        }
    }
}
