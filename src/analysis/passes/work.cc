// CollectWork: the classified intervals the partition is computed over.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "src/analysis/passes/analyse.h"

namespace rlprof::analysis {

namespace {

uint8_t BitFor(WorkClass c) {
  switch (c) {
    case WorkClass::kCompute: return kBitCompute;
    case WorkClass::kCommunication: return kBitComm;
    case WorkClass::kMemcpy: return kBitMemcpy;
    case WorkClass::kMemset: return kBitMemset;
    case WorkClass::kUnclassified: return kBitOther;
    default: return 0;
  }
}

using Iv = std::pair<int64_t, int64_t>;

std::vector<Iv> Merge(std::vector<Iv> v) {
  std::sort(v.begin(), v.end());
  std::vector<Iv> out;
  for (const auto& [s, e] : v) {
    if (!out.empty() && s <= out.back().second) out.back().second = std::max(out.back().second, e);
    else out.push_back({s, e});
  }
  return out;
}

}  // namespace

std::vector<WorkInterval> CollectWork(const Trace& t, const Classification& c, bool* cpu_only,
                                      Diagnostics* diag) {
  std::vector<WorkInterval> work;
  *cpu_only = !c.has_device_work;
  if (!*cpu_only) {
    // Device tracks. Slices are sorted by (track, ts, -dur): a kernel that starts before the
    // previous kernel of the same stream ended is clipped to end there (PDL, ROCm overruns).
    uint32_t cur_track = UINT32_MAX;
    int64_t prev = -1;  // index in `work` of the previous work interval on this track
    uint64_t overlaps = 0;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.tracks[t.track[i]].type != TrackType::kDeviceStream) continue;
      const uint8_t bit = BitFor(c.of[i]);
      if (!bit || t.kind[i] != SliceKind::kRange || t.dur[i] <= 0) continue;
      if (t.track[i] != cur_track) {
        cur_track = t.track[i];
        prev = -1;
      }
      WorkInterval w{t.ts[i], t.ts[i] + t.dur[i], bit, c.is_recv[i] != 0, static_cast<int32_t>(i)};
      if (prev >= 0 && work[prev].end > w.start) {
        ++overlaps;
        work[prev].end = w.start;
      }
      prev = static_cast<int64_t>(work.size());
      work.push_back(w);
    }
    if (overlaps && diag) diag->Add("overlapping_same_stream_kernels", overlaps);
    return work;
  }
  // CPU-only: host threads. Training threads = threads that hold a step or stage marker (all
  // threads when there is none). Compute = host operators on training threads minus the time
  // the same thread spends inside a collective; communication = collectives on any thread.
  std::unordered_set<uint32_t> training;
  for (const auto& m : t.steps) training.insert(m.track);
  for (const auto& m : t.stages) training.insert(m.track);
  std::unordered_map<uint32_t, std::vector<Iv>> ops, comm;
  for (size_t i = 0; i < t.size(); ++i) {
    const TrackType tt = t.tracks[t.track[i]].type;
    if (tt != TrackType::kThread || t.kind[i] != SliceKind::kRange || t.dur[i] <= 0) continue;
    if (c.of[i] == WorkClass::kCommunication) {
      comm[t.track[i]].push_back({t.ts[i], t.ts[i] + t.dur[i]});
      work.push_back({t.ts[i], t.ts[i] + t.dur[i], kBitComm, c.is_recv[i] != 0, static_cast<int32_t>(i)});
    } else if (c.of[i] == WorkClass::kHost && (training.empty() || training.count(t.track[i]))) {
      if (t.parent[i] >= 0 && c.of[t.parent[i]] == WorkClass::kHost) continue;  // covered by parent
      ops[t.track[i]].push_back({t.ts[i], t.ts[i] + t.dur[i]});
    }
  }
  if (t.ops_sampling < 1 && diag && !ops.empty()) diag->Add("operators_sampled_cpu_compute");
  for (auto& [track, v] : ops) {
    auto it = comm.find(track);
    std::vector<Iv> merged = Merge(std::move(v));
    if (it != comm.end()) merged = Subtract(merged, Merge(it->second));
    for (const auto& [s, e] : merged) work.push_back({s, e, kBitCompute, false, -1});
  }
  return work;
}

}  // namespace rlprof::analysis
