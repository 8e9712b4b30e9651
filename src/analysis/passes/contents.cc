#include "src/analysis/passes/contents.h"
#include "src/base/time_math.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <map>
#include <unordered_map>

#include "rlprof/format/event.h"
#include "src/analysis/passes/analyse.h"

namespace rlprof::analysis {
namespace {

// String id of `s` in the trace, or UINT32_MAX when the trace never interned it (then no slice
// can have it). Lookup without interning: the trace is const.
uint32_t FindId(const Trace& t, std::string_view s) {
  for (uint32_t i = 0; i < t.strings.size(); ++i)
    if (t.str(i) == s) return i;
  return UINT32_MAX;
}

}  // namespace

bool IsMarkedFrameworkFrame(std::string_view frame) {
  // rlprof's stack source writes "[torch] file:line:function" for frames under a framework
  // package's directory as it was in the process (python/src/torch_stack.h).
  return frame.size() > 3 && frame.front() == '[' && frame.find("] ") != std::string_view::npos;
}

bool IsFrameworkFrame(std::string_view file) {
  // Stacks without rlprof's marks (other tools' traces, captures before the marks): by where
  // the packages usually are. An rlprof package directory is matched only where pip puts it,
  // so a checkout or a user folder named "rlprof" is never taken for it.
  auto has = [&](std::string_view p) { return file.find(p) != std::string_view::npos; };
  return has("/torch/") || has("/site-packages/torch") || has("/site-packages/rlprof/") ||
         has("/dist-packages/rlprof/") || file.substr(0, 7) == "<frozen" || file == "<string>" ||
         file.empty();
}

std::string UserFrame(std::string_view stack) {
  const bool marked = [&] {
    for (size_t at = 0; at < stack.size();) {
      if (IsMarkedFrameworkFrame(stack.substr(at))) return true;
      const size_t nl = stack.find('\n', at);
      if (nl == std::string_view::npos) break;
      at = nl + 1;
    }
    return false;
  }();
  while (!stack.empty()) {
    const size_t nl = stack.find('\n');
    const std::string_view frame = stack.substr(0, nl);
    // "file:line:function": the file is everything before the last two colons.
    const size_t c2 = frame.rfind(':');
    const size_t c1 = c2 == std::string_view::npos || c2 == 0 ? std::string_view::npos
                                                              : frame.rfind(':', c2 - 1);
    const std::string_view file = c1 == std::string_view::npos ? frame : frame.substr(0, c1);
    const bool framework = marked ? IsMarkedFrameworkFrame(frame) || file.substr(0, 7) == "<frozen" ||
                                        file == "<string>" || file.empty()
                                  : IsFrameworkFrame(file);
    if (!framework) return std::string(frame);
    if (nl == std::string_view::npos) break;
    stack.remove_prefix(nl + 1);
  }
  return "";
}

std::vector<ModuleRow> ModuleView(const Trace& t) {
  // Module ranges: rlprof's (category "module", name = qualified path, detail = class) and
  // torch.profiler's python tracer events "nn.Module: Linear_0" (category "python_function";
  // the path is built from the enclosing module events: TinyLM_0.Block_1.Linear_0).
  const uint32_t module_cat = FindId(t, "module");
  const uint32_t py_cat = FindId(t, "python_function");
  const uint32_t op_cat = FindId(t, "operator") != UINT32_MAX ? FindId(t, "operator")
                                                              : FindId(t, "cpu_op");
  const size_t n = t.size();
  constexpr std::string_view kPrefix = "nn.Module: ";
  std::vector<int8_t> is_module(n, 0);
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    if (t.kind[i] != SliceKind::kRange) continue;
    if (t.category[i] == module_cat) {
      is_module[i] = 1;
    } else if (t.category[i] == py_cat && t.str(t.name[i]).compare(0, kPrefix.size(), kPrefix) == 0) {
      is_module[i] = 2;
    }
    any |= is_module[i] != 0;
  }
  if (!any) return {};
  // Each slice's nearest enclosing module slice (-1 none) and whether an operator encloses it.
  auto nearest_module = [&](size_t i, bool* under_op) {
    *under_op = false;
    for (int32_t p = t.parent[i]; p >= 0; p = t.parent[p]) {
      if (is_module[p]) return p;
      if (t.category[p] == op_cat) *under_op = true;
    }
    return int32_t{-1};
  };
  // Paths and classes; parents sort before their children (Trace::Finalize), so a torch
  // module's parent path is known when it is reached.
  std::unordered_map<size_t, std::string> path_of;
  std::vector<int64_t> child_time(n, 0);
  std::map<std::string, ModuleRow> rows;
  for (size_t i = 0; i < n; ++i) {
    if (!is_module[i]) continue;
    bool under_op = false;
    const int32_t m = nearest_module(i, &under_op);
    if (m >= 0) child_time[m] = base::SatAdd(child_time[m], t.dur[i]);
    std::string path, cls;
    if (is_module[i] == 1) {
      path = t.str(t.name[i]);
      cls = t.str(t.detail[i]);
    } else {
      cls = t.str(t.name[i]).substr(kPrefix.size());  // "Linear_0"
      path = m >= 0 && path_of.count(m) ? path_of[m] + "." + cls : cls;
      const size_t us = cls.rfind('_');
      if (us != std::string::npos && us + 1 < cls.size() &&
          cls.find_first_not_of("0123456789", us + 1) == std::string::npos)
        cls.resize(us);
    }
    path_of[i] = path;
    ModuleRow& r = rows[path];
    if (r.calls == 0) {
      r.path = path;
      r.cls = cls;
      int64_t depth = 0;
      for (int32_t p = t.parent[i]; p >= 0; p = t.parent[p]) depth += is_module[p] != 0;
      r.depth = depth;
    }
    ++r.calls;
    r.total = base::SatAdd(r.total, t.dur[i]);
  }
  for (size_t i = 0; i < n; ++i) {
    if (t.kind[i] != SliceKind::kRange) continue;
    if (is_module[i]) {
      rows[path_of[i]].self += std::max<int64_t>(0, t.dur[i] - child_time[i]);
    } else if (t.category[i] == op_cat) {
      bool under_op = false;
      const int32_t m = nearest_module(i, &under_op);
      if (m < 0 || under_op) continue;
      ModuleRow& r = rows[path_of[m]];
      ++r.ops;
      r.op_time = base::SatAdd(r.op_time, t.dur[i]);
    }
  }
  std::vector<ModuleRow> out;
  out.reserve(rows.size());
  for (auto& [path, r] : rows) out.push_back(std::move(r));
  return out;
}

