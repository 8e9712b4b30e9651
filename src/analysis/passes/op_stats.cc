// Operator statistics: per name (and name + input shapes) for host operators and device
// kernels: count, total, self, mean, min, max, p50, p99 (nearest rank); host operators also
// carry the device time and count of the device work they launched.
//
// A capture that recorded a share p of the operator calls (`ops_sampling`, each call drawn on
// its own) gives estimates: count, total, self and the launched device time and count are the
// sample's × 1/p (unbiased: each call is in the sample with probability p); mean, min, max,
// p50 and p99 are the sample's own. Self time subtracts the sampled children × 1/p, so the
// calls the sample missed inside a sampled operator are subtracted as well (the sum is
// clamped at 0 per row, not per call).
#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>

#include "src/analysis/passes/analyse_internal.h"
#include "src/analysis/model/id_map.h"
#include "src/analysis/passes/classify.h"
#include "src/base/time_math.h"

namespace rlprof::analysis::internal {

namespace {

struct Acc {
  std::vector<int64_t> durs;
  double self = 0;  // a double: sampled self times are estimates that may be negative per call
  int64_t device = 0, kernels = 0;  // device work launched (host operators)
};

int64_t NearestRank(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

// Keyed by (name id, shapes id) of the trace's string table.
using Key = std::pair<uint32_t, uint32_t>;
struct KeyHash {
  size_t operator()(const Key& k) const { return (static_cast<size_t>(k.first) << 32) ^ k.second; }
};
using AccMap = std::unordered_map<Key, Acc, KeyHash>;

int64_t Scaled(int64_t v, double scale) {
  if (scale == 1) return v;
  const double d = static_cast<double>(v) * scale;
  return d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : std::llround(d);
}

// `scale`: 1 / the share of calls sampled (1: every call) for host operators; 1 for kernels.
std::vector<OpStat> Finish(const Trace& t, AccMap& m, double scale) {
  std::vector<OpStat> out;
  for (auto& [key, acc] : m) {
    std::sort(acc.durs.begin(), acc.durs.end());
    OpStat s;
    s.name = t.str(key.first);
    s.shapes = key.second ? t.str(key.second) : std::string();
    const int64_t n = static_cast<int64_t>(acc.durs.size());
    int64_t total = 0;
    for (int64_t d : acc.durs) total = base::SatAdd(total, d);  // many long slices saturate
    s.count = Scaled(n, scale);
    s.total = Scaled(total, scale);
    s.self = std::max<int64_t>(0, Scaled(std::llround(std::clamp(acc.self, -9.2e18, 9.2e18)), scale));
    s.device_total = Scaled(acc.device, scale);
    s.kernels = Scaled(acc.kernels, scale);
    s.min = acc.durs.front();
    s.max = acc.durs.back();
    s.mean = static_cast<double>(total) / static_cast<double>(n);
    s.p50 = NearestRank(acc.durs, 0.50);
    s.p99 = NearestRank(acc.durs, 0.99);
    out.push_back(std::move(s));
  }
  // Largest total first; name breaks ties so outputs are stable.
  std::sort(out.begin(), out.end(), [](const OpStat& a, const OpStat& b) {
    if (a.total != b.total) return a.total > b.total;
    return std::tie(a.name, a.shapes) < std::tie(b.name, b.shapes);
  });
  return out;
}

bool CountedDevice(WorkClass k) {
  return k != WorkClass::kSync && k != WorkClass::kMarker && k != WorkClass::kHost;
}

bool CountedHost(WorkClass k) { return k == WorkClass::kHost || k == WorkClass::kCommunication; }

}  // namespace

std::vector<int32_t> DeviceLaunchers(const Trace& t, const Classification& c) {
  const size_t n = t.size();
  // External correlation (rlprof captures) first: it names the operator even when the launch
  // lies outside it in time.
  std::vector<int32_t> op = LaunchingOperators(t);
  // Else the innermost host operator enclosing the runtime launch call with the kernel's
  // correlation id (HTA / TraceLens "GPU time of a CPU op"). A launch is a runtime-category
  // host slice with a correlation id (Kineto also gives operators one, their External id: the
  // category tells them apart); the operator is its nearest enclosing counted host slice that
  // is not itself a runtime call.
  RuntimeCategories is_runtime(t);
  IdMap<int32_t> by_correlation(t.correlation);
  for (size_t i = 0; i < n; ++i) {
    if (t.correlation[i] < 0 || t.tracks[t.track[i]].type == TrackType::kDeviceStream) continue;
    if (!is_runtime(i)) continue;
    for (int32_t p = t.parent[i]; p >= 0; p = t.parent[p]) {
      if (t.kind[p] == SliceKind::kRange && CountedHost(c.of[p]) && !is_runtime(p)) {
        by_correlation.Put(t.correlation[i], p);
        break;
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (t.tracks[t.track[i]].type != TrackType::kDeviceStream) {
      op[i] = -1;
      continue;
    }
    if (op[i] >= 0 || t.correlation[i] < 0) continue;
    if (const int32_t* p = by_correlation.Find(t.correlation[i])) op[i] = *p;
  }
  return op;
}

void ComputeOpStats(const Trace& t, const Classification& c, TraceAnalysis* out) {
  const size_t n = t.size();
  const bool sampled = t.ops_sampling > 0 && t.ops_sampling < 1;
  const double scale = sampled ? 1.0 / t.ops_sampling : 1.0;
  // Self time = duration − Σ durations of direct children on the same track (host only); a
  // sampled capture's operator children count 1/p times each (the calls the sample missed).
  std::vector<double> child_sum(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (t.parent[i] < 0) continue;
    const double w = sampled && CountedHost(c.of[i]) ? scale : 1.0;
    child_sum[t.parent[i]] += static_cast<double>(t.dur[i]) * w;
  }
  // Device time and count of the device work each host slice launched.
  std::vector<int64_t> launched_time(n, 0), launched_count(n, 0);
  {
    const std::vector<int32_t> launcher = DeviceLaunchers(t, c);
    for (size_t i = 0; i < n; ++i) {
      const int32_t p = launcher[i];
      if (p < 0 || t.kind[i] != SliceKind::kRange || !CountedDevice(c.of[i])) continue;
      launched_time[p] = base::SatAdd(launched_time[p], t.dur[i]);
      ++launched_count[p];
    }
  }
  AccMap host, host_shapes, kernels;
  for (size_t i = 0; i < n; ++i) {
    if (t.kind[i] != SliceKind::kRange) continue;
    const WorkClass k = c.of[i];
    const bool device = t.tracks[t.track[i]].type == TrackType::kDeviceStream;
    const uint32_t name = t.name[i];
    if (device) {
      if (!CountedDevice(k)) continue;
      Acc& a = kernels[{name, 0}];
      a.durs.push_back(t.dur[i]);
      a.self += static_cast<double>(t.dur[i]);
    } else {
      if (!CountedHost(k)) continue;
      // Exact captures clamp each call at 0; a sampled one's per-call estimate may be negative.
      const double self = sampled ? static_cast<double>(t.dur[i]) - child_sum[i]
                                  : std::max(0.0, static_cast<double>(t.dur[i]) - child_sum[i]);
      Acc& a = host[{name, 0}];
      a.durs.push_back(t.dur[i]);
      a.self += self;
      a.device = base::SatAdd(a.device, launched_time[i]);
      a.kernels += launched_count[i];
      if (t.shapes[i] != 0) {
        Acc& b = host_shapes[{name, t.shapes[i]}];
        b.durs.push_back(t.dur[i]);
        b.self += self;
        b.device = base::SatAdd(b.device, launched_time[i]);
        b.kernels += launched_count[i];
      }
    }
  }
  out->host_ops = Finish(t, host, scale);
  out->host_ops_by_shape = Finish(t, host_shapes, scale);
  out->kernels = Finish(t, kernels, 1.0);
  if (sampled) {  // says, wherever diagnostics are shown, that the operator rows are estimates
    uint64_t recorded = 0;
    for (const auto& [key, acc] : host) recorded += acc.durs.size();
    out->diagnostics.Add("operators_sampled", recorded);
  }
}

}  // namespace rlprof::analysis::internal
