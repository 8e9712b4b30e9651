// `rlprof analyse PATH... [-o DIR] [--jobs N] [--export text,db,pftrace] [--rules FILE]
//                  [--assign clip|by_start|by_launch] [--step-marker REGEX] [--compat native|hta] [--json]
//                  [--ray [ADDRESS] [--ray-timeout S]]`
// With --ray the same analysis runs on a Ray cluster (src/cli/ray_handoff.h, docs/scale.md).
// Finds every trace below PATH (rlprof captures, Kineto / torch JSON, Ascend trace_view),
// analyses the inputs in parallel and writes, per input, DIR/<name>/{step_trace_time,
// op_statistic, kernel_details, stage_time, …}.csv, and for the run DIR/summary.json and
// DIR/analysis.db (the same tables, with an `input` column), DIR/run_view.csv (the run view) and
// DIR/report.html. The pipeline is the analysis library's (src/analysis/run/run_pipeline.h); this
// file parses options, shows progress, writes the report and prints. Exit codes: 1 usage, 2 bad
// input (an unreadable input or rules file; the others are still analysed), 4 output error.
#include <algorithm>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <optional>
#include <ostream>

#include "src/analysis/run/run_pipeline.h"
#include "src/base/version.h"
#include "src/analysis/tables/tables.h"
#include "src/cli/analysis_setup.h"
#include "src/cli/cli.h"
#include "src/cli/command.h"
#include "src/cli/ray_handoff.h"
#include "src/report/html_report.h"

