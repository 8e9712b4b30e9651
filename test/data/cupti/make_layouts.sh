#!/usr/bin/env bash
# Writes test/data/cupti/record_layouts.txt: where each field the CUPTI source reads
# (src/sources/cupti_records.cc) lies in the activity records of every CUPTI release listed
# below — the structs each release's libcupti fills (the newest version of each record in its
# cupti_activity.h: CUpti_ActivityKernel7 in CUDA 11.7 … CUpti_ActivityKernel13 in 13.5).
# CuptiLayoutTest (src/sources/cupti_records_test.cc) checks that the structs rlprof is built
# with put every such field at the same offset, with the same size, as each release does.
#
# Needs the network (PyPI: the nvidia-cuda-cupti wheels' headers) and a C compiler; not run by
# the tests. From the repository root:
#   test/data/cupti/make_layouts.sh            # writes test/data/cupti/record_layouts.txt
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=test/data/cupti/record_layouts.txt
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/rlprof/cupti-headers
PIP=${PIP:-.venv/bin/pip}
WHEELS=(nvidia-cuda-cupti-cu11==11.7.101 nvidia-cuda-cupti-cu11==11.8.87
        nvidia-cuda-cupti-cu12==12.0.90 nvidia-cuda-cupti-cu12==12.4.127
        nvidia-cuda-cupti-cu12==12.8.90 nvidia-cuda-cupti-cu12==12.9.79
        nvidia-cuda-cupti==13.0.85 nvidia-cuda-cupti==13.2.86 nvidia-cuda-cupti==13.5.25)
# The fields read, per record family (Kernel = CONCURRENT_KERNEL / KERNEL, Memcpy, …). Keep in
# step with cupti_records.cc and kFields in cupti_records_test.cc.
FIELDS="Kernel:kind,start,end,name,deviceId,streamId,contextId,correlationId,gridX,gridY,gridZ,blockX,blockY,blockZ,registersPerThread,staticSharedMemory,dynamicSharedMemory,graphId,graphNodeId
Memcpy:kind,start,end,copyKind,bytes,deviceId,contextId,streamId,correlationId
Memset:kind,start,end,bytes,deviceId,contextId,streamId,correlationId
Synchronization:kind,start,end,type,streamId,contextId,correlationId
API:kind,start,end,threadId,cbid,correlationId
Overhead:kind,start,end,overheadKind,objectKind,objectId.pt.threadId,objectId.dcs.deviceId,objectId.dcs.streamId
GraphTrace:kind,start,end,graphId,deviceId,contextId,streamId,correlationId
ExternalCorrelation:kind,externalId,correlationId"

mkdir -p "$CACHE"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  echo "# CUPTI activity record layouts: release api_version family struct field offset size"
  echo "# Written by test/data/cupti/make_layouts.sh from the headers of the PyPI wheels it names."
  for w in "${WHEELS[@]}"; do
    name=${w%%==*}
    ver=${w##*==}
    dir=$CACHE/$name-$ver
    if [ ! -d "$dir" ]; then
      "$PIP" download -q --no-deps -d "$work/dl" "$w" >&2
      mkdir -p "$dir"
      (cd "$dir" && unzip -q -o "$work"/dl/"${name//-/_}"-"$ver"-*.whl)
    fi
    h=$(find "$dir/" -name cupti_activity.h | head -n 1)
    inc=$(dirname "$h")
    api=$(awk '/define CUPTI_API_VERSION /{print $3}' "$inc/cupti_version.h")
    {
      echo '#include <stdio.h>'
      echo '#include <stddef.h>'
      echo '#include <cupti_activity.h>'
      echo '#define F(fam, T, f) printf("%s %s %s %s %zu %zu\n", REL, fam, #T, #f, offsetof(T, f), sizeof(((T*)0)->f));'
      echo 'int main(void) {'
      while IFS=: read -r fam fields; do
        if [ "$fam" = API ] || [ "$fam" = ExternalCorrelation ]; then
          st=CUpti_Activity$fam
        else
          # The newest version of the family in this header (CUpti_ActivityKernel9 > …Kernel8).
          st=$(grep -o "} CUpti_Activity$fam[0-9]*;" "$h" | sed 's/} //; s/;//' | sort -V | tail -n 1)
        fi
        for f in ${fields//,/ }; do echo "F(\"$fam\", $st, $f)"; done
      done <<< "$FIELDS"
      echo 'return 0; }'
    } > "$work/probe.c"
    cc -w -DREL="\"$ver $api\"" -I"$inc" -I/usr/local/cuda/include "$work/probe.c" -o "$work/probe"
    "$work/probe"
  done
} > "$OUT"
echo "wrote $OUT ($(grep -vc '^#' "$OUT") fields)"
