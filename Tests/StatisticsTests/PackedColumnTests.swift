import Testing
@testable import Statistics

@Suite struct PackedColumnTests {
    @Test func integerColumnMovesFromConstantToNarrowToWide() {
        var column = PackedInt64Column()
        var mirror: [Int64] = []
        func check() {
            #expect(column.count == mirror.count)
            #expect((0..<mirror.count).allSatisfy { column[$0] == mirror[$0] })
        }
        for value: Int64 in [7, 7, 7] { column.append(value); mirror.append(value) }
        check()
        #expect(column.bytes == 0)
        column.insert(-3, at: 1); mirror.insert(-3, at: 1)
        check()
        column.insert(Int64(Int32.max) + 100, at: 0); mirror.insert(Int64(Int32.max) + 100, at: 0)
        check()
        column.insert(Int64.min, at: 2); mirror.insert(Int64.min, at: 2)
        column.remove(at: 3); mirror.remove(at: 3)
        check()
    }

    @Test func doubleColumnWidensOnlyWhenFloatLosesPrecision() {
        var column = PackedDoubleColumn()
        column.append(72)
        column.append(0.5)
        // Whole numbers and halves are exact in Float: the column stays narrow. (Not `bytes`: an
        // array's capacity depends on the allocator, so a byte count would make this test flaky.)
        #expect(!column.isWide)
        column.insert(0.1, at: 1)
        #expect(column.isWide, "0.1 is not exact in Float")
        #expect(column[0] == 72 && column[1] == 0.1 && column[2] == 0.5)
        column.remove(at: 0)
        #expect(column.count == 2 && column[0] == 0.1)
    }

    @Test func fenwickPrefixSums() {
        var tree = FenwickTree([1, 2, 3, 4, 5])
        #expect(tree.prefix(5) == 15 && tree.sum(1, 4) == 9)
        tree.add(10, at: 2)
        #expect(tree.sum(2, 3) == 13 && tree.prefix(5) == 25)
        #expect(floorDivide(-1, 10) == -1 && floorDivide(-10, 10) == -1 && floorDivide(9, 10) == 0)
    }
}
