// Columns that keep the common case at 4 bytes per entry and widen to 8 only when a value needs it,
// so a year of per-minute steps and 10-second heart rate fits the server's memory budget.

/// Int64 values stored as nothing but a count while they all equal the first one (durations of
/// instantaneous samples, a day with one source), as Int32 offsets from the first while they fit,
/// and as Int64 otherwise.
struct PackedInt64Column: Sendable {
    private enum Mode: Sendable { case constant, narrow, wide }
    private var mode = Mode.constant
    private var base: Int64 = 0
    private var constantCount = 0
    /// Capacity asked for while constant, applied if the column ever leaves constant mode.
    private var reservedCapacity = 0
    private var narrow: [Int32] = []
    private var wide: [Int64] = []

    var count: Int {
        switch mode {
        case .constant: return constantCount
        case .narrow: return narrow.count
        case .wide: return wide.count
        }
    }

    subscript(index: Int) -> Int64 {
        switch mode {
        case .constant: return base
        case .narrow: return base &+ Int64(narrow[index])
        case .wide: return wide[index]
        }
    }

    private func offset(_ value: Int64) -> Int32? {
        let (difference, overflow) = value.subtractingReportingOverflow(base)
        return overflow ? nil : Int32(exactly: difference)
    }

    mutating func insert(_ value: Int64, at index: Int) {
        if mode == .constant {
            if constantCount == 0 { base = value }
            if value == base {
                constantCount += 1
                return
            }
            narrow = [Int32](repeating: 0, count: constantCount)
            narrow.reserveCapacity(max(reservedCapacity, constantCount + 1))
            constantCount = 0
            mode = .narrow
        }
        if mode == .narrow {
            if let fitted = offset(value) {
                narrow.insert(fitted, at: index)
                return
            }
            wide = narrow.map { base &+ Int64($0) }
            narrow = []
            mode = .wide
        }
        wide.insert(value, at: index)
    }

    mutating func append(_ value: Int64) { insert(value, at: count) }

    mutating func remove(at index: Int) {
        switch mode {
        case .constant: constantCount -= 1
        case .narrow: narrow.remove(at: index)
        case .wide: wide.remove(at: index)
        }
    }

    mutating func reserveCapacity(_ capacity: Int) {
        switch mode {
        case .constant: reservedCapacity = capacity
        case .narrow: narrow.reserveCapacity(capacity)
        case .wide: wide.reserveCapacity(capacity)
        }
    }

    var bytes: Int { narrow.capacity * 4 + wide.capacity * 8 }
}

/// Doubles stored as Float while every value round-trips exactly (step counts, beats per minute).
struct PackedDoubleColumn: Sendable {
    private var narrow: [Float] = []
    private var wide: [Double] = []
    /// True once a value needed a Double (tests check the column stays narrow when it can).
    private(set) var isWide = false

    var count: Int { isWide ? wide.count : narrow.count }

    subscript(index: Int) -> Double {
        isWide ? wide[index] : Double(narrow[index])
    }

    mutating func insert(_ value: Double, at index: Int) {
        if !isWide {
            let single = Float(value)
            if Double(single) == value || value.isNaN {
                narrow.insert(single, at: index)
                return
            }
            wide = narrow.map(Double.init)
            narrow = []
            isWide = true
        }
        wide.insert(value, at: index)
    }

    mutating func append(_ value: Double) { insert(value, at: count) }

    mutating func remove(at index: Int) {
        if isWide { wide.remove(at: index) } else { narrow.remove(at: index) }
    }

    mutating func reserveCapacity(_ capacity: Int) {
        if isWide { wide.reserveCapacity(capacity) } else { narrow.reserveCapacity(capacity) }
    }

    var bytes: Int { isWide ? wide.capacity * 8 : narrow.capacity * 4 }
}

/// Prefix sums over a fixed number of slots with point updates, for chunk totals.
struct FenwickTree: Sendable {
    private var tree: [Double]
    /// Updates since the last rebuild; rounding from repeated `add` is cleared by rebuilding now and then.
    private(set) var updatesSinceRebuild = 0

    init(_ values: [Double]) {
        tree = [Double](repeating: 0, count: values.count + 1)
        // Children have smaller indices, so each node is complete when its turn comes to feed its parent.
        for (index, value) in values.enumerated() {
            let node = index + 1
            tree[node] += value
            let parent = node + (node & -node)
            if parent < tree.count { tree[parent] += tree[node] }
        }
    }

    var count: Int { tree.count - 1 }

    mutating func add(_ delta: Double, at index: Int) {
        updatesSinceRebuild += 1
        var node = index + 1
        while node < tree.count {
            tree[node] += delta
            node += node & -node
        }
    }

    /// Sum of slots [0, end).
    func prefix(_ end: Int) -> Double {
        var total = 0.0
        var node = end
        while node > 0 {
            total += tree[node]
            node -= node & -node
        }
        return total
    }

    /// Sum of slots [start, end).
    func sum(_ start: Int, _ end: Int) -> Double { prefix(end) - prefix(start) }
}

/// First index in `array` (sorted ascending) whose element is not less than `value`.
func lowerBound<Element: Comparable>(_ array: [Element], _ value: Element) -> Int {
    var low = 0
    var high = array.count
    while low < high {
        let middle = (low + high) / 2
        if array[middle] < value { low = middle + 1 } else { high = middle }
    }
    return low
}

/// First index in `array` (sorted ascending) whose element is greater than `value`.
func upperBound<Element: Comparable>(_ array: [Element], _ value: Element) -> Int {
    var low = 0
    var high = array.count
    while low < high {
        let middle = (low + high) / 2
        if array[middle] <= value { low = middle + 1 } else { high = middle }
    }
    return low
}

/// Floor division, so instants before 1970 land in the right chunk.
func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
    let quotient = value / divisor
    return (value % divisor != 0 && (value < 0) != (divisor < 0)) ? quotient - 1 : quotient
}
