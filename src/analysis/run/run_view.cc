// The run view: per-input stage and step results → one steps × stages × ranks table.
#include "src/analysis/run/run_view.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "src/base/time_math.h"

namespace rlprof::analysis {
namespace {

// One stage of one step on one lane, its windows of every input merged.
struct LaneStage {
  int64_t start = 0, end = 0;  // first window start, last window end
  int64_t duration = 0;        // Σ of the windows kept
  bool partial = false;        // a sampled capture's window stands in for the stage
  size_t input = 0;            // the input the first window came from
  std::vector<std::pair<int64_t, int64_t>> windows;
};

using StageKey = std::tuple<std::string, std::string>;  // role, stage

struct LaneStep {
  std::map<StageKey, LaneStage> stages;
  std::optional<std::pair<int64_t, int64_t>> window;  // a real step window
};

bool Overlaps(const std::vector<std::pair<int64_t, int64_t>>& ws, int64_t s, int64_t e) {
  for (const auto& [a, b] : ws)
    if (s < b && a < e) return true;
  return false;
}

double Us(int64_t ns) { return static_cast<double>(ns) / 1e3; }

}  // namespace

const char* RunViewKindName(RunViewKind k) {
  switch (k) {
    case RunViewKind::kGap: return "gap";
    case RunViewKind::kStepWindow: return "step_window";
    case RunViewKind::kStageSpan: return "stage_span";
    case RunViewKind::kStage: break;
  }
  return "stage";
}

namespace {

// The rows of one step: per stage the gap before it and its duration on each lane, in the
// order the stages start, then the gap after the last stage, the step window and the span.
void AddStepRows(int64_t step, const std::vector<LaneStep>& lanes, RunView& v) {
  const size_t n = v.lanes.size();
  // The step's origin: the earliest step window start, else the earliest stage start.
  int64_t origin = INT64_MAX;
  for (const LaneStep& ls : lanes)
    if (ls.window) origin = std::min(origin, ls.window->first);
  if (origin == INT64_MAX)
    for (const LaneStep& ls : lanes)
      for (const auto& [key, st] : ls.stages) origin = std::min(origin, st.start);
  // Stages of the step in time order: by their earliest start on any lane.
  std::map<StageKey, int64_t> first_start;
  for (const LaneStep& ls : lanes)
    for (const auto& [key, st] : ls.stages) {
      auto [it, fresh] = first_start.try_emplace(key, st.start);
      if (!fresh) it->second = std::min(it->second, st.start);
    }
  std::vector<std::pair<int64_t, StageKey>> order;
  for (const auto& [key, s] : first_start) order.emplace_back(s, key);
  std::sort(order.begin(), order.end());

  // Per lane: the gap before each stage (after the latest end of the stages that started
  // before it on that lane, or after the step window's start), and after the last stage.
  std::map<StageKey, RunViewRow> gaps;
  RunViewRow end_gap{step, RunViewKind::kGap, "", "(end of step)", std::nullopt,
                     std::vector<std::optional<int64_t>>(n), false};
  RunViewRow span{step, RunViewKind::kStageSpan, "", "(first start → last end)",
                  std::nullopt, std::vector<std::optional<int64_t>>(n), false};
  RunViewRow window{step, RunViewKind::kStepWindow, "", "(step window)", std::nullopt,
                    std::vector<std::optional<int64_t>>(n), false};
  for (size_t l = 0; l < n; ++l) {
    const LaneStep& ls = lanes[l];
    if (ls.window) {
      window.per_lane[l] = base::SatSub(ls.window->second, ls.window->first);
      window.start = std::min(window.start.value_or(INT64_MAX), base::SatSub(ls.window->first, origin));
    }
    std::vector<std::pair<int64_t, const std::pair<const StageKey, LaneStage>*>> mine;
    for (const auto& kv : ls.stages) mine.emplace_back(kv.second.start, &kv);
    if (mine.empty()) continue;
    std::sort(mine.begin(), mine.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::optional<int64_t> prev_end;
    bool prev_partial = false;
    if (ls.window) prev_end = ls.window->first;
    for (const auto& [s, kv] : mine) {
      const LaneStage& st = kv->second;
      if (prev_end) {
        RunViewRow& g = gaps[kv->first];
        if (g.per_lane.empty()) {
          g = {step, RunViewKind::kGap, std::get<0>(kv->first), std::get<1>(kv->first),
               std::nullopt, std::vector<std::optional<int64_t>>(n), false};
        }
        g.per_lane[l] = std::max<int64_t>(0, base::SatSub(st.start, *prev_end));
        g.partial = g.partial || prev_partial || st.partial;
      }
      prev_end = std::max(prev_end.value_or(st.end), st.end);
      prev_partial = st.partial;
    }
    const LaneStage& first = mine.front().second->second;
    const int64_t last_end = *prev_end;
    span.per_lane[l] = base::SatSub(last_end, first.start);
    span.start = std::min(span.start.value_or(INT64_MAX), base::SatSub(first.start, origin));
    span.partial = span.partial || first.partial || prev_partial;
    if (ls.window) {
      end_gap.per_lane[l] = std::max<int64_t>(0, base::SatSub(ls.window->second, last_end));
      end_gap.partial = end_gap.partial || prev_partial;
    }
  }

  for (const auto& [s, key] : order) {
    auto g = gaps.find(key);
    if (g != gaps.end()) v.rows.push_back(std::move(g->second));
    RunViewRow row{step, RunViewKind::kStage, std::get<0>(key), std::get<1>(key),
                   base::SatSub(s, origin), std::vector<std::optional<int64_t>>(n), false};
    for (size_t l = 0; l < n; ++l) {
      auto it = lanes[l].stages.find(key);
      if (it == lanes[l].stages.end()) continue;
      row.per_lane[l] = it->second.duration;
      row.partial = row.partial || it->second.partial;
    }
    v.rows.push_back(std::move(row));
  }
  auto any = [](const RunViewRow& r) {
    return std::any_of(r.per_lane.begin(), r.per_lane.end(), [](const auto& x) { return x.has_value(); });
  };
  if (any(end_gap)) v.rows.push_back(std::move(end_gap));
  if (any(window)) v.rows.push_back(std::move(window));
  if (any(span)) v.rows.push_back(std::move(span));
}

}  // namespace

RunView BuildRunView(const std::vector<InputResult>& results) {
  RunView v;
  // Lanes: one per rank (its captures merged), inputs without a rank one each; ranks first.
  using LaneKey = std::pair<int64_t, std::string>;
  auto key_of = [](const InputResult& r) {
    return r.analysis.rank >= 0 ? LaneKey{r.analysis.rank, ""} : LaneKey{INT64_MAX, r.name};
  };
  std::map<LaneKey, size_t> lane_of_key;
  for (const InputResult& r : results)
    if (r.status.ok()) lane_of_key.emplace(key_of(r), 0);
  for (auto& [key, lane] : lane_of_key) {  // map order: ranks ascending, then names
    lane = v.lanes.size();
    const bool known = key.first != INT64_MAX;
    // "input:" keeps an input's name apart from the rank lanes and the table's own columns.
    v.lanes.push_back(known ? "rank" + std::to_string(key.first) : "input:" + key.second);
    v.lane_ranks.push_back(known ? key.first : -1);
  }
  std::vector<size_t> lane_of_input(results.size(), SIZE_MAX);
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].status.ok()) lane_of_input[i] = lane_of_key.at(key_of(results[i]));
  const size_t n = v.lanes.size();

