import Testing

@Test func endtoendPackageBuilds() {
    #expect(Bool(true))
}
