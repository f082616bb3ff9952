import Testing

@Test func sqlitePackageBuilds() {
    #expect(Bool(true))
}
