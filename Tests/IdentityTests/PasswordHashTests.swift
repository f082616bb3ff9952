import Testing
@testable import Identity

private func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
}

@Suite struct PasswordHashTests {
    @Test func rfc9106Argon2idTestVector() throws {
        // RFC 9106 section 5.3.
        let tag = try Argon2.argon2id(password: [UInt8](repeating: 1, count: 32), salt: [UInt8](repeating: 2, count: 16),
                                      secret: [UInt8](repeating: 3, count: 8), associatedData: [UInt8](repeating: 4, count: 12),
                                      iterations: 3, memoryKiB: 32, lanes: 4, length: 32)
        #expect(hex(tag) == "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659")
    }

    @Test func referenceImplementationPHCVector() throws {
        // The reference implementation's test suite: "password", "somesalt", t=2, m=2^16, p=1.
        let stored = try PasswordHashing.hash("password", salt: Array("somesalt".utf8),
                                              parameters: Argon2Parameters(memoryKiB: 65_536, iterations: 2, parallelism: 1))
        #expect(stored.phc == "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc")
        #expect(PasswordHashing.verify("password", against: stored.phc))
        #expect(!PasswordHashing.verify("passwore", against: stored.phc))
    }

    @Test func hashesCarryFreshSaltAndCurrentParameters() throws {
        let small = Argon2Parameters(memoryKiB: 64, iterations: 1, parallelism: 1)
        let first = try PasswordHashing.hash("a long passphrase", parameters: small)
        let second = try PasswordHashing.hash("a long passphrase", parameters: small)
        #expect(first.salt.count == 16 && first.hash.count == 32)
        #expect(first.salt != second.salt && first.hash != second.hash)
        #expect(first.phc.hasPrefix("$argon2id$v=19$m=64,t=1,p=1$"))
        #expect(PasswordHash(phc: first.phc) == first)
        #expect(PasswordHashing.verify("a long passphrase", against: second.phc))
        #expect(!PasswordHashing.verify("a long passphrasE", against: second.phc))
        #expect(!PasswordHashing.verify("", against: second.phc))
    }

    /// "é" as one code point and as "e" with a combining accent is one password (keyboards and
    /// systems send either), and a hash stored from the bytes as sent, before normalization,
    /// still verifies them.
    @Test func passwordsAreOneInEitherUnicodeForm() throws {
        let small = Argon2Parameters(memoryKiB: 64, iterations: 1, parallelism: 1)
        let composed = "caf\u{E9} au lait, s'il vous pla\u{EE}t"
        let decomposed = "cafe\u{301} au lait, s'il vous plai\u{302}t"
        #expect(Array(composed.utf8) != Array(decomposed.utf8))
        let fromDecomposed = try PasswordHashing.hash(decomposed, parameters: small)
        #expect(PasswordHashing.verify(composed, against: fromDecomposed.phc))
        #expect(PasswordHashing.verify(decomposed, against: fromDecomposed.phc))
        let fromComposed = try PasswordHashing.hash(composed, parameters: small)
        #expect(PasswordHashing.verify(decomposed, against: fromComposed.phc))
        #expect(!PasswordHashing.verify("cafe au lait, s'il vous plait", against: fromComposed.phc))
        // Stored before passwords were normalized: the decomposed bytes themselves.
        let salt = [UInt8](repeating: 7, count: 16)
        let tag = try Argon2.argon2id(password: Array(decomposed.utf8), salt: salt, iterations: 1, memoryKiB: 64, lanes: 1, length: 32)
        let legacy = try #require(PasswordHash(parameters: small, salt: salt, hash: tag))
        #expect(PasswordHashing.verify(decomposed, against: legacy.phc))
    }

    @Test func currentParametersAreAtLeastOWASPs() {
        #expect(Argon2Parameters.current.isAtLeast(.owaspMinimum))
        #expect(Argon2Parameters.current.parallelism == 1)
    }

    @Test func needsRehashWhenWeakerThanCurrent() throws {
        let weak = try PasswordHashing.hash("a long passphrase", parameters: Argon2Parameters(memoryKiB: 64, iterations: 1, parallelism: 1))
        #expect(PasswordHashing.needsRehash(weak.phc))
        #expect(!PasswordHashing.needsRehash(weak.phc, current: Argon2Parameters(memoryKiB: 64, iterations: 1, parallelism: 1)))
        #expect(PasswordHashing.needsRehash(weak.phc, current: Argon2Parameters(memoryKiB: 64, iterations: 2, parallelism: 1)))
        #expect(PasswordHashing.needsRehash("not a hash"))
        let current = try PasswordHashing.hash("a long passphrase")
        #expect(!PasswordHashing.needsRehash(current.phc))
    }

    @Test(arguments: [
        "",
        "$argon2i$v=19$m=64,t=1,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=16$m=64,t=1,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=19$m=64,t=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=19$t=1,m=64,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=19$m=064,t=1,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=19$m=-64,t=1,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=19$m=99999999999,t=1,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=19$m=4194304,t=1,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=19$m=64,t=1000,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=19$m=64,t=1,p=0$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=19$m=64,t=1,p=1$c29tZXNhbHQ=$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=19$m=64,t=1,p=1$c29t$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=19$m=64,t=1,p=1$c29tZXNhbHQ$CTFhFdXPJO1a",
        "$argon2id$v=19$m=64,t=1,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPd",
        "$argon2id$v=19$m=64,t=1,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc$",
        "$argon2id$v=19$m=64,t=1,p=1$c29tZXNhbHQ$CTFh-dXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
    ])
    func malformedStoredHashesVerifyNothing(_ stored: String) {
        #expect(PasswordHash(phc: stored) == nil)
        #expect(!PasswordHashing.verify("password", against: stored))
    }

    @Test func refusesToMakeAHashItCouldNotReadBack() {
        let huge = Argon2Parameters(memoryKiB: 64, iterations: 65, parallelism: 1)
        #expect(throws: Argon2.Failure.outOfBounds(huge)) {
            try PasswordHashing.hash("a long passphrase", salt: Array("somesalt".utf8), parameters: huge)
        }
        #expect(throws: Argon2.Failure.self) {
            try PasswordHashing.hash("a long passphrase", salt: Array("salt".utf8), parameters: Argon2Parameters(memoryKiB: 64, iterations: 1, parallelism: 1))
        }
    }

    @Test func dummyVerifyIsAlwaysFalse() {
        #expect(!PasswordHashing.dummyVerify("password"))
    }

    @Test func phcBase64RoundTripsEveryLength() {
        for length in 0 ... 40 {
            let bytes = (0 ..< length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let text = PHCBase64.encode(bytes)
            #expect(!text.contains("="))
            #expect(PHCBase64.decode(Substring(text)) == bytes)
        }
        #expect(PHCBase64.encode(Array("somesalt".utf8)) == "c29tZXNhbHQ")
    }
}
