import CZlib
import Foundation

/// Reads the main XML of the Health app's `export.zip` without unpacking it: finds the entry through
/// the zip's central directory (zip64 included: real exports pass 4 GB) and inflates it as it is read.
public final class ZipExportSource: AppleHealthByteSource {
    struct Entry {
        var name: String
        var method: UInt16
        var compressedSize: UInt64
        var uncompressedSize: UInt64
        var localHeaderOffset: UInt64
    }

    let entry: Entry
    private let file: FileHandle
    private var remainingCompressed: UInt64
    private var input = [UInt8]()
    private var inputOffset = 0
    private var stream = z_stream()
    private var inflating = false
    private var ended = false

    public var totalBytes: Int64? { Int64(exactly: entry.uncompressedSize) }

    public init(path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw AppleHealthImportError.unreadable("cannot open \(path)")
        }
        file = handle
        let entries = try Self.centralDirectory(handle)
        guard let chosen = Self.mainExport(in: entries) else {
            throw AppleHealthImportError.notAnExport(
                "\(path) holds no Apple Health export XML (expected apple_health_export/export.xml)")
        }
        entry = chosen
        remainingCompressed = chosen.compressedSize
        try handle.seek(toOffset: chosen.localHeaderOffset)
        let local = try Self.readExactly(handle, 30)
        guard Self.uint32(local, 0) == 0x0403_4b50 else { throw AppleHealthImportError.notAnExport("damaged zip: bad local header") }
        let skip = UInt64(Self.uint16(local, 26)) + UInt64(Self.uint16(local, 28))
        try handle.seek(toOffset: chosen.localHeaderOffset + 30 + skip)
        switch chosen.method {
        case 0: break
        case 8:
            // Raw deflate (negative window bits): zip entries carry no zlib header.
            let status = inflateInit2_(&stream, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
            guard status == Z_OK else { throw AppleHealthImportError.unreadable("zlib could not start (\(status))") }
            inflating = true
        default:
            throw AppleHealthImportError.notAnExport("zip entry \(chosen.name) uses compression method \(chosen.method); only stored and deflate are supported")
        }
    }

    deinit {
        if inflating { inflateEnd(&stream) }
        try? file.close()
    }

    /// The export's main XML: under the export folder, `.xml`, not the clinical `export_cda.xml`,
    /// not macOS metadata. Its name is localized on some phones, so any such XML qualifies; the largest wins.
    static func mainExport(in entries: [Entry]) -> Entry? {
        entries.filter { entry in
            let parts = entry.name.split(separator: "/")
            guard let last = parts.last, parts.count <= 2, !entry.name.hasPrefix("__MACOSX/") else { return false }
            let lower = last.lowercased()
            return lower.hasSuffix(".xml") && !lower.hasPrefix("._") && lower != "export_cda.xml" && !lower.hasPrefix(".")
        }.max { $0.uncompressedSize < $1.uncompressedSize }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0, !ended else { return 0 }
        if !inflating {
            let want = Int(min(UInt64(buffer.count), remainingCompressed))
            guard want > 0 else { ended = true; return 0 }
            let data = try file.read(upToCount: want) ?? Data()
            guard !data.isEmpty else { throw AppleHealthImportError.unreadable("the zip ends inside \(entry.name)") }
            data.copyBytes(to: base.assumingMemoryBound(to: UInt8.self), count: data.count)
            remainingCompressed -= UInt64(data.count)
            return data.count
        }
        while true {
            if inputOffset >= input.count && remainingCompressed > 0 {
                let data = try file.read(upToCount: Int(min(256 * 1024, remainingCompressed))) ?? Data()
                guard !data.isEmpty else { throw AppleHealthImportError.unreadable("the zip ends inside \(entry.name)") }
                input = [UInt8](data)
                inputOffset = 0
                remainingCompressed -= UInt64(data.count)
            }
            let offset = inputOffset
            let (produced, consumed, status) = input.withUnsafeMutableBufferPointer { pointer -> (Int, Int, Int32) in
                stream.next_in = pointer.baseAddress.map { $0 + offset }
                stream.avail_in = UInt32(pointer.count - offset)
                stream.next_out = base.assumingMemoryBound(to: Bytef.self)
                stream.avail_out = UInt32(min(buffer.count, Int(UInt32.max)))
                let status = inflate(&stream, Z_NO_FLUSH)
                return (buffer.count - Int(stream.avail_out), pointer.count - offset - Int(stream.avail_in), status)
            }
            inputOffset += consumed
            if status == Z_STREAM_END { ended = true; return produced }
            guard status == Z_OK || status == Z_BUF_ERROR else {
                throw AppleHealthImportError.unreadable("\(entry.name) is damaged (inflate error \(status))")
            }
            if produced > 0 { return produced }
            if remainingCompressed == 0 && inputOffset >= input.count {
                throw AppleHealthImportError.unreadable("\(entry.name) is truncated")
            }
        }
    }

    // MARK: Central directory

