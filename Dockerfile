# healthd container image. Multi-stage: build with the official Swift image of the release the
# code is built and tested with (Tests/e2e/dockerfile.py compares it with `swift --version`), run
# on a slim Debian of the same release with only the runtime libraries, as a non-root user.
# (No Docker engine runs on the project's build machines: Tests/e2e/dockerfile.py checks that the
# build stage's files make the package, that the runtime stage has every library the binary links
# or loads, and that the health check reads the server's port.)

FROM swift:6.3.1-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libsqlite3-dev zlib1g-dev libargon2-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Every folder the manifest names a target in: SwiftPM refuses a manifest with a missing target
# folder even when building one product (Tests/e2e/dockerfile.py checks this list in CI).
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
COPY Benchmarks ./Benchmarks
RUN swift build -c release --product healthd --static-swift-stdlib \
 && mkdir -p /out \
 && cp "$(swift build -c release --show-bin-path)/healthd" /out/healthd

FROM debian:bookworm-slim
# Runtime libraries (what `ldd` lists for the binary; the Swift runtime is linked in statically):
# SQLite, zlib and Argon2 (our system-library targets), libstdc++6 (Foundation's ICU), libpq5 (loaded only
# for --database postgres://...), tzdata for IANA time zones in statistics, curl for the health
# check. (The importer's XML tokenizer is our own: no libxml2.)
RUN apt-get update \
 && apt-get install -y --no-install-recommends libsqlite3-0 zlib1g libargon2-1 libstdc++6 libpq5 tzdata ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/healthd --create-home healthd
COPY --from=build /out/healthd /usr/local/bin/healthd
COPY Public /usr/share/healthd/Public
COPY config.example.json /etc/healthd/config.example.json
USER healthd
WORKDIR /var/lib/healthd
VOLUME ["/var/lib/healthd"]
# The port is HEALTHD_PORT (`docker run -e HEALTHD_PORT=9000 -p 9000:9000 …`): the server and the
# health check both read it, so they cannot disagree.
ENV HEALTHD_PORT=8080
EXPOSE 8080
ENV HEALTHD_PUBLIC_DIR=/usr/share/healthd/Public
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD curl -fsS "http://127.0.0.1:${HEALTHD_PORT}/healthz" || exit 1
# Listen on all interfaces inside the container; publish the port to choose who can reach it.
ENTRYPOINT ["healthd"]
CMD ["serve", "--host", "0.0.0.0", "--data-dir", "/var/lib/healthd"]
