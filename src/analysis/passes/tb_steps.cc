// torch-tb-profiler's step-cost breakdown (tb_steps.h), rlprof's own implementation of the
// rule the plugin applies (docs/definitions.md §5.6):
//  1. Events by category (lower-cased): cpu_op / operator → operator (ProfilerStep#N → a step),
//     user_annotation / gpu_user_annotation → a step when named ProfilerStep#N (host- and
//     GPU-side alike), python → operator, kernel, memcpy / gpu_memcpy, memset / gpu_memset →
//     device work, runtime categories (TbRules) → runtime calls; only complete ranges.
//  2. Classes: kernels launched by a collective operator (nccl:* / gloo:* of the plugin's list, the
//     innermost cpu_op around the launch: the one whose External id the kernel carries) →
//     communication, other kernels → kernel; copies, sets, runtime calls; operators and
//     annotations named enumerate(DataLoader)#….__next__ or enumerate(DataPipe)#… → DataLoader;
//     collective operators → communication; other operators → CPU Exec. Each class merged.
//  3. Steps: the ProfilerStep ranges in start order, or the host events' span when none. When
//     some device work was launched by a runtime call lying inside a step, each step is moved to
//     the device: it starts at max(previous step's end, its host start) — the first at the end
//     of device work launched outside every step that ended before the first step's device
//     work, if later than its host start — and ends at max(host end, end of the device work its
//     runtime calls launched); then trailing steps that launched nothing are dropped, and the
//     last one too when it launched fewer than 0.8 × its predecessor's device events.
//  4. Priority: Kernel, Memcpy, Memset, Communication, Runtime, DataLoader, CPU Exec take the
//     union of the steps in that order, each the part no earlier class took; Other is the rest.
//     As in the plugin, a class that finds nothing left to take takes its whole set and the
//     union of the steps is offered again to the classes after it.
//  5. Per step: each class's measure inside the step; total = the step's duration.
#include "src/analysis/passes/tb_steps.h"

#include "src/analysis/passes/classify.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cctype>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace rlprof::analysis {
namespace {

using Range = std::pair<int64_t, int64_t>;
using Ranges = std::vector<Range>;  // sorted by start, disjoint (after Merge)

enum class Kind : uint8_t { kNone, kOperator, kAnnotation, kPython, kStep, kRuntime, kKernel, kMemcpy, kMemset };

// The plugin's collective operator names (NcclOpNameSet, GlooOpNameSet).
bool IsCollectiveName(std::string_view n) {
  static constexpr std::array<std::string_view, 10> kNames = {
      "nccl:broadcast", "nccl:reduce", "nccl:all_reduce", "nccl:all_gather", "nccl:reduce_scatter",
      "gloo:broadcast", "gloo:reduce", "gloo:all_reduce", "gloo:all_gather", "gloo:reduce_scatter"};
  return std::find(kNames.begin(), kNames.end(), n) != kNames.end();
}

bool IsDataLoaderName(std::string_view n) {
  return (n.starts_with("enumerate(DataLoader)#") && n.ends_with(".__next__")) ||
         n.starts_with("enumerate(DataPipe)#");
}

// N of "ProfilerStep#N" (the text up to the next '#'), false when it is not an integer.
bool StepNumber(std::string_view n, int64_t* out) {
  std::string_view s = n.substr(std::string_view("ProfilerStep#").size());
  s = s.substr(0, s.find('#'));
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  bool neg = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    neg = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = neg ? -v : v;
  return true;
}

Kind KindOf(std::string_view cat_written, std::string_view name, TbRules rules) {
  std::string cat(cat_written);
  for (char& c : cat) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool step_name = name.starts_with("ProfilerStep#");
  if (cat == "cpu_op" || cat == "operator") return step_name ? Kind::kStep : Kind::kOperator;
  if (cat == "user_annotation" || cat == "gpu_user_annotation") {
    if (step_name) return Kind::kStep;
    if (IsCollectiveName(name) || rules == TbRules::kKinetoMain) return Kind::kAnnotation;
    return Kind::kNone;
  }
  if (cat == "python") return Kind::kPython;
  if (cat == "kernel") return Kind::kKernel;
  if (cat == "memcpy" || cat == "gpu_memcpy") return Kind::kMemcpy;
  if (cat == "memset" || cat == "gpu_memset") return Kind::kMemset;
  if (cat == "runtime") return Kind::kRuntime;
  if (rules == TbRules::kKinetoMain && (cat == "cuda_runtime" || cat == "mtia_runtime" || cat == "glow_runtime" ||
                                        cat == "xpu_runtime" || cat == "privateuse1_runtime"))
    return Kind::kRuntime;
  return Kind::kNone;
}

// Sorted by start (stable), overlapping or touching ranges joined.
Ranges Merge(Ranges r) {
  std::stable_sort(r.begin(), r.end(), [](const Range& a, const Range& b) { return a.first < b.first; });
  Ranges out;
  for (const Range& x : r) {
    if (out.empty()) {
      out.push_back(x);
    } else if (x.second > out.back().second) {
      if (x.first <= out.back().second) out.back().second = x.second;
      else out.push_back(x);
    }
  }
  return out;
}

Ranges Intersect(const Ranges& a, const Ranges& b) {
  Ranges out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t s = std::max(a[i].first, b[j].first), e = std::min(a[i].second, b[j].second);
    if (s < e) out.push_back({s, e});
    if (a[i].second < b[j].second) ++i;
    else ++j;
  }
  return out;
}

