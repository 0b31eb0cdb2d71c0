# qa-loop as a container: `uses: docker://ghcr.io/<org>/qa-loop:<tag>`, GitLab CI, any runner.
# Build from source:            docker build -t qa-loop .
# From a released binary:       docker build --build-arg PREBUILT=qa-loop -t qa-loop .
#                               (release.yml: the static musl binary unpacked next to this file)
#
# The image is FROM scratch: the static binary, git with its HTTPS helper and the libraries they
# load, CA certificates, busybox as /bin/sh, user 10001 (scripts/image-rootfs.sh assembles it; the
# container smoke test builds this same file). Size: BENCHMARKS.md.

ARG RUST_IMAGE=rust:1.95-slim-bookworm
ARG DEBIAN_IMAGE=debian:bookworm-slim

FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY . .
ARG PREBUILT=""
# Versions are not pinned: the Debian release is pinned by the base image, and exact package
# versions disappear from the archive with each security update.
# hadolint ignore=DL3008
RUN if [ -n "$PREBUILT" ]; then install -m 0755 "$PREBUILT" /qa-loop; \
    else apt-get update && apt-get install -y --no-install-recommends musl-tools \
      && target="$(uname -m)-unknown-linux-musl" && rustup target add "$target" \
      && cargo build --release --locked --target "$target" \
      && install -m 0755 "target/$target/release/qa-loop" /qa-loop; fi

FROM ${DEBIAN_IMAGE} AS rootfs
# hadolint ignore=DL3008
RUN dpkg -s git ca-certificates busybox-static >/dev/null 2>&1 \
    || { apt-get update && apt-get install -y --no-install-recommends git ca-certificates busybox-static \
         && rm -rf /var/lib/apt/lists/*; }
COPY scripts/image-rootfs.sh /image-rootfs.sh
COPY --from=build /qa-loop /qa-loop
RUN sh /image-rootfs.sh /rootfs /qa-loop

FROM scratch
COPY --from=rootfs /rootfs /
ENV PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/qa
USER 10001
WORKDIR /work
ENTRYPOINT ["qa-loop"]
CMD ["--help"]
