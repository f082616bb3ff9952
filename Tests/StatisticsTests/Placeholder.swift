import Testing

@Test func statisticsPackageBuilds() {
    #expect(Bool(true))
}