Ranges Subtract(const Ranges& a, const Ranges& b) {
  Ranges out;
  size_t j = 0;
  for (Range x : a) {
    while (j < b.size() && b[j].second <= x.first) ++j;
    if (x.first == x.second) {  // an empty range stays unless some range of `b` holds its point
      if (j == b.size() || b[j].first > x.first) out.push_back(x);
      continue;
    }
    size_t k = j;
    while (k < b.size() && b[k].first < x.second) {
      if (b[k].first > x.first) out.push_back({x.first, b[k].first});
      x.first = std::max(x.first, b[k].second);
      if (x.first >= x.second) break;
      ++k;
    }
    if (x.first < x.second) out.push_back(x);
  }
  return out;
}

// Times lie in ±2^62 ns (Trace::AddSlice), so a length fits in 63 bits but a sum might not: saturate.
int64_t Length(int64_t start, int64_t end) {
  const __int128 d = static_cast<__int128>(end) - start;
  return d <= 0 ? 0 : d >= INT64_MAX ? INT64_MAX : static_cast<int64_t>(d);
}

int64_t Measure(const Ranges& r) {
  __int128 s = 0;
  for (const Range& x : r) s += Length(x.first, x.second);
  return s >= INT64_MAX ? INT64_MAX : static_cast<int64_t>(s);
}

int64_t MeasureIn(const Range& w, const Ranges& r) { return Measure(Intersect({w}, r)); }

bool IsOperatorCategory(std::string_view cat) {
  std::string c(cat);
  for (char& x : c) x = static_cast<char>(std::tolower(static_cast<unsigned char>(x)));
  return c == "cpu_op" || c == "operator";
}

// The operator whose `External id` Kineto gives the work a launch started: the innermost CPU
// operator around the launch on its thread (annotations and Python functions carry no external
// correlation: an nccl:all_reduce annotation inside record_param_comms is not it).
int32_t LaunchingOperator(const Trace& t, int32_t launch) {
  for (int32_t p = t.parent[launch]; p >= 0; p = t.parent[p])
    if (IsOperatorCategory(t.str(t.category[p]))) return p;
  return -1;
}

struct Step {
  int64_t start, end, number;
};

