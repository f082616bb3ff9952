import CZlib
import Foundation
import Testing
@testable import HealthdCommandLine

/// Builds small zip archives in memory: stored or deflated entries, optionally in zip64 form
/// (sizes and offsets as 0xFFFFFFFF in the central directory, the real values in the zip64 extra
/// field, and a zip64 end record with its locator), as the Health app writes exports over 4 GB.
struct ZipBuilder {
    struct Item { var name: String; var content: [UInt8]; var deflate: Bool }
    var items: [Item] = []
    var zip64 = false

    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
    static func le32(_ v: UInt64) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * UInt64($0))) & 0xFF) } }
    static func le64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8((v >> (8 * UInt64($0))) & 0xFF) } }

    /// Raw deflate (no zlib header), as zip entries carry it.
    static func rawDeflate(_ input: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        guard deflateInit2_(&stream, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else { return [] }
        defer { deflateEnd(&stream) }
        var source = input
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(input.count))) + 16)
        let produced = source.withUnsafeMutableBufferPointer { inPointer in
            output.withUnsafeMutableBufferPointer { outPointer -> Int in
                stream.next_in = inPointer.baseAddress
                stream.avail_in = UInt32(inPointer.count)
                stream.next_out = outPointer.baseAddress
                stream.avail_out = UInt32(outPointer.count)
                guard deflate(&stream, Z_FINISH) == Z_STREAM_END else { return -1 }
                return outPointer.count - Int(stream.avail_out)
            }
        }
        return produced < 0 ? [] : Array(output.prefix(produced))
    }

    func bytes() -> [UInt8] {
        var archive: [UInt8] = []
        var directory: [UInt8] = []
        for item in items {
            let data = item.deflate ? Self.rawDeflate(item.content) : item.content
            let offset = UInt64(archive.count)
            let name = Array(item.name.utf8)
            let method = item.deflate ? 8 : 0
            let crc = UInt64(item.content.withUnsafeBufferPointer { crc32(0, $0.baseAddress, UInt32($0.count)) })
            archive += Self.le32(0x0403_4b50) + Self.le16(zip64 ? 45 : 20) + Self.le16(0) + Self.le16(method)
                + Self.le16(0) + Self.le16(0) + Self.le32(crc) + Self.le32(UInt64(data.count))
                + Self.le32(UInt64(item.content.count)) + Self.le16(name.count) + Self.le16(0) + name + data
            let extra = zip64 ? Self.le16(1) + Self.le16(24) + Self.le64(UInt64(item.content.count))
                + Self.le64(UInt64(data.count)) + Self.le64(offset) : []
            let big: UInt64 = 0xFFFF_FFFF
            directory += Self.le32(0x0201_4b50) + Self.le16(45) + Self.le16(zip64 ? 45 : 20) + Self.le16(0)
                + Self.le16(method) + Self.le16(0) + Self.le16(0) + Self.le32(crc)
                + Self.le32(zip64 ? big : UInt64(data.count)) + Self.le32(zip64 ? big : UInt64(item.content.count))
                + Self.le16(name.count) + Self.le16(extra.count) + Self.le16(0) + Self.le16(0) + Self.le16(0)
                + Self.le32(0) + Self.le32(zip64 ? big : offset) + name + extra
        }
        let directoryOffset = UInt64(archive.count)
        archive += directory
        if zip64 {
            let recordOffset = UInt64(archive.count)
            archive += Self.le32(0x0606_4b50) + Self.le64(44) + Self.le16(45) + Self.le16(45) + Self.le32(0) + Self.le32(0)
                + Self.le64(UInt64(items.count)) + Self.le64(UInt64(items.count)) + Self.le64(UInt64(directory.count))
                + Self.le64(directoryOffset)
            archive += Self.le32(0x0706_4b50) + Self.le32(0) + Self.le64(recordOffset) + Self.le32(1)
        }
        archive += Self.le32(0x0605_4b50) + Self.le16(0) + Self.le16(0)
            + Self.le16(zip64 ? 0xFFFF : items.count) + Self.le16(zip64 ? 0xFFFF : items.count)
            + Self.le32(zip64 ? 0xFFFF_FFFF : UInt64(directory.count)) + Self.le32(zip64 ? 0xFFFF_FFFF : directoryOffset)
            + Self.le16(0)
        return archive
    }
}

