import Testing

@Test func pedometerPackageBuilds() {
    #expect(Bool(true))
}
