#!/usr/bin/env bash
# The distribution build (#22): target/dist/sysperf, a static, stripped, whole-program optimised
# sysperf that starts on any x86-64 Linux with /proc and /sys (glibc linked in with crt-static;
# the C helper programs are inside it, as in every build); its man pages and shell completions,
# generated from the argument definitions (`sysperf man`, `sysperf completions`); and a Debian
# package, target/dist/sysperf_VERSION_ARCH.deb, built with dpkg-deb.
#
#   bash scripts/dist.sh          # all of it
#   bash scripts/dist.sh --binary # the static binary only
#
# crt-static goes to the target only (--target): build scripts and proc macros stay dynamic,
# which they must be. The binary must stay under 20 MiB (15 until #29 brought TLS: rustls and ring, ~1.3 MiB) and must not be dynamic; both are
# checked here, and tests/it/install.rs runs it in an empty root.
set -euo pipefail
cd "$(dirname "$0")/.."

triple=$(rustc -vV | sed -n 's/^host: //p')
flags_var="CARGO_TARGET_$(echo "$triple" | tr 'a-z-' 'A-Z_')_RUSTFLAGS"
env "$flags_var=-C target-feature=+crt-static" \
  cargo build --locked --profile dist --target "$triple" --bin sysperf
mkdir -p target/dist
install -m 0755 "${CARGO_TARGET_DIR:-target}/$triple/dist/sysperf" target/dist/sysperf
bin=target/dist/sysperf

size=$(stat -c %s "$bin")
limit=$((20 * 1024 * 1024))
if [ "$size" -gt "$limit" ]; then
  echo "dist.sh: $bin is $size bytes, over the 20 MiB limit" >&2
  exit 1
fi
if ldd "$bin" >/dev/null 2>&1 && ! ldd "$bin" 2>&1 | grep -q "statically linked"; then
  echo "dist.sh: $bin is dynamically linked:" >&2
  ldd "$bin" >&2
  exit 1
fi
echo "dist.sh: $bin: $((size / 1024)) KiB, static ($("$bin" --version))"
[ "${1:-}" = "--binary" ] && exit 0

# The package tree: binary, man pages, completions, README, licence.
version=$("$bin" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
stage=target/dist/deb/sysperf_${version}_${arch}
rm -rf "$stage"
install -D -m 0755 "$bin" "$stage/usr/bin/sysperf"
man=$(mktemp -d)
trap 'rm -rf "$man"' EXIT
"$bin" man "$man" 2>/dev/null
install -d "$stage/usr/share/man/man1"
for page in "$man"/*.1; do
  gzip -9n < "$page" > "$stage/usr/share/man/man1/$(basename "$page").gz"
done
install -d "$stage/usr/share/bash-completion/completions" \
  "$stage/usr/share/zsh/vendor-completions" "$stage/usr/share/fish/vendor_completions.d"
"$bin" completions bash > "$stage/usr/share/bash-completion/completions/sysperf"
"$bin" completions zsh > "$stage/usr/share/zsh/vendor-completions/_sysperf"
"$bin" completions fish > "$stage/usr/share/fish/vendor_completions.d/sysperf.fish"
install -D -m 0644 README.md "$stage/usr/share/doc/sysperf/README.md"
install -D -m 0644 SECURITY.md "$stage/usr/share/doc/sysperf/SECURITY.md" 2>/dev/null || true
install -D -m 0644 LICENSE "$stage/usr/share/doc/sysperf/copyright"
install -d "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: sysperf
Version: $version
Architecture: $arch
Maintainer: the sysperf developers
Section: utils
Priority: optional
Installed-Size: $(du -sk "$stage/usr" | cut -f1)
Suggests: fonts-dejavu-core, linux-perf
Description: measure, observe and compare UNIX kernel performance
 The 4.2/4.3BSD benchmark suite of Leffler, Karels and McKusick and the studies
 around it (BBN, Feder), run with repetitions, medians and confidence intervals,
 observed through the kernel's counters, profiles and trace points, and kept with
 a machine fingerprint in an embedded SQLite store. One static binary.
CONTROL
deb="target/dist/sysperf_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "dist.sh: $deb ($(($(stat -c %s "$deb") / 1024)) KiB)"
