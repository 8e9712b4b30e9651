// `--compat hta`: HolisticTraceAnalysis 0.5.0's temporal breakdown, comm/comp overlap and idle
// time breakdown, reproduced step by step (docs/definitions.md §5.2, docs/analysis.md "Side by
// side with HTA"). HTA works on a pandas frame of the trace's events in whole µs; what it does,
// in order, and what this file does to match it:
//  1. µs rounding of every event: start = ceil(ts), end = floor(ts + dur) on the float64 µs
//     values (events of < 1 µs keep a zero or negative duration: they stay in every sum);
//  2. with ≥ 2 distinct ProfilerStep names, the last-step rule: device events are kept when the
//     host event with their correlation id starts before the last ProfilerStep (host or GPU
//     annotation, whichever starts later); device events without a correlation id when they
//     start before it;
//  3. device events = every event with a stream (kernels, memcpy, memset, cuda_sync — not the
//     GPU annotations, which carry none), classified by name: `^nccl.*Kernel` communication,
//     computation unless the name holds `Memcpy` or `Sync` or starts with `Memset`;
//  4. interval merges that join touching intervals and take the group's max end, so a
//     negative-duration event alone is a negative run time;
//  5. the idle breakdown per stream over kernel / memcpy / memset events sorted by start, each
//     gap measured from the previous event's end (not the running maximum).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string_view>

#include "src/analysis/passes/analyse_internal.h"

