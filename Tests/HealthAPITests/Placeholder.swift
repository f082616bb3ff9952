import Testing

@Test func healthapiPackageBuilds() {
    #expect(Bool(true))
}
