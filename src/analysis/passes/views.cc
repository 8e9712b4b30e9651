// HTA and TraceLens views (docs/definitions.md §4.4, §4.5), computed from the partition.
// `--compat hta` replays HTA's own pipeline instead: hta_compat.cc.
#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <utility>

#include "src/analysis/passes/analyse_internal.h"

namespace rlprof::analysis::internal {

void ComputeHtaViews(const Trace& t, std::span<const WorkInterval> work, const Timeline& tl,
                     const std::vector<int64_t>& launch, const AnalysisOptions& opts,
                     TraceAnalysis* out) {
  if (!tl.runs().empty()) {
    const int64_t first = tl.runs().front().start, last = tl.runs().back().end;
    MaskHistogram h = tl.Histogram(first, last);
    Atoms a = h.atoms();
    out->hta.kernel_time = last - first;
    out->hta.idle = a.idle;
    out->hta.compute = a.compute();
    out->hta.non_compute = out->hta.kernel_time - a.compute() - a.idle;
    out->hta.comm = a.comm();
    out->hta.overlap = a.overlap;
    // Kernel types: each class mask's time to the set of HTA kernel types it holds (memcpy and
    // memset are MEMORY; "other" device work is none of them, as HTA's OTHER is not analysed).
    std::array<int64_t, 8> by_types{};
    for (int m = 1; m < kMaskCount; ++m) {
      const int types = ((m & kBitCompute) ? 1 : 0) | ((m & kBitComm) ? 2 : 0) |
                        ((m & (kBitMemcpy | kBitMemset)) ? 4 : 0);
      by_types[types] += h.time[m];
    }
    out->kernel_types = KernelTypeRows(by_types);
  }
  // Idle breakdown per stream: gaps between consecutive device work of one stream.
  std::map<uint32_t, std::vector<const WorkInterval*>> per_stream;
  for (const auto& w : work)
    if (w.slice >= 0 && t.tracks[t.track[w.slice]].type == TrackType::kDeviceStream &&
        w.bit != kBitOther)
      per_stream[t.track[w.slice]].push_back(&w);
  for (auto& [track, v] : per_stream) {
    std::sort(v.begin(), v.end(), [](auto* x, auto* y) { return x->start < y->start; });
    IdleBreakdownRow row;
    const Track& tr = t.tracks[track];
    row.stream = std::to_string(tr.device) + ":" + std::to_string(tr.stream);
    int64_t prev_end = INT64_MIN;
    for (const auto* w : v) {
      if (prev_end != INT64_MIN && w->start > prev_end) {
        const int64_t gap = w->start - prev_end;
        const int64_t l = launch[w->slice];
        if (l >= 0 && l > prev_end) row.host_wait += gap;
        else if (gap < opts.consecutive_kernel_delay_ns) row.kernel_wait += gap;
        else row.other += gap;
      }
      prev_end = std::max(prev_end, w->end);
    }
    out->idle_breakdown.push_back(row);
  }
}

std::vector<KernelTypeRow> KernelTypeRows(const std::array<int64_t, 8>& time_by_types) {
  static const char* const kNames[] = {"COMPUTATION", "COMMUNICATION", "MEMORY"};
  std::vector<KernelTypeRow> rows;
  for (int types = 1; types < 8; ++types) {
    if (time_by_types[types] == 0) continue;
    std::string name;
    for (int b = 0; b < 3; ++b)
      if (types & (1 << b)) name += (name.empty() ? "" : " overlapping ") + std::string(kNames[b]);
    rows.push_back({std::move(name), time_by_types[types]});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const KernelTypeRow& a, const KernelTypeRow& b) { return a.time > b.time; });
  return rows;
}

namespace {

// Kineto's GPU-side step annotations: device-track ranges named ProfilerStep#N, merged.
std::vector<std::pair<int64_t, int64_t>> GpuStepWindows(const Trace& t) {
  std::vector<std::pair<int64_t, int64_t>> w;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.tracks[t.track[i]].type != TrackType::kDeviceStream || t.kind[i] != SliceKind::kRange)
      continue;
    if (t.str(t.name[i]).starts_with("ProfilerStep#") && t.dur[i] > 0)
      w.push_back({t.ts[i], t.ts[i] + t.dur[i]});
  }
  return MergedSet::Build(std::move(w)).intervals();
}

}  // namespace

