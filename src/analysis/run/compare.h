// Comparing two runs (`rlprof compare BASELINE NEW`): "what changed since the last run?" at
// three levels — the step breakdown, every RL stage, and the operators/kernels that moved most
// (docs/definitions.md §5.8).
//
//   auto base = AnalyseInputs(base_inputs, cls, opts, jobs);
//   auto test = AnalyseInputs(new_inputs, cls, opts, jobs);
//   Comparison c = CompareRuns(base, test, CompareOptions{.top_ops = 30});
//   std::string text = ToText(c.stages);
//
// Step and stage figures are medians over the (rank, step) samples of each side, with their
// min and max, so runs with other rank or step counts compare; partial steps (definitions §2.3)
// are left out and counted. Operators are per rank-step; ratio = new / baseline (inf when only
// the baseline is 0, 1 when both are).
// Thread-safety: pure function over its inputs.
#ifndef RLPROF_SRC_ANALYSIS_RUN_COMPARE_H_
#define RLPROF_SRC_ANALYSIS_RUN_COMPARE_H_

#include <cstddef>
#include <vector>

#include "src/analysis/run/run.h"
#include "src/analysis/tables/tables.h"

namespace rlprof::analysis {

struct CompareOptions {
  size_t top_ops = 30;  // operator rows kept, by |Δ time per step|
};

struct Comparison {
  Table steps;   // compare_steps: one row per step metric (median over rank-steps, µs)
  Table stages;  // compare_stages: one row per (role, stage), by |Δ median duration|
  Table ops;     // compare_ops: host ops and device kernels, time per rank-step, by |Δ|
  Diagnostics diagnostics;  // e.g. partial_steps_left_out_baseline, unreadable_inputs_new
};

// {"compare_steps", "compare_stages", "compare_ops": tables as in summary.json, "diagnostics"}.
nlohmann::json ComparisonToJson(const Comparison& c);

Comparison CompareRuns(const std::vector<InputResult>& baseline, const std::vector<InputResult>& test,
                       const CompareOptions& opts);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_RUN_COMPARE_H_
