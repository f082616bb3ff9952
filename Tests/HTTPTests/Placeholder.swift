import Testing

@Test func httpPackageBuilds() {
    #expect(Bool(true))
}