namespace rlprof::cli {
namespace {

struct AnalyseArgs {
  std::vector<std::string> paths;
  std::string output = "rlprof-analysis";
  size_t jobs = 2;
  std::vector<std::string> exports;
  AnalysisArgs analysis;
  bool json = false;
  std::optional<std::string> ray;  // --ray [ADDRESS]: analyse on a Ray cluster (src/cli/ray_handoff.h)
  double ray_timeout_s = 0;        // --ray-timeout S: inputs not back by then count as lost
};

// --ray: the same analysis, where the captures are, by rlprof.distributed (Python).
base::Status RunOnRay(const AnalyseArgs& a, Io& io) {
  if (!a.exports.empty())
    return base::UsageError("--export reads the traces themselves: run it on the node that holds them "
                            "(without --ray)");
  std::vector<std::string> args = a.paths;
  args.insert(args.end(), {"--ray", a.ray->empty() ? "auto" : *a.ray, "-o", a.output, "--assign",
                           a.analysis.assign, "--compat", a.analysis.compat});
  if (!a.analysis.rules.empty()) args.insert(args.end(), {"--rules", a.analysis.rules});
  if (!a.analysis.step_marker.empty()) args.insert(args.end(), {"--step-marker", a.analysis.step_marker});
  if (a.json) args.push_back("--json");
  if (a.ray_timeout_s > 0) args.insert(args.end(), {"--timeout", std::to_string(a.ray_timeout_s)});
  return ExecPythonAnalyse(args, io);
}

base::Status Analyse(const AnalyseArgs& a, analysis::RunConfig cfg, Io& io) {
  // Progress on stderr, only for a terminal.
  if (&io.err == &std::cerr && isatty(STDERR_FILENO)) {
    cfg.progress = [&io](size_t done, size_t total) {
      const size_t width = 30, filled = total ? done * width / total : width;
      io.err << "\r[" << std::string(filled, '#') << std::string(width - filled, ' ') << "] " << done
             << "/" << total << (done == total ? "\n" : "") << std::flush;
    };
  }
  // One pass: each input's CSVs and analysis.db rows are written on threads of their own while
  // later inputs are analysed; the report is made while the last ones are written.
  // The page's device and host lanes, as `rlprof report` and `rlprof serve` analyse for them
  // (small runs only: their memory grows with lanes x spans per input).
  if (cfg.options.activity_spans == 0) cfg.options.activity_spans = report::kReportActivitySpansPerLane;
  cfg.activity_max_inputs = std::min(cfg.activity_max_inputs, report::kReportDetailInputs);
  analysis::RunAnalysis run;
  const std::string title = a.paths.size() == 1 ? a.paths[0] : std::to_string(a.paths.size()) + " paths";
  // Per-kernel rows go into kernel_details and are freed once written: nothing below reads them.
  analysis::RunWriteOptions wopts{.exports = a.exports, .keep_kernel_rows = false};
  wopts.page = [&](const nlohmann::json& summary) -> base::StatusOr<std::string> {
    return report::RenderHtmlReport(report::ReportData(run.inputs, summary, title, base::Version()));
  };
  auto written = analysis::AnalyseAndWriteRun(a.paths, cfg, a.output, wopts, &run);
  for (const auto& r : run.inputs)
    if (!r.status.ok()) io.err << "rlprof analyse: " << r.input << ": " << r.status.message() << "\n";
  RLPROF_RETURN_IF_ERROR(written.status());
  const analysis::RunOutputs& w = *written;
  for (const auto& [input, s] : w.export_failures)
    io.err << "rlprof analyse: export: " << input << ": " << s.message() << "\n";
  const size_t bad = run.inputs.size() - run.analysed() + w.export_failures.size();
  // Some inputs (or their exports) could not be read: everything else is written, exit 2.
  const base::Status partial =
      bad ? base::DataLoss(std::to_string(bad) + " input(s) or export(s) could not be read (see above)")
          : base::Status::Ok();
  if (a.json) {
    io.out << w.summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return partial;
  }
  for (const auto& r : run.inputs) {
    if (!r.status.ok()) continue;
    io.out << "== " << r.name << "  (" << r.analysis.format
           << (r.analysis.cpu_only ? ", cpu-only: host threads" : "") << ", rank " << r.analysis.rank
           << ")\n";
    io.out << "-- step_trace_time (us)\n" << analysis::ToText(analysis::StepTraceTimeTable(r.analysis));
    PrintDiagnostics(io, r.analysis.diagnostics);
  }
  if (!run.found.empty()) PrintDiagnostics(io, run.found, "finding inputs");
  io.out << run.analysed() << "/" << run.inputs.size() << " inputs analysed; wrote " << a.output
         << "/{summary.json,analysis.db,run_view.csv,report.html} and one folder of CSVs per input";
  if (!w.exported.empty()) io.out << "; exported " << w.exported.size() << " file(s)";
  io.out << "\n";
  return partial;
}

base::Status Run(const AnalyseArgs& a, Io& io) {
  if (a.ray) return RunOnRay(a, io);
  analysis::RunConfig cfg;
  RLPROF_RETURN_IF_ERROR(PrepareAnalysis(a.analysis, &cfg.options, &cfg.classifier));
  cfg.jobs = a.jobs;
  return Analyse(a, std::move(cfg), io);
}

}  // namespace

Command AddAnalyseCommand(CLI::App& app) {
  auto args = std::make_shared<AnalyseArgs>();
  auto* cmd = app.add_subcommand("analyse", "Break traces down per step, rank and stage");
  cmd->alias("analyze");
  cmd->add_option("paths", args->paths, "Capture directories, trace files, or folders of them")
      ->required();
  cmd->add_option("-o,--output", args->output, "Output directory (default: rlprof-analysis)");
  cmd->add_option("-j,--jobs", args->jobs, "Inputs analysed in parallel (default: 2)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--export", args->exports, "Also export rlprof captures: text, db, pftrace")
      ->delimiter(',')
      ->check(CLI::IsMember({"text", "db", "pftrace"}));
  AddAnalysisOptions(cmd, &args->analysis);
  cmd->add_flag("--json", args->json, "Print summary.json to stdout");
  cmd->add_option("--ray", args->ray,
                  "Analyse on a Ray cluster, each capture on the node that holds it (ADDRESS: default auto; "
                  "runs RLPROF_PYTHON or python3 -m rlprof; docs/scale.md)")
      ->expected(0, 1)
      ->default_str("auto");
  cmd->add_option("--ray-timeout", args->ray_timeout_s,
                  "With --ray: seconds to wait for the nodes; inputs not back by then count as lost")
      ->check(CLI::PositiveNumber);
  return {cmd, [args](Io& io) { return Run(*args, io); }};
}

}  // namespace rlprof::cli
