#!/usr/bin/env bash
# The GPU checks of issues 14 and 16 in one command on a lent GPU machine (test/gpu/README.md):
# builds rlprof there against .gpu/prefix (test/gpu/prepare_carry.sh, run here first) with the
# machine's python3 and PyTorch, then
#   1. test/gpu/device_figures.py: the GRPO example on the GPU without a profiler, with rlprof's
#      device capture and with torch.profiler: kernel count and time, overhead, bytes, window close;
#   2. test/gpu/check_cuda_profiler.sh: the CUDA profiler API source against the real libcudart.
# Everything it reports goes to $OUT (figures/device_figures.json, figures/work.tar.gz: the
# recorded CUPTI records, captures and traces; run.log, build.log, cuda_profiler.log). From the repository root:
#   test/gpu/run_on_device.sh [OUT]        # the device tool: carry [".gpu"], timeout ≥ 480 s
set -uo pipefail
OUT=${1:-${OUT:-/tmp/rlprof-gpu-out}}
mkdir -p "$OUT"
P=$PWD/.gpu/prefix
[ -d "$P/usr" ] || { echo "run_on_device: no .gpu/prefix: run test/gpu/prepare_carry.sh here and carry .gpu" >&2; exit 2; }
exec > >(tee "$OUT/run.log") 2>&1
PY=${PYTHON:-python3}
LIB=$P/usr/lib/x86_64-linux-gnu
export PATH=$P/usr/bin:$PATH PKG_CONFIG_PATH=$LIB/pkgconfig:$P/usr/share/pkgconfig
IMAGE_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}  # the image's (the NVIDIA driver's libraries)
export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
"$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_PREFIX_PATH="$P/usr;$LIB/cmake" -DPython_EXECUTABLE="$(command -v "$PY")" \
  -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir 2>/dev/null)" -DRLPROF_BUILD_BENCHMARKS=OFF \
  -DRLPROF_CHARTJS_PATH="$P/usr/share/javascript/chart.js/chart.min.js" -DCMAKE_SKIP_BUILD_RPATH=ON \
  > "$OUT/build.log" 2>&1 \
  || { tail -30 "$OUT/build.log"; exit 1; }
# SKIP_CUDA_PROFILER=1: the device figures alone (a shorter run; the CUDA profiler check passed).
targets="rlprof_python"
[ "${SKIP_CUDA_PROFILER:-0}" = 1 ] || targets="$targets rlprof cuda_profiler_test rlprof_fake_cudart"
cmake --build build-gpu -j"$(nproc)" --target $targets >> "$OUT/build.log" 2>&1 \
  || { grep -m5 -B2 -A8 "error" "$OUT/build.log"; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
# Run with the prefix's libraries only where this machine lacks them: its zlib, zstd, OpenSSL…
# would otherwise shadow the machine's own in every process (Python's and PyTorch's too).
RT=$PWD/.gpu/runtime-lib
rm -rf "$RT" && mkdir -p "$RT"
for f in build-gpu/python/rlprof/*.so build-gpu/bin/rlprof build-gpu/src/sources/cuda_profiler_test; do
  [ -f "$f" ] || continue
  env -u LD_LIBRARY_PATH ldd "$f" 2>/dev/null | awk '/not found/{print $1}'
done | sort -u | while read -r m; do
  # (libtorch_cpu, libc10: not in the prefix; the hook finds them in the process torch loaded)
  # librlprof.so.0 sits beside the extensions ($ORIGIN, which a build without RPATH loses)
  if [ -e "$LIB/$m" ]; then ln -sf "$LIB/$m" "$RT/$m"
  elif [ -e "build-gpu/python/rlprof/$m" ]; then ln -sf "$PWD/build-gpu/python/rlprof/$m" "$RT/$m"
  else echo "not in the prefix: $m"; fi
done
export LD_LIBRARY_PATH=$RT${IMAGE_LD_LIBRARY_PATH:+:$IMAGE_LD_LIBRARY_PATH} PYTHONFAULTHANDLER=1
echo "from the prefix at run time: $(ls "$RT" | tr '\n' ' ')"
env -u LD_LIBRARY_PATH ldd build-gpu/python/rlprof/_rlprof*.so | grep -v -E "linux-vdso|ld-linux|libc.so|libm.so|libgcc_s" | sed 's/^/  /'
for code in "import rlprof" "import torch, rlprof" "import rlprof, torch"; do
  PYTHONPATH=$PWD/build-gpu/python timeout 120 "$PY" -c "$code; print('ok')" > "$OUT/import.log" 2>&1
  echo "[$code] rc=$?: $(tail -n 12 "$OUT/import.log" | tr '\n' '|' | cut -c1-1500)"
done
rm -f "$OUT/import.log"
# What device capture finds here (the CLI's view: the libcupti of the machine, not PyTorch's).
[ -x build-gpu/bin/rlprof ] && build-gpu/bin/rlprof doctor
rc=0
# RUN=cost: issue 31's cost figures on the GPU instead of the checks below (bench/cost.py: the
# GRPO example on the GPU with no profiler, torch's RecordFunction floor, rlprof operators,
# operators + device capture and torch.profiler, each in its own process, alternated; and the
# per-operator figures of this machine's torch build).
if [ "${RUN:-}" = cost ]; then
  mkdir -p "$OUT/figures"
  PYTHONPATH=$PWD/build-gpu/python timeout "${COST_TIMEOUT:-420}" "$PY" bench/cost.py --device cuda \
    --only grpo,ops,annotate ${COST_ARGS:---reps 3} --json "$OUT/figures/cost_gpu.json" || rc=1
  exit $rc
fi
# How CUPTI shares itself between clients, and what torch.profiler does about it (no rlprof;
# SKIP_CUPTI_CLIENTS=1 leaves it out).
if [ "${DEVICE_FIGURES_ARGS:-}" != "--device cpu" ] && [ "${SKIP_CUPTI_CLIENTS:-0}" != 1 ]; then
  mkdir -p "$OUT/figures"
  timeout 300 "$PY" test/gpu/cupti_clients.py --out "$OUT/figures/cupti_clients.json" || rc=1
fi
# DEVICE_FIGURES_ARGS="--device cpu": a check of this script on a machine without a GPU.
PYTHONPATH=$PWD/build-gpu/python "$PY" test/gpu/device_figures.py --out "$OUT/figures" ${DEVICE_FIGURES_ARGS:-} || rc=1
if [ "${SKIP_CUDA_PROFILER:-0}" != 1 ]; then
  test/gpu/check_cuda_profiler.sh build-gpu > "$OUT/cuda_profiler.log" 2>&1 || rc=1
  tail -5 "$OUT/cuda_profiler.log"
fi
# The recorded CUPTI records, rlprof's captures and torch.profiler's traces come back as one
# archive (the device tool returns at most 8 files); the traces stay behind if it grows too large.
if [ -d "$OUT/figures/work" ]; then
  tar czf "$OUT/figures/work.tar.gz" -C "$OUT/figures" work
  if [ "$(stat -c %s "$OUT/figures/work.tar.gz")" -gt 15000000 ]; then
    tar czf "$OUT/figures/work.tar.gz" -C "$OUT/figures" --exclude='torch_step*.json' work
  fi
  ls -l "$OUT/figures/work.tar.gz"
  rm -rf "$OUT/figures/work"
fi
exit $rc