namespace rlprof::analysis::internal {

namespace {

using Iv = std::pair<int64_t, int64_t>;  // [start, end] in µs, end may be < start

// HTA's pandas rounding: float64 µs, then ceil / floor. The float64 is the one Python's float()
// parses from the µs text (Kineto writes 3 decimals): the decimal is rebuilt from the exact ns
// and parsed by strtod, both correctly rounded (ns / 1000.0 is not: ns ≈ 1.7e18 exceeds 2^53).
double UsDouble(int64_t ns) {
  const uint64_t a = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%llu.%03llu", ns < 0 ? "-" : "",
                static_cast<unsigned long long>(a / 1000), static_cast<unsigned long long>(a % 1000));
  return std::strtod(buf, nullptr);
}
int64_t StartUs(int64_t ts_ns) { return static_cast<int64_t>(std::ceil(UsDouble(ts_ns))); }
int64_t EndUs(int64_t ts_ns, int64_t dur_ns) {
  return static_cast<int64_t>(std::floor(UsDouble(ts_ns) + UsDouble(dur_ns)));
}

// hta.utils.utils.merge_kernel_intervals.
std::vector<Iv> HtaMerge(std::vector<Iv> v) {
  std::stable_sort(v.begin(), v.end(), [](const Iv& a, const Iv& b) { return a.first < b.first; });
  std::vector<Iv> out;
  int64_t cummax = 0;
  for (const auto& [s, e] : v) {
    if (out.empty() || s > cummax) {
      out.push_back({s, e});
      cummax = e;
    } else {
      out.back().second = std::max(out.back().second, e);
      cummax = std::max(cummax, e);
    }
  }
  return out;
}

int64_t RunTime(const std::vector<Iv>& merged) {
  int64_t sum = 0;
  for (const auto& [s, e] : merged) sum += e - s;
  return sum;
}

enum class HtaKind : uint8_t { kCompute, kComm, kMemory, kOther };

// hta.utils.utils.get_kernel_type (re.match semantics: anchored at the start).
HtaKind KindOf(std::string_view n) {
  if (n.starts_with("nccl") && n.find("Kernel", 4) != std::string_view::npos) return HtaKind::kComm;
  if (n.starts_with("Memcpy") || n.starts_with("Memset") || n.starts_with("dma")) return HtaKind::kMemory;
  if (n.find("Memcpy") != std::string_view::npos || n.find("Sync") != std::string_view::npos)
    return HtaKind::kOther;
  return HtaKind::kCompute;
}

// get_idle_time_breakdown's kernel categories.
bool IdleCategory(std::string_view cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memset" || cat == "Memset" ||
         cat == "gpu_memcpy" || cat == "Memcpy" || cat == "mtia_ccp_events";
}

// A device slice HTA counts: its time in µs, as HTA rounds it.
struct Row {
  int64_t ts, end;
  int32_t slice;
};

// get_gpu_kernel_breakdown's kernel types (include_memory_kernels, its default): each type's
// intervals merged, then one sweep with COMPUTATION ±1, COMMUNICATION ±2, MEMORY ±4; the
// time from each event to the next goes to the set of types the running sum holds.
decltype(TraceAnalysis::kernel_types) KernelTypesOf(const Trace& t, const std::vector<Row>& rows) {
  std::vector<Iv> by_kind[3];
  for (const Row& r : rows) {
    const HtaKind k = KindOf(t.str(t.name[r.slice]));
    const int b = k == HtaKind::kCompute ? 0 : k == HtaKind::kComm ? 1 : k == HtaKind::kMemory ? 2 : -1;
    if (b >= 0) by_kind[b].push_back({r.ts, r.end});
  }
  std::vector<std::pair<int64_t, int>> ev;
  for (int b = 0; b < 3; ++b)
    for (const auto& [s, e] : HtaMerge(std::move(by_kind[b]))) ev.insert(ev.end(), {{s, 1 << b}, {e, -(1 << b)}});
  std::stable_sort(ev.begin(), ev.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::array<int64_t, 8> by_types{};
  int running = 0;
  for (size_t k = 0; k + 1 < ev.size(); ++k) {
    running += ev[k].second;
    if (running > 0) by_types[running & 7] += (ev[k + 1].first - ev[k].first) * 1000;
  }
  return KernelTypeRows(by_types);
}

}  // namespace

void ComputeHtaCompat(const Trace& t, const Classification& c, const std::vector<int64_t>& launch,
                      const AnalysisOptions& opts, TraceAnalysis* out) {
  // 2. The last-step rule's bound.
  std::vector<uint32_t> step_names;
  int64_t last = INT64_MIN;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.kind[i] != SliceKind::kRange) continue;
    const std::string& n = t.str(t.name[i]);
    if (n.find("ProfilerStep") == std::string::npos) continue;
    step_names.push_back(t.name[i]);
    // HTA's GPU kernel: args.stream ≥ 0 and args.correlation ≥ 0. A GPU-side ProfilerStep
    // annotation whose only id is its "External id" (ROCm) is a CPU event to HTA: it counts.
    const bool gpu_kernel = t.tracks[t.track[i]].type == TrackType::kDeviceStream && t.correlation[i] >= 0 &&
                            !(t.flags[i] & (kSliceNoStreamArg | kSliceCorrelationFromExternalId));
    if (!gpu_kernel) last = std::max(last, StartUs(t.ts[i]));
  }
  std::sort(step_names.begin(), step_names.end());
  const bool filter = std::unique(step_names.begin(), step_names.end()) - step_names.begin() >= 2 &&
                      last != INT64_MIN;

  std::vector<Row> rows;
  for (size_t i = 0; i < t.size(); ++i) {
    const Track& tr = t.tracks[t.track[i]];
    if (tr.type != TrackType::kDeviceStream || t.kind[i] != SliceKind::kRange) continue;
    if (c.of[i] == WorkClass::kMarker) continue;  // GPU annotations: no stream in HTA
    // Device events without args.stream (MTIA's dma_request): stream -1 to HTA, never a kernel.
    if (t.flags[i] & kSliceNoStreamArg) continue;
    const bool correlated = t.correlation[i] >= 0 && !(t.flags[i] & kSliceCorrelationFromExternalId);
    const int64_t ts = StartUs(t.ts[i]);
    if (filter) {
      if (correlated) {
        if (launch[i] < 0 || StartUs(launch[i]) >= last) continue;
      } else if (ts >= last) {
        continue;
      }
    }
    rows.push_back({ts, EndUs(t.ts[i], t.dur[i]), static_cast<int32_t>(i)});
  }

  // 3–4. Temporal breakdown and comm/comp overlap.
  std::vector<Iv> all, comp, comm;
  for (const Row& r : rows) {
    all.push_back({r.ts, r.end});
    const HtaKind k = KindOf(t.str(t.name[r.slice]));
    if (k == HtaKind::kCompute) comp.push_back({r.ts, r.end});
    if (k == HtaKind::kComm) comm.push_back({r.ts, r.end});
  }
  if (!all.empty()) {
    const std::vector<Iv> m = HtaMerge(std::move(all));
    const int64_t kernel_time = m.back().second - m.front().first;
    const int64_t idle = kernel_time - RunTime(m);
    const std::vector<Iv> mc = HtaMerge(std::move(comp)), mm = HtaMerge(std::move(comm));
    const int64_t compute = RunTime(mc);
    // Sweep: communication ±1, computation ±2; time where the sum is 3 overlaps.
    std::vector<std::pair<int64_t, int>> ev;
    for (const auto& [s, e] : mm) ev.insert(ev.end(), {{s, 1}, {e, -1}});
    for (const auto& [s, e] : mc) ev.insert(ev.end(), {{s, 2}, {e, -2}});
    std::stable_sort(ev.begin(), ev.end(), [](auto& a, auto& b) { return a.first < b.first; });
    int64_t overlap = 0;
    int running = 0;
    for (size_t k = 0; k < ev.size(); ++k) {
      running += ev[k].second;
      if (running == 3 && k + 1 < ev.size()) overlap += ev[k + 1].first - ev[k].first;
    }
    out->hta.kernel_time = kernel_time * 1000;
    out->hta.idle = idle * 1000;
    out->hta.compute = compute * 1000;
    out->hta.non_compute = (kernel_time - compute - idle) * 1000;
    out->hta.comm = RunTime(mm) * 1000;
    out->hta.overlap = overlap * 1000;
  }

  out->kernel_types = KernelTypesOf(t, rows);

  // 5. Idle breakdown per stream (HTA keys streams by number alone).
  std::map<int64_t, std::vector<const Row*>> per_stream;
  std::map<int64_t, std::string> label;
  for (const Row& r : rows) {
    if (!IdleCategory(t.str(t.category[r.slice]))) continue;
    const Track& tr = t.tracks[t.track[r.slice]];
    per_stream[tr.stream].push_back(&r);
    label.emplace(tr.stream, std::to_string(tr.device) + ":" + std::to_string(tr.stream));
  }
  for (auto& [stream, v] : per_stream) {
    std::stable_sort(v.begin(), v.end(), [](const Row* a, const Row* b) { return a->ts < b->ts; });
    IdleBreakdownRow row;
    row.stream = label[stream];
    for (size_t k = 1; k < v.size(); ++k) {
      const int64_t prev_end = v[k - 1]->end;
      const int64_t gap = v[k]->ts - prev_end;
      const int64_t l = launch[v[k]->slice];
      if (l >= 0 && StartUs(l) > prev_end) row.host_wait += gap * 1000;
      else if (gap * 1000 < opts.consecutive_kernel_delay_ns) row.kernel_wait += gap * 1000;
      else row.other += gap * 1000;
    }
    out->idle_breakdown.push_back(std::move(row));
  }
}

}  // namespace rlprof::analysis::internal
