import Testing
@testable import Pedometer

@Suite struct AccelerometerCSVTests {
    private func parse(_ text: String, maximumRows: Int = 100) throws(AccelerometerCSV.ParseError) -> AccelerometerCSV.Columns {
        try AccelerometerCSV.parse(Array(text.utf8), maximumRows: maximumRows)
    }

    @Test func readsRowsWithAnyLineEndingAndSpacing() throws {
        let columns = try parse(" T , x,Y ,z\r\n0,0.01,-0.02,1.0\n\n0.02, 0.5 ,\t-1e-3,9.81\r\n")
        #expect(columns.t == [0, 0.02])
        #expect(columns.x == [0.01, 0.5])
        #expect(columns.y == [-0.02, -0.001])
        #expect(columns.z == [1.0, 9.81])
    }

    @Test func aSpreadsheetsByteOrderMarkIsSkipped() throws {
        let columns = try parse("\u{FEFF}t,x,y,z\n0,0.01,-0.02,1.0\n")
        #expect(columns.t == [0] && columns.z == [1.0])
        #expect(throws: AccelerometerCSV.ParseError.empty) { try parse("\u{FEFF}") }
    }

    @Test func aHeaderAloneIsAnEmptyBatch() throws {
        #expect(try parse("t,x,y,z\n").count == 0)
    }

    @Test(arguments: [
        ("", AccelerometerCSV.ParseError.empty),
        ("\n\r\n\n", .empty),
        ("t,x,y\n0,1,2\n", .badHeader("t,x,y")),
        ("time,x,y,z\n", .badHeader("time,x,y,z")),
        ("t,x,y,z\n0,1,2\n", .wrongFieldCount(row: 2, count: 3)),
        ("t,x,y,z\n0,1,2,3\n\n0,1,2,3,4\n", .wrongFieldCount(row: 3, count: 5)),
        ("t,x,y,z\n0,1,,3\n", .notANumber(row: 2, field: "")),
        ("t,x,y,z\n0,1,abc,3\n", .notANumber(row: 2, field: "abc")),
        ("t,x,y,z\n0,1,2,3\r4\n", .notANumber(row: 2, field: "3\r4")),
    ])
    func badBodiesSayWhatIsWrong(text: String, expected: AccelerometerCSV.ParseError) {
        #expect(throws: expected) { try parse(text) }
    }

    @Test func invalidUTF8IsRefused() {
        var bytes = Array("t,x,y,z\n0,1,2,3\n".utf8)
        bytes.insert(0xFF, at: 10)
        #expect(throws: AccelerometerCSV.ParseError.notUTF8) { try AccelerometerCSV.parse(bytes, maximumRows: 10) }
    }

    @Test func theRowLimitIsExact() throws {
        let rows = (0..<5).map { "\($0),0,0,1" }.joined(separator: "\n")
        #expect(try parse("t,x,y,z\n" + rows, maximumRows: 5).count == 5)
        #expect(throws: AccelerometerCSV.ParseError.tooManyRows(limit: 4)) { try parse("t,x,y,z\n" + rows, maximumRows: 4) }
    }

    @Test func nonFiniteValuesParseAndAreLeftToValidation() throws {
        let columns = try parse("t,x,y,z\n0,nan,inf,-inf\n")
        #expect(columns.x[0].isNaN)
        #expect(columns.y[0] == .infinity)
        #expect(columns.z[0] == -.infinity)
    }

    @Test func printedValuesReadBackExactly() throws {
        var generator = SystemRandomNumberGenerator()
        let values = (0..<200).map { _ in Double.random(in: -1e6...1e6, using: &generator) }
        let text = "t,x,y,z\n" + stride(from: 0, to: values.count, by: 4)
            .map { "\(values[$0]),\(values[$0 + 1]),\(values[$0 + 2]),\(values[$0 + 3])" }.joined(separator: "\n")
        let columns = try parse(text)
        #expect(columns.t == stride(from: 0, to: values.count, by: 4).map { values[$0] })
        #expect(columns.z == stride(from: 3, to: values.count, by: 4).map { values[$0] })
    }
}
