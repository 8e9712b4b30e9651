// The run pipeline as a library — what `rlprof analyse` does, for the CLI, the Python API
// (rlprof.analysis, python/src/analysis_module.cc) and tests: find every trace under some
// paths, analyse the inputs in parallel, fold them into the run's tables (every per-input table
// with an `input` column, stage_across_ranks, the run view) and the summary.json document, and
// write them out (per-input CSVs, run_view.csv, summary.json, analysis.db, --export files).
// The HTML report is the report stage's (src/report): it takes RunAnalysis::inputs and the
// summary document this returns.
//
//   RLPROF_ASSIGN_OR_RETURN(RunConfig cfg, MakeRunConfig({.assign = "by_start"}));
//   RLPROF_ASSIGN_OR_RETURN(RunAnalysis run, AnalyseRun({"runs/r1"}, cfg));
//   for (const Table& t : RunTables(run)) use(t);              // what analysis.db holds
//   RLPROF_ASSIGN_OR_RETURN(RunOutputs w, WriteRunOutputs(run, "out", {}));
//
// Errors: only usage (a bad option: InvalidArgument), a rules file that cannot be used (its
// Status), no trace under the paths (NotFound) and output failures (IoError) are Statuses.
// An input that cannot be read at all is kept in `inputs` with its Status; what was skipped or
// repaired inside an input is counted in its diagnostics. Nothing here throws.
// Thread-safety: AnalyseRun runs `jobs` worker threads and calls `progress` under a mutex; the
// results are plain values, safe to read from any thread.
#ifndef RLPROF_SRC_ANALYSIS_RUN_RUN_PIPELINE_H_
#define RLPROF_SRC_ANALYSIS_RUN_RUN_PIPELINE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/analysis/run/run.h"
#include "src/analysis/run/run_view.h"
#include "src/analysis/tables/tables.h"
#include "src/base/status.h"

namespace rlprof::analysis {

// The analysis settings the CLI's --rules, --assign, --compat, --step-marker give, as text.
struct RunSettings {
  std::string rules;           // YAML rules file, "" for the default table
  std::string assign = "clip";  // clip | by_start | by_launch
  std::string compat = "native";  // native | hta
  std::string step_marker;     // regex, "" for the trace's own step markers
};

struct RunConfig {
  AnalysisOptions options;
  Classifier classifier = Classifier::Default();
  size_t jobs = 2;      // inputs analysed in parallel
  ProgressFn progress;  // optional: (done, total) after each input
  // Past this many inputs, options.activity_spans is not applied (activity lanes are kept per
  // input: their memory grows with the run; the report shows them for small runs only).
  size_t activity_max_inputs = SIZE_MAX;
  // When set (a canonical directory): inputs whose real path — and, for a capture, the real
  // paths of its manifest.json and events.rlp — lie outside it are left out and counted as
  // input_outside_root (rlprof serve: nothing outside the save path through a link).
  std::string confine_to;
};

base::StatusOr<AssignMode> ParseAssignMode(const std::string& name);  // InvalidArgument if unknown
base::StatusOr<CompatMode> ParseCompatMode(const std::string& name);

// InvalidArgument for an unknown mode or a bad regex (usage errors); the rules file's own
// Status (NotFound, InvalidArgument naming the rule) when it cannot be used.
base::StatusOr<RunConfig> MakeRunConfig(const RunSettings& s, size_t jobs = 2);

struct RunAnalysis {
  std::vector<std::string> paths;  // as given
  AnalysisOptions options;
  Diagnostics found;               // what finding the inputs passed over
  std::vector<InputResult> inputs;  // every input found, in FindTraceInputs order
  RunView view;                    // the run view (steps × stages × ranks)

