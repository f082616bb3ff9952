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
        var value = continuous(upTo: offset)
        let pointsBefore = lowerBound(pointTimes, offset)
        if pointsBefore > 0 { value += pointTotals[pointsBefore - 1] }
        return value
    }

    /// The continuous part of F(offset) (the pieces, without the zero-length values).
    private func continuous(upTo offset: Int32) -> Double {
        let after = upperBound(times, offset)
        guard after > 0 else { return 0 }
        let index = after - 1
        if index == times.count - 1 || times[index] == offset { return cumulative[index] }
        // Linear inside a piece: the rate is constant there.
        let width = Double(times[index + 1] - times[index])
        let fraction = Double(offset - times[index]) / width
        return cumulative[index] + (cumulative[index + 1] - cumulative[index]) * fraction
    }

    /// The integral of the sum of both rate functions: what summarizing both functions' samples as
    /// one source would give (a source's own overlapping samples add up), up to rounding. Rollup
    /// maintenance folds a source's new samples into a day with it, without the day's other samples.
    func adding(_ other: PrefixIntegral) -> PrefixIntegral {
        if other.isEmpty { return self }
        if isEmpty { return other }
        var result = PrefixIntegral()
        // Both continuous parts are linear between their breakpoints, so their sum is linear
        // between the union of the breakpoints.
        var mine = 0
        var theirs = 0
        result.times.reserveCapacity(times.count + other.times.count)
        result.cumulative.reserveCapacity(times.count + other.times.count)
        while mine < times.count || theirs < other.times.count {
            let time: Int32
            if theirs == other.times.count || (mine < times.count && times[mine] <= other.times[theirs]) {
                time = times[mine]
            } else {
                time = other.times[theirs]
            }
            while mine < times.count, times[mine] == time { mine += 1 }
            while theirs < other.times.count, other.times[theirs] == time { theirs += 1 }
            result.times.append(time)
            result.cumulative.append(continuous(upTo: time) + other.continuous(upTo: time))
        }
        // Zero-length values: the running total at each is both running totals there.
        mine = 0
        theirs = 0
        while mine < pointTimes.count || theirs < other.pointTimes.count {
            if theirs == other.pointTimes.count || (mine < pointTimes.count && pointTimes[mine] <= other.pointTimes[theirs]) {
                result.pointTimes.append(pointTimes[mine])
                mine += 1
            } else {
                result.pointTimes.append(other.pointTimes[theirs])
                theirs += 1
            }
            result.pointTotals.append((mine > 0 ? pointTotals[mine - 1] : 0) + (theirs > 0 ? other.pointTotals[theirs - 1] : 0))
        }
        // Coverage: the union of both, touching stretches joined as a fresh summary joins them.
        mine = 0
        theirs = 0
        while mine < coveredStarts.count || theirs < other.coveredStarts.count {
            let start: Int32
            let end: Int32
            if theirs == other.coveredStarts.count
                || (mine < coveredStarts.count && coveredStarts[mine] <= other.coveredStarts[theirs]) {
                (start, end) = (coveredStarts[mine], coveredEnds[mine])
                mine += 1
            } else {
                (start, end) = (other.coveredStarts[theirs], other.coveredEnds[theirs])
                theirs += 1
            }
            if let last = result.coveredEnds.last, start <= last {
                result.coveredEnds[result.coveredEnds.count - 1] = max(last, end)
            } else {
                result.coveredStarts.append(start)
                result.coveredEnds.append(end)
            }
        }
        result.total = total + other.total
        return result
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