void ComputeTraceLens(const Trace& t, std::span<const WorkInterval> work, const Timeline& all,
                      const std::vector<int64_t>& launch, const AnalysisOptions& opts, TraceAnalysis* out) {
  const bool compat = opts.compat == CompatMode::kTraceLens;
  // TraceLens reads the device work linked to a launch in the trace (its TreePerfAnalyzer's
  // include_unlinked_kernels=False): work launched before the profiler started is not counted.
  // Only for Kineto traces (what TraceLens reads); one without any linked work keeps all of it.
  // `--compat tracelens`: linked as TraceLens links, through a pair of "ac2g" flow points (a
  // launch whose flow has no end — ROCm's hipMemset* — leaves its work out), never all of it.
  std::vector<WorkInterval> linked;
  if (t.format == "kineto")
    for (const auto& x : work)
      if (x.slice >= 0 && launch[x.slice] >= 0 && (!compat || (t.flags[x.slice] & kSliceFlowPairLinked)))
        linked.push_back(x);
  const bool by_link = (compat && t.format == "kineto") || (!linked.empty() && linked.size() < work.size());
  if (by_link && linked.size() < work.size())
    out->diagnostics.Add("tracelens_unlinked_work", work.size() - linked.size());
  std::span<const WorkInterval> read = by_link ? std::span<const WorkInterval>(linked) : work;
  // Kineto's GPU-side step annotations (`gpu_user_annotation` ProfilerStep#N) bound the device
  // time of the profiled steps: the timeline is computed over the work inside them (clipped),
  // so warm-up and trailing work outside the steps is not counted (docs/definitions.md §5.3).
  // Only when they bracket the work: where the annotations hold less than half of the device
  // time between the first one's start and the last one's end (ROCm writes them a few µs long,
  // beside the work), the whole trace is read and that is said. TraceLens has no step rule.
  auto windows = compat ? std::vector<std::pair<int64_t, int64_t>>() : GpuStepWindows(t);
  if (!windows.empty()) {
    const int64_t lo = windows.front().first, hi = windows.back().second;
    std::vector<WorkInterval> span_work;
    for (const auto& x : read)
      if (x.end > lo && x.start < hi && (x.bit & ~kBitOther)) {
        WorkInterval c = x;
        c.start = std::max(c.start, lo);
        c.end = std::min(c.end, hi);
        span_work.push_back(c);
      }
    int64_t in_span = 0, in_windows = 0;
    const Timeline span_tl = Timeline::Build(span_work);  // kept: runs() refers into it
    for (const Run& r : span_tl.runs()) {
      in_span += r.end - r.start;
      auto it = std::upper_bound(windows.begin(), windows.end(), r.start,
                                 [](int64_t v, const auto& w) { return v < w.second; });
      for (; it != windows.end() && it->first < r.end; ++it)
        in_windows += std::min(r.end, it->second) - std::max(r.start, it->first);
    }
    if (in_span > 0 && 2 * in_windows < in_span) {
      out->diagnostics.Note("tracelens_gpu_steps_not_bracketing",
                            t.source + ": the GPU-side ProfilerStep annotations hold " +
                                std::to_string(in_windows / 1000) + " µs of the " + std::to_string(in_span / 1000) +
                                " µs of device work between them: the TraceLens timeline is over the whole trace");
      windows.clear();
    }
  }
  std::vector<WorkInterval> clipped;
  for (const auto& x : windows.empty() ? std::span<const WorkInterval>() : read) {
    auto it = std::upper_bound(windows.begin(), windows.end(), x.start,
                               [](int64_t v, const auto& w) { return v < w.second; });
    for (; it != windows.end() && it->first < x.end; ++it) {
      WorkInterval c = x;
      c.start = std::max(x.start, it->first);
      c.end = std::min(x.end, it->second);
      if (c.end > c.start) clipped.push_back(c);
    }
  }
  if (!windows.empty()) {
    out->tracelens.gpu_step_windows = static_cast<int64_t>(windows.size());
    out->diagnostics.Add("tracelens_inside_gpu_steps", windows.size());
  }
  // The partition's timeline when nothing is left out, else one of what TraceLens reads.
  Timeline own;
  if (!windows.empty()) own = Timeline::Build(clipped);
  else if (by_link) own = Timeline::Build(read);
  const Timeline& tl = windows.empty() && !by_link ? all : own;
  // TraceLens reads kernels, memcpy and memset only: runs of unclassified work alone are idle.
  const auto& runs = tl.runs();
  auto counted = [](const Run& r) { return (r.mask & ~kBitOther) != 0; };
  auto first = std::find_if(runs.begin(), runs.end(), counted);
  if (first == runs.end()) return;
  auto last = std::find_if(runs.rbegin(), runs.rend(), counted);
  MaskHistogram h = tl.Histogram(first->start, last->end);
  auto& r = out->tracelens;
  r.total = last->end - first->start;
  r.computation = h.Covered(kBitCompute | kBitMemset);
  r.exposed_comm = h.CoveredExcept(kBitComm, kBitCompute | kBitMemset);
  r.exposed_memcpy = h.CoveredExcept(kBitMemcpy, kBitCompute | kBitMemset | kBitComm);
  r.idle = h.time[0] + h.time[kBitOther];
  r.busy = r.total - r.idle;
  r.total_comm = h.Covered(kBitComm);
  r.total_memcpy = h.Covered(kBitMemcpy);
}

}  // namespace rlprof::analysis::internal

#include <cmath>
#include <limits>

#include "src/analysis/passes/views.h"

namespace rlprof::analysis {

MsprofRow MsprofFromStep(const StepResult& s) {
  MsprofRow r;
  const Atoms& a = s.atoms;
  r.computing = a.compute();
  r.comm_not_overlapped = a.comm_only;
  r.overlapped = a.overlap;
  r.communication = a.comm();
  r.free = a.memory_only + a.other_only + a.idle;
  r.bubble = s.recv_sum;
  r.stage = (s.window.end - s.window.start) + s.overflow - s.recv_sum;
  r.not_overlapped_excl_recv = a.comm_only - s.recv_sum;
  r.preparing = s.preparing < 0 ? 0 : s.preparing;
  return r;
}

// numpy.around (what pandas' round(Series, 2) calls): scale, round half to even, unscale.
double Round2(double v) { return std::nearbyint(v * 100.0) / 100.0; }

HtaPercent HtaPercentages(const HtaBreakdown& h) {
  // HTA divides first, then scales: 100 * (part / kernel_time), rounded to 2 decimals.
  auto pct = [](int64_t part, int64_t whole) {
    return Round2(100.0 * (static_cast<double>(part) / static_cast<double>(whole)));
  };
  HtaPercent p;
  if (h.kernel_time > 0) {
    p.idle = pct(h.idle, h.kernel_time);
    p.compute = pct(h.compute, h.kernel_time);
    p.non_compute = pct(h.non_compute, h.kernel_time);
  }
  p.comm_comp_overlap = h.comm > 0 ? pct(h.overlap, h.comm) : std::numeric_limits<double>::quiet_NaN();
  return p;
}

}  // namespace rlprof::analysis