  size_t analysed() const;  // inputs whose status is ok
  // Every diagnostic of the run: finding inputs, each analysed input, the run view, and one
  // `unreadable_inputs` per input that could not be read (with its reason as a detail).
  Diagnostics AllDiagnostics() const;
};

// Finds the traces under `paths` and analyses them. NotFound when none holds a trace (the
// message says why, from the search's details); the search's own errors as they are.
base::StatusOr<RunAnalysis> AnalyseRun(const std::vector<std::string>& paths, const RunConfig& cfg);

// Analysis where the captures are (rlprof.distributed, docs/scale.md): the driver finds which
// node holds which input, each node analyses its inputs (AnalyseInputs, then
// EncodeInputResult of src/analysis/run/input_codec.h) and the driver assembles the run from the
// decoded results: the same RunAnalysis AnalyseRun gives for the same inputs. `inputs` in
// FindTraceInputs order, named by InputNames over all of them; an input lost on the way (its
// node died) is kept with its Status, as an unreadable one is.
RunAnalysis AssembleRun(std::vector<std::string> paths, const AnalysisOptions& options, Diagnostics found,
                        std::vector<InputResult> inputs);

// The run's tables, in analysis.db order: each per-input table (AllTables) of every analysed
// input concatenated with an `input` column first, then stage_across_ranks, run_view (its rank
// columns only up to kSqliteRunViewLaneColumns ranks) and run_view_long (every rank).
std::vector<Table> RunTables(const RunAnalysis& run);

// summary.json (SummaryJson over the run's inputs, options and `found`).
nlohmann::json RunSummaryJson(const RunAnalysis& run);

struct RunWriteOptions {
  std::vector<std::string> exports;  // rlprof captures also exported: text, db, pftrace
  // Optional run-level page (the CLI's report.html): made on the calling thread from the
  // summary as written, while the last inputs' CSVs and analysis.db are still being written, and
  // written to DIR/`page_name` after summary.json, once every input's files are. Its failure is
  // returned like a write failure (and nothing is written for it).
  std::function<base::StatusOr<std::string>(const nlohmann::json& summary)> page = nullptr;
  std::string page_name = "report.html";
  // AnalyseAndWriteRun only. false: each input's per-kernel rows (TraceAnalysis::kernel_rows, one
  // heap string per kernel) are moved into its kernel_details table and freed with it once its
  // CSV and database rows are written, while later inputs are analysed, so `*run` comes back
  // without them: the CLI never reads them again (less memory, nothing left to free at the end).
  bool keep_kernel_rows = true;
};

struct RunOutputs {
  nlohmann::json summary;               // summary.json as written ("output" = the directory)
  std::vector<std::string> written;     // run-level files: run_view.csv, summary.json, analysis.db
  std::vector<std::string> exported;    // --export files
  // Inputs whose export failed for a reason other than writing (their capture is unreadable):
  // (input, why). Not an output error; the CLI reports them as bad input.
  std::vector<std::pair<std::string, base::Status>> export_failures;
};

// Writes DIR/<name>/<table>.csv for every analysed input (plus its exports), DIR/run_view.csv,
// DIR/summary.json and DIR/analysis.db. InvalidArgument for an unknown export type (before
// writing anything); IoError, naming the file, on the first write that fails (analysis.db is then
// not written). Each input's tables are built once, for its CSVs and analysis.db; two threads
// build them and write both, input after input, while run_view.csv, summary.json and `opts.page`
// are made on this one.
base::StatusOr<RunOutputs> WriteRunOutputs(const RunAnalysis& run, const std::string& dir,
                                           const RunWriteOptions& opts = {});

// AnalyseRun then WriteRunOutputs in one pass, what `rlprof analyse` runs, on cfg.jobs threads:
// a thread analyses an input and builds its tables; its two halves of CSVs (kernel_details; the
// rest and its exports) and its analysis.db rows (in input order) are then tasks that any thread
// takes before it starts another input. No core idles while work is left, tables are freed as
// soon as they are written, and the run-level files' contents are made on this thread while the
// last inputs' files are written. The same files (analysis.db byte for byte,
// whatever cfg.jobs and the order in which inputs finish) and RunOutputs as the two calls;
// `*run` is the RunAnalysis (set when the analysis itself succeeded, even if a write failed),
// without per-kernel rows when opts.keep_kernel_rows is false.
// Errors: AnalyseRun's, then WriteRunOutputs'.
base::StatusOr<RunOutputs> AnalyseAndWriteRun(const std::vector<std::string>& paths, const RunConfig& cfg,
                                              const std::string& dir, const RunWriteOptions& opts,
                                              RunAnalysis* run);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_RUN_RUN_PIPELINE_H_
