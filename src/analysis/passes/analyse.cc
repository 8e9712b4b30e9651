#include "src/analysis/passes/analyse.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "src/analysis/passes/analyse_internal.h"
#include "src/base/time_math.h"

namespace rlprof::analysis {

namespace {

// Receive intervals sorted by start, for Σ receive durations per window.
struct RecvIndex {
  std::vector<WorkInterval> recv;
  int64_t max_len = 0;
  // Σ durations clipped to [s, e) (clip) or whole when the start is inside (by_start).
  int64_t Sum(int64_t s, int64_t e, AssignMode mode) const {
    auto it = std::lower_bound(recv.begin(), recv.end(), base::SatSub(s, max_len),
                               [](const WorkInterval& w, int64_t v) { return w.start < v; });
    int64_t sum = 0;
    for (; it != recv.end() && it->start < e; ++it) {
      if (mode == AssignMode::kByStart) {
        if (it->start >= s) sum = base::SatAdd(sum, it->end - it->start);
      } else {
        sum = base::SatAdd(sum, std::max<int64_t>(0, std::min(e, it->end) - std::max(s, it->start)));
      }
    }
    return sum;
  }
};

int64_t FirstComputeOrComm(const Timeline& tl, int64_t s, int64_t e) {
  const auto& runs = tl.runs();
  auto it = std::upper_bound(runs.begin(), runs.end(), s,
                             [](int64_t v, const Run& r) { return v < r.end; });
  for (; it != runs.end() && it->start < e; ++it)
    if (it->mask & (kBitCompute | kBitComm)) return std::max(s, it->start);
  return -1;
}

void CheckInvariants(const Atoms& a, int64_t window, int64_t c_len, int64_t m_len, bool clip,
                     Diagnostics* d) {
  const int64_t atoms[] = {a.compute_only, a.comm_only, a.overlap, a.memory_only, a.other_only, a.idle};
  for (int64_t v : atoms) {
    if (v < 0) d->Add("invariant_atom_negative");
    if (clip && v > window) d->Add("invariant_atom_exceeds_window");
  }
  if (clip && a.sum() != window) d->Add("invariant_atoms_sum_not_window");
  if (a.compute() != c_len) d->Add("invariant_compute_not_union");
  if (a.comm() != m_len) d->Add("invariant_comm_not_union");
}

MergedSet SetOf(const std::vector<WorkInterval>& work, uint8_t bit) {
  std::vector<std::pair<int64_t, int64_t>> v;
  for (const auto& w : work)
    if (w.bit == bit && w.end > w.start) v.push_back({w.start, w.end});
  return MergedSet::Build(std::move(v));
}

bool IsPointToPoint(const std::string& name) {
  std::string s;
  s.reserve(name.size());
  for (char ch : name) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  return s.find("send") != std::string::npos || s.find("recv") != std::string::npos ||
         s.find("receive") != std::string::npos;
}

// Per process group g and step window W: ‖M_g ∩ W‖ and ‖(M_g − C) ∩ W‖ (clipped to W in every
// assignment mode), and how many of the group's intervals start in W.
std::vector<GroupComm> CommByGroup(const Trace& t, const std::vector<WorkInterval>& work,
                                   const MergedSet& cset, const std::vector<StepWindow>& windows) {
  std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> by_group;
  for (const auto& w : work)
    if (w.bit == kBitComm && w.end > w.start)
      by_group[w.slice >= 0 ? t.group[w.slice] : 0].push_back({w.start, w.end});
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> named;
  for (auto& [id, v] : by_group) {
    std::string name = id != 0 ? t.str(id) : "";
    if (name.empty()) name = "(none)";
    auto& dst = named[name];
    dst.insert(dst.end(), v.begin(), v.end());
  }
  std::vector<GroupComm> out;
  for (auto& [name, v] : named) {
    std::sort(v.begin(), v.end());
    std::vector<int64_t> starts;
    starts.reserve(v.size());
    for (const auto& iv : v) starts.push_back(iv.first);
    MergedSet m = MergedSet::Build(v);
    MergedSet exposed = MergedSet::Build(Subtract(m.intervals(), cset.intervals()));
    for (const auto& w : windows) {
      GroupComm g;
      g.step = w.step;
      g.group = name;
      g.comm = m.Length(w.start, w.end);
      g.ops = std::lower_bound(starts.begin(), starts.end(), w.end) -
              std::lower_bound(starts.begin(), starts.end(), w.start);
      if (g.comm == 0 && g.ops == 0) continue;
      g.comm_not_overlapped = exposed.Length(w.start, w.end);
      out.push_back(std::move(g));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const GroupComm& a, const GroupComm& b) { return a.step < b.step; });
  return out;
}

// by_launch (msprof-analyze DB): each work interval goes whole to the step whose host range
// contains the start of the host call that launched it. Work without a known launch (no
// correlated host call, host work of CPU-only traces) falls back to the window containing its
// start, and is counted. Work launched outside every host step is in no step.
std::vector<std::vector<WorkInterval>> AssignByLaunch(const std::vector<WorkInterval>& work,
                                                      const std::vector<int64_t>& launch,
                                                      const std::vector<StepWindow>& windows,
                                                      Diagnostics* diag) {
  std::vector<std::vector<WorkInterval>> out(windows.size());
  if (windows.empty()) return out;
  // Windows are sorted by host start; host ranges of consecutive steps do not overlap.
  auto host_step = [&](int64_t t) -> int64_t {
    auto it = std::upper_bound(windows.begin(), windows.end(), t,
                               [](int64_t v, const StepWindow& w) { return v < w.host_start; });
    if (it == windows.begin()) return -1;
    --it;
    return t < it->host_end || it->whole_trace ? it - windows.begin() : -1;
  };
  auto window_of = [&](int64_t t) -> int64_t {
    auto it = std::upper_bound(windows.begin(), windows.end(), t,
                               [](int64_t v, const StepWindow& w) { return v < w.end; });
    return it != windows.end() && it->start <= t ? it - windows.begin() : -1;
  };
  uint64_t no_launch = 0;
  for (const auto& x : work) {
    const int64_t l = x.slice >= 0 ? launch[x.slice] : -1;
    int64_t k;
    if (l >= 0) {
      k = windows.front().whole_trace ? 0 : host_step(l);
    } else {
      ++no_launch;
      k = window_of(x.start);
    }
    if (k >= 0) out[k].push_back(x);
  }
  if (no_launch) diag->Add("by_launch_without_launch", no_launch);
  return out;
}

// The stage rows of every step (windows from the trace's stage markers), and each step's
// "(none)": the time no stage covers.
std::vector<StageResult> StageResults(const Trace& t, const std::vector<StepWindow>& windows,
                                      const std::vector<WorkInterval>& work,
                                      const std::vector<int64_t>& launch, const Timeline& tl,
                                      const MergedSet& cset, const MergedSet& mset,
                                      const RecvIndex& recv, Diagnostics* diag) {
  std::vector<StageResult> out;
  std::vector<StageWindow> stage_windows = BuildStageWindows(t, windows, work, launch);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> covered(windows.size());
  for (const auto& sw : stage_windows) {
    StageResult r;
    r.step = sw.step;
    r.role = sw.role;
    r.name = sw.name;
    r.start = sw.start;
    r.end = sw.end;
    r.duration = sw.end - sw.start;
    MaskHistogram h = tl.Histogram(sw.start, sw.end);
    r.atoms = h.atoms();
    CheckInvariants(r.atoms, r.duration, cset.Length(sw.start, sw.end), mset.Length(sw.start, sw.end),
                    true, diag);
    r.recv_sum = recv.Sum(sw.start, sw.end, AssignMode::kClip);
    covered[sw.step_index].push_back({sw.start, sw.end});
    out.push_back(std::move(r));
  }
  for (size_t k = 0; k < windows.size(); ++k) {
    const auto& w = windows[k];
    MergedSet u = MergedSet::Build(covered[k]);
    std::vector<std::pair<int64_t, int64_t>> rest = Subtract({{w.start, w.end}}, u.intervals());
    StageResult r;
    r.step = w.step;
    r.name = "(none)";
    r.start = w.start;
    r.end = w.end;
    MaskHistogram sum;
    for (const auto& [s, e] : rest) {
      MaskHistogram h = tl.Histogram(s, e);
      for (int m = 0; m < kMaskCount; ++m) sum.time[m] += h.time[m];
      r.duration += e - s;
      r.recv_sum += recv.Sum(s, e, AssignMode::kClip);
    }
    r.atoms = sum.atoms();
    if (r.duration > 0 || covered[k].empty()) out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(), [](const StageResult& x, const StageResult& y) {
    return x.step != y.step ? x.step < y.step : x.start < y.start;
  });
  return out;
}

// One row per device kernel, in stream order, with its wait after the previous one.
std::vector<KernelRow> KernelRows(const Trace& t, const Classification& c,
                                  const std::vector<WorkInterval>& work,
                                  const std::vector<StepWindow>& windows) {
  std::vector<KernelRow> out;
  int64_t prev_end = -1;
  uint32_t prev_track = UINT32_MAX;
  size_t rows = 0;
  for (const auto& x : work) rows += x.slice >= 0;
  out.reserve(rows);
  // "device:stream" once per track, not once per kernel.
  std::vector<std::string> stream_of(t.tracks.size());
  for (const auto& x : work) {
    if (x.slice < 0) continue;
    KernelRow k;
    const uint32_t tr = t.track[x.slice];
    k.name = t.str(t.name[x.slice]);
    k.cls = c.of[x.slice];
    std::string& stream = stream_of[tr];
    if (stream.empty())
      stream = std::to_string(t.tracks[tr].device) + ":" + std::to_string(t.tracks[tr].stream);
    k.stream = stream;
    k.start = x.start;
    k.dur = x.end - x.start;
    if (tr == prev_track && x.start > prev_end) k.wait = x.start - prev_end;
    prev_track = tr;
    prev_end = x.end;
    auto it = std::upper_bound(windows.begin(), windows.end(), x.start,
                               [](int64_t v, const StepWindow& w) { return v < w.end; });
    if (it != windows.end() && it->start <= x.start) k.step = it->step;
    out.push_back(std::move(k));
  }
  return out;
}

// Work outside every step window (windows are disjoint and sorted), counted.
void CountWorkOutsideSteps(const std::vector<WorkInterval>& work,
                           const std::vector<StepWindow>& windows, Diagnostics* diag) {
  if (windows.empty() || windows.front().whole_trace) return;
  uint64_t outside = 0;
  for (const auto& x : work) {
    auto it = std::upper_bound(windows.begin(), windows.end(), x.start,
                               [](int64_t v, const StepWindow& w) { return v < w.end; });
    if (it == windows.end() || it->start >= x.end) ++outside;
  }
  if (outside) diag->Add("work_outside_step_windows", outside);
}

// The collectives (not point-to-point), in start order, for the cluster view.
std::vector<CollectiveRow> Collectives(const Trace& t, const std::vector<WorkInterval>& work) {
  std::vector<CollectiveRow> out;
  for (const auto& w : work) {
    if (w.bit != kBitComm || w.recv || w.slice < 0) continue;
    const std::string& name = t.str(t.name[w.slice]);
    if (IsPointToPoint(name)) continue;
    out.push_back({name, t.str(t.group[w.slice]), t.ts[w.slice], t.ts[w.slice] + t.dur[w.slice],
                             t.bytes[w.slice]});
  }
  std::sort(out.begin(), out.end(),
            [](const CollectiveRow& x, const CollectiveRow& y) { return x.start < y.start; });
  return out;
}

}  // namespace

namespace {

// Each sample's life (samples_run.h): the records and uses, and the step each sample was made in
// — the one whose window holds its end, else the last step begun before it.
void AttachSamples(const Trace& t, const std::vector<StepWindow>& windows, TraceAnalysis* a) {
  a->wall_offset_ns = t.wall_offset_ns;
  a->samples = t.samples;
  a->sample_uses = t.sample_uses;
  for (SampleRecord& s : a->samples) {
    const int64_t at = s.end >= 0 ? s.end : s.submit;
    for (const StepWindow& w : windows) {
      if (at >= w.host_start && at <= w.host_end) {
        s.step = w.step;
        break;
      }
      if (w.host_start <= at) s.step = w.step;
    }
  }
}

}  // namespace

namespace {

// Who recorded the trace and how (the result's identity; diagnostics start as the reader's).
void CopyIdentity(const Trace& t, TraceAnalysis* a) {
  a->source = t.source;
  a->format = t.format;
  a->rank = t.rank;
  a->host = t.host;
  a->role = t.role;
  a->pid = t.pid;
  a->step_is_capture_window = t.step_is_capture_window;
  a->stage_is_capture_window = t.stage_is_capture_window;
  a->ops_sampling = t.ops_sampling;
  a->diagnostics = t.diagnostics;
}

}  // namespace

TraceAnalysis AnalyseTrace(const Trace& t, const Classifier& cls, const AnalysisOptions& opts) {
  TraceAnalysis a;
  CopyIdentity(t, &a);
  Diagnostics& diag = a.diagnostics;

  Classification c = cls.Classify(t, &diag);
  for (size_t i = 0; i < t.size(); ++i) {
    auto& ct = a.classes[static_cast<int>(c.of[i])];
    ++ct.count;
    ct.total = base::SatAdd(ct.total, t.dur[i]);
  }
  std::vector<WorkInterval> work = CollectWork(t, c, &a.cpu_only, &diag);
  if (opts.activity_spans > 0) {
    ActivityLanesResult lanes = ActivityLanes(t, c, {.max_spans = opts.activity_spans});
    a.activity = std::move(lanes.lanes);
    a.activity_lanes_left_out = lanes.device_lanes_left_out + lanes.host_lanes_left_out;
  }
  std::vector<int64_t> launch = LaunchTimes(t);
  std::vector<StepWindow> windows = BuildStepWindows(t, work, launch, &diag);
  const Timeline tl = Timeline::Build(work);
  const MergedSet cset = SetOf(work, kBitCompute), mset = SetOf(work, kBitComm);
  RecvIndex recv;
  for (const auto& w : work) {
    if (!w.recv || w.bit != kBitComm) continue;
    recv.recv.push_back(w);
    recv.max_len = std::max(recv.max_len, w.end - w.start);
  }
  std::sort(recv.recv.begin(), recv.recv.end(),
            [](const WorkInterval& x, const WorkInterval& y) { return x.start < y.start; });

  // Work sorted by start, for by_start assignment and kernel counts.
  std::vector<WorkInterval> by_start = work;
  std::sort(by_start.begin(), by_start.end(),
            [](const WorkInterval& x, const WorkInterval& y) { return x.start < y.start; });
  auto starts_in = [&](int64_t s, int64_t e) {
    auto lo = std::lower_bound(by_start.begin(), by_start.end(), s,
                               [](const WorkInterval& w, int64_t v) { return w.start < v; });
    auto hi = std::lower_bound(lo, by_start.end(), e,
                               [](const WorkInterval& w, int64_t v) { return w.start < v; });
    return std::make_pair(lo, hi);
  };

  std::vector<std::vector<WorkInterval>> launched;
  if (opts.assign == AssignMode::kByLaunch) launched = AssignByLaunch(work, launch, windows, &diag);

  for (const auto& w : windows) {
    StepResult r;
    r.window = w;
    const int64_t len = w.end - w.start;
    auto [lo, hi] = starts_in(w.start, w.end);
    r.kernels = hi - lo;
    if (opts.assign != AssignMode::kClip) {
      // Whole intervals: those starting in W (by_start), or those assigned by launch.
      std::vector<WorkInterval> mine = opts.assign == AssignMode::kByStart
                                           ? std::vector<WorkInterval>(lo, hi)
                                           : std::move(launched[&w - windows.data()]);
      int64_t begin = w.start, end = w.end;
      for (const auto& x : mine) {
        begin = std::min(begin, x.start);
        end = std::max(end, x.end);
      }
      Timeline own = Timeline::Build(mine);
      r.hist = own.Histogram(begin, end);
      r.atoms = r.hist.atoms();
      r.overflow = r.atoms.sum() - len;
      MergedSet oc = SetOf(mine, kBitCompute), om = SetOf(mine, kBitComm);
      CheckInvariants(r.atoms, len, oc.Length(), om.Length(), false, &diag);
      r.preparing = FirstComputeOrComm(own, begin, end);
      if (opts.assign == AssignMode::kByLaunch) {
        for (const auto& x : mine)
          if (x.recv && x.bit == kBitComm) r.recv_sum = base::SatAdd(r.recv_sum, x.end - x.start);
      }
    } else {
      r.hist = tl.Histogram(w.start, w.end);
      r.atoms = r.hist.atoms();
      CheckInvariants(r.atoms, len, cset.Length(w.start, w.end), mset.Length(w.start, w.end), true,
                      &diag);
      r.preparing = FirstComputeOrComm(tl, w.start, w.end);
    }
    if (r.preparing >= 0) r.preparing -= w.host_start;
    if (opts.assign != AssignMode::kByLaunch) r.recv_sum = recv.Sum(w.start, w.end, opts.assign);
    a.steps.push_back(std::move(r));
  }
  CountWorkOutsideSteps(work, windows, &diag);

  a.comm_by_group = CommByGroup(t, work, cset, windows);
  a.collectives = Collectives(t, work);

  // Stages, and the "(none)" remainder of each step.
  a.stages = StageResults(t, windows, work, launch, tl, cset, mset, recv, &diag);

  // Per-kernel rows (device work only), in stream order; one per kernel, so views that never
  // show kernel_details leave them out (AnalysisOptions::kernel_rows).
  if (!a.cpu_only && opts.kernel_rows) a.kernel_rows = KernelRows(t, c, work, windows);

  // HTA fails on traces without device work; those keep the host-based rows (§4.1).
  if (opts.compat == CompatMode::kHta && !a.cpu_only) internal::ComputeHtaCompat(t, c, launch, opts, &a);
  else internal::ComputeHtaViews(t, work, tl, launch, opts, &a);
  internal::ComputeTraceLens(t, work, tl, launch, opts, &a);
  internal::ComputeOpStats(t, c, &a);
  a.modules = ModuleView(t);
  a.user_ranges = UserRanges(t);
  a.async = AsyncPools(t);
  // Each sample's life: the step it was made in is the one whose window holds its end (else the
  // last step begun before it).
  AttachSamples(t, windows, &a);
  a.tb_steps = TbStepTime(t, TbRules::kRelease043);
  a.memory_peaks = MemoryPeaks(t, a.stages);
  a.out_of_memory = OutOfMemory(t, a.stages);
  a.ops_by_frame = OpsByFrame(t);
  return a;
}

}  // namespace rlprof::analysis
