#!/usr/bin/env bash
# The action's install step: puts the static qa-loop binary for this runner on disk.
#
# 1. The version is the one of the action's own source (Cargo.toml next to this script), so the
#    binary always matches the action's ref (a tag, a moving major tag, a branch or a SHA).
# 2. The release asset qa-loop-<target>.tar.gz and its .sha256 are downloaded from the release
#    v<version>; the SHA-256 is verified — a mismatch refuses to install (never falls back).
# 3. The tool cache ($RUNNER_TOOL_CACHE) is writable by the job's user and, on a self-hosted
#    runner, outlives the job: it only saves the download. The checksum is downloaded again on
#    every install, a cached archive is used only when it matches it, and the binary is unpacked
#    from the verified archive into a directory of this job — never taken from the cache.
# 4. When the release has no asset for this runner (404), qa-loop is built from the action's
#    source with cargo, in this job; the binary published is checked against what the build
#    produced (never a binary left by an earlier job).
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
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The published binary lives in a fresh directory of this job, not in the shared cache.
dest="$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/qa-loop-bin.XXXXXXXX")"
bin="$dest/qa-loop"

sha256() {
  if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

# Publishes $bin once its SHA-256 is still $1 (what was verified or built a moment ago).
publish() {
  if [ "$(sha256 "$bin")" != "$1" ]; then
    echo "::error title=qa-loop install::$bin changed after it was verified: refusing to publish it"
    exit 1
  fi
  echo "qa-loop $version installed: $bin"
  if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "bin=$bin" >> "$GITHUB_OUTPUT"; fi
  exit 0
}

build_from_source() {
  echo "qa-loop: no release asset for $target at v$version; building from source (cargo)"
  command -v cargo >/dev/null || { echo "::error title=qa-loop install::no release asset for this runner and no cargo to build one"; exit 1; }
  cargo install --quiet --locked --path "$action" --root "$work/build"
  built="$(sha256 "$work/build/bin/qa-loop")"
  install -m 0755 "$work/build/bin/qa-loop" "$bin"
  publish "$built"
}

[ -n "$target" ] || build_from_source
repo="${QA_LOOP_INSTALL_REPO:-org/qa-loop}"
base="${QA_LOOP_DOWNLOAD_BASE:-https://github.com/$repo/releases/download}"
asset="qa-loop-$target.tar.gz"
# The checksum first, every time: it decides whether a cached archive may be used.
status="$(curl -sSL -o "$work/$asset.sha256" -w '%{http_code}' "$base/v$version/$asset.sha256" || echo 000)"
case "$status" in
  200) ;;
  404)
    # No checksum: either no asset for this runner (build from source) or a release missing
    # its checksum (refused below).
    asset_status="$(curl -sSL -o /dev/null -w '%{http_code}' -I "$base/v$version/$asset" || echo 000)"
    [ "$asset_status" = 404 ] && build_from_source
    echo "::error title=qa-loop install::the checksum file $asset.sha256 is missing: refusing to install an unverified binary"
    exit 1 ;;
  *) echo "::error title=qa-loop install::downloading $base/v$version/$asset.sha256 failed (HTTP $status): refusing to install an unverified binary"; exit 1 ;;
esac
want="$(cut -d' ' -f1 < "$work/$asset.sha256" | tr -d '[:space:]')"
if [ -f "$cache/$asset" ] && [ "$(sha256 "$cache/$asset")" = "$want" ]; then
  echo "qa-loop $version: the archive from the tool cache matches the release's checksum"
  cp "$cache/$asset" "$work/$asset"
else
  [ -e "$cache/$asset" ] && echo "qa-loop $version: the archive in the tool cache does not match the release's checksum: downloading it again"
  status="$(curl -sSL -o "$work/$asset" -w '%{http_code}' "$base/v$version/$asset" || echo 000)"
  case "$status" in
    200) ;;
    404) build_from_source ;;
    *) echo "::error title=qa-loop install::downloading $base/v$version/$asset failed (HTTP $status)"; exit 1 ;;
  esac
fi
got="$(sha256 "$work/$asset")"
if [ "$want" != "$got" ]; then
  echo "::error title=qa-loop install::checksum mismatch for $asset (expected $want, got $got): refusing to install"
  exit 1
fi
# Kept for the next install (which verifies it again); a cache that cannot be written is fine.
mkdir -p "$cache" 2>/dev/null && cp "$work/$asset" "$cache/$asset.tmp.$$" 2>/dev/null \
  && mv -f "$cache/$asset.tmp.$$" "$cache/$asset" 2>/dev/null || true
mkdir -p "$work/unpacked"
tar -xzf "$work/$asset" -C "$work/unpacked" qa-loop
install -m 0755 "$work/unpacked/qa-loop" "$bin"
"$bin" --version >/dev/null
publish "$(sha256 "$work/unpacked/qa-loop")"
