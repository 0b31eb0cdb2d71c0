#!/usr/bin/env bash
# Container smoke test: the static musl qa-loop binary in a minimal container with the runtime
# the Dockerfile gives it (git, CA certificates, a numeric non-root user, ENTRYPOINT qa-loop),
# run with --network none: `qa-loop --version` and the offline `qa-loop demo` (which also needs
# python3 for the example project's tests).
#
# Base images cannot be pulled here (only package registries are reachable), so the base is a
# Debian bookworm minbase made by debootstrap and imported into podman. The production image
# (Dockerfile: Alpine) is built by release.yml on GitHub.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${@:2}"; }; }
need podman podman runc
need debootstrap debootstrap
need musl-gcc musl-tools
rustup target add x86_64-unknown-linux-musl >/dev/null 2>&1

echo "== static musl build"
cargo build --release --locked --target x86_64-unknown-linux-musl
bin=target/x86_64-unknown-linux-musl/release/qa-loop
file "$bin" 2>/dev/null | grep -q "static" || ldd "$bin" 2>&1 | grep -q "not a dynamic" || { echo "not a static binary: $bin"; exit 1; }

work="${XDG_CACHE_HOME:-$HOME/.cache}/qa-loop-ci/container"
mkdir -p "$work"
if ! podman image exists localhost/qa-loop-base:bookworm; then
  echo "== base image: debootstrap bookworm minbase + git, ca-certificates, python3"
  rm -rf "$work/rootfs"
  debootstrap --variant=minbase --include=git,ca-certificates,python3-minimal bookworm "$work/rootfs" http://deb.debian.org/debian >/dev/null
  tar -C "$work/rootfs" -c . | podman import - localhost/qa-loop-base:bookworm >/dev/null
fi

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
cp "$bin" "$ctx/qa-loop"
cat > "$ctx/Containerfile" <<'CF'
FROM localhost/qa-loop-base:bookworm
COPY qa-loop /usr/local/bin/qa-loop
RUN useradd -m -u 10001 qa && git config --system --add safe.directory '*'
USER 10001
WORKDIR /home/qa
ENTRYPOINT ["qa-loop"]
CF
podman build -q --network none -t localhost/qa-loop-smoke "$ctx" >/dev/null
# This sandbox refuses podman's default process-count limit; these limits are allowed.
run() { podman run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=1000:1000 localhost/qa-loop-smoke "$@"; }

echo "== qa-loop --version (no network)"
run --version | tee "$ctx/version"
grep -q "^qa-loop $(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)$" "$ctx/version"

echo "== qa-loop demo (no network)"
run demo | tee "$ctx/demo"
grep -q "^Verdict: *approved" "$ctx/demo"

size=$(stat -c %s "$bin")
echo "container smoke test passed; static binary $((size / 1024 / 1024)) MiB"
