// The advisor (issue 34; docs/advise.md): from a run's analysis to what to change, with the time
// it would save. One catalogue of rules (RuleCatalogue, from which docs/advise.md's table is
// generated); each rule reads the run's own tables (the run view, sample_tail, async_verdict,
// async_syncs, comm_by_group, op_statistic, gpu_timeline, …) and yields findings: a stable id, a
// severity, an estimated saving per step with how it was computed, the evidence (steps, ranks,
// stages, operators), and an action in the user's terms (verl / MindSpeed-RL config keys). A
// rule that needs data the capture lacks says what to turn on instead (severity info).
//
//   RLPROF_ASSIGN_OR_RETURN(RunAnalysis run, AnalyseRun({"runs/r1"}, cfg));
//   Advice a = Advise(run);                       // or Advise(run, &baseline_run)
//   std::string text = ToText(FindingsTable(a));  // `rlprof advise RUN`
//   nlohmann::json j = AdviceJson(a);             // `rlprof advise RUN --json` (schema 1)
//
// Thread-safety: pure functions of the run.
#ifndef RLPROF_SRC_ANALYSIS_ADVISE_ADVISE_H_
#define RLPROF_SRC_ANALYSIS_ADVISE_ADVISE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/analysis/run/run_pipeline.h"
#include "src/analysis/tables/tables.h"

namespace rlprof::analysis {

enum class Severity { kInfo = 0, kLow = 1, kMedium = 2, kHigh = 3 };
const char* SeverityName(Severity s);  // "info" | "low" | "medium" | "high"

// One piece of evidence: what was seen where (any field may be empty / -1).
struct Evidence {
  std::string what;   // "rank 3's actor_update: 412.0 ms against a median of 301.2 ms"
  int64_t step = -1;
  int64_t rank = -1;
  std::string stage;  // a stage, or an operator / kernel / group for device rules
  int64_t start_ns = -1, end_ns = -1;  // where in the run (rank 0's clock), for the report's timeline
};

struct Finding {
  std::string id;        // the rule's id, e.g. "rl.generation_tail" (stable)
  Severity severity = Severity::kInfo;
  std::string title;     // one line, with the figures
  double saving_ns = 0;  // estimated saving per step, ns (0: none estimated)
  double step_ns = 0;    // the step time it is measured against (mean over the steps seen), ns
  std::string how;       // how the saving was computed, with the numbers
  std::vector<Evidence> evidence;
  std::string action;    // what to change, in the user's terms
  bool regression = false;  // found by comparing with a baseline run
  bool failure = false;     // the run failed there (an out-of-memory error): ranked before any other
  bool stated = false;      // kept whatever its saving (a design's share, a risk, what the capture lacked)
};

struct Advice {
  std::vector<Finding> findings;  // ranked: failures, severity, then saving, then id
  int64_t steps = 0;              // steps the run view holds
  double step_ns = 0;             // mean step time over them (0 unknown)
  std::vector<std::string> rules_run;  // every rule evaluated
};

// What a rule is (the catalogue): id, level ("rl" | "device" | "run"), what it looks for, how its
// saving is estimated, what it needs from the capture, and the action it proposes.
struct RuleSpec {
  const char* id;
  const char* level;
  const char* looks_for;
  const char* saving;
  const char* needs;
  const char* action;
};
std::span<const RuleSpec> RuleCatalogue();
// The catalogue as docs/advise.md's Markdown table (a test keeps them equal).
std::string RuleCatalogueMarkdown();

// "412.0 ms", "85 µs", "1.20 s": how findings write a duration.
std::string DurationText(double ns);

// Severity by the saving's share of the step: ≥ 10 % high, ≥ 3 % medium, ≥ 1 % low, else info.
Severity SeverityOf(double saving_ns, double step_ns);

// Every rule of the catalogue over a run (its inputs and run view); with a baseline run's,
// regressions against it too.
Advice Advise(const std::vector<InputResult>& inputs, const RunView& view,
              const std::vector<InputResult>* base_inputs = nullptr, const RunView* base_view = nullptr);
inline Advice Advise(const RunAnalysis& run, const RunAnalysis* baseline = nullptr) {
  return baseline == nullptr ? Advise(run.inputs, run.view) : Advise(run.inputs, run.view, &baseline->inputs, &baseline->view);
}

// `findings`: rank, id, severity, saving (µs per step), share (% of the step), title, action,
// how, evidence (the first few, "; "-joined), regression.
Table FindingsTable(const Advice& a);

// The stable JSON document of `rlprof advise --json` (docs/advise.md "JSON schema"):
// {"schema": 1, "steps", "step_us", "rules": [...], "findings": [{"rank", "id", "severity",
// "regression", "title", "saving_us_per_step", "share_pct", "how", "action", "evidence":
// [{"what", "step", "rank", "stage", "start_us", "end_us"}]}]}.
nlohmann::json AdviceJson(const Advice& a);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_ADVISE_ADVISE_H_