// The plugin's step bounds: each step's host range stretched over the device work launched
// by runtime calls inside it, steps made contiguous, and trailing steps without (enough)
// device work dropped.
void FitStepsToDeviceWork(const Trace& t, const std::vector<Kind>& kind, std::vector<Step>& steps) {
  const size_t n = t.size();
  // Device work and the runtime call that launched it (same correlation id: the last call
  // before the work starts, else the first after it).
  struct Launch {
    int64_t start, end;
    std::vector<size_t> device;  // device work it launched
  };
  std::vector<Launch> launches;
  std::unordered_map<int64_t, std::vector<size_t>> launches_by_corr;  // in start order
  std::vector<size_t> rt_rows;
  for (size_t i = 0; i < n; ++i)
    if (kind[i] == Kind::kRuntime) rt_rows.push_back(i);
  std::stable_sort(rt_rows.begin(), rt_rows.end(), [&](size_t a, size_t b) { return t.ts[a] < t.ts[b]; });
  for (size_t i : rt_rows) {
    launches.push_back({t.ts[i], t.ts[i] + t.dur[i], {}});
    if (t.correlation[i] >= 0) launches_by_corr[t.correlation[i]].push_back(launches.size() - 1);
  }
  std::vector<size_t> device_rows;
  for (size_t i = 0; i < n; ++i) {
    const Kind k = kind[i];
    if (k != Kind::kKernel && k != Kind::kMemcpy && k != Kind::kMemset) continue;
    device_rows.push_back(i);
    auto it = t.correlation[i] >= 0 ? launches_by_corr.find(t.correlation[i]) : launches_by_corr.end();
    if (it == launches_by_corr.end()) continue;
    const std::vector<size_t>& c = it->second;
    size_t pick = c.front();
    for (size_t l : c)
      if (launches[l].start <= t.ts[i]) pick = l;
    launches[pick].device.push_back(i);
  }

  // Each step's device span: work launched by runtime calls lying inside its host range.
  constexpr int64_t kNoMin = std::numeric_limits<int64_t>::max(), kNoMax = std::numeric_limits<int64_t>::min();
  std::vector<Range> dev(steps.size(), {kNoMin, kNoMax});
  std::vector<int64_t> matched(steps.size(), 0);
  std::vector<char> is_matched(n, 0);
  bool any_matched = false;
  {
    size_t s = 0, r = 0;
    int64_t mn = kNoMin, mx = kNoMax;
    while (s < steps.size() && r < launches.size()) {
      const Launch& l = launches[r];
      if (l.start < steps[s].start) {
        ++r;
      } else if (l.end <= steps[s].end) {
        for (size_t d : l.device) {
          mn = std::min(mn, t.ts[d]);
          mx = std::max(mx, t.ts[d] + t.dur[d]);
          is_matched[d] = 1;
          any_matched = true;
          ++matched[s];
        }
        ++r;
      } else if (l.start < steps[s].end) {
        ++r;
      } else {
        dev[s++] = {mn, mx};
        mn = kNoMin;
        mx = kNoMax;
      }
    }
    for (; s < steps.size(); ++s) {
      dev[s] = {mn, mx};
      mn = kNoMin;
      mx = kNoMax;
    }
  }
  if (any_matched) {
    int64_t prev_end = steps[0].start;
    if (dev[0].first != kNoMin)
      for (size_t d : device_rows)
        if (!is_matched[d] && t.ts[d] + t.dur[d] < dev[0].first) prev_end = std::max(prev_end, t.ts[d] + t.dur[d]);
    for (size_t s = 0; s < steps.size(); ++s) {
      const int64_t start = std::max(prev_end, steps[s].start);
      int64_t end = steps[s].end;
      end = dev[s].first == kNoMin ? std::max(end, start) : std::max(std::max(end, dev[s].second), start);
      steps[s].start = start;
      steps[s].end = end;
      prev_end = end;
    }
    if (steps.size() > 1) {
      int64_t last = static_cast<int64_t>(steps.size()) - 1;
      while (last >= 0 && matched[last] == 0) --last;
      if (last >= 0) {
        size_t keep = static_cast<size_t>(last) + 1;
        if (last > 0 && static_cast<double>(matched[last - 1]) * 0.8 > static_cast<double>(matched[last]))
          keep = static_cast<size_t>(last);
        steps.resize(keep);
      }
    }
  }
}

}  // namespace

