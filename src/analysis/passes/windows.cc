#include "src/analysis/passes/windows.h"

#include <algorithm>
#include <map>
#include <queue>
#include <unordered_map>

#include "src/analysis/passes/classify.h"
#include "src/analysis/model/id_map.h"
#include "src/config/stages.h"

namespace rlprof::analysis {

namespace {

// Device work sorted by launch time, for "the last device activity launched inside H".
struct LaunchedWork {
  std::vector<std::pair<int64_t, int64_t>> by_launch;  // (launch ts, work end)

  LaunchedWork(std::span<const WorkInterval> work, const std::vector<int64_t>& launch) {
    for (const auto& w : work)
      if (w.slice >= 0 && launch[w.slice] >= 0) by_launch.push_back({launch[w.slice], w.end});
    std::sort(by_launch.begin(), by_launch.end());
  }
  // Max end of work launched in [h0, h1), and how many such launches; -1 if none.
  std::pair<int64_t, int64_t> In(int64_t h0, int64_t h1) const {
    auto lo = std::lower_bound(by_launch.begin(), by_launch.end(), std::make_pair(h0, INT64_MIN));
    int64_t last = -1, n = 0, prev_launch = INT64_MIN;
    for (auto it = lo; it != by_launch.end() && it->first < h1; ++it) {
      last = std::max(last, it->second);
      if (it->first != prev_launch) ++n;
      prev_launch = it->first;
    }
    return {last, n};
  }
};

}  // namespace

namespace {

bool ParseStepNumber(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

size_t ApplyStepMarker(Trace* t, const std::regex& re) {
  // Match each distinct name once: traces have millions of slices but few names.
  std::vector<int8_t> matches(t->strings.size(), -1);
  std::vector<int64_t> number(t->strings.size(), -1);
  std::vector<Marker> steps;
  for (size_t i = 0; i < t->size(); ++i) {
    if (t->kind[i] != SliceKind::kRange || t->tracks[t->track[i]].type == TrackType::kDeviceStream)
      continue;
    const uint32_t id = t->name[i];
    if (matches[id] < 0) {
      const std::string& name = t->str(id);
      std::smatch m;
      matches[id] = std::regex_search(name, m, re) ? 1 : 0;
      int64_t n = -1;
      if (matches[id] && !(m.size() > 1 && ParseStepNumber(m[1].str(), &n))) {
        const size_t d = name.find_first_of("0123456789");
        if (d != std::string::npos) {
          const size_t e = name.find_first_not_of("0123456789", d);
          if (!ParseStepNumber(name.substr(d, e == std::string::npos ? e : e - d), &n)) n = -1;
        }
      }
      number[id] = n;
    }
    if (matches[id] == 1)
      steps.push_back(Marker{number[id], t->ts[i], t->ts[i] + t->dur[i], t->track[i], "", t->str(id)});
  }
  if (steps.empty()) {
    t->diagnostics.Add("step_marker_not_found");
    return 0;
  }
  std::sort(steps.begin(), steps.end(), [](const Marker& a, const Marker& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  // Names without a number: their occurrence, in start order.
  int64_t k = 0;
  for (auto& m : steps) {
    ++k;
    if (m.step < 0) m.step = k;
  }
  t->steps = std::move(steps);
  t->step_is_capture_window = false;  // the user's markers are real steps
  return t->steps.size();
}

std::vector<int64_t> LaunchTimes(const Trace& t) {
  // correlation → the runtime call's start (the first). Only runtime-category host slices
  // launch: Kineto's operators carry their External id in the same column, a different id space
  // whose numbers collide with correlation ids (an H100 trace put 477 of its 3,002 kernels'
  // launches on operators 47 ms later).
  IdMap<int64_t> host_launch(t.correlation);
  RuntimeCategories runtime(t);
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.correlation[i] < 0 || t.tracks[t.track[i]].type == TrackType::kDeviceStream) continue;
    if (!runtime(i)) continue;
    host_launch.Put(t.correlation[i], t.ts[i]);
  }
  std::vector<int64_t> out(t.size(), -1);
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.correlation[i] < 0 || t.tracks[t.track[i]].type != TrackType::kDeviceStream) continue;
    if (const int64_t* ts = host_launch.Find(t.correlation[i])) out[i] = *ts;
  }
  return out;
}

std::vector<StepWindow> BuildStepWindows(const Trace& t, std::span<const WorkInterval> work,
                                         const std::vector<int64_t>& launch, Diagnostics* diag) {
  std::vector<StepWindow> out;
  if (t.steps.empty()) {
    // Whole trace (or capture) is step 0.
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < t.size(); ++i) {
      lo = std::min(lo, t.ts[i]);
      hi = std::max(hi, t.ts[i] + t.dur[i]);
    }
    if (t.capture_start_ns >= 0) lo = std::min(lo, t.capture_start_ns);
    if (t.capture_end_ns >= 0) hi = std::max(hi, t.capture_end_ns);
    if (t.whole_trace_is_work_span) {
      int64_t wlo = INT64_MAX, whi = INT64_MIN;
      for (const auto& x : work) {
        if (x.bit != kBitCompute && x.bit != kBitComm) continue;
        wlo = std::min(wlo, x.start);
        whi = std::max(whi, x.end);
      }
      if (wlo <= whi) lo = wlo, hi = whi;
    }
    if (lo > hi) lo = hi = 0;
    StepWindow w;
    w.step = 0;
    w.host_start = w.start = lo;
    w.host_end = w.end = hi;
    w.whole_trace = true;
    out.push_back(w);
    return out;
  }
  // Merge markers of the same step number (e.g. one per thread) into one host range.
  std::map<int64_t, std::pair<int64_t, int64_t>> host;
  for (const auto& m : t.steps) {
    auto [it, fresh] = host.try_emplace(m.step, m.start_ns, m.end_ns);
    if (!fresh) {
      it->second.first = std::min(it->second.first, m.start_ns);
      it->second.second = std::max(it->second.second, m.end_ns);
    }
  }
  std::vector<StepWindow> steps;
  for (const auto& [n, h] : host) {
    StepWindow w;
    w.step = n;
    w.host_start = h.first;
    w.host_end = std::max(h.first, h.second);
    steps.push_back(w);
  }
  std::sort(steps.begin(), steps.end(), [](const StepWindow& a, const StepWindow& b) {
    return a.host_start != b.host_start ? a.host_start < b.host_start : a.step < b.step;
  });
  LaunchedWork lw(work, launch);
  int64_t e_prev = INT64_MIN;
  for (auto& w : steps) {
    auto [last, n] = lw.In(w.host_start, w.host_end);
    w.launches = n;
    w.start = std::max(w.host_start, e_prev);
    w.end = std::max(w.host_end, last);
    if (w.end < w.start) {
      w.end = w.start;
      if (diag) diag->Add("empty_step_window");
    }
    e_prev = w.end;
    if (t.capture_start_ns >= 0 && w.host_start < t.capture_start_ns) {
      w.partial = true;
      w.partial_reason = "before_capture_start";
    } else if (t.capture_end_ns >= 0 && w.end > t.capture_end_ns) {
      w.partial = true;
      w.partial_reason = "after_capture_end";
    }
    out.push_back(w);
  }
  // tb_plugin heuristic: the last step with < 80 % of the previous step's launches.
  if (out.size() >= 2) {
    auto& last = out.back();
    const auto& prev = out[out.size() - 2];
    if (!last.partial && prev.launches > 0 && last.launches * 5 < prev.launches * 4) {
      last.partial = true;
      last.partial_reason = "last_step_fewer_launches";
    }
  }
  return out;
}

