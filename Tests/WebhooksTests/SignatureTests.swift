import Crypto
import Testing
@testable import Webhooks

@Suite struct WebhookSignatureTests {
    // The Standard Webhooks reference test vector (the spec's example, used by its libraries' tests).
    let referenceSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    let referenceID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
    let referenceTimestamp: Int64 = 1_614_265_330
    let referenceBody = Array(#"{"test": 2432232314}"#.utf8)
    let referenceSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

    @Test func reproducesTheReferenceVector() throws {
        let secret = try #require(WebhookSecret(text: referenceSecret))
        #expect(secret.key.count == 24)
        let signer = WebhookSigner(secret: secret)
        #expect(signer.signature(id: referenceID, timestamp: referenceTimestamp, body: referenceBody) == referenceSignature)
        let headers = signer.headers(id: referenceID, timestamp: referenceTimestamp, body: referenceBody)
        #expect(headers.map(\.name) == ["webhook-id", "webhook-timestamp", "webhook-signature"])
        #expect(headers.map(\.value) == [referenceID, "1614265330", referenceSignature])
    }

    @Test func verifierAcceptsTheReferenceVector() throws {
        let verifier = WebhookVerifier(secret: try #require(WebhookSecret(text: referenceSecret)))
        try verifier.verify(id: referenceID, timestamp: "1614265330", signatureHeader: referenceSignature,
                            body: referenceBody, now: referenceTimestamp + 10)
        // Several signatures (a rotation) and unknown versions: one match is enough.
        try verifier.verify(id: referenceID, timestamp: "1614265330",
                            signatureHeader: "v1a,abc v1,bm9wZQ== " + referenceSignature, body: referenceBody, now: referenceTimestamp)
    }

    @Test func verifierRefusesTampering() throws {
        let verifier = WebhookVerifier(secret: try #require(WebhookSecret(text: referenceSecret)))
        #expect(throws: WebhookVerificationError.noMatchingSignature) {
            try verifier.verify(id: referenceID, timestamp: "1614265330", signatureHeader: referenceSignature,
                                body: Array(#"{"test": 2432232315}"#.utf8), now: referenceTimestamp)
        }
        #expect(throws: WebhookVerificationError.noMatchingSignature) {
            try verifier.verify(id: "msg_other", timestamp: "1614265330", signatureHeader: referenceSignature,
                                body: referenceBody, now: referenceTimestamp)
        }
        #expect(throws: WebhookVerificationError.noMatchingSignature) {
            try verifier.verify(id: referenceID, timestamp: "1614265330", signatureHeader: "v2," + referenceSignature.dropFirst(3),
                                body: referenceBody, now: referenceTimestamp)
        }
        // A timestamp changed within the tolerance still breaks the signature.
        #expect(throws: WebhookVerificationError.noMatchingSignature) {
            try verifier.verify(id: referenceID, timestamp: "1614265331", signatureHeader: referenceSignature,
                                body: referenceBody, now: referenceTimestamp)
        }
        #expect(throws: WebhookVerificationError.timestampOutOfTolerance) {
            try verifier.verify(id: referenceID, timestamp: "1614265330", signatureHeader: referenceSignature,
                                body: referenceBody, now: referenceTimestamp + 301)
        }
        for bad in ["", "-1", "16142653e0", " 1614265330", "99999999999999999999"] {
            #expect(throws: WebhookVerificationError.malformedTimestamp) {
                try verifier.verify(id: referenceID, timestamp: bad, signatureHeader: referenceSignature,
                                    body: referenceBody, now: referenceTimestamp)
            }
        }
    }

    @Test func otherSecretsDoNotVerify() throws {
        let other = WebhookSecret.generate()
        let verifier = WebhookVerifier(secret: other)
        #expect(throws: WebhookVerificationError.noMatchingSignature) {
            try verifier.verify(id: referenceID, timestamp: "1614265330", signatureHeader: referenceSignature,
                                body: referenceBody, now: referenceTimestamp)
        }
    }

    @Test func generatedSecretsRoundTripThroughTheirText() throws {
        var generator = SplitMix64(seed: 7)
        let secret = WebhookSecret.generate(using: &generator)
        #expect(secret.key.count == 32)
        #expect(secret.text.hasPrefix("whsec_"))
        #expect(WebhookSecret(text: secret.text) == secret)
        // Signed with the generated key, verified with the key read back from the text.
        let signer = WebhookSigner(secret: secret)
        let body = Array(#"{"added":[],"deleted":[],"anchor":"a","more":false}"#.utf8)
        let signature = signer.signature(id: "msg_1", timestamp: 1_700_000_000, body: body)
        let verifier = WebhookVerifier(secret: try #require(WebhookSecret(text: secret.text)))
        try verifier.verify(id: "msg_1", timestamp: "1700000000", signatureHeader: signature, body: body, now: 1_700_000_000)
        #expect(WebhookSecret.generate().key != WebhookSecret.generate().key)
    }

    @Test(arguments: ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_!!!!", "whsk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"])
    func malformedSecretTextIsRefused(text: String) {
        #expect(WebhookSecret(text: text) == nil)
    }

    @Test func messageIDIsStablePerPageAndDistinctAcrossPages() {
        let first = WebhookMessageID.make(subscriptionID: "sub1", startAnchor: "anchor-a")
        #expect(first == WebhookMessageID.make(subscriptionID: "sub1", startAnchor: "anchor-a"))
        #expect(first.hasPrefix("msg_"))
        #expect(first != WebhookMessageID.make(subscriptionID: "sub1", startAnchor: "anchor-b"))
        #expect(first != WebhookMessageID.make(subscriptionID: "sub2", startAnchor: "anchor-a"))
        // The separator keeps "ab"+"c" and "a"+"bc" apart.
        #expect(WebhookMessageID.make(subscriptionID: "ab", startAnchor: "c") != WebhookMessageID.make(subscriptionID: "a", startAnchor: "bc"))
    }
}

/// A deterministic generator for tests.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
