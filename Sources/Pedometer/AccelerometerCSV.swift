/// `text/csv` accelerometer batches, as a phone or a script uploads them: a header row `t,x,y,z`
/// (any letter case, spaces around names allowed), then one reading per row. Rows end with LF or
/// CRLF; blank lines are skipped. Values are what Swift's `Double(_:)` reads, so `nan` and `inf`
/// parse here and are refused by name later, by `PedometerSession`'s validation.
///
/// Pure and byte-level: the body is never copied into a `String` as a whole.
public enum AccelerometerCSV {
    public struct Columns: Sendable, Equatable {
        public var t: [Double] = []
        public var x: [Double] = []
        public var y: [Double] = []
        public var z: [Double] = []
        public var count: Int { t.count }
    }

    /// What is wrong with a CSV body. Rows are numbered from 1 for the header, counting only
    /// non-blank lines, as a person reading the file would.
    public enum ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        case notUTF8
        case empty
        case badHeader(String)
        case wrongFieldCount(row: Int, count: Int)
        case notANumber(row: Int, field: String)
        case tooManyRows(limit: Int)

        public var description: String {
            switch self {
            case .notUTF8: "is not UTF-8"
            case .empty: "is empty: expected a header row t,x,y,z"
            case .badHeader(let header): "the header row must be t,x,y,z, not '\(header)'"
            case let .wrongFieldCount(row, count): "row \(row) has \(count) fields, expected 4"
            case let .notANumber(row, field): "row \(row): '\(field)' is not a number"
            case .tooManyRows(let limit): "a batch holds at most \(limit) samples"
            }
        }
    }

    /// Parses `body`; more than `maximumRows` readings is an error (checked while reading, so an
    /// oversize body is refused before it is all converted).
    public static func parse(_ body: [UInt8], maximumRows: Int) throws(ParseError) -> Columns {
        guard validUTF8(body) else { throw .notUTF8 }
        var columns = Columns()
        var row = 0
        var sawHeader = false
        // A spreadsheet's "CSV UTF-8" starts with a byte-order mark: skipped, as CSV readers do.
        var lineStart = body.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while lineStart < body.count {
            var lineEnd = lineStart
            while lineEnd < body.count && body[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
            var contentEnd = lineEnd
            if contentEnd > lineStart && body[contentEnd - 1] == UInt8(ascii: "\r") { contentEnd -= 1 }
            let line = body[lineStart..<contentEnd]
            lineStart = lineEnd + 1
            if line.isEmpty { continue }
            row += 1
            if !sawHeader {
                try checkHeader(line)
                sawHeader = true
                if maximumRows > 0 { columns.reserve(min(maximumRows, body.count / 8)) }
                continue
            }
            guard columns.count < maximumRows else { throw .tooManyRows(limit: maximumRows) }
            try columns.append(row: row, line)
        }
        guard sawHeader else { throw .empty }
        return columns
    }

    private static func checkHeader(_ line: ArraySlice<UInt8>) throws(ParseError) {
        let names = line.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
            .map { String(decoding: trimmed($0), as: UTF8.self).lowercased() }
        guard names == ["t", "x", "y", "z"] else {
            throw .badHeader(String(String(decoding: line, as: UTF8.self).prefix(60)))
        }
    }

    static func trimmed(_ field: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var field = field
        while let first = field.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { field.removeFirst() }
        while let last = field.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { field.removeLast() }
        return field
    }

    private static func validUTF8(_ bytes: [UInt8]) -> Bool {
        // Plain ASCII is by far the common case and needs no decoding.
        if bytes.allSatisfy({ $0 < 0x80 }) { return true }
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}

extension AccelerometerCSV.Columns {
    fileprivate mutating func reserve(_ count: Int) {
        t.reserveCapacity(count); x.reserveCapacity(count); y.reserveCapacity(count); z.reserveCapacity(count)
    }

    fileprivate mutating func append(row: Int, _ line: ArraySlice<UInt8>) throws(AccelerometerCSV.ParseError) {
        var values = (0.0, 0.0, 0.0, 0.0)
        var fieldCount = 0
        var fieldStart = line.startIndex
        var position = line.startIndex
        while true {
            if position == line.endIndex || line[position] == UInt8(ascii: ",") {
                if fieldCount < 4 {
                    let value = try Self.number(line[fieldStart..<position], row: row)
                    switch fieldCount {
                    case 0: values.0 = value
                    case 1: values.1 = value
                    case 2: values.2 = value
                    default: values.3 = value
                    }
                }
                fieldCount += 1
                if position == line.endIndex { break }
                fieldStart = position + 1
            }
            position += 1
        }
        guard fieldCount == 4 else { throw .wrongFieldCount(row: row, count: fieldCount) }
        t.append(values.0); x.append(values.1); y.append(values.2); z.append(values.3)
    }

    private static func number(_ field: ArraySlice<UInt8>, row: Int) throws(AccelerometerCSV.ParseError) -> Double {
        let text = AccelerometerCSV.trimmed(field)
        // Numbers are short: longer fields are not numbers, and are not worth converting.
        guard !text.isEmpty, text.count <= 64, let value = Double(String(decoding: text, as: UTF8.self)) else {
            throw .notANumber(row: row, field: String(String(decoding: field, as: UTF8.self).prefix(30)))
        }
        return value
    }
}
