// `rlprof report PATH [-o FILE] [--baseline PATH] [--title TEXT] [--jobs N] [--rules FILE]
//                 [--assign …] [--step-marker REGEX] [--compat …]`
// Analyses PATH (like `rlprof summary`) and writes one self-contained HTML page
// (src/report/html_report.h): overview, step breakdown per rank, RL stages across ranks,
// communication per process group, top operators, diagnostics, and with --baseline what
// changed against it. Exit codes: 2 bad input (unreadable inputs are listed in the page),
// 4 output error.
#include <memory>
#include <string>
#include <vector>

#include "src/cli/analysis_setup.h"
#include "src/cli/cli.h"
#include "src/cli/command.h"
#include "src/report/html_report.h"

namespace rlprof::cli {
namespace {

struct ReportArgs {
  std::string path, output = "rlprof-report.html", baseline, title;
  size_t jobs = 2;
  AnalysisArgs analysis;
};

base::Status Report(const ReportArgs& a, const analysis::AnalysisOptions& opts, const analysis::Classifier& cls,
                    Io& io) {
  report::RunReport r;
  RLPROF_RETURN_IF_ERROR(AnalyseForReport({.path = a.path,
                                           .baseline = a.baseline,
                                           .title = a.title.empty() ? a.path : a.title,
                                           .baseline_label = a.baseline,
                                           .current_label = a.path,
                                           .classifier = cls,
                                           .options = opts,
                                           .jobs = a.jobs},
                                          "report", io, &r));
  RLPROF_RETURN_IF_ERROR(report::WriteHtmlReport(a.output, r.data));
  io.out << "wrote " << a.output << " (" << r.inputs << " input(s)"
         << (r.compared ? ", compared with " + a.baseline : std::string()) << ")\n";
  PrintDiagnostics(io, r.diagnostics, "all inputs");
  return UnreadableInputs(!r.unreadable.empty());
}

base::Status Run(const ReportArgs& a, Io& io) {
  analysis::AnalysisOptions opts;
  analysis::Classifier cls;
  RLPROF_RETURN_IF_ERROR(PrepareAnalysis(a.analysis, &opts, &cls));
  opts.kernel_rows = false;  // never shown here: memory grows with steps × stages, not kernels
  return Report(a, opts, cls, io);
}

}  // namespace

Command AddReportCommand(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand("report", "Write a self-contained HTML report of a run");
  cmd->add_option("path", args->path, "Capture/run directory, trace file, or a folder of them")->required();
  cmd->add_option("-o,--output", args->output, "The HTML file (default: rlprof-report.html)");
  cmd->add_option("--baseline", args->baseline, "Also compare with this run (like rlprof compare)");
  cmd->add_option("--title", args->title, "Page title (default: the path)");
  cmd->add_option("-j,--jobs", args->jobs, "Inputs analysed in parallel (default: 2)")
      ->check(CLI::Range(1, 256));
  AddAnalysisOptions(cmd, &args->analysis);
  return {cmd, [args](Io& io) { return Run(*args, io); }};
}

}  // namespace rlprof::cli
