#!/usr/bin/env bash
# Builds the libFuzzer targets (swiftc -sanitize=fuzzer,address) into .build-fuzz/ without touching
# the main Package.swift: each target is one module made of the sources it fuzzes plus its entry
# point; Primitives, JSON and Statistics are separate modules because other fuzzed sources import them. Targets: the HTTP parser, sample
# JSON bodies, HKUnit, instants, ISO 8601 calendar intervals, IMU CSV bodies (with the pedometer behind),
# Apple Health export.xml (repair filter, XML tokenizer, mapper; HealthModel is a separate module
# there because AppleHealthExport imports it), Health Auto Export bodies (streaming scanner and
# mapper; Crypto a module too), a webhook receiver's URL and response. Usage: Fuzz/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build-fuzz
mkdir -p "$out/modules"
# -package-name: the sources use `package` access (shared between a module and its tests in SwiftPM).
flags=(-sanitize=fuzzer,address -parse-as-library -O -g -swift-version 6 -package-name healthd)

swiftc "${flags[@]}" -emit-library -static -emit-module -module-name Primitives \
  -emit-module-path "$out/modules/Primitives.swiftmodule" -o "$out/modules/libPrimitives.a" Sources/Primitives/*.swift
swiftc "${flags[@]}" -emit-library -static -emit-module -module-name JSON -I "$out/modules" \
  -emit-module-path "$out/modules/JSON.swiftmodule" -o "$out/modules/libJSON.a" Sources/JSON/*.swift
swiftc "${flags[@]}" -module-name FuzzHTTPParser -I "$out/modules" -L "$out/modules" -lPrimitives \
  -o "$out/fuzz-http" Sources/HTTP/*.swift Fuzz/Targets/FuzzHTTPParser.swift
for target in JSONBody Unit Instant; do
  swiftc "${flags[@]}" -module-name "Fuzz$target" -I "$out/modules" -L "$out/modules" -lJSON -lPrimitives \
    -o "$out/fuzz-$(echo "$target" | tr 'A-Z' 'a-z')" Sources/HealthModel/*.swift "Fuzz/Targets/Fuzz$target.swift"
done
swiftc "${flags[@]}" -emit-library -static -emit-module -module-name HealthModel -I "$out/modules" \
  -emit-module-path "$out/modules/HealthModel.swiftmodule" -o "$out/modules/libHealthModel.a" Sources/HealthModel/*.swift
swiftc "${flags[@]}" -module-name FuzzAppleHealthXML -I "$out/modules" -L "$out/modules" -lHealthModel -lJSON -lPrimitives \
  -o "$out/fuzz-applehealthxml" Sources/AppleHealthExport/*.swift Fuzz/Targets/FuzzAppleHealthXML.swift
swiftc "${flags[@]}" -emit-library -static -emit-module -module-name Crypto \
  -emit-module-path "$out/modules/Crypto.swiftmodule" -o "$out/modules/libCrypto.a" Sources/Crypto/*.swift
swiftc "${flags[@]}" -module-name FuzzHealthAutoExport -I "$out/modules" -L "$out/modules" -lHealthModel -lJSON -lPrimitives -lCrypto \
  -o "$out/fuzz-healthautoexport" Sources/HealthAutoExport/*.swift Fuzz/Targets/FuzzHealthAutoExport.swift
swiftc "${flags[@]}" -module-name FuzzIMUCSV -o "$out/fuzz-imucsv" Sources/Pedometer/*.swift Fuzz/Targets/FuzzIMUCSV.swift
# Statistics is pure (Primitives only); the zone rules come from TimeZoneDatabase, built into the target.
swiftc "${flags[@]}" -emit-library -static -emit-module -module-name Statistics -I "$out/modules" \
  -emit-module-path "$out/modules/Statistics.swiftmodule" -o "$out/modules/libStatistics.a" Sources/Statistics/*.swift
swiftc "${flags[@]}" -module-name FuzzDuration -I "$out/modules" -L "$out/modules" -lStatistics -lPrimitives \
  -o "$out/fuzz-duration" Sources/TimeZoneDatabase/*.swift Fuzz/Targets/FuzzDuration.swift
# What a webhook receiver controls: its URL (NetworkPolicy) and its response (the client's parser, one pure file).
swiftc "${flags[@]}" -module-name FuzzWebhookPeer -o "$out/fuzz-webhookpeer" Sources/NetworkPolicy/*.swift \
  Sources/HTTPClient/HTTPResponseParser.swift Fuzz/Targets/FuzzWebhookPeer.swift
echo "fuzz: built $(ls "$out"/fuzz-* | tr '\n' ' ')"
