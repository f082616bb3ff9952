import HealthModel
import Testing
@testable import AppleHealthExport

/// Writes each event as a line: `<name a="v" b="w">` for a start tag, `</name>` for an end.
private struct EventRecorder: XMLTokenHandler {
    var events: [String] = []

    mutating func startElement(_ tag: XMLStartTag) {
        var line = "<" + String(decoding: tag.name, as: UTF8.self)
        for index in 0..<tag.attributeCount {
            line += " \(String(decoding: tag.attributeName(at: index), as: UTF8.self))=\"\(tag.value(at: index))\""
        }
        events.append(line + ">")
    }

    mutating func endElement(_ name: UnsafeRawBufferPointer) {
        events.append("</" + String(decoding: name, as: UTF8.self) + ">")
    }
}

/// Tokenizes `bytes` fed in chunks of `chunk` bytes; the events, or the error.
private func tokenize(_ bytes: [UInt8], chunk: Int) -> Result<[String], XMLSyntaxError> {
    var tokenizer = XMLTokenizer()
    var recorder = EventRecorder()
    do throws(XMLSyntaxError) {
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + chunk)
            var failure: XMLSyntaxError?
            bytes.withUnsafeBytes { raw in
                do throws(XMLSyntaxError) { try tokenizer.feed(UnsafeRawBufferPointer(rebasing: raw[start..<end]), to: &recorder) } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
            start = end
        }
        try tokenizer.finish(to: &recorder)
    } catch {
        return .failure(error)
    }
    return .success(recorder.events)
}

private func tokenize(_ text: String, chunk: Int) -> Result<[String], XMLSyntaxError> { tokenize(Array(text.utf8), chunk: chunk) }

private let chunkSizes = [1, 2, 3, 7, 64, 4096]

@Suite struct XMLTokenizerTests {
    @Test func eventsAreTheSameForEveryChunkSize() throws {
        let document = """
            \u{FEFF}<?xml version="1.0" encoding="UTF-8"?>
            <!-- exported -->
            <!DOCTYPE HealthData [
            <!ELEMENT HealthData (ExportDate,Me,(Record|Correlation)*)>
            <!ATTLIST Me
              HKCharacteristicTypeIdentifierDateOfBirth CDATA #REQUIRED
              HKCharacteristicTypeIdentifierDateOfBirth CDATA #REQUIRED>
            <!ATTLIST Broken "unbalanced ' quote
            ]>
            <HealthData locale="en_US">
             <?processing instruction?>
             <Record type = 'HKQuantityTypeIdentifierStepCount'
                     sourceName="Jane&apos;s iPhone &amp; &quot;Watch&quot;" value="12"
                     device="&lt;&lt;HKDevice: 0x1&gt;, name:iPhone&gt;"/>
             <Record	type="a"	value='&#65;&#x42;&#x1F600; é ü 心'  >text &amp; more<![CDATA[ <not a tag> ]]></Record >
             <MetadataEntry key="line
            break" value="tab\there"/>
            </HealthData>
            <!-- after -->

            """
        let expected = [
            "<HealthData locale=\"en_US\">",
            "<Record type=\"HKQuantityTypeIdentifierStepCount\" sourceName=\"Jane's iPhone & \"Watch\"\" value=\"12\" device=\"<<HKDevice: 0x1>, name:iPhone>\">",
            "</Record>",
            "<Record type=\"a\" value=\"AB😀 é ü 心\">",
            "</Record>",
            "<MetadataEntry key=\"line break\" value=\"tab here\">",
            "</MetadataEntry>",
            "</HealthData>",
        ]
        for chunk in chunkSizes {
            #expect(try tokenize(document, chunk: chunk).get() == expected, "chunk size \(chunk)")
        }
    }

    @Test func doctypeWithoutSubsetAndWithQuotedGreaterThan() throws {
        let document = #"<!DOCTYPE HealthData SYSTEM "a>b.dtd"><HealthData/>"#
        for chunk in chunkSizes {
            #expect(try tokenize(document, chunk: chunk).get() == ["<HealthData>", "</HealthData>"])
        }
    }

    private func error(_ document: String) -> XMLSyntaxError? {
        let errors = chunkSizes.map { chunk -> XMLSyntaxError? in
            if case .failure(let error) = tokenize(document, chunk: chunk) { return error }
            return nil
        }
        // The same error wherever the chunk boundaries fall.
        #expect(Set(errors.map { $0?.description ?? "none" }).count == 1, "\(errors)")
        return errors.first ?? nil
    }