  // (step, lane) → that lane's stages and step window.
  std::map<int64_t, std::vector<LaneStep>> steps;
  auto lane_step = [&](int64_t step, size_t lane) -> LaneStep& {
    auto& per_lane = steps[step];
    if (per_lane.empty()) per_lane.resize(n);
    return per_lane[lane];
  };
  for (size_t i = 0; i < results.size(); ++i) {
    if (lane_of_input[i] == SIZE_MAX) continue;
    const TraceAnalysis& a = results[i].analysis;
    const size_t lane = lane_of_input[i];
    for (const StepResult& s : a.steps) {
      const StepWindow& w = s.window;
      if (a.step_is_capture_window || w.whole_trace || w.end <= w.start) continue;
      auto& win = lane_step(w.step, lane).window;
      // Two captures holding the same step (an e2e and a continuous one): the longer window.
      if (!win || base::SatSub(w.end, w.start) > base::SatSub(win->second, win->first))
        win = std::make_pair(w.start, w.end);
    }
    for (const StageResult& st : a.stages) {
      if (st.name == "(none)" || st.end <= st.start) continue;
      LaneStage& ls = lane_step(st.step, lane).stages[{st.role, st.name}];
      if (ls.windows.empty()) {
        ls.start = st.start;
        ls.end = st.end;
        ls.input = i;
      } else if (ls.input != i && Overlaps(ls.windows, st.start, st.end)) {
        // The same stage seen by two captures of one rank (e.g. an e2e and a discrete one, or
        // verl's reward loop worker and the reward model engine it waits for): one is kept, a
        // whole one rather than a sampled part, else the wider one (whatever the input order).
        v.diagnostics.Add("run_view_duplicate_stage_windows");
        const bool whole = !a.stage_is_capture_window;
        const bool wider = st.start <= ls.start && st.end >= ls.end &&
                           base::SatSub(st.end, st.start) > base::SatSub(ls.end, ls.start);
        if (!whole || (!ls.partial && !wider)) continue;
        ls = LaneStage{st.start, st.end, 0, false, i, {}};
      }
      ls.windows.emplace_back(st.start, st.end);
      ls.start = std::min(ls.start, st.start);
      ls.end = std::max(ls.end, st.end);
      ls.duration = base::SatAdd(ls.duration, st.duration);
      ls.partial = ls.partial || a.stage_is_capture_window;
    }
  }

