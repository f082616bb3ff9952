/// The running integral of a merged rate function inside one chunk, with instants as offsets from the
/// chunk's start. F(x) = integral over [0, x) plus the zero-length values at instants before x, so the
/// sum over [a, b) is F(b) − F(a). Coverage is kept apart so a stretch of zero-valued samples still
/// counts as data.
struct PrefixIntegral: Sendable {
    /// Breakpoints of the piecewise-linear continuous part and its value there.
    private(set) var times: [Int32] = []
    private(set) var cumulative: [Double] = []
    /// Zero-length values and their running totals (inclusive).
    private(set) var pointTimes: [Int32] = []
    private(set) var pointTotals: [Double] = []
    /// Union of the spans behind the pieces, as disjoint sorted stretches.
    private(set) var coveredStarts: [Int32] = []
    private(set) var coveredEnds: [Int32] = []
    private(set) var total = 0.0

    init() {}

    init(times: [Int32], cumulative: [Double], pointTimes: [Int32], pointTotals: [Double],
         coveredStarts: [Int32], coveredEnds: [Int32], total: Double) {
        self.times = times
        self.cumulative = cumulative
        self.pointTimes = pointTimes
        self.pointTotals = pointTotals
        self.coveredStarts = coveredStarts
        self.coveredEnds = coveredEnds
        self.total = total
    }

    init(_ rate: MergedRate, origin: Int64) {
        var running = 0.0
        times.reserveCapacity(rate.pieces.count + 1)
        cumulative.reserveCapacity(rate.pieces.count + 1)
        for piece in rate.pieces {
            let start = Int32(truncatingIfNeeded: piece.start - origin)
            let end = Int32(truncatingIfNeeded: piece.end - origin)
            if times.last != start {
                times.append(start)
                cumulative.append(running)
            }
            running += piece.rate * Double(end - start)
            times.append(end)
            cumulative.append(running)
            if let lastEnd = coveredEnds.last, lastEnd == start {
                coveredEnds[coveredEnds.count - 1] = end
            } else {
                coveredStarts.append(start)
                coveredEnds.append(end)
            }
        }
        var points = 0.0
        for point in rate.points {
            points += point.value
            pointTimes.append(Int32(truncatingIfNeeded: point.time - origin))
            pointTotals.append(points)
        }
        total = running + points
    }

    var isEmpty: Bool { coveredStarts.isEmpty && pointTimes.isEmpty }

    /// F(offset): everything strictly before `offset`.
    func integral(upTo offset: Int32) -> Double {
        var value = 0.0
        let after = upperBound(times, offset)
        if after > 0 {
            let index = after - 1
            if index == times.count - 1 || times[index] == offset {
                value = cumulative[index]
            } else {
                // Linear inside a piece: the rate is constant there.
                let width = Double(times[index + 1] - times[index])
                let fraction = Double(offset - times[index]) / width
                value = cumulative[index] + (cumulative[index + 1] - cumulative[index]) * fraction
            }
        }
        let pointsBefore = lowerBound(pointTimes, offset)
        if pointsBefore > 0 { value += pointTotals[pointsBefore - 1] }
        return value
    }

    func sum(from start: Int32, to end: Int32) -> Double {
        integral(upTo: end) - integral(upTo: start)
    }

    /// Whether any sample covers part of [start, end) or sits at an instant inside it.
    func hasData(from start: Int32, to end: Int32) -> Bool {
        let covered = upperBound(coveredEnds, start)
        if covered < coveredStarts.count, coveredStarts[covered] < end { return true }
        let point = lowerBound(pointTimes, start)
        return point < pointTimes.count && pointTimes[point] < end
    }

    var bytes: Int {
        times.capacity * 4 + cumulative.capacity * 8 + pointTimes.capacity * 4 + pointTotals.capacity * 8
            + coveredStarts.capacity * 4 + coveredEnds.capacity * 4
    }
}