std::vector<TbStepRow> TbStepTime(const Trace& t, TbRules rules) {
  const size_t n = t.size();
  std::vector<Kind> kind(n, Kind::kNone);
  for (size_t i = 0; i < n; ++i) {
    if (t.kind[i] != SliceKind::kRange) continue;
    const std::string& nm = t.str(t.name[i]);
    kind[i] = KindOf(t.str(t.category[i]), nm, rules);
  }

  enum Role { kKernelRole, kMemcpyRole, kMemsetRole, kCommRole, kRuntimeRole, kDataLoaderRole, kCpuRole, kRoles };
  std::array<Ranges, kRoles> roles;
  std::vector<std::pair<size_t, Step>> steps_found;  // (row, step) for a stable start order
  int64_t cpu_min = std::numeric_limits<int64_t>::max(), cpu_max = std::numeric_limits<int64_t>::min();

  // Launches by correlation id (any runtime category), for the collective test of kernels: the
  // plugin takes a kernel for communication when its External id is a collective operator's.
  std::unordered_map<int64_t, int32_t> launch_of;
  for (size_t i = 0; i < n; ++i)
    if (t.correlation[i] >= 0 && t.tracks[t.track[i]].type != TrackType::kDeviceStream &&
        IsRuntimeCategory(t.str(t.category[i])))
      launch_of.emplace(t.correlation[i], static_cast<int32_t>(i));
  auto launched_by_collective = [&](size_t i) {
    auto it = launch_of.find(t.correlation[i]);
    if (t.correlation[i] < 0 || it == launch_of.end()) return false;
    const int32_t op = LaunchingOperator(t, it->second);
    return op >= 0 && IsCollectiveName(t.str(t.name[op]));
  };

  for (size_t i = 0; i < n; ++i) {
    const Kind k = kind[i];
    if (k == Kind::kNone) continue;
    const Range r{t.ts[i], t.ts[i] + t.dur[i]};
    const std::string& nm = t.str(t.name[i]);
    switch (k) {
      case Kind::kKernel:
        roles[launched_by_collective(i) ? kCommRole : kKernelRole].push_back(r);
        break;
      case Kind::kMemcpy: roles[kMemcpyRole].push_back(r); break;
      case Kind::kMemset: roles[kMemsetRole].push_back(r); break;
      case Kind::kRuntime: roles[kRuntimeRole].push_back(r); break;
      case Kind::kStep: {
        int64_t number = 0;
        if (StepNumber(nm, &number)) steps_found.push_back({i, Step{r.first, r.second, number}});
        break;
      }
      case Kind::kOperator:
      case Kind::kAnnotation:
      case Kind::kPython:
        if (k != Kind::kPython && IsDataLoaderName(nm)) roles[kDataLoaderRole].push_back(r);
        else roles[IsCollectiveName(nm) ? kCommRole : kCpuRole].push_back(r);
        break;
      default: break;
    }
    if (k == Kind::kPython || k == Kind::kOperator || k == Kind::kStep) {
      cpu_min = std::min(cpu_min, r.first);
      cpu_max = std::max(cpu_max, r.second);
    }
  }
  for (Ranges& r : roles) r = Merge(std::move(r));

  std::stable_sort(steps_found.begin(), steps_found.end(),
                   [](const auto& a, const auto& b) { return a.second.start < b.second.start; });
  std::vector<Step> steps;
  for (const auto& [row, s] : steps_found) steps.push_back(s);
  if (steps.empty()) {
    if (cpu_min > cpu_max) return {};  // no host event: nothing to measure
    steps.push_back({cpu_min, cpu_max, 0});
  }

  // Each step stretched over the device work its runtime calls launched (the plugin's rule).
  FitStepsToDeviceWork(t, kind, steps);

  // The priority rule over the union of the steps.
  Ranges all_steps;
  for (const Step& s : steps) all_steps.push_back({s.start, s.end});
  all_steps = Merge(std::move(all_steps));
  std::array<Ranges, kRoles + 1> cost;  // + Other
  Ranges slots;
  for (int k = 0; k < kRoles; ++k) {
    if (!slots.empty()) {
      cost[k] = Intersect(slots, roles[k]);
    } else {
      cost[k] = roles[k];
      slots = all_steps;
    }
    slots = Subtract(slots, cost[k]);
  }
  cost[kRoles] = std::move(slots);

  std::vector<TbStepRow> out;
  out.reserve(steps.size());
  for (const Step& s : steps) {
    const Range w{s.start, s.end};
    TbStepRow row;
    row.step = s.number;
    row.kernel = MeasureIn(w, cost[kKernelRole]);
    row.memcpy = MeasureIn(w, cost[kMemcpyRole]);
    row.memset = MeasureIn(w, cost[kMemsetRole]);
    row.communication = MeasureIn(w, cost[kCommRole]);
    row.runtime = MeasureIn(w, cost[kRuntimeRole]);
    row.dataloader = MeasureIn(w, cost[kDataLoaderRole]);
    row.cpu_exec = MeasureIn(w, cost[kCpuRole]);
    row.other = MeasureIn(w, cost[kRoles]);
    row.total = Length(s.start, s.end);
    out.push_back(row);
  }
  return out;
}

}  // namespace rlprof::analysis