std::vector<StageWindow> BuildStageWindows(const Trace& t, const std::vector<StepWindow>& steps,
                                           std::span<const WorkInterval> work,
                                           const std::vector<int64_t>& launch) {
  std::vector<StageWindow> out;
  if (t.stages.empty() || steps.empty()) return out;
  LaunchedWork lw(work, launch);
  std::vector<Marker> stages = t.stages;  // sorted by start (Trace::Finalize)
  std::sort(stages.begin(), stages.end(), [](const Marker& a, const Marker& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  // Previous-sibling rule: a stage starts no earlier than the window end of every stage whose
  // host range ended before it began (device tail of the previous stage stays with it).
  // Min-heap on host end of the stages seen so far; starts are non-decreasing, so a stage
  // popped once (host end <= current start) stays "finished" for every later stage.
  using Ended = std::pair<int64_t, int64_t>;  // (host end, window end)
  std::priority_queue<Ended, std::vector<Ended>, std::greater<Ended>> pending;
  int64_t e_prev = INT64_MIN;
  for (const auto& m : stages) {
    while (!pending.empty() && pending.top().first <= m.start_ns) {
      e_prev = std::max(e_prev, pending.top().second);
      pending.pop();
    }
    auto [last, n] = lw.In(m.start_ns, m.end_ns);
    const int64_t s = std::max(m.start_ns, e_prev);
    const int64_t e = std::max(m.end_ns, last);
    pending.push({m.end_ns, e});
    // Step windows are sorted and disjoint: visit only those overlapping [s, e).
    size_t k0 = std::upper_bound(steps.begin(), steps.end(), s,
                                 [](int64_t v, const StepWindow& w) { return v < w.end; }) -
                steps.begin();
    for (size_t k = k0; k < steps.size() && steps[k].start < e; ++k) {
      const auto& w = steps[k];
      const int64_t cs = std::max(s, w.start), ce = std::min(e, w.end);
      if (ce <= cs) continue;
      StageWindow sw;
      sw.step_index = k;
      sw.step = w.step;
      sw.role = m.role;
      // One stage vocabulary (src/config/stages.h): MindSpeed-RL's actor_generate and verl's
      // rollout_generate are one stage in every view and in compare.
      sw.name = config::CanonicalStage(m.name);
      if (sw.role.empty()) sw.role = config::StageRole(sw.name);
      sw.host_start = m.start_ns;
      sw.host_end = m.end_ns;
      sw.start = cs;
      sw.end = ce;
      out.push_back(std::move(sw));
    }
  }
  return out;
}

}  // namespace rlprof::analysis