  for (const auto& [step, lanes] : steps) AddStepRows(step, lanes, v);
  return v;
}

Table RunViewTable(const RunView& v, size_t max_lane_columns) {
  const size_t shown = std::min(max_lane_columns, v.lanes.size());
  Table t{"run_view",
          {{"step", ColumnType::kInt, ""},
           {"kind", ColumnType::kText, ""},
           {"role", ColumnType::kText, ""},
           {"stage", ColumnType::kText, ""},
           {"start", ColumnType::kReal, "us"},
           {"ranks", ColumnType::kInt, ""}},
          {}};
  for (size_t l = 0; l < shown; ++l) t.columns.push_back({v.lanes[l], ColumnType::kReal, "us"});
  for (const char* c : {"min", "mean", "max"}) t.columns.push_back({c, ColumnType::kReal, "us"});
  t.columns.push_back({"critical_rank", ColumnType::kText, ""});
  t.columns.push_back({"partial", ColumnType::kInt, ""});
  for (const RunViewRow& r : v.rows) {
    std::vector<Cell> row{r.step, std::string(RunViewKindName(r.kind)), r.role, r.stage,
                          r.start ? Cell{Us(*r.start)} : Cell{}};
    int64_t count = 0, min = INT64_MAX, max = INT64_MIN, sum = 0;
    size_t max_lane = 0;
    for (size_t l = 0; l < r.per_lane.size(); ++l) {
      if (!r.per_lane[l]) continue;
      const int64_t x = *r.per_lane[l];
      ++count;
      sum = base::SatAdd(sum, x);
      min = std::min(min, x);
      if (x > max) {
        max = x;
        max_lane = l;
      }
    }
    // Cells are emplaced, not pushed as temporaries (GCC 12 warns falsely on variant temporaries).
    row.emplace_back(count);
    for (size_t l = 0; l < shown; ++l) {
      if (r.per_lane[l]) row.emplace_back(Us(*r.per_lane[l]));
      else row.emplace_back();
    }
    if (count == 0) {
      row.resize(row.size() + 4);  // min, mean, max, critical_rank: empty
    } else {
      row.emplace_back(Us(min));
      row.emplace_back(static_cast<double>(sum) / static_cast<double>(count) / 1e3);
      row.emplace_back(Us(max));
      // The critical rank: the slowest rank of a stage or step; a gap has none (the rank that
      // waits longest is waiting on the critical one).
      if (r.kind == RunViewKind::kGap) row.emplace_back();
      else row.emplace_back(v.lanes[max_lane]);
    }
    row.emplace_back(static_cast<int64_t>(r.partial));
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table RunViewLongTable(const RunView& v) {
  Table t{"run_view_long",
          {{"step", ColumnType::kInt, ""},
           {"kind", ColumnType::kText, ""},
           {"role", ColumnType::kText, ""},
           {"stage", ColumnType::kText, ""},
           {"lane", ColumnType::kText, ""},
           {"rank", ColumnType::kInt, ""},
           {"start_ns", ColumnType::kInt, "ns"},
           {"value_ns", ColumnType::kInt, "ns"},
           {"partial", ColumnType::kInt, ""}},
          {}};
  for (const RunViewRow& row : v.rows) {
    for (size_t l = 0; l < row.per_lane.size() && l < v.lanes.size(); ++l) {
      if (!row.per_lane[l]) continue;
      std::vector<Cell> r{row.step, std::string(RunViewKindName(row.kind)), row.role, row.stage, v.lanes[l],
                          l < v.lane_ranks.size() ? v.lane_ranks[l] : int64_t{-1}};
      if (row.start) r.emplace_back(*row.start);
      else r.emplace_back();
      r.emplace_back(*row.per_lane[l]);
      r.emplace_back(static_cast<int64_t>(row.partial));
      t.rows.push_back(std::move(r));
    }
  }
  return t;
}

}  // namespace rlprof::analysis
