// Operator statistics: per name (and name + input shapes) for host operators and device
// kernels: count, total, self, mean, min, max, p50, p99 (nearest rank); host operators also
// carry the device time and count of the device work they launched.
//
// A capture that recorded a share p of the operator calls (`ops_sampling`, each call drawn on
// its own) gives estimates: its operator rows (categories operator and communication, what
// rlprof's torch_ops source records; runtime calls, NVTX ranges and kernels are all recorded
// and stay as they are) count 1/p times each in count, total, self and launched device time;
// mean, min, max, p50 and p99 are the sample's own. Self time subtracts the sampled children
// × 1/p, so the calls the sample missed inside a sampled operator are subtracted as well (the
// sum is clamped at 0 per row, not per call).
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

int64_t Rounded(double v) {
  return v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : std::llround(v);
}

// Exact rows add integers (saturating: many long slices); rows of sampled calls add weighted
// doubles, kept apart so that an exact trace's figures are what they always were.
struct Acc {
  std::vector<int64_t> durs;
  int64_t n_exact = 0, total = 0, self = 0, device = 0, kernels = 0;  // exact rows
  double wn = 0, wtotal = 0, wself = 0, wdevice = 0, wkernels = 0;  // weighted rows (× 1/p)
  void Add(int64_t dur, int64_t self_exact, double self_est, int64_t dev, int64_t kern, double w) {
    durs.push_back(dur);
    if (w == 1) {
      ++n_exact;
      total = base::SatAdd(total, dur);
      self = base::SatAdd(self, self_exact);
      device = base::SatAdd(device, dev);
      kernels += kern;
      return;
    }
    wn += w;
    wtotal += w * static_cast<double>(dur);
    wself += w * self_est;
    wdevice += w * static_cast<double>(dev);
    wkernels += w * static_cast<double>(kern);
  }
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

std::vector<OpStat> Finish(const Trace& t, AccMap& m) {
  std::vector<OpStat> out;
  for (auto& [key, acc] : m) {
    std::sort(acc.durs.begin(), acc.durs.end());
    OpStat s;
    s.name = t.str(key.first);
    s.shapes = key.second ? t.str(key.second) : std::string();
    int64_t sample_total = 0;  // the recorded calls' own, for the mean
    for (int64_t d : acc.durs) sample_total = base::SatAdd(sample_total, d);
    s.count = acc.n_exact;
    s.total = acc.total;
    s.self = acc.self;
    s.device_total = acc.device;
    s.kernels = acc.kernels;
    if (acc.wn > 0) {  // estimates from a sample
      s.count = base::SatAdd(s.count, Rounded(acc.wn));
      s.total = base::SatAdd(s.total, Rounded(acc.wtotal));
      s.self = std::max<int64_t>(0, base::SatAdd(s.self, Rounded(acc.wself)));
      s.device_total = base::SatAdd(s.device_total, Rounded(acc.wdevice));
      s.kernels = base::SatAdd(s.kernels, Rounded(acc.wkernels));
    }
    s.min = acc.durs.front();
    s.max = acc.durs.back();
    s.mean = static_cast<double>(sample_total) / static_cast<double>(acc.durs.size());
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
  // The rows a sampled capture holds a share of: its host operators (torch_ops' categories).
  const uint32_t op_cat = sampled ? t.strings.Find("operator") : 0;
  const uint32_t comm_cat = sampled ? t.strings.Find("communication") : 0;
  auto w = [&](size_t i) {
    const uint32_t cat = t.category[i];
    return sampled && cat != 0 && (cat == op_cat || cat == comm_cat) &&
                   t.tracks[t.track[i]].type != TrackType::kDeviceStream
               ? scale
               : 1.0;
  };
  // Self time = duration − Σ durations of direct children on the same track (host only); a
  // sampled capture's operator children count 1/p times each (the calls the sample missed).
  std::vector<int64_t> child_sum(n, 0);
  std::vector<double> child_est;
  if (sampled) child_est.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (t.parent[i] < 0) continue;
    child_sum[t.parent[i]] = base::SatAdd(child_sum[t.parent[i]], t.dur[i]);
    if (sampled) child_est[t.parent[i]] += w(i) * static_cast<double>(t.dur[i]);
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
  uint64_t sampled_rows = 0;
  for (size_t i = 0; i < n; ++i) {
    if (t.kind[i] != SliceKind::kRange) continue;
    const WorkClass k = c.of[i];
    const bool device = t.tracks[t.track[i]].type == TrackType::kDeviceStream;
    const uint32_t name = t.name[i];
    if (device) {
      if (!CountedDevice(k)) continue;
      kernels[{name, 0}].Add(t.dur[i], t.dur[i], 0, 0, 0, 1.0);
    } else {
      if (!CountedHost(k)) continue;
      const int64_t self = std::max<int64_t>(
          0, sampled ? Rounded(static_cast<double>(t.dur[i]) - child_est[i]) : t.dur[i] - child_sum[i]);
      // A sampled call's estimate may be negative (its sampled children stand for more).
      const double self_est = sampled ? static_cast<double>(t.dur[i]) - child_est[i] : 0;
      if (w(i) != 1) ++sampled_rows;
      host[{name, 0}].Add(t.dur[i], self, self_est, launched_time[i], launched_count[i], w(i));
      if (t.shapes[i] != 0)
        host_shapes[{name, t.shapes[i]}].Add(t.dur[i], self, self_est, launched_time[i],
                                             launched_count[i], w(i));
    }
  }
  out->host_ops = Finish(t, host);
  out->host_ops_by_shape = Finish(t, host_shapes);
  out->kernels = Finish(t, kernels);
  // Says, wherever diagnostics are shown, that the operator rows are estimates.
  if (sampled_rows != 0) out->diagnostics.Add("operators_sampled", sampled_rows);
}

}  // namespace rlprof::analysis::internal
