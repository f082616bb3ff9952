import Testing

@Test func jsonPackageBuilds() {
    #expect(Bool(true))
}
