# qa-loop as a container: `uses: docker://ghcr.io/<org>/qa-loop:<tag>`, GitLab CI, any runner.
# Build from source:            docker build -t qa-loop .
# From a released binary:       docker build --build-arg PREBUILT=qa-loop -t qa-loop .
#                               (release.yml: the static musl binary unpacked next to this file)

ARG PREBUILT=""

FROM rust:1.95-alpine3.22 AS build
RUN apk add --no-cache musl-dev=~1
WORKDIR /src
COPY . .
ARG PREBUILT
RUN if [ -n "$PREBUILT" ]; then install -m 0755 "$PREBUILT" /qa-loop; \
    else cargo build --release --locked && install -m 0755 target/release/qa-loop /qa-loop; fi

# The runtime: git (diffs, fix commits, pushes) and CA certificates (the model APIs, GitHub).
FROM alpine:3.22
RUN apk add --no-cache git=~2 ca-certificates=~20 \
    && adduser -D -u 10001 qa \
    && git config --system --add safe.directory '*'
COPY --from=build /qa-loop /usr/local/bin/qa-loop
USER 10001
WORKDIR /work
ENTRYPOINT ["qa-loop"]
CMD ["--help"]