    static func centralDirectory(_ handle: FileHandle) throws -> [Entry] {
        let size = try handle.seekToEnd()
        // The end record (22 bytes plus a comment of up to 64 KiB) sits at the very end.
        let tailLength = min(size, 22 + 65_535 + 20)
        try handle.seek(toOffset: size - tailLength)
        let tail = try readExactly(handle, Int(tailLength))
        guard tail.count >= 22, let end = stride(from: tail.count - 22, through: 0, by: -1).first(where: { uint32(tail, $0) == 0x0605_4b50 }) else {
            throw AppleHealthImportError.notAnExport("not a zip file (no end of central directory)")
        }
        var entryCount = UInt64(uint16(tail, end + 10))
        var directorySize = UInt64(uint32(tail, end + 12))
        var directoryOffset = UInt64(uint32(tail, end + 16))
        // Zip64: a locator 20 bytes before the end record points at the 64-bit end record.
        if end >= 20, uint32(tail, end - 20) == 0x0706_4b50 {
            let recordOffset = uint64(tail, end - 20 + 8)
            guard recordOffset < size else { throw AppleHealthImportError.notAnExport("damaged zip64 end record locator") }
            try handle.seek(toOffset: recordOffset)
            let record = try readExactly(handle, 56)
            guard uint32(record, 0) == 0x0606_4b50 else { throw AppleHealthImportError.notAnExport("damaged zip64 end record") }
            entryCount = uint64(record, 32)
            directorySize = uint64(record, 40)
            directoryOffset = uint64(record, 48)
        }
        // Checked without overflow: a damaged zip64 record can hold any 64-bit value.
        let (directoryEnd, overflow) = directoryOffset.addingReportingOverflow(directorySize)
        guard directorySize < 512 * 1024 * 1024, !overflow, directoryEnd <= size else {
            throw AppleHealthImportError.notAnExport("damaged zip: central directory out of range")
        }
        try handle.seek(toOffset: directoryOffset)
        let directory = try readExactly(handle, Int(directorySize))
        var entries: [Entry] = []
        var position = 0
        for _ in 0..<entryCount {
            guard position + 46 <= directory.count, uint32(directory, position) == 0x0201_4b50 else {
                throw AppleHealthImportError.notAnExport("damaged zip: bad central directory entry")
            }
            let nameLength = Int(uint16(directory, position + 28))
            let extraLength = Int(uint16(directory, position + 30))
            let commentLength = Int(uint16(directory, position + 32))
            guard position + 46 + nameLength + extraLength + commentLength <= directory.count else {
                throw AppleHealthImportError.notAnExport("damaged zip: central directory entry overruns")
            }
            var entry = Entry(
                name: String(decoding: directory[(position + 46)..<(position + 46 + nameLength)], as: UTF8.self),
                method: uint16(directory, position + 10), compressedSize: UInt64(uint32(directory, position + 20)),
                uncompressedSize: UInt64(uint32(directory, position + 24)),
                localHeaderOffset: UInt64(uint32(directory, position + 42)))
            // Zip64 extra field: the 64-bit values of whichever fields are 0xFFFFFFFF, in this order.
            var extra = position + 46 + nameLength
            let extraEnd = extra + extraLength
            while extra + 4 <= extraEnd {
                let tag = uint16(directory, extra)
                let length = Int(uint16(directory, extra + 2))
                if tag == 0x0001 {
                    var field = extra + 4
                    func next() -> UInt64? {
                        // Within the field's own length and the entry's extra area: a damaged length can claim more.
                        guard field + 8 <= min(extra + 4 + length, extraEnd) else { return nil }
                        defer { field += 8 }
                        return uint64(directory, field)
                    }
                    if entry.uncompressedSize == 0xFFFF_FFFF, let value = next() { entry.uncompressedSize = value }
                    if entry.compressedSize == 0xFFFF_FFFF, let value = next() { entry.compressedSize = value }
                    if entry.localHeaderOffset == 0xFFFF_FFFF, let value = next() { entry.localHeaderOffset = value }
                }
                extra += 4 + length
            }
            // An entry's data precedes the central directory; anything else is damage, and would seek out of the file.
            guard entry.localHeaderOffset < directoryOffset, entry.compressedSize <= directoryOffset - entry.localHeaderOffset else {
                throw AppleHealthImportError.notAnExport("damaged zip: entry \(entry.name) lies outside the archive")
            }
            entries.append(entry)
            position += 46 + nameLength + extraLength + commentLength
        }
        return entries
    }

    static func readExactly(_ handle: FileHandle, _ count: Int) throws -> [UInt8] {
        let data = try handle.read(upToCount: count) ?? Data()
        guard data.count == count else { throw AppleHealthImportError.notAnExport("damaged zip: unexpected end of file") }
        return [UInt8](data)
    }

    static func uint16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
    static func uint32(_ bytes: [UInt8], _ at: Int) -> UInt32 { UInt32(uint16(bytes, at)) | UInt32(uint16(bytes, at + 2)) << 16 }
    static func uint64(_ bytes: [UInt8], _ at: Int) -> UInt64 { UInt64(uint32(bytes, at)) | UInt64(uint32(bytes, at + 4)) << 32 }
}
