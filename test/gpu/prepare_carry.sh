#!/usr/bin/env bash
# Prepares .gpu/ for a run on a lent GPU machine (test/gpu/README.md): that machine has CUDA,
# PyTorch (Python 3.12), CMake, ninja and a compiler, but none of rlprof's C++ libraries and no
# network. This downloads Debian's packages of them (headers, pkg-config files, shared libraries;
# ≈ 8 MB, cached in ~/.cache/rlprof/gpu-debs) and unpacks them into .gpu/prefix, which test/gpu/run_on_device.sh builds against.
# Run here, from the repository root; idempotent. `.gpu/` is ignored by git (.git/info/exclude)
# and travels with `carry: [".gpu"]`.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
DEBS=${RLPROF_GPU_DEBS:-$HOME/.cache/rlprof/gpu-debs}  # kept out of the tree: only the prefix travels
rm -rf .gpu/prefix
mkdir -p "$DEBS" .gpu/prefix
# Build dependencies (-dev), the shared libraries they link that a plain Ubuntu lacks, the
# report's chart library, pkg-config, and googletest for the CUDA profiler test.
pkgs=(libsimdjson-dev libsimdjson14 libyaml-cpp-dev libyaml-cpp0.7 libfmt-dev libfmt9
      nlohmann-json3-dev libcli11-dev libzstd-dev libzstd1 libsqlite3-dev libsqlite3-0 zlib1g-dev zlib1g
      libcpp-httplib-dev libcpp-httplib0.11 libbrotli-dev libbrotli1 libssl-dev libssl3
      libgtest-dev libgmock-dev googletest libjs-chart.js pkgconf pkgconf-bin libpkgconf3)
missing=()
for p in "${pkgs[@]}"; do
  ls "$DEBS/${p}"_*.deb >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  (cd "$DEBS" && apt-get download "${missing[@]}")
fi
for p in "${pkgs[@]}"; do dpkg -x "$(ls "$DEBS/${p}"_*.deb | tail -1)" .gpu/prefix; done
# What the build does not read: documentation, and static libraries but googletest's.
rm -rf .gpu/prefix/usr/share/doc .gpu/prefix/usr/share/man .gpu/prefix/usr/src
find .gpu/prefix -name '*.a' ! -name 'libgtest*' ! -name 'libgmock*' -delete
# Absolute symlinks inside the prefix (a few -dev packages have them) point at this machine's
# /usr: make them relative to the prefix.
find .gpu/prefix -type l | while read -r l; do
  t=$(readlink "$l")
  case "$t" in
    /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$l")" ".gpu/prefix$t")" "$l" ;;
  esac
done
du -sh .gpu | sed 's/^/prepare_carry: /'