    @Test func mismatchedEndTagSaysWhere() throws {
        let found = try #require(error("<HealthData>\n  <Record>\n  </Workout>\n</HealthData>"))
        #expect(found.line == 3)
        #expect(found.column == 3)
        #expect(found.detail.contains("</Workout>"))
        #expect(found.detail.contains("<Record>"))
    }

    @Test func fileEndingInsideATagOrAnElement() throws {
        let insideTag = try #require(error("<HealthData>\n<Record type=\"a\" value="))
        #expect(insideTag.line == 2)
        #expect(insideTag.column == 1)
        #expect(insideTag.detail.contains("ends inside"))
        let insideElement = try #require(error("<HealthData>\n<Record/>\n"))
        #expect(insideElement.detail.contains("</HealthData>"))
        #expect(insideElement.line == 3)
        #expect(error("<HealthData><!-- unfinished")?.detail.contains("ends inside") == true)
        #expect(error("<HealthData><")?.detail.contains("ends inside") == true)
    }

    @Test func badAttributeSyntax() {
        #expect(error(#"<a b=c/>"#)?.detail.contains("quoted") == true)
        #expect(error(#"<a b/>"#)?.detail.contains("'='") == true)
        #expect(error(#"<a b="1"c="2"/>"#)?.detail.contains("whitespace") == true)
        #expect(error(#"<a b="1" b="2"/>"#)?.detail.contains("twice") == true)
        #expect(error(#"<a b="x<y"/>"#)?.detail.contains("'<'") == true)
        #expect(error(#"<a b="&nbsp;"/>"#)?.detail.contains("&nbsp;") == true)
        #expect(error(#"<a b="&#0;"/>"#) != nil)
        #expect(error(#"<a b="&#xD800;"/>"#) != nil)
        #expect(error(#"<a b="& x"/>"#) != nil)
        #expect(error(#"<a "b"="1"/>"#) != nil)
        #expect(error(#"<a/ >"#) != nil)
        #expect(error(#"< a/>"#) != nil)
        #expect(error(#"<1a/>"#) != nil)
    }

    @Test func documentStructure() {
        #expect(error("hello <a/>")?.detail.contains("before the root") == true)
        #expect(error("<a/>trailing")?.detail.contains("after the root") == true)
        #expect(error("<a/><b/>")?.detail.contains("second root") == true)
        #expect(error("</a>")?.detail.contains("without a start tag") == true)
        #expect(error("<a><!ELEMENT x></a>") != nil)
        #expect(error("<![CDATA[x]]><a/>") != nil)
        #expect(error("<a/><!DOCTYPE a>") != nil)
        #expect(error("  \n<a/>\n  ") == nil)
        #expect(error("") == nil)
    }

