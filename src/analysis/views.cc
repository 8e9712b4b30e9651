// HTA and TraceLens views (docs/definitions.md §4.4, §4.5), computed from the partition.
#include <algorithm>
#include <map>

#include "src/analysis/analyse_internal.h"

namespace rlprof::analysis::internal {

namespace {

int64_t CeilUs(int64_t ns) { return (ns >= 0 ? (ns + 999) / 1000 : -((-ns) / 1000)) * 1000; }
int64_t FloorUs(int64_t ns) { return (ns >= 0 ? ns / 1000 : -((-ns + 999) / 1000)) * 1000; }

}  // namespace

void ComputeHtaViews(const Trace& t, std::span<const WorkInterval> work, const Timeline& native_tl,
                     const std::vector<StepWindow>& steps, const std::vector<int64_t>& launch,
                     const AnalysisOptions& opts, TraceAnalysis* out) {
  const bool compat = opts.compat == CompatMode::kHta;
  std::vector<WorkInterval> hta;
  if (compat) {
    hta.assign(work.begin(), work.end());
    // Last-step filter: with ≥ 2 ProfilerSteps keep only work launched (or, without a launch,
    // started) before the last step began.
    if (steps.size() >= 2 && !steps.front().whole_trace) {
      const int64_t last = steps.back().host_start;
      std::erase_if(hta, [&](const WorkInterval& w) {
        const int64_t at = w.slice >= 0 && launch[w.slice] >= 0 ? launch[w.slice] : w.start;
        return at >= last;
      });
    }
    // µs rounding: end = floor(ts + dur), ts = ceil(ts); events with dur ≤ 0 vanish.
    for (auto& w : hta) {
      const int64_t s = CeilUs(w.start), e = FloorUs(w.end);
      w.start = s;
      w.end = e;
    }
    std::erase_if(hta, [](const WorkInterval& w) { return w.end <= w.start; });
  }
  Timeline rounded;
  if (compat) rounded = Timeline::Build(hta);
  const Timeline& tl = compat ? rounded : native_tl;
  std::span<const WorkInterval> used = compat ? std::span<const WorkInterval>(hta) : work;
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
  }
  // Idle breakdown per stream: gaps between consecutive device work of one stream.
  std::map<uint32_t, std::vector<const WorkInterval*>> per_stream;
  for (const auto& w : used)
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

void ComputeTraceLens(const Timeline& tl, TraceAnalysis* out) {
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

#include "src/analysis/views.h"

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

double Round2(double v) { return std::round(v * 100.0) / 100.0; }

HtaPercent HtaPercentages(const HtaBreakdown& h) {
  HtaPercent p;
  if (h.kernel_time > 0) {
    const double k = static_cast<double>(h.kernel_time);
    p.idle = Round2(100.0 * static_cast<double>(h.idle) / k);
    p.compute = Round2(100.0 * static_cast<double>(h.compute) / k);
    p.non_compute = Round2(100.0 * static_cast<double>(h.non_compute) / k);
  }
  p.comm_comp_overlap = h.comm > 0 ? Round2(100.0 * static_cast<double>(h.overlap) /
                                            static_cast<double>(h.comm))
                                   : std::numeric_limits<double>::quiet_NaN();
  return p;
}

}  // namespace rlprof::analysis
