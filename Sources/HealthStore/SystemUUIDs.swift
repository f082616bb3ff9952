#if canImport(Glibc)
import Glibc
#endif
import HealthModel
import Synchronization

// New uuids from the system's clock and random source. HealthModel only builds uuids from bits
// and times it is given; reading the clock and the kernel's random source belongs to a shell.

extension HealthUUID {
    /// A random version-4 UUID from the system's random source.
    public static func random() -> HealthUUID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// A version-7 UUID for now: the system clock and random source (see
    /// `timeOrdered(unixMilliseconds:using:)` for why the server gives these to new samples).
    public static func timeOrdered() -> HealthUUID {
        var generator = BufferedSystemRandom()
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return timeOrdered(unixMilliseconds: Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000, using: &generator)
    }
}

/// The system's random source read 4 KiB at a time: a batch of 10,000 samples without uuids
/// otherwise makes 20,000 getrandom(2) calls (`SystemRandomNumberGenerator` reads 8 bytes per call).
struct BufferedSystemRandom: RandomNumberGenerator {
    private struct Buffer: ~Copyable {
        var words = [UInt64](repeating: 0, count: 512)
        var next = 512

        mutating func take() -> UInt64 {
            if next == words.count {
                words.withUnsafeMutableBytes { bytes in
                    // /dev/urandom is the kernel's CSPRNG, the same source getrandom(2) reads.
                    var filled = 0
                    let descriptor = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
                    if descriptor >= 0 {
                        while filled < bytes.count {
                            let count = read(descriptor, bytes.baseAddress.map { $0 + filled }, bytes.count - filled)
                            if count > 0 { filled += count } else if count < 0 && errno == EINTR { continue } else { break }
                        }
                        close(descriptor)
                    }
                    if filled < bytes.count {
                        var system = SystemRandomNumberGenerator()
                        for index in 0..<(bytes.count / 8) {
                            bytes.storeBytes(of: system.next(), toByteOffset: index * 8, as: UInt64.self)
                        }
                    }
                }
                next = 0
            }
            defer { next += 1 }
            return words[next]
        }
    }

    private static let shared = Mutex(Buffer())

    mutating func next() -> UInt64 { Self.shared.withLock { $0.take() } }
}
