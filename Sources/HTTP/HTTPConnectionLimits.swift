// Limits shared by all of a server's connections: the memory request bodies may hold while they
// arrive, and the connections each client address may hold. Plain values and one atomic, so the
// state machine and its tests use them without sockets.

import Synchronization

/// The bytes all request bodies being received may hold at once. A body reserves its declared
/// length before any of it is read (a chunked body, in steps ahead of what it has), and gives the
/// reservation back once the request is dispatched or the connection closes. Shared by every
/// connection of a server, across threads.
public final class HTTPBodyBudget: Sendable {
    public let limit: Int
    /// The part of the budget only small bodies (`smallBody` bytes or fewer) may take, so a few
    /// large uploads filling the budget never hold up an ordinary request.
    public let headroom: Int
    public static let smallBody = 64 * 1024
    private let reserved = Atomic<Int>(0)

    public init(limit: Int) {
        self.limit = max(0, limit)
        self.headroom = self.limit / 8
    }

    /// Reserves `count` bytes; false (nothing reserved) when that would pass the limit (less the
    /// headroom, for a large body). A single body larger than it may ever take reserves all it
    /// may take, so it waits for an empty budget rather than never being read.
    public func reserve(_ count: Int) -> Bool {
        let count = clamped(count)
        let ceiling = count > Self.smallBody ? limit - headroom : limit
        var current = reserved.load(ordering: .relaxed)
        while true {
            guard current + count <= ceiling else { return false }
            let (exchanged, original) = reserved.compareExchange(expected: current, desired: current + count,
                                                                 ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
    }

    /// Gives back a reservation `reserve` granted (the same `count` it was asked for).
    public func release(_ count: Int) {
        let count = clamped(count)
        guard count > 0 else { return }
        reserved.subtract(count, ordering: .acquiringAndReleasing)
    }

    private func clamped(_ count: Int) -> Int {
        let count = max(0, count)
        return count > Self.smallBody ? min(count, max(Self.smallBody + 1, limit - headroom)) : min(count, limit)
    }

    /// Bytes reserved now, for metrics and tests.
    public var reservedByteCount: Int { reserved.load(ordering: .relaxed) }
}

/// Open connections per client address, for the per-address cap: the TCP peer, or behind a
/// trusted reverse proxy the address each request's forwarded header names. An address leaves
/// the table when its last connection closes.
public struct HTTPAddressConnectionCounts: Sendable {
    public let limit: Int
    private var open: [String: Int] = [:]

    public init(limit: Int) {
        self.limit = limit
    }

    public func count(for address: String) -> Int { open[address] ?? 0 }

    /// Counts one more connection for `address`; false (nothing counted) at the cap.
    public mutating func admit(_ address: String) -> Bool {
        let current = open[address] ?? 0
        guard current < limit else { return false }
        open[address] = current + 1
        return true
    }

    public mutating func remove(_ address: String) {
        let remaining = (open[address] ?? 1) - 1
        open[address] = remaining > 0 ? remaining : nil
    }

    /// A proxied connection now carries a request from `new`: it counts there instead of for
    /// `old` (nil: not counted anywhere yet). False, and unchanged, when `new` is at its cap.
    public mutating func move(from old: String?, to new: String) -> Bool {
        if old == new { return true }
        guard admit(new) else { return false }
        if let old { remove(old) }
        return true
    }

    /// Addresses with at least one connection.
    public var addressCount: Int { open.count }
}
