/// The proleptic Gregorian calendar as day counts: the one conversion between civil dates and
/// days since 1970-01-01, for HTTP's Date header and for the health model's instants and days.
/// Counts in 400-year eras (146,097 days each) with March as the first month, so the leap day
/// falls at the end of a year (the well-known era-based algorithm); exact for every Int64 day
/// count whose year fits an Int.
public enum CivilDate {
    /// Days since 1970-01-01 for a civil date.
    @inlinable
    public static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int64 {
        let shiftedYear = Int64(month <= 2 ? year - 1 : year)
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let marchBasedMonth = Int64(month > 2 ? month - 3 : month + 9)
        let dayOfYear = (153 * marchBasedMonth + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The civil date of a day count since 1970-01-01 (inverse of `daysSinceEpoch`).
    @inlinable
    public static func of(daysSinceEpoch: Int64) -> (year: Int, month: Int, day: Int) {
        let shifted = daysSinceEpoch + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let marchBasedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * marchBasedMonth + 2) / 5 + 1
        let month = marchBasedMonth < 10 ? marchBasedMonth + 3 : marchBasedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (Int(year), Int(month), Int(day))
    }
}
