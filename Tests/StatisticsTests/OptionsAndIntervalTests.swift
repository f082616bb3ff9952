import Testing
@testable import Statistics

@Suite struct OptionsTests {
    @Test func parsesCommaList() throws {
        let options = try StatisticsOptions.parse("cumulativeSum,separateBySource")
        #expect(options == [.cumulativeSum, .separateBySource])
        #expect(options.description == "cumulativeSum,separateBySource")
        #expect(try StatisticsOptions.parse(" discreteMin , discreteMax ") == [.discreteMin, .discreteMax])
    }

    @Test func rejectsUnknownAndEmpty() {
        #expect(throws: StatisticsError.unknownOption("sum")) { try StatisticsOptions.parse("sum") }
        #expect(throws: StatisticsError.emptyOptions) { try StatisticsOptions.parse("") }
        #expect(throws: StatisticsError.emptyOptions) { try StatisticsOptions.parse(",,") }
        #expect(throws: StatisticsError.emptyOptions) {
            try StatisticsOptions.parse("separateBySource", for: .cumulative)
        }
    }

    @Test func validatesAgainstAggregationStyle() throws {
        try StatisticsOptions([.cumulativeSum, .separateBySource]).validate(for: .cumulative)
        try StatisticsOptions([.discreteAverage, .discreteMin, .discreteMax, .mostRecent, .separateBySource])
            .validate(for: .discrete)
        #expect(throws: StatisticsError.optionNotAllowed(option: "discreteAverage", style: .cumulative)) {
            try StatisticsOptions.parse("discreteAverage", for: .cumulative)
        }
        #expect(throws: StatisticsError.optionNotAllowed(option: "cumulativeSum", style: .discrete)) {
            try StatisticsOptions.parse("mostRecent,cumulativeSum", for: .discrete)
        }
        #expect(throws: StatisticsError.optionNotAllowed(option: "mostRecent", style: .cumulative)) {
            try StatisticsOptions.parse("mostRecent", for: .cumulative)
        }
    }

    @Test func errorMessagesNameTheProblem() {
        let message = StatisticsError.optionNotAllowed(option: "discreteMin", style: .cumulative).description
        #expect(message.contains("discreteMin") && message.contains("cumulative"))
        #expect(StatisticsError.invalidInterval("P0D").description.contains("P0D"))
        #expect(StatisticsError.unknownTimeZone("Mars/Olympus").description.contains("Mars/Olympus"))
    }
}

@Suite struct CalendarIntervalTests {
    @Test(arguments: [
        ("PT1M", CalendarInterval.Unit.minute, 1), ("PT15M", .minute, 15), ("PT5M", .minute, 5),
        ("PT1H", .hour, 1), ("P1D", .day, 1), ("P1W", .week, 1), ("P2W", .week, 2),
        ("P1M", .month, 1), ("P3M", .month, 3), ("P1Y", .year, 1),
    ])
    func parsesOneComponent(text: String, unit: CalendarInterval.Unit, count: Int) throws {
        let interval = try CalendarInterval.parse(text)
        #expect(interval.unit == unit && interval.count == count)
        #expect(interval.description == text)
    }

    @Test(arguments: ["", "P", "PT", "P0D", "PT0M", "P1DT1H", "P1.5D", "P-1D", "P+1D", "1D", "p1d", "PT1D",
                      "P1H", "P1S", "PT1S", "P1D ", " P1D", "PD", "P1", "P99999999999999999999D", "P1Y1M"])
    func rejectsEverythingElse(text: String) {
        #expect(throws: StatisticsError.invalidInterval(text)) { try CalendarInterval.parse(text) }
    }
}
