import Testing
@testable import Crypto

@Suite struct SHA256Tests {
    // FIPS 180-4 / NIST example vectors.
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func knownVectors(input: String, expected: String) {
        #expect(Hex.encode(SHA256.hash(Array(input.utf8))) == expected)
    }

    @Test func millionAsAndIncrementalUpdatesAgree() {
        var hasher = SHA256()
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
        for _ in 0..<1000 { hasher.update(chunk) }
        #expect(Hex.encode(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func paddingBoundariesMatchOneShot() {
        // 55, 56 and 64 bytes sit on the padding edges; split updates must give the same digest.
        for length in [55, 56, 63, 64, 65, 119, 120] {
            let data = (0..<length).map { UInt8($0 & 0xff) }
            var split = SHA256()
            split.update(data.prefix(length / 3))
            split.update(data.dropFirst(length / 3))
            #expect(split.finalize() == SHA256.hash(data))
        }
    }
}

@Suite struct HMACTests {
    // RFC 4231 test cases 1, 2 and 6 (key longer than the block).
    @Test func rfc4231() {
        let key1 = [UInt8](repeating: 0x0b, count: 20)
        #expect(Hex.encode(HMACSHA256.authenticationCode(for: Array("Hi There".utf8), key: key1))
            == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(Hex.encode(HMACSHA256.authenticationCode(for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8)))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let key6 = [UInt8](repeating: 0xaa, count: 131)
        #expect(Hex.encode(HMACSHA256.authenticationCode(
            for: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8), key: key6))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func constantTimeComparison() {
        #expect(constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEquals([1, 2], [1, 2, 3]))
    }
}

@Suite struct EncodingTests {
    @Test func base64URLRoundTripsEveryLength() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(($0 * 37 + 11) & 0xff) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Base64URL.decode(text) == bytes)
        }
    }

    @Test func base64URLRejectsForeignCharacters() {
        #expect(Base64URL.decode("ab+c") == nil)
        #expect(Base64URL.decode("abc=") == nil)
        #expect(Base64URL.decode("a") == nil)
        #expect(Base64URL.decode("aQ") == [0x69])
        #expect(Base64URL.decode("ab") == nil)  // "b" leaves non-zero trailing bits
    }
}

@Suite struct HMACKeyTests {
    /// RFC 2104 spelled out with one-shot hashes.
    static func reference(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = SHA256.hash(block.map { $0 ^ 0x36 } + message)
        return SHA256.hash(block.map { $0 ^ 0x5c } + inner)
    }

    /// The precomputed key gives the one-shot function's MAC for keys shorter than, equal to and
    /// longer than a block, and messages around the padding edges.
    @Test func precomputedKeysMatchOneShot() {
        for keyLength in [0, 20, 32, 64, 65, 131] {
            let key = (0..<keyLength).map { UInt8(($0 * 29 + 7) & 0xff) }
            let prepared = HMACSHA256.Key(key)
            for messageLength in [0, 1, 25, 55, 56, 64, 100, 200] {
                let message = (0..<messageLength).map { UInt8(($0 * 13 + 1) & 0xff) }
                #expect(prepared.authenticationCode(for: message) == Self.reference(message, key: key))
            }
            // Twice from the same key: using it leaves it unchanged.
            #expect(prepared.authenticationCode(for: [1, 2, 3]) == prepared.authenticationCode(for: [1, 2, 3]))
        }
    }
}
