import Foundation

/// Second-order IIR section (direct form II transposed). Coefficients are part of
/// the stored state so a restored session filters exactly as before.
struct Biquad: Sendable, Codable, Equatable {
    var b0: Double
    var b1: Double
    var b2: Double
    var a1: Double
    var a2: Double
    var state1: Double = 0
    var state2: Double = 0

    /// Butterworth-style low-pass by the bilinear transform (RBJ cookbook form).
    static func lowPass(cutoffHz: Double, sampleRateHz: Double, q: Double = 0.5.squareRoot() ) -> Biquad {
        let omega = 2 * Double.pi * cutoffHz / sampleRateHz
        let alpha = sin(omega) / (2 * q)
        let cosine = cos(omega)
        let a0 = 1 + alpha
        return Biquad(b0: (1 - cosine) / 2 / a0, b1: (1 - cosine) / a0, b2: (1 - cosine) / 2 / a0,
                      a1: -2 * cosine / a0, a2: (1 - alpha) / a0)
    }

    /// Butterworth-style high-pass by the bilinear transform (RBJ cookbook form).
    static func highPass(cutoffHz: Double, sampleRateHz: Double, q: Double = 0.5.squareRoot()) -> Biquad {
        let omega = 2 * Double.pi * cutoffHz / sampleRateHz
        let alpha = sin(omega) / (2 * q)
        let cosine = cos(omega)
        let a0 = 1 + alpha
        return Biquad(b0: (1 + cosine) / 2 / a0, b1: -(1 + cosine) / a0, b2: (1 + cosine) / 2 / a0,
                      a1: -2 * cosine / a0, a2: (1 - alpha) / a0)
    }

    @inline(__always)
    mutating func filter(_ input: Double) -> Double {
        let output = b0 * input + state1
        state1 = b1 * input - a1 * output + state2
        state2 = b2 * input - a2 * output
        return output
    }

    /// Starts the filter in steady state for a constant input, avoiding a start-up transient.
    mutating func settle(at input: Double) {
        let gain = (b0 + b1 + b2) / (1 + a1 + a2)
        let output = gain * input
        state2 = b2 * input - a2 * output
        state1 = b1 * input - a1 * output + state2
    }

    mutating func clearHistory() {
        state1 = 0
        state2 = 0
    }
}
