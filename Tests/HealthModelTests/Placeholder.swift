import Testing

@Test func healthmodelPackageBuilds() {
    #expect(Bool(true))
}
