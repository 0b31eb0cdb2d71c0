#!/bin/sh
# Assemble the container image's root filesystem: the static qa-loop binary, git (with its HTTPS
# helper for pushes) and the shared libraries they load, CA certificates, busybox as /bin/sh (CI
# systems such as GitLab run their `script:` through sh), a numeric non-root user (10001).
#
# Run inside Debian bookworm with git, ca-certificates and busybox-static installed: the Dockerfile's
# `rootfs` stage does, and so does scripts/container-smoke.sh (from a debootstrap base) — one
# assembly for the released image and the one tested here. The result goes into `FROM scratch`.
#
# usage: image-rootfs.sh DEST QA_LOOP_BINARY
set -eu
dest=$1
bin=$2

rm -rf "$dest"
mkdir -p "$dest/usr/local/bin" "$dest/usr/bin" "$dest/usr/lib/git-core" "$dest/bin" \
  "$dest/etc/ssl/certs" "$dest/usr/share/git-core" "$dest/work" "$dest/home/qa"
mkdir -m 1777 "$dest/tmp"

# Copy a file keeping its path; a symlink is copied as the file it points to (a library's soname).
put() { mkdir -p "$dest$(dirname "$1")" && cp -L "$1" "$dest$1"; }

install -m 0755 "$bin" "$dest/usr/local/bin/qa-loop"
put /usr/bin/git
put /usr/lib/git-core/git-remote-http
ln -s git-remote-http "$dest/usr/lib/git-core/git-remote-https"
cp -R /usr/share/git-core/templates "$dest/usr/share/git-core/"

# The dynamic loader and every library git and its HTTPS helper load, as ldd resolves them.
for lib in $(ldd /usr/bin/git /usr/lib/git-core/git-remote-http \
  | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p' | sort -u); do
  put "$lib"
done

put /etc/ssl/certs/ca-certificates.crt

# busybox: /bin/sh and the usual tools, one static binary.
cp /bin/busybox "$dest/bin/busybox"
for applet in $(/bin/busybox --list); do
  [ -e "$dest/bin/$applet" ] || ln -s busybox "$dest/bin/$applet"
done

cat > "$dest/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
qa:x:10001:10001:qa-loop:/home/qa:/bin/sh
EOF
cat > "$dest/etc/group" <<'EOF'
root:x:0:
qa:x:10001:
EOF
# Checkouts mounted into the container belong to another uid (the runner's): trust them.
printf '[safe]\n\tdirectory = *\n' > "$dest/etc/gitconfig"
chown 10001:10001 "$dest/work" "$dest/home/qa"
