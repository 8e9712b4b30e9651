// Analysing many inputs at once (what `rlprof analyse` and `rlprof summary` do): read each
// input with the readers, analyse it, in parallel on a small thread pool; build the run-level
// summary.json document. Per-input failures are kept per input, never abort the run.
//
//   std::vector<InputResult> r = AnalyseInputs(inputs, Classifier::Default(), {}, /*jobs=*/2,
//                                              [](size_t done, size_t total) { … });
//   nlohmann::json j = SummaryJson(r, opts);
//
// Thread-safety: AnalyseInputs calls `progress` from worker threads under a mutex, and `each`
// on the worker that analysed the input, without a lock (each call gets its own input).
#ifndef RLPROF_SRC_ANALYSIS_RUN_RUN_H_
#define RLPROF_SRC_ANALYSIS_RUN_RUN_H_

#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/analysis/passes/analyse.h"
#include "src/analysis/tables/tables.h"
#include "src/base/status.h"

namespace rlprof::analysis {

struct InputResult {
  std::string input;  // path as found by FindTraceInputs
  std::string name;   // short, unique, path-safe label (output sub-directory)
  base::Status status;
  TraceAnalysis analysis;  // valid when status is ok
};

using ProgressFn = std::function<void(size_t done, size_t total)>;

std::vector<InputResult> AnalyseInputs(const std::vector<std::string>& inputs, const Classifier& cls,
                                       const AnalysisOptions& opts, size_t jobs,
                                       const ProgressFn& progress = nullptr);

// AnalyseInputs' work on one input, for callers that schedule the inputs themselves (the run
// pipeline's writer): opts.step_marker is compiled once; when it is not a valid regex, every
// input fails with that Status, unread. `cls` and `opts` must outlive it. Thread-safe: Analyse
// may be called from several threads at once.
class InputAnalyser {
 public:
  InputAnalyser(const Classifier& cls, const AnalysisOptions& opts);
  // Read (the trace freed before returning), step marker applied, analysed; `name` as
  // InputNames gives it.
  InputResult Analyse(const std::string& input, const std::string& name) const;
  // The step marker's compile error (Ok without one).
  const base::Status& marker_status() const { return marker_status_; }

 private:
  const Classifier& cls_;
  const AnalysisOptions& opts_;
  std::optional<std::regex> marker_;
  base::Status marker_status_ = base::Status::Ok();
};

// The regex of AnalysisOptions::step_marker, or InvalidArgument naming the pattern.
base::StatusOr<std::regex> CompileStepMarker(const std::string& pattern);

// Short unique labels: the inputs' paths relative to their common directory, sanitised.
std::vector<std::string> InputNames(const std::vector<std::string>& inputs);

// Cross-rank RL view: per (step, role, stage) over every analysed input (rank): how many
// ranks ran it, min / mean / max duration, the slowest input and rank, and the largest idle
// and exposed communication of any rank (µs). Imbalance = (max − min) / mean.
Table StageAcrossRanksTable(const std::vector<InputResult>& results);

const char* AssignModeName(AssignMode m);
const char* CompatModeName(CompatMode m);

// The stable JSON document (docs/analysis.md "summary.json"): schema_version, options,
// inputs[] with identity, steps (msprof columns, µs, + atoms in ns), stages, hta, tracelens,
// classes, diagnostics; stage_across_ranks, run_view (src/analysis/run/run_view.h); and run-level
// diagnostics totals.
// `found`: what finding the inputs counted (FindTraceInputs), added to the run-level totals.
// `input_tables` false: each input keeps its identity and diagnostics but not its tables (the
// HTML report's run-level part: at 1,024 ranks the tables are tens of MB of JSON).
nlohmann::json SummaryJson(const std::vector<InputResult>& results, const AnalysisOptions& opts,
                           const Diagnostics* found = nullptr, bool input_tables = true);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_RUN_RUN_H_
