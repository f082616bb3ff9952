/// A positive-length sample reduced to what merging needs: a constant rate (value per millisecond)
/// over [start, end) and the rank of its source (smaller wins).
struct RateSpan: Sendable {
    var start: Int64
    var end: Int64
    var rate: Double
    var rank: Int32
}

/// A zero-length sample: its whole value sits at one instant.
struct PointMass: Sendable {
    var time: Int64
    var value: Double
    var rank: Int32
}

/// A stretch where the winning source's rate is constant.
struct MergedPiece: Sendable {
    var start: Int64
    var end: Int64
    var rate: Double
}

struct CountedPoint: Sendable {
    var time: Int64
    var value: Double
}

/// The merged rate function: pieces where some sample covers time (rate 0 included, so coverage is
/// kept), and the zero-length samples that survive merging. Both sorted by time.
struct MergedRate: Sendable {
    var pieces: [MergedPiece] = []
    var points: [CountedPoint] = []

    /// Sweeps span boundaries in time order. On each stretch only the best-ranked source with an
    /// active span counts, with the summed rate of all its active spans (a source's own overlapping
    /// samples are its own data). A point counts unless a strictly better-ranked span covers it.
    /// Ranks must lie in 0..<rankCount.
    static func merge(spans: [RateSpan], points: [PointMass], rankCount: Int) -> MergedRate {
        var boundaries: [(time: Int64, index: Int32, opens: Bool)] = []
        boundaries.reserveCapacity(spans.count * 2)
        for (index, span) in spans.enumerated() {
            boundaries.append((span.start, Int32(truncatingIfNeeded: index), true))
            boundaries.append((span.end, Int32(truncatingIfNeeded: index), false))
        }
        boundaries.sort { $0.time < $1.time }
        let sortedPoints = points.sorted { $0.time < $1.time }

        var activeCount = [Int](repeating: 0, count: max(rankCount, 1))
        var activeRate = [Double](repeating: 0, count: max(rankCount, 1))
        var winner = -1  // best rank with an active span, or -1 when nothing covers the current stretch
        var result = MergedRate()
        result.points.reserveCapacity(sortedPoints.count)
        var pointIndex = 0

        func emitPoints(before limit: Int64?, winner: Int) {
            while pointIndex < sortedPoints.count {
                let point = sortedPoints[pointIndex]
                if let limit, point.time >= limit { break }
                if winner < 0 || Int(point.rank) <= winner {
                    result.points.append(CountedPoint(time: point.time, value: point.value))
                }
                pointIndex += 1
            }
        }

        var index = 0
        while index < boundaries.count {
            let time = boundaries[index].time
            emitPoints(before: time, winner: winner)
            while index < boundaries.count, boundaries[index].time == time {
                let span = spans[Int(boundaries[index].index)]
                let rank = Int(span.rank)
                if boundaries[index].opens {
                    activeCount[rank] += 1
                    activeRate[rank] += span.rate
                } else {
                    activeCount[rank] -= 1
                    // Reset exactly so add/subtract rounding never leaves a ghost rate behind.
                    activeRate[rank] = activeCount[rank] == 0 ? 0 : activeRate[rank] - span.rate
                }
                index += 1
            }
            winner = -1
            for rank in 0..<activeCount.count where activeCount[rank] > 0 {
                winner = rank
                break
            }
            guard winner >= 0, index < boundaries.count else { continue }
            let next = boundaries[index].time
            let rate = activeRate[winner]
            if let last = result.pieces.last, last.end == time, last.rate == rate {
                result.pieces[result.pieces.count - 1].end = next
            } else {
                result.pieces.append(MergedPiece(start: time, end: next, rate: rate))
            }
        }
        emitPoints(before: nil, winner: -1)
        return result
    }

    /// The merged sum over [start, end) and whether any sample lies there. Pieces are integrated
    /// directly, so the cost is a binary search plus the pieces inside the interval.
    func sum(from start: Int64, to end: Int64) -> (sum: Double, hasData: Bool) {
        var total = 0.0
        var hasData = false
        var low = 0
        var high = pieces.count
        while low < high {
            let middle = (low + high) / 2
            if pieces[middle].end > start { high = middle } else { low = middle + 1 }
        }
        var index = low
        while index < pieces.count, pieces[index].start < end {
            let piece = pieces[index]
            let overlap = min(piece.end, end) - max(piece.start, start)
            total += piece.rate * Double(overlap)
            hasData = true
            index += 1
        }
        low = 0
        high = points.count
        while low < high {
            let middle = (low + high) / 2
            if points[middle].time >= start { high = middle } else { low = middle + 1 }
        }
        index = low
        while index < points.count, points[index].time < end {
            total += points[index].value
            hasData = true
            index += 1
        }
        return (total, hasData)
    }
}

/// Splits samples into spans and points with dense ranks 0..<n following `priority`.
struct RankedSamples {
    var spans: [RateSpan] = []
    var points: [PointMass] = []
    var sourcesByRank: [Int32] = []

    /// `clip` limits spans to a window (an index chunk) while keeping each sample's full-length rate.
    init<Samples: Sequence<StatisticsSample>>(_ samples: Samples, priority: SourcePriority?,
                                              clip: Range<Int64>? = nil) {
        var rankOf: [Int32: Int32] = [:]
        var sources: [Int32] = []
        var staged: [StatisticsSample] = []
        for sample in samples {
            staged.append(sample)
            if rankOf[sample.source] == nil {
                rankOf[sample.source] = 0
                sources.append(sample.source)
            }
        }
        if let priority {
            sources.sort { priority.rank(of: $0) < priority.rank(of: $1) }
            for (rank, source) in sources.enumerated() { rankOf[source] = Int32(rank) }
        }
        sourcesByRank = priority == nil ? [] : sources
        spans.reserveCapacity(staged.count)
        for sample in staged {
            let rank = rankOf[sample.source] ?? 0
            if sample.isInstant {
                if let clip, !clip.contains(sample.start) { continue }
                points.append(PointMass(time: sample.start, value: sample.value, rank: rank))
            } else {
                let rate = sample.value / Double(sample.end - sample.start)
                var start = sample.start
                var end = sample.end
                if let clip {
                    start = max(start, clip.lowerBound)
                    end = min(end, clip.upperBound)
                    if start >= end { continue }
                }
                spans.append(RateSpan(start: start, end: end, rate: rate, rank: rank))
            }
        }
    }

    var rankCount: Int { max(sourcesByRank.count, 1) }
}
