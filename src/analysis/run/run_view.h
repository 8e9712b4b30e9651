// The run view (docs/analysis.md "Run view", docs/definitions.md §5.10): every capture of a run
// — end-to-end, continuous, discrete per stage, of any ranks — folded into one table of
// steps × stages × ranks. Per (step, stage): the stage's duration on each rank, min / mean /
// max, the critical (slowest) rank; between stages, the idle gap on each rank; per step, the
// step time (the step window where a capture holds the whole step, and always the span from
// the first stage start to the last stage end). Built from the per-input analysis results
// (StageResult / StepResult, times already on rank 0's clock), never from the traces.
//
//   std::vector<InputResult> r = AnalyseInputs(inputs, cls, opts, 2);
//   RunView v = BuildRunView(r);
//   std::string csv = ToCsv(RunViewTable(v));
//   std::string text = ToText(RunViewTable(v, /*max_lane_columns=*/8));
//
// Thread-safety: pure functions over plain values.
#ifndef RLPROF_SRC_ANALYSIS_RUN_RUN_VIEW_H_
#define RLPROF_SRC_ANALYSIS_RUN_RUN_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "src/analysis/run/run.h"
#include "src/analysis/tables/tables.h"

namespace rlprof::analysis {

enum class RunViewKind {
  kStage,       // the stage's duration on each rank (Σ of its windows in the step)
  kGap,         // idle on each rank before `stage` (or after the last stage: "(end of step)")
  kStepWindow,  // the step window, on ranks whose captures hold the whole step (e2e, continuous)
  kStageSpan,   // first stage start → last stage end, on every rank with stages
};
const char* RunViewKindName(RunViewKind k);  // "stage" | "gap" | "step_window" | "stage_span"

struct RunViewRow {
  int64_t step = 0;
  RunViewKind kind = RunViewKind::kStage;
  std::string role;
  std::string stage;  // gap rows: the stage the gap precedes, or "(end of step)"
  // Earliest start on any rank, ns from the step's start (earliest step window start, else
  // earliest stage start, over ranks); nullopt for gap rows.
  std::optional<int64_t> start;
  std::vector<std::optional<int64_t>> per_lane;  // ns, indexed like RunView::lanes
  // Stage: some rank captured only a sampled part of it (a lower bound). Gap / span: a
  // neighbouring stage is sampled on some rank (the gap may hold uncaptured stage time).
  bool partial = false;
};

struct RunView {
  std::vector<std::string> lanes;  // "rank<R>", or "input:<name>" for an input without a rank
  std::vector<int64_t> lane_ranks;  // the rank of each lane, -1 when unknown
  std::vector<RunViewRow> rows;     // by step; within a step in time order
  Diagnostics diagnostics;          // what building the view counted (run_view_*)
};

RunView BuildRunView(const std::vector<InputResult>& results);

// One table `run_view`: step, kind, role, stage, start, ranks, one column per lane (at most
// `max_lane_columns`, the first lanes; the terminal uses this), min, mean, max (µs),
// critical_rank (the lane with the max, for stage and step rows), partial.
Table RunViewTable(const RunView& v, size_t max_lane_columns = std::numeric_limits<size_t>::max());

// Lanes that analysis.db's `run_view` holds as columns (SQLite allows 2000 columns a table):
// beyond them `run_view` keeps only its summary columns; `run_view_long` always holds every rank.
inline constexpr size_t kSqliteRunViewLaneColumns = 1024;
inline Table RunViewDbTable(const RunView& v) {
  return RunViewTable(v, v.lanes.size() > kSqliteRunViewLaneColumns ? 0 : v.lanes.size());
}

// The run view in long form, exact ns: `run_view_long`, one row per (row of the run view, lane
// with a value): step, kind, role, stage, lane, rank, start_ns, value_ns, partial. Any number
// of ranks (analysis.db, pandas' Analysis.run_view_long).
Table RunViewLongTable(const RunView& v);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_RUN_RUN_VIEW_H_
