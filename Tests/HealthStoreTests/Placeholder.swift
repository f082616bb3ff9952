import Testing

@Test func healthstorePackageBuilds() {
    #expect(Bool(true))
}