std::vector<MemoryPeakRow> MemoryPeaks(const Trace& t, const std::vector<StageResult>& stages) {
  // Samples per series (a series may be written from several threads), in time order.
  std::map<std::string, std::vector<std::pair<int64_t, double>>> series;
  for (const CounterSample& c : t.counters) {
    const std::string& name = t.str(c.name);
    if (name.find("bytes") == std::string::npos) continue;
    series[name].push_back({c.ts_ns, c.value});
  }
  for (auto& [name, v] : series) std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) {
    return a.first < b.first;
  });
  // Allocator events per device, in time order.
  const uint32_t alloc_cat = FindId(t, "allocation");
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> allocs;
  if (alloc_cat != UINT32_MAX)
    for (size_t i = 0; i < t.size(); ++i)
      if (t.category[i] == alloc_cat) allocs[t.str(t.name[i])].push_back({t.ts[i], t.bytes[i]});
  for (auto& [dev, v] : allocs) std::sort(v.begin(), v.end());

  std::vector<MemoryPeakRow> out;
  for (const StageResult& s : stages) {
    for (const auto& [name, v] : series) {
      MemoryPeakRow r;
      r.step = s.step;
      r.role = s.role;
      r.stage = s.name;
      r.series = name;
      bool any = false;
      auto it = std::upper_bound(v.begin(), v.end(), std::make_pair(s.start, 1e308),
                                 [](auto& a, auto& b) { return a.first < b.first; });
      if (it != v.begin()) {  // the level the stage began with
        r.at_start = r.peak = r.at_end = std::prev(it)->second;
        any = true;
      }
      for (; it != v.end() && it->first <= s.end; ++it) {
        if (!any) r.at_start = r.peak = it->second;
        r.peak = std::max(r.peak, it->second);
        r.at_end = it->second;
        any = true;
      }
      if (!any) continue;
      const std::string prefix = "allocated_bytes ";
      if (name.compare(0, prefix.size(), prefix) == 0) {
        auto a = allocs.find(name.substr(prefix.size()));
        if (a != allocs.end()) {
          auto lo = std::lower_bound(a->second.begin(), a->second.end(),
                                     std::make_pair(s.start, INT64_MIN));
          for (; lo != a->second.end() && lo->first <= s.end; ++lo) {
            ++r.allocations;
            if (lo->second > 0) r.allocated += lo->second;
          }
        }
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

std::vector<OutOfMemoryRow> OutOfMemory(const Trace& t, const std::vector<StageResult>& stages) {
  std::vector<OutOfMemoryRow> out;
  const uint32_t alloc_cat = FindId(t, "allocation"), note_cat = FindId(t, "capture");
  std::vector<OutOfMemoryRow> notes;
  for (size_t i = 0; i < t.size(); ++i) {
    if (alloc_cat != UINT32_MAX && t.category[i] == alloc_cat && (t.flags[i] & kSliceOutOfMemory)) {
      out.push_back({t.ts[i], t.str(t.name[i]), t.bytes[i], t.detail[i] ? t.str(t.detail[i]) : ""});
    } else if (note_cat != UINT32_MAX && t.category[i] == note_cat) {
      // "out of memory on cuda:0 (2147483648 bytes asked): snapshot /run/…/oom_device0_rank0.pickle"
      const std::string& text = t.str(t.name[i]);
      constexpr std::string_view kHead = "out of memory on ";
      if (!text.starts_with(kHead)) continue;
      OutOfMemoryRow r;
      r.ts = t.ts[i];
      const size_t dev_end = text.find(' ', kHead.size());
      r.device = text.substr(kHead.size(), dev_end == std::string::npos ? std::string::npos : dev_end - kHead.size());
      if (dev_end != std::string::npos && text.compare(dev_end, 2, " (") == 0)
        r.bytes = std::strtoll(text.c_str() + dev_end + 2, nullptr, 10);
      if (const size_t at = text.find(": snapshot "); at != std::string::npos) r.snapshot = text.substr(at + 11);
      notes.push_back(std::move(r));
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.ts < b.ts; });  // earliest first
  for (OutOfMemoryRow& n : notes) {  // the observer's note follows the allocator's report
    auto same = std::find_if(out.begin(), out.end(), [&](const OutOfMemoryRow& r) {
      return r.device == n.device && r.snapshot.empty() && std::llabs(r.ts - n.ts) <= 1'000'000'000;
    });
    if (same != out.end()) {
      same->snapshot = n.snapshot;
    } else {
      out.push_back(std::move(n));
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.ts < b.ts; });
  for (OutOfMemoryRow& r : out)
    for (const StageResult& s : stages) {
      if (r.ts < s.start || r.ts > s.end) continue;
      r.step = s.step;
      if (s.name != "(none)") {
        r.role = s.role;
        r.stage = s.name;
        break;
      }
    }
  return out;
}

std::vector<FrameRow> OpsByFrame(const Trace& t) {
  const uint32_t op_cat = FindId(t, "operator");
  if (op_cat == UINT32_MAX) return {};
  struct Acc {
    FrameRow row;
    std::unordered_map<uint32_t, int64_t> by_op;
  };
  std::map<std::string, Acc> acc;
  std::unordered_map<uint32_t, std::string> frame_of;  // stack id → user frame
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.category[i] != op_cat || t.detail[i] == 0) continue;
    // Counted once: not when an enclosing operator (a record_function scope) has a stack too.
    bool nested = false;
    for (int32_t p = t.parent[i]; p >= 0 && !nested; p = t.parent[p])
      nested = t.category[p] == op_cat && t.detail[p] != 0;
    if (nested) continue;
    auto f = frame_of.find(t.detail[i]);
    if (f == frame_of.end()) {
      std::string frame = UserFrame(t.str(t.detail[i]));
      f = frame_of.emplace(t.detail[i], frame.empty() ? "(framework only)" : frame).first;
    }
    Acc& a = acc[f->second];
    a.row.frame = f->second;
    ++a.row.ops;
    a.row.total = base::SatAdd(a.row.total, t.dur[i]);
    a.by_op[t.name[i]] = base::SatAdd(a.by_op[t.name[i]], t.dur[i]);
  }
  std::vector<FrameRow> out;
  for (auto& [frame, a] : acc) {
    for (const auto& [op, time] : a.by_op)
      if (time > a.row.top_op_time || (time == a.row.top_op_time && t.str(op) < a.row.top_op)) {
        a.row.top_op = t.str(op);
        a.row.top_op_time = time;
      }
    out.push_back(std::move(a.row));
  }
  std::stable_sort(out.begin(), out.end(), [](const FrameRow& a, const FrameRow& b) {
    return a.total != b.total ? a.total > b.total : a.frame < b.frame;
  });
  return out;
}

std::vector<RangeRow> UserRanges(const Trace& t) {
  std::vector<uint32_t> cats;
  for (const char* c : {"user", "user_annotation"})
    if (const uint32_t id = FindId(t, c); id != UINT32_MAX) cats.push_back(id);
  if (cats.empty()) return {};
  std::map<std::pair<std::string, std::string>, std::vector<int64_t>> ranges;  // (track, name) → durs
  std::map<std::pair<std::string, std::string>, int64_t> marks;
  for (size_t i = 0; i < t.size(); ++i) {
    if (std::find(cats.begin(), cats.end(), t.category[i]) == cats.end()) continue;
    const Track& tr = t.tracks[t.track[i]];
    const bool lane = tr.type == TrackType::kThread &&
                      static_cast<uint64_t>(tr.tid) >= format::kMarkerLaneTidBase;  // an NVTX domain
    const std::string track = tr.type == TrackType::kAsync || lane ? tr.name : std::string();
    std::pair<std::string, std::string> key{track, t.str(t.name[i])};
    if (t.kind[i] == SliceKind::kInstant) {
      ++marks[key];
    } else {
      ranges[key].push_back(t.dur[i]);
    }
  }
  std::vector<RangeRow> out;
  for (auto& [key, durs] : ranges) {
    RangeRow r;
    r.track = key.first;
    r.name = key.second;
    r.count = static_cast<int64_t>(durs.size());
    std::sort(durs.begin(), durs.end());
    for (int64_t d : durs) r.total = base::SatAdd(r.total, d);
    r.min = durs.front();
    r.max = durs.back();
    r.p50 = durs[(durs.size() - 1) / 2];
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const RangeRow& a, const RangeRow& b) { return a.total > b.total; });
  std::vector<RangeRow> mk;
  for (const auto& [key, n] : marks) {
    RangeRow r;
    r.track = key.first;
    r.name = key.second;
    r.mark = true;
    r.count = n;
    mk.push_back(std::move(r));
  }
  std::stable_sort(mk.begin(), mk.end(),
                   [](const RangeRow& a, const RangeRow& b) { return a.count > b.count; });
  out.insert(out.end(), mk.begin(), mk.end());
  return out;
}

}  // namespace rlprof::analysis