    @Test func invalidUTF8PassesThroughWithoutTrapping() throws {
        var bytes = Array(#"<a b=""#.utf8)
        bytes += [0xFF, 0xC3, 0x28, 0xE2, 0x82]
        bytes += Array(#""/>"#.utf8)
        for chunk in chunkSizes {
            let events = try tokenize(bytes, chunk: chunk).get()
            #expect(events.count == 2)
        }
    }
}

@Suite struct AppleHealthExportParserTests {
    private static let export = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE HealthData [
        <!ATTLIST Record type CDATA #REQUIRED type CDATA #REQUIRED>
        ]>
        <HealthData locale="en_US">
         <Me HKCharacteristicTypeIdentifierDateOfBirth="1980-02-03" HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexFemale"/>
         <Record type="HKQuantityTypeIdentifierHeartRate" sourceName="Jane&#39;s Watch\u{01}" unit="count/min" value="74"
          device="&lt;&lt;HKDevice: 0x1&gt;, name:Apple Watch, manufacturer:Apple Inc.&gt;"
          startDate="2024-01-01 10:00:00 +0000" endDate="2024-01-01 10:00:00 +0000">
          <MetadataEntry key="HKMetadataKeyHeartRateMotionContext" value="0"/>
         </Record>
         <Correlation type="HKCorrelationTypeIdentifierBloodPressure" sourceName="Cuff" startDate="2024-01-01 08:00:00 +0000" endDate="2024-01-01 08:00:00 +0000">
          <Record type="HKQuantityTypeIdentifierBloodPressureSystolic" sourceName="Cuff" unit="mmHg" value="120" startDate="2024-01-01 08:00:00 +0000" endDate="2024-01-01 08:00:00 +0000"/>
          <Record type="HKQuantityTypeIdentifierBloodPressureDiastolic" sourceName="Cuff" unit="mmHg" value="80" startDate="2024-01-01 08:00:00 +0000" endDate="2024-01-01 08:00:00 +0000"/>
         </Correlation>
         <Workout workoutActivityType="HKWorkoutActivityTypeRunning" sourceName="Watch" startDate="2024-01-01 10:00:00 +0000" endDate="2024-01-01 10:30:00 +0000">
          <WorkoutActivity uuid="X" startDate="2024-01-01 10:00:00 +0000">
           <WorkoutEvent type="HKWorkoutEventTypePause" date="2024-01-01 10:05:00 +0000"/>
           <WorkoutStatistics type="HKQuantityTypeIdentifierActiveEnergyBurned" sum="300" unit="kcal"/>
          </WorkoutActivity>
         </Workout>
         <ActivitySummary dateComponents="2024-01-01" activeEnergyBurned="500" activeEnergyBurnedUnit="kcal"/>
         <Record type="HKQuantityTypeIdentifierStepCount" sourceName="iPhone" unit="count" value="-1" startDate="2024-01-01 10:00:00 +0000" endDate="2024-01-01 10:01:00 +0000"/>
        </HealthData>

        """

    private func parse(_ text: String, chunk: Int) -> (items: [AppleHealthImportItem], parser: AppleHealthExportParser, error: XMLSyntaxError?) {
        var parser = AppleHealthExportParser()
        var items: [AppleHealthImportItem] = []
        let bytes = Array(text.utf8)
        var start = 0
        var failure: XMLSyntaxError?
        while start < bytes.count, failure == nil {
            let end = min(bytes.count, start + chunk)
            bytes.withUnsafeBytes { raw in
                do throws(XMLSyntaxError) { try parser.feed(UnsafeRawBufferPointer(rebasing: raw[start..<end])) } catch { failure = error }
            }
            items += parser.drain()
            start = end
        }
        if failure == nil {
            do throws(XMLSyntaxError) { try parser.finish() } catch { failure = error }
        }
        items += parser.drain()
        return (items, parser, failure)
    }

    @Test func mapsAnExportTheSameWayForEveryChunkSize() throws {
        let whole = parse(Self.export, chunk: 1 << 20)
        #expect(whole.error == nil)
        #expect(whole.parser.sawHealthData && whole.parser.sawHealthDataEnd)
        #expect(whole.parser.removedDoctype)
        #expect(whole.parser.droppedControlCharacters == 1)
        #expect(whole.parser.records == 8)
        let samples = whole.items.compactMap { if case .sample(let sample) = $0 { sample } else { nil } }
        #expect(samples.map(\.sample.type) == ["heartRate", "bloodPressure", "workout"])
        #expect(samples.first?.app == "Jane's Watch")
        #expect(samples.first?.sample.device?.name == "Apple Watch")
        #expect(samples.first?.sample.metadata.map(\.key) == ["HKMetadataKeyHeartRateMotionContext"])
        guard case .workout(let details)? = samples.last?.sample.content else {
            Issue.record("no workout")
            return
        }
        #expect(details.events.map(\.type) == [.pause])
        #expect(details.totalEnergyBurned == 300)
        #expect(whole.items.contains { if case .activitySummary = $0 { true } else { false } })
        #expect(whole.items.contains(.characteristics(["dateOfBirth": "1980-02-03", "biologicalSex": "female"])))
        #expect(whole.items.contains { if case .skipped(let skip) = $0 { skip.type == "HKQuantityTypeIdentifierStepCount" } else { false } })
        for chunk in [1, 7, 4096] {
            let split = parse(Self.export, chunk: chunk)
            #expect(split.items == whole.items, "chunk size \(chunk)")
            #expect(split.error == nil)
        }
    }

    @Test func aTruncatedExportKeepsWhatWasCompleteAndSaysWhere() throws {
        let workout = try #require(Self.export.firstRange(of: "<Workout "))
        let cut = String(Self.export[..<workout.upperBound]) + "workoutActivityType=\"HKWorkout"  // stops inside <Workout ...
        let result = parse(cut, chunk: 7)
        let error = try #require(result.error)
        #expect(error.detail.contains("ends inside"))
        #expect(result.items.filter { if case .sample = $0 { true } else { false } }.count == 2)
        let unclosed = parse("<HealthData>\n<Record type=\"x\"/>", chunk: 4096)
        #expect(unclosed.error?.detail.contains("</HealthData>") == true)
    }
}
