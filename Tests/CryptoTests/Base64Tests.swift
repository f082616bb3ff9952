import Testing
import Crypto

@Suite struct Base64Tests {
    // RFC 4648 §10.
    @Test(arguments: [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
                      ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")])
    func rfc4648Vectors(plain: String, encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test func usesTheStandardAlphabet() {
        #expect(Base64.encode([0xfb, 0xff]) == "+/8=")
        #expect(Base64.decode("+/8=") == [0xfb, 0xff])
        #expect(Base64.decode("-_8=") == nil)
    }

    @Test func unpaddedInputIsAccepted() {
        #expect(Base64.decode("Zm8") == Array("fo".utf8))
    }

    @Test(arguments: ["Z", "Zg=", "Zg===", "Zg==Zg==", "Zh==", "Zm9=", "Zm 9v", "=Zm9"])
    func malformedInputIsRefused(text: String) {
        #expect(Base64.decode(text) == nil)
    }

    @Test func roundTripsEveryLength() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(($0 * 37 + 11) & 0xff) }
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        }
    }
}
