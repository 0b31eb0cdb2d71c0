#!/usr/bin/env bash
# Container smoke test: builds the repository's Dockerfile (the released image: FROM scratch, the
# static musl binary, git, CA certificates, busybox, user 10001) and runs, with --network none,
# `qa-loop --version` in it and the offline `qa-loop demo` in it plus python3 (the demo's example
# project is tested with python3). Prints the image's size.
#
# Base images cannot be pulled here (only package registries are reachable), so the Dockerfile's
# Debian stages get a bookworm minbase made by debootstrap and imported into podman
# (--build-arg RUST_IMAGE / DEBIAN_IMAGE), and the binary is built first and passed as PREBUILT.
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
base=localhost/qa-loop-base:bookworm-busybox
mkdir -p "$work"
if ! podman image exists "$base" || [ ! -x "$work/rootfs/bin/busybox" ]; then
  echo "== base image: debootstrap bookworm minbase + git, ca-certificates, busybox-static, python3"
  rm -rf "$work/rootfs"
  debootstrap --variant=minbase --include=git,ca-certificates,busybox-static,python3-minimal \
    bookworm "$work/rootfs" http://deb.debian.org/debian >/dev/null
  tar -C "$work/rootfs" -c . | podman import - "$base" >/dev/null
fi

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/image/scripts" "$ctx/demo"
cp Dockerfile "$ctx/image/Dockerfile"
cp scripts/image-rootfs.sh "$ctx/image/scripts/"
cp "$bin" "$ctx/image/qa-loop"

echo "== the image (Dockerfile, PREBUILT binary)"
podman build -q --network none --build-arg PREBUILT=qa-loop \
  --build-arg RUST_IMAGE="$base" --build-arg DEBIAN_IMAGE="$base" \
  -t localhost/qa-loop:smoke "$ctx/image" >/dev/null

# This sandbox refuses podman's default process-count limit; these limits are allowed.
run() { podman run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=1000:1000 "$@"; }

echo "== qa-loop --version (no network)"
run localhost/qa-loop:smoke --version | tee "$ctx/version"
grep -q "^qa-loop $(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)$" "$ctx/version"
# Non-root, git present, and its HTTPS helper loads (it reaches the connection, not a loader error).
run --entrypoint sh localhost/qa-loop:smoke -c 'id -u; git --version; test -s /etc/ssl/certs/ca-certificates.crt
  git ls-remote https://127.0.0.1:9/x.git 2>&1' | tee "$ctx/runtime" || true
grep -qx 10001 "$ctx/runtime"
grep -q "Failed to connect to 127.0.0.1 port 9" "$ctx/runtime"

echo "== qa-loop demo (no network; the image plus python3 for the example project's tests)"
chroot "$work/rootfs" dpkg -L python3-minimal python3.11-minimal libpython3.11-minimal libexpat1 zlib1g libc6 \
  | while read -r f; do if [ ! -d "$work/rootfs$f" ] && { [ -L "$work/rootfs$f" ] || [ -f "$work/rootfs$f" ]; }; then echo ".$f"; fi; done > "$ctx/demo/files"
( cd "$work/rootfs" && tar -cf "$ctx/demo/python.tar" -T "$ctx/demo/files" )
printf 'FROM localhost/qa-loop:smoke\nADD python.tar /\n' > "$ctx/demo/Containerfile"
podman build -q --network none -t localhost/qa-loop:smoke-demo "$ctx/demo" >/dev/null
run localhost/qa-loop:smoke-demo demo | tee "$ctx/demo.out"
grep -q "^Verdict: *approved" "$ctx/demo.out"

size=$(podman image inspect --format '{{.Size}}' localhost/qa-loop:smoke)
packed=$(podman save localhost/qa-loop:smoke | gzip -6 | wc -c)
podman image prune -f >/dev/null
echo "container smoke test passed; image $((size / 1000000)) MB ($size bytes), $((packed / 1000000)) MB gzipped; static binary $(( $(stat -c %s "$bin") / 1000000 )) MB"
