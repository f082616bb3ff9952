// libFuzzer target: the HKUnit string parser and conversion between any two parsed units.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUnit(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let parts = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
    guard let first = try? HealthUnit.parse(String(parts[0])) else { return 0 }
    _ = try? HealthUnit.convert(1.5, from: first, to: first)
    if parts.count > 1, let second = try? HealthUnit.parse(String(parts[1])) {
        _ = try? HealthUnit.convert(-3.25, from: first, to: second)
    }
    return 0
}
