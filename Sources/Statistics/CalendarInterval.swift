/// A bucket length of one calendar component, as `HKStatisticsCollectionQuery`'s `intervalComponents`.
public struct CalendarInterval: Sendable, Hashable, CustomStringConvertible {
    public enum Unit: String, Sendable, Hashable, CaseIterable {
        case minute, hour, day, week, month, year
    }

    /// Bounds the count so that `count × k` stays far from overflow in calendar arithmetic.
    public static let maximumCount = 1_000_000

    public let unit: Unit
    public let count: Int

    public init(unit: Unit, count: Int) throws(StatisticsError) {
        guard count > 0, count <= Self.maximumCount else {
            throw .invalidInterval("\(count) \(unit.rawValue)")
        }
        self.unit = unit
        self.count = count
    }

    /// Parses `PT1M`, `PT15M`, `PT1H`, `P1D`, `P1W`, `P1M`, `P1Y` and other positive whole counts.
    /// Mixed components (`P1DT1H`), zero, fractions, signs and lower case are rejected.
    public static func parse(_ text: String) throws(StatisticsError) -> CalendarInterval {
        let bytes = Array(text.utf8)
        guard bytes.count >= 3, bytes[0] == UInt8(ascii: "P") else { throw .invalidInterval(text) }
        var index = 1
        let timePart = bytes[index] == UInt8(ascii: "T")
        if timePart { index += 1 }
        let digitsStart = index
        var count = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            count = count * 10 + Int(bytes[index] - UInt8(ascii: "0"))
            if count > maximumCount { throw .invalidInterval(text) }
            index += 1
        }
        // Exactly one designator after at least one digit, and nothing after it.
        guard index > digitsStart, index == bytes.count - 1 else { throw .invalidInterval(text) }
        let unit: Unit
        switch (timePart, bytes[index]) {
        case (true, UInt8(ascii: "M")): unit = .minute
        case (true, UInt8(ascii: "H")): unit = .hour
        case (false, UInt8(ascii: "D")): unit = .day
        case (false, UInt8(ascii: "W")): unit = .week
        case (false, UInt8(ascii: "M")): unit = .month
        case (false, UInt8(ascii: "Y")): unit = .year
        default: throw .invalidInterval(text)
        }
        do {
            return try CalendarInterval(unit: unit, count: count)
        } catch {
            throw .invalidInterval(text)
        }
    }

    public var description: String {
        switch unit {
        case .minute: return "PT\(count)M"
        case .hour: return "PT\(count)H"
        case .day: return "P\(count)D"
        case .week: return "P\(count)W"
        case .month: return "P\(count)M"
        case .year: return "P\(count)Y"
        }
    }

    /// Fixed length in milliseconds for units that never vary with the calendar (minutes, hours).
    var fixedMilliseconds: Int64? {
        switch unit {
        case .minute: return 60_000 * Int64(count)
        case .hour: return 3_600_000 * Int64(count)
        default: return nil
        }
    }

    /// A rough length, only used to guess which bucket holds an instant before checking exactly.
    var approximateMilliseconds: Double {
        let unitLength: Double
        switch unit {
        case .minute: unitLength = 60_000
        case .hour: unitLength = 3_600_000
        case .day: unitLength = 86_400_000
        case .week: unitLength = 604_800_000
        case .month: unitLength = 2_629_746_000
        case .year: unitLength = 31_556_952_000
        }
        return unitLength * Double(count)
    }
}
