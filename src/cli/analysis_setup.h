// The analysis settings `rlprof analyse`, `summary` and `compare` share — --rules, --assign,
// --step-marker, --compat — registered once and turned into AnalysisOptions and a Classifier
// with one error path.
//
//   AnalysisArgs args;                        // in the command's argument struct
//   AddAnalysisOptions(cmd, &args);           // when registering the subcommand
//   …
//   analysis::AnalysisOptions opts;
//   analysis::Classifier cls;
//   RLPROF_RETURN_IF_ERROR(PrepareAnalysis(args, &opts, &cls));
#ifndef RLPROF_SRC_CLI_ANALYSIS_SETUP_H_
#define RLPROF_SRC_CLI_ANALYSIS_SETUP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "src/analysis/passes/analyse.h"
#include "src/analysis/passes/classify.h"
#include "src/analysis/run/run.h"
#include "src/analysis/tables/tables.h"
#include "src/cli/command.h"
#include "src/report/report_pipeline.h"

namespace rlprof::cli {

struct AnalysisArgs {
  std::string rules;
  std::string assign = "clip";
  std::string compat = "native";
  std::string step_marker;
};

void AddAnalysisOptions(CLI::App* cmd, AnalysisArgs* args);

// Options and classifier from the arguments: UsageError for a bad --step-marker regex (exit 1),
// InvalidArgument for a bad rules file (exit 2).
base::Status PrepareAnalysis(const AnalysisArgs& args, analysis::AnalysisOptions* opts, analysis::Classifier* cls);

// Finds the traces under `path` and analyses them into `out` (analysis::AnalyseRun). When `path`
// holds no trace, returns that Status ("[<side>: ]no trace found under …" and why, one reason
// a line; print it with ReportStatus). Prints "rlprof <command>: [<side>: ]<input>: <why>" for
// every input that could not be read (sets *bad_inputs; the others are still analysed). What
// the search for inputs passed over (unreadable folders, empty files …) is counted in `found`.
// `activity_max_inputs`: analysis::RunConfig's (opts.activity_spans only for runs that small).
base::Status AnalysePath(const std::string& path, const char* command, const std::string& side,
                         const analysis::Classifier& cls, const analysis::AnalysisOptions& opts, size_t jobs,
                         Io& io, std::vector<analysis::InputResult>* out, bool* bad_inputs,
                         analysis::Diagnostics* found, size_t activity_max_inputs = SIZE_MAX,
                         const std::string& confine_to = "");

// What `rlprof report` and `rlprof serve` draw: the report pipeline (src/report/report_pipeline.h),
// with every unreadable input printed as "rlprof <command>: [baseline: ]<input>: <why>" (they
// are also listed in the page).
base::Status AnalyseForReport(const report::ReportRequest& request, const char* command, Io& io,
                              report::RunReport* out);

// The Status of a command whose inputs were partly unreadable (their reasons already printed):
// DataLoss (exit 2) when `bad_inputs`, else Ok.
base::Status UnreadableInputs(bool bad_inputs);

// The one way every command prints a diagnostics sink (src/format/diagnostics.h): problems by
// severity, worst first, then informational notes on their own line (never shown as
// problems), then the detail lines:
//   diagnostics: none
//   diagnostics: [data_loss] raw_bad_checksum_chunks=2 [warning] negative_duration=1
//   notes: step_from_manifest=1
//     runs/r1/rank0/events.rlp: 2 damaged chunks skipped
// `scope` ("inputs", "all inputs") is shown as "diagnostics (scope):".
void PrintDiagnostics(Io& io, const analysis::Diagnostics& d, const std::string& scope = "");

// Every analysed input's diagnostics, merged (a run-level total).
analysis::Diagnostics MergedDiagnostics(const std::vector<analysis::InputResult>& results);

// The sink in --json outputs: {"name": count, …}; DiagnosticDetailsJson: the detail lines.
nlohmann::json DiagnosticsJson(const analysis::Diagnostics& d);
nlohmann::json DiagnosticDetailsJson(const analysis::Diagnostics& d);

// -o DIR of compare and cluster: every table as DIR/<name>.csv and the document as DIR/<json_name>.
base::Status WriteTableFiles(const std::string& dir, const std::vector<const analysis::Table*>& tables,
                             const std::string& json_name, const nlohmann::json& doc);

}  // namespace rlprof::cli

#endif  // RLPROF_SRC_CLI_ANALYSIS_SETUP_H_
