#!/usr/bin/env bash
# GPU-machine check of the CUDA profiler API source (docs/runtime.md, "nsys"): runs
# cuda_profiler_test's window-edge cases with the stand-in libcudart forwarding every
# cudaProfilerStart / cudaProfilerStop to the machine's real libcudart (RLPROF_REAL_CUDART),
# so the real CUDA runtime gets the calls at rlprof's window edges and must return cudaSuccess.
# No nsys needed. Usage (from the repository root, after building cuda_profiler_test):
#   test/gpu/check_cuda_profiler.sh [build-dir] [fallback-libcudart]
# For a bare GPU machine with a copy of the build: [build-dir]/gpucheck/ may hold a fallback
# libcudart.so.13 (from the nvidia-cuda-runtime wheel) and lib/ the shared libraries the test
# links (libyaml-cpp, libzstd, …); only those the machine lacks are used.
# Run on a GPU on 2026-11-26 (H100, driver 580.159.04, libcudart 13): the three cases pass.
set -uo pipefail
BUILD=${1:-build}
FALLBACK=${2:-$BUILD/gpucheck/libcudart.so.13}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || echo "no nvidia-smi"
real=""
for c in $(ldconfig -p 2>/dev/null | awk '/libcudart\.so/{print $NF}') \
         /usr/local/cuda*/lib64/libcudart.so* /usr/local/cuda*/targets/x86_64-linux/lib/libcudart.so* \
         $(python3 -c 'import site,glob;[print(p) for s in site.getsitepackages() for p in glob.glob(s+"/nvidia/*/lib/libcudart.so*")]' 2>/dev/null) \
         "$FALLBACK"; do
  if [ -f "$c" ]; then real=$c; break; fi
done
echo "real libcudart: ${real:-none}"
[ -n "$real" ] || exit 2
export RLPROF_REAL_CUDART=$real
export RLPROF_TEST_FAKE_CUDART=$(cd "$BUILD/src/sources" && pwd)/librlprof_fake_cudart.so
# Shared libraries this machine lacks (libyaml-cpp, libzstd, …): from $BUILD/gpucheck/lib, only those.
missing=$(ldd "$BUILD/src/sources/cuda_profiler_test" | awk '/not found/{print $1}')
if [ -n "$missing" ]; then
  extra=$(mktemp -d)
  for m in $missing; do ln -s "$(cd "$BUILD/gpucheck/lib" && pwd)/$m" "$extra/$m"; done
  export LD_LIBRARY_PATH="$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "carried: $missing"
fi
"$BUILD/src/sources/cuda_profiler_test" \
  --gtest_filter='*WindowEdges*:*DiscreteMode*:*OtherTools*' --gtest_color=no
