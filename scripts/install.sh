#!/usr/bin/env bash
# The action's install step: puts the static qa-loop binary for this runner on disk.
#
# 1. The version is the one of the action's own source (Cargo.toml next to this script), so the
#    binary always matches the action's ref (a tag, a moving major tag, a branch or a SHA).
# 2. The release asset qa-loop-<target>.tar.gz and its .sha256 are downloaded from the release
#    v<version>; the SHA-256 is verified — a mismatch refuses to install (never falls back).
# 3. Installed binaries are cached per version and target ($RUNNER_TOOL_CACHE).
# 4. When the release has no asset for this runner (404), qa-loop is built from the action's
#    source with cargo.
#
# Environment: QA_LOOP_ACTION_PATH (the action's checkout), QA_LOOP_INSTALL_REPO (owner/name),
# QA_LOOP_DOWNLOAD_BASE (default https://github.com/<repo>/releases/download; tests point it at
# a local server), RUNNER_TOOL_CACHE, GITHUB_OUTPUT (receives bin=<path>).
set -euo pipefail

action="${QA_LOOP_ACTION_PATH:-$(cd "$(dirname "$0")/.." && pwd)}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$action/Cargo.toml" | head -n 1)"
[ -n "$version" ] || { echo "::error title=qa-loop install::cannot read the version from $action/Cargo.toml"; exit 1; }

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) target=x86_64-unknown-linux-musl ;;
  Linux-aarch64 | Linux-arm64) target=aarch64-unknown-linux-musl ;;
  Darwin-x86_64) target=x86_64-apple-darwin ;;
  Darwin-arm64 | Darwin-aarch64) target=aarch64-apple-darwin ;;
  *) target="" ;;
esac

cache="${RUNNER_TOOL_CACHE:-${HOME:-/tmp}/.cache}/qa-loop/$version/${target:-source}"
bin="$cache/qa-loop"
publish() {
  echo "qa-loop $version installed: $bin"
  if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "bin=$bin" >> "$GITHUB_OUTPUT"; fi
  exit 0
}
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
  echo "qa-loop $version from the tool cache"
  publish
fi

sha256() {
  if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

build_from_source() {
  echo "qa-loop: no release asset for $target at v$version; building from source (cargo)"
  command -v cargo >/dev/null || { echo "::error title=qa-loop install::no release asset for this runner and no cargo to build one"; exit 1; }
  cargo install --quiet --locked --path "$action" --root "$cache/build"
  mkdir -p "$cache"
  mv "$cache/build/bin/qa-loop" "$bin"
  publish
}

[ -n "$target" ] || build_from_source
repo="${QA_LOOP_INSTALL_REPO:-org/qa-loop}"
base="${QA_LOOP_DOWNLOAD_BASE:-https://github.com/$repo/releases/download}"
asset="qa-loop-$target.tar.gz"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status="$(curl -sSL -o "$work/$asset" -w '%{http_code}' "$base/v$version/$asset" || echo 000)"
case "$status" in
  200) ;;
  404) build_from_source ;;
  *) echo "::error title=qa-loop install::downloading $base/v$version/$asset failed (HTTP $status)"; exit 1 ;;
esac
if ! curl -fsSL -o "$work/$asset.sha256" "$base/v$version/$asset.sha256"; then
  echo "::error title=qa-loop install::the checksum file $asset.sha256 is missing: refusing to install an unverified binary"
  exit 1
fi
want="$(cut -d' ' -f1 < "$work/$asset.sha256" | tr -d '[:space:]')"
got="$(sha256 "$work/$asset")"
if [ "$want" != "$got" ]; then
  echo "::error title=qa-loop install::checksum mismatch for $asset (expected $want, got $got): refusing to install"
  exit 1
fi
mkdir -p "$cache"
tar -xzf "$work/$asset" -C "$work"
install -m 0755 "$work/qa-loop" "$bin"
"$bin" --version >/dev/null
publish
