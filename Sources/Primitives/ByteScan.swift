/// Word-at-a-time byte search for the writers' hot checks (HTTP header text, JSON strings): most
/// text needs no escaping or cleaning, so the check that proves it is what costs, and eight bytes
/// at a time it costs a fraction of a byte loop.
public enum ByteScan {
    /// True when some byte is below `limit` (at most 0x80) or equals `first` or `second`.
    ///
    /// Per 64-bit word, with `ones` = 0x01 in every byte and `highs` = 0x80: `(x - limit·ones) & ~x`
    /// has a byte's high bit set for some byte exactly when a byte is below `limit` (the lowest
    /// such byte borrows nothing from below), and `(v - ones) & ~v` with `v = x ^ c·ones` exactly
    /// when a byte equals `c` (the classic zero-byte test). The `& ~x` parts keep bytes of 0x80
    /// and above from ever counting.
    @inlinable
    public static func containsByte(below limit: UInt8, or first: UInt8, or second: UInt8,
                                    in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let raw = UnsafeRawPointer(base)
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var index = 0
        while index + 8 <= bytes.count {
            let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            let isFirst = word ^ (ones &* UInt64(first))
            let isSecond = word ^ (ones &* UInt64(second))
            let below = (word &- ones &* UInt64(limit)) & ~word
            let equalsFirst = (isFirst &- ones) & ~isFirst
            let equalsSecond = (isSecond &- ones) & ~isSecond
            if (below | equalsFirst | equalsSecond) & highs != 0 { return true }
            index += 8
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte < limit || byte == first || byte == second { return true }
            index += 1
        }
        return false
    }
}
