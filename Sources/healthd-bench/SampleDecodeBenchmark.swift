import Foundation
import HealthModel
import HealthStore
import JSON

/// `samples-decode`: the CPU cost per sample of turning a POST /v1/samples body into validated
/// samples, with no HTTP and no SQLite, on one thread: the general path (JSON parse, then
/// SampleCodec) and the byte-level `SampleBatchDecoder` the server uses for valid batches, on the
/// same body. Together with `sqlite-baseline` it says where a write's CPU goes.
enum SampleDecodeBenchmark {
    static func run(_ arguments: [String]) -> Int32 {
        var rounds = 20
        var uuids = true
        var arguments = arguments[...]
        while let flag = arguments.popFirst() {
            switch flag {
            case "--rounds":
                guard let text = arguments.popFirst(), let number = Int(text), number > 0 else { benchFail("--rounds takes a positive number") }
                rounds = number
            case "--no-uuids": uuids = false
            default: benchFail("unknown option '\(flag)' (options: --rounds N, --no-uuids)")
            }
        }
        var generator = SampleGenerator(seed: 5)
        let body = generator.batchJSON(firstIndex: 0, count: 10_000, withUUIDs: uuids)
        var parseNanoseconds: UInt64 = 0
        var decodeNanoseconds: UInt64 = 0
        var bytesNanoseconds: UInt64 = 0
        var checksum = 0
        var byteChecksum = 0
        for round in 0...rounds {
            let began = nanosecondsNow()
            guard let document = try? JSONFieldReader(parsing: body) else { benchFail("the generated body does not parse") }
            let parsed = nanosecondsNow()
            var reader = document
            guard let list = try? reader.requiredArray("samples") else { benchFail("no samples array") }
            for index in 0..<list.count {
                do {
                    var sampleReader = try list.object(at: index)
                    let sample = try SampleCodec.decode(&sampleReader, newUUID: HealthUUID.timeOrdered)
                    try sampleReader.finish()
                    checksum &+= Int(sample.start & 0xFF)
                } catch {
                    benchFail("sample \(index) does not decode: \(error)")
                }
            }
            let decoded = nanosecondsNow()
            // The server's path: the same body read straight from its bytes.
            guard let samples = SampleBatchDecoder.decode(body, maxBatchSize: 10_000, newUUID: HealthUUID.timeOrdered) else {
                benchFail("the byte-level decoder handed the generated body back")
            }
            let bytesDecoded = nanosecondsNow()
            for sample in samples { byteChecksum &+= Int(sample.start & 0xFF) }
            if round > 0 {  // round 0 warms caches and is not counted
                parseNanoseconds += parsed - began
                decodeNanoseconds += decoded - parsed
                bytesNanoseconds += bytesDecoded - decoded
            }
        }
        guard checksum == byteChecksum else { benchFail("the two decoders disagree (checksums \(checksum), \(byteChecksum))") }
        let samples = Double(rounds * 10_000)
        let parse = Double(parseNanoseconds) / samples / 1000
        let decode = Double(decodeNanoseconds) / samples / 1000
        let bytes = Double(bytesNanoseconds) / samples / 1000
        // The checksum of decoded start times keeps the optimizer from dropping the decoding.
        print("samples-decode: \(rounds) rounds (checksum \(checksum)) of one 10,000-sample body (\(body.count / 1024) KiB, uuids \(uuids ? "in the JSON" : "assigned"))")
        print("  general path: JSON parse \(format(parse, decimals: 2)) µs + SampleCodec \(format(decode, decimals: 2)) µs = \(format(parse + decode, decimals: 2)) µs per sample on one thread")
        print("  SampleBatchDecoder (bytes straight to samples, the server's path): \(format(bytes, decimals: 2)) µs per sample, "
              + "\(format((parse + decode) / max(bytes, 0.001))) x faster")
        return 0
    }
}
