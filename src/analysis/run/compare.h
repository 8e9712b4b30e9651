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
  // Asynchronous runs (either side holds rlprof.rl's records; else no rows): the run's async
  // figures, and its version intervals side by side (compare_async.cc).
  Table async;           // compare_async
  Table async_versions;  // compare_async_versions
  Diagnostics diagnostics;  // e.g. partial_steps_left_out_baseline, unreadable_inputs_new
  // The tables to show or write: steps, stages, ops, and the async ones when they have rows.
  std::vector<const Table*> Tables() const;
};

// compare_async: one row per figure of an async run — the number of version intervals, their
// median duration and median samples per second, samples consumed, the measured throughput,
// the balance, generation / training / overlap / exposed generation / exposed sync (µs), and
// the waits by cause summed over processes (µs) — baseline, new, delta (new − baseline).
Table CompareAsyncTable(const std::vector<InputResult>& baseline, const std::vector<InputResult>& test);
// compare_async_versions: the k-th published version interval of each run side by side (the
// start-up before the first publish left out): duration, consumed, samples per second, exposed
// generation, trainers' wait for samples, staleness mean — baseline, new, delta.
Table CompareAsyncVersionsTable(const std::vector<InputResult>& baseline, const std::vector<InputResult>& test);

// {"compare_steps", "compare_stages", "compare_ops"[, "compare_async", "compare_async_versions"]:
// tables as in summary.json, "diagnostics"}.
nlohmann::json ComparisonToJson(const Comparison& c);

Comparison CompareRuns(const std::vector<InputResult>& baseline, const std::vector<InputResult>& test,
                       const CompareOptions& opts);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_RUN_COMPARE_H_
