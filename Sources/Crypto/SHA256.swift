// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), written here because the product
// takes no package dependencies. Used for token hashes at rest and for tamper-evident
// anchors and cursors; not for bulk data, so clarity wins over SIMD.

public struct SHA256: Sendable {
    public static let digestByteCount = 32
    private static let roundConstants: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    private typealias State = (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)
    private var state: State =
        (0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19)
    private var pending: [UInt8] = []
    private var totalByteCount: UInt64 = 0

    public init() { pending.reserveCapacity(64) }

    public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    public mutating func update(_ bytes: some Sequence<UInt8>) {
        // Contiguous input (arrays, UTF-8 of native strings) takes the non-generic path: callers in
        // other modules get this function unspecialized, where a byte-by-byte loop is slow.
        if bytes.withContiguousStorageIfAvailable({ update(contiguous: $0) }) != nil { return }
        for byte in bytes {
            pending.append(byte)
            totalByteCount &+= 1
            if pending.count == 64 {
                pending.withUnsafeBufferPointer { Self.compress($0, into: &state) }
                pending.removeAll(keepingCapacity: true)
            }
        }
    }

    private mutating func update(contiguous bytes: UnsafeBufferPointer<UInt8>) {
        totalByteCount &+= UInt64(bytes.count)
        var offset = 0
        // Top up a partial block first, then compress whole blocks straight from the input.
        if !pending.isEmpty {
            let taken = min(64 - pending.count, bytes.count)
            pending.append(contentsOf: bytes[0 ..< taken])
            offset = taken
            guard pending.count == 64 else { return }
            pending.withUnsafeBufferPointer { Self.compress($0, into: &state) }
            pending.removeAll(keepingCapacity: true)
        }
        while bytes.count - offset >= 64 {
            Self.compress(UnsafeBufferPointer(rebasing: bytes[offset ..< offset + 64]), into: &state)
            offset += 64
        }
        pending.append(contentsOf: bytes[offset...])
    }

    public consuming func finalize() -> [UInt8] {
        let bitLength = totalByteCount &* 8
        // The padded tail (one or two blocks) is built on the stack: a token check, a cursor
        // fingerprint and its signature each finalize once per request.
        let blockCount = pending.count < 56 ? 1 : 2
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { tail in
            let count = blockCount * 64
            tail.initialize(repeating: 0)
            for (index, byte) in pending.enumerated() { tail[index] = byte }
            tail[pending.count] = 0x80
            for index in 0..<8 { tail[count - 1 - index] = UInt8(truncatingIfNeeded: bitLength >> UInt64(8 * index)) }
            for block in 0..<blockCount {
                Self.compress(UnsafeBufferPointer(rebasing: tail[(block * 64)..<(block * 64 + 64)]), into: &state)
            }
        }
        let words = state
        return [UInt8](unsafeUninitializedCapacity: 32) { digest, initialized in
            withUnsafeBytes(of: (words.0.bigEndian, words.1.bigEndian, words.2.bigEndian, words.3.bigEndian,
                                 words.4.bigEndian, words.5.bigEndian, words.6.bigEndian, words.7.bigEndian)) { raw in
                for index in 0..<32 { digest[index] = raw[index] }
            }
            initialized = 32
        }
    }

    /// One 64-byte block.
    private static func compress(_ block: UnsafeBufferPointer<UInt8>, into state: inout State) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            compress(block, schedule: w, into: &state)
        }
    }

    private static func compress(_ block: UnsafeBufferPointer<UInt8>, schedule w: UnsafeMutableBufferPointer<UInt32>,
                                 into state: inout State) {
        for t in 0..<16 {
            w[t] = UInt32(block[4 * t]) << 24 | UInt32(block[4 * t + 1]) << 16 | UInt32(block[4 * t + 2]) << 8 | UInt32(block[4 * t + 3])
        }
        for t in 16..<64 {
            let s0 = w[t - 15].rotatedRight(7) ^ w[t - 15].rotatedRight(18) ^ (w[t - 15] >> 3)
            let s1 = w[t - 2].rotatedRight(17) ^ w[t - 2].rotatedRight(19) ^ (w[t - 2] >> 10)
            w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
        }
        var (a, b, c, d, e, f, g, h) = state
        // The constants through a buffer pointer: no bounds check or global access per round.
        Self.roundConstants.withUnsafeBufferPointer { k in
            for t in 0..<64 {
                let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                let choice = (e & f) ^ (~e & g)
                let temp1 = h &+ s1 &+ choice &+ k[t] &+ w[t]
                let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                let majority = (a & b) ^ (a & c) ^ (b & c)
                let temp2 = s0 &+ majority
                h = g; g = f; f = e; e = d &+ temp1
                d = c; c = b; b = a; a = temp1 &+ temp2
            }
        }
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d,
                 state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h)
    }
}

extension UInt32 {
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 { (self >> count) | (self << (32 - count)) }
}

public enum HMACSHA256 {
    public static func authenticationCode(for message: some Sequence<UInt8>, key: [UInt8]) -> [UInt8] {
        Key(key).authenticationCode(for: message)
    }

    /// A key with its two padded blocks already hashed: a MAC then costs the message's blocks
    /// plus two, not four more (a paging cursor is signed or checked on every page).
    public struct Key: Sendable {
        private let inner: SHA256
        private let outer: SHA256

        public init(_ key: [UInt8]) {
            var block = key.count > 64 ? SHA256.hash(key) : key
            block += [UInt8](repeating: 0, count: 64 - block.count)
            var inner = SHA256()
            inner.update(block.map { $0 ^ 0x36 })
            var outer = SHA256()
            outer.update(block.map { $0 ^ 0x5c })
            self.inner = inner
            self.outer = outer
        }

        public func authenticationCode(for message: some Sequence<UInt8>) -> [UInt8] {
            var inner = self.inner
            inner.update(message)
            var outer = self.outer
            outer.update(inner.finalize())
            return outer.finalize()
        }
    }
}

/// Compares in time that depends only on the length, so a token check leaks nothing through timing.
public func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for i in 0..<a.count { difference |= a[i] ^ b[i] }
    return difference == 0
}