@Suite struct ZipExportSourceTests {
    static let xml = Array(("<?xml version=\"1.0\"?>\n<HealthData>\n" + String(repeating: " <Record type=\"HKQuantityTypeIdentifierStepCount\" value=\"12\"/>\n", count: 400)
                            + "</HealthData>\n").utf8)

    /// Writes the archive to a temporary file (the reader seeks in a file) and reads the export through it.
    @discardableResult
    static func withArchive<T>(_ bytes: [UInt8], _ body: (String) throws -> T) throws -> T {
        let path = NSTemporaryDirectory() + "healthd-zip-test-" + UUID().uuidString + ".zip"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try body(path)
    }

    static func readAll(_ source: ZipExportSource, chunk: Int = 1000) throws -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: chunk)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { return result }
            result += buffer.prefix(count)
        }
    }

    static func archive(zip64: Bool, deflate: Bool) -> [UInt8] {
        ZipBuilder(items: [
            .init(name: "apple_health_export/", content: [], deflate: false),
            .init(name: "apple_health_export/export_cda.xml", content: Array("<ClinicalDocument/>".utf8), deflate: deflate),
            .init(name: "apple_health_export/export.xml", content: xml, deflate: deflate),
            .init(name: "__MACOSX/apple_health_export/._export.xml", content: [UInt8](repeating: 7, count: 9000), deflate: false),
        ], zip64: zip64).bytes()
    }

    @Test(arguments: [(false, false), (false, true), (true, false), (true, true)])
    func readsTheMainExportXML(zip64: Bool, deflate: Bool) throws {
        let bytes = Self.archive(zip64: zip64, deflate: deflate)
        try Self.withArchive(bytes) { path in
            let source = try ZipExportSource(path: path)
            #expect(source.entry.name == "apple_health_export/export.xml")
            #expect(source.entry.method == (deflate ? 8 : 0))
            #expect(source.totalBytes == Int64(Self.xml.count))
            #expect(try Self.readAll(source) == Self.xml)
            #expect(try Self.readAll(source).isEmpty, "the end stays the end")
        }
    }

    @Test func zip64ValuesComeFromTheExtraFieldAndTheEndRecord() throws {
        let bytes = Self.archive(zip64: true, deflate: true)
        let entries = try Self.withArchive(bytes) { path -> [ZipExportSource.Entry] in
            let handle = try #require(FileHandle(forReadingAtPath: path))
            defer { try? handle.close() }
            return try ZipExportSource.centralDirectory(handle)
        }
        #expect(entries.count == 4)
        #expect(entries.map(\.uncompressedSize) == [0, 19, UInt64(Self.xml.count), 9000])
        #expect(entries[0].localHeaderOffset == 0)
        #expect(entries[1].localHeaderOffset == 30 + 20)
        #expect(entries[2].compressedSize < entries[2].uncompressedSize)
    }

    @Test func anArchiveWithoutAnExportSaysSo() throws {
        let bytes = ZipBuilder(items: [.init(name: "photos/cat.jpg", content: [1, 2, 3], deflate: false)]).bytes()
        try Self.withArchive(bytes) { path in
            #expect(throws: AppleHealthImportError.self) { try ZipExportSource(path: path) }
            do { _ = try ZipExportSource(path: path) } catch {
                #expect("\(error)".contains("no Apple Health export XML"))
            }
        }
    }

    @Test func notAZipIsAClearError() throws {
        for bytes in [[UInt8](), Array("export.xml is not here".utf8), [UInt8](repeating: 0, count: 70_000)] {
            try Self.withArchive(bytes) { path in
                do {
                    _ = try ZipExportSource(path: path)
                    Issue.record("\(bytes.count) bytes opened as a zip")
                } catch {
                    #expect("\(error)".contains("not a zip file"))
                }
            }
        }
    }

    /// Every truncation of a zip and a zip64 archive, deflated and stored: an error or (past the
    /// entry's data) the full XML, never a crash, a hang or wrong bytes.
    @Test(arguments: [(false, false), (false, true), (true, false), (true, true)])
    func everyTruncationFailsCleanly(zip64: Bool, deflate: Bool) throws {
        let whole = Self.archive(zip64: zip64, deflate: deflate)
        for length in stride(from: 0, to: whole.count, by: max(1, whole.count / 150)) {
            try Self.withArchive(Array(whole.prefix(length))) { path in
                do {
                    let source = try ZipExportSource(path: path)
                    let read = try Self.readAll(source)
                    #expect(read == Self.xml, "length \(length) read wrong bytes")
                } catch let error as AppleHealthImportError {
                    #expect(!"\(error)".isEmpty)
                }
            }
        }
    }

    /// Damage: each byte of the directories and the data set to 0xFF in turn.
    @Test(arguments: [false, true])
    func corruptBytesGiveErrorsNotCrashes(zip64: Bool) throws {
        let whole = Self.archive(zip64: zip64, deflate: true)
        var errors = 0
        for position in stride(from: 0, to: whole.count, by: max(1, whole.count / 200)) {
            var damaged = whole
            damaged[position] = damaged[position] == 0xFF ? 0 : 0xFF
            try Self.withArchive(damaged) { path in
                do {
                    let source = try ZipExportSource(path: path)
                    _ = try Self.readAll(source)
                } catch is AppleHealthImportError {
                    errors += 1
                }
            }
        }
        #expect(errors > 0)
    }

    @Test func aDamagedZip64LocatorIsRefused() throws {
        var bytes = Self.archive(zip64: true, deflate: false)
        // The locator's record offset (8 bytes, 22 + 20 - 8 from the end) pointing far past the file.
        let at = bytes.count - 22 - 20 + 8
        bytes.replaceSubrange(at..<(at + 8), with: ZipBuilder.le64(UInt64.max - 3))
        try Self.withArchive(bytes) { path in
            #expect(throws: AppleHealthImportError.self) { try ZipExportSource(path: path) }
        }
    }

    @Test func anOverflowingZip64DirectoryIsRefused() throws {
        var bytes = Self.archive(zip64: true, deflate: false)
        // The zip64 end record's directory offset (its last 8 bytes, just before the 20-byte locator).
        let at = bytes.count - 22 - 20 - 8
        bytes.replaceSubrange(at..<(at + 8), with: ZipBuilder.le64(UInt64.max - 10))
        try Self.withArchive(bytes) { path in
            #expect(throws: AppleHealthImportError.self) { try ZipExportSource(path: path) }
        }
    }

    /// A zip64 extra field whose length runs past the entry's extra area (here the directory's
    /// last bytes) is damage, not a read past the directory.
    @Test func aZip64ExtraFieldLongerThanItsAreaIsRefused() throws {
        var bytes = ZipBuilder(items: [.init(name: "apple_health_export/export.xml", content: Self.xml, deflate: false)],
                               zip64: true).bytes()
        let recordSignature = ZipBuilder.le32(0x0606_4b50)
        let record = try #require((0...(bytes.count - 4)).last { Array(bytes[$0..<($0 + 4)]) == recordSignature })
        // The entry's 28-byte extra area ends the directory: another tag's 20 bytes, then the zip64
        // tag claiming 65,535 bytes with none left.
        let extra = record - 28
        bytes.replaceSubrange(extra..<record, with: ZipBuilder.le16(0x7777) + ZipBuilder.le16(20) + [UInt8](repeating: 0, count: 20)
                              + ZipBuilder.le16(1) + ZipBuilder.le16(0xFFFF))
        try Self.withArchive(bytes) { path in
            #expect(throws: AppleHealthImportError.self) { try ZipExportSource(path: path) }
        }
    }
}
