// `rlprof advise RUN|TRACE [--baseline RUN] [--json] [--list-rules] [--jobs N] [--rules FILE]
//                 [--assign …] [--step-marker REGEX] [--compat …]`
// Analyses the run (like `rlprof summary`) and prints what to change, with the time it would save:
// the advisor's findings, ranked (src/analysis/advise/advise.h; docs/advise.md). --baseline adds
// the regressions against another run; --json prints the stable document of docs/advise.md
// ("JSON schema"); --list-rules prints the rule catalogue (Markdown). Exit codes: 2 bad input.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/analysis/advise/advise.h"
#include "src/analysis/run/run_view.h"
#include "src/cli/analysis_setup.h"
#include "src/cli/cli.h"
#include "src/cli/command.h"

namespace rlprof::cli {
namespace {

struct AdviseArgs {
  std::string path, baseline;
  AnalysisArgs analysis;
  size_t jobs = 2;
  bool json = false;
  bool list_rules = false;
};

base::Status Load(const std::string& path, const char* side, const AdviseArgs& a, const analysis::AnalysisOptions& opts,
                  const analysis::Classifier& cls, Io& io, analysis::RunAnalysis* run, bool* bad,
                  analysis::Diagnostics* found) {
  run->paths = {path};
  run->options = opts;
  RLPROF_RETURN_IF_ERROR(AnalysePath(path, "advise", side, cls, opts, a.jobs, io, &run->inputs, bad, found));
  run->view = analysis::BuildRunView(run->inputs);
  return base::Status::Ok();
}

base::Status Run(const AdviseArgs& a, Io& io) {
  if (a.list_rules) {
    io.out << analysis::RuleCatalogueMarkdown();
    return base::Status::Ok();
  }
  if (a.path.empty()) return base::InvalidArgument("advise: a run or trace path is required (or --list-rules)");
  analysis::AnalysisOptions opts;
  analysis::Classifier cls;
  RLPROF_RETURN_IF_ERROR(PrepareAnalysis(a.analysis, &opts, &cls));
  analysis::RunAnalysis run, base;
  bool bad = false;
  analysis::Diagnostics found;
  RLPROF_RETURN_IF_ERROR(Load(a.path, "", a, opts, cls, io, &run, &bad, &found));
  if (!a.baseline.empty()) RLPROF_RETURN_IF_ERROR(Load(a.baseline, "baseline", a, opts, cls, io, &base, &bad, &found));
  const analysis::Advice advice = analysis::Advise(run, a.baseline.empty() ? nullptr : &base);
  analysis::Diagnostics diags = found;
  diags.Merge(MergedDiagnostics(run.inputs));
  if (!a.baseline.empty()) diags.Merge(MergedDiagnostics(base.inputs));
  if (a.json) {
    nlohmann::json j = analysis::AdviceJson(advice);
    j["run"] = a.path;
    j["baseline"] = a.baseline.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.baseline);
    j["diagnostics"] = DiagnosticsJson(diags);
    io.out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return UnreadableInputs(bad);
  }
  io.out << "run: " << a.path << " (" << run.inputs.size() << " inputs, " << advice.steps << " steps";
  if (advice.step_ns > 0) io.out << ", " << analysis::DurationText(advice.step_ns) << " a step";
  io.out << ")\n";
  if (!a.baseline.empty()) io.out << "baseline: " << a.baseline << " (" << base.inputs.size() << " inputs)\n";
  if (advice.findings.empty()) io.out << "no findings: none of the " << advice.rules_run.size() << " rules fired\n";
  int rank = 0;
  for (const analysis::Finding& f : advice.findings) {
    io.out << "\n" << ++rank << ". [" << analysis::SeverityName(f.severity) << "] " << f.id
           << (f.regression ? " (regression)" : "") << ": " << f.title << "\n";
    if (f.saving_ns > 0)
      io.out << "   saves ≈ " << analysis::DurationText(f.saving_ns) << " a step"
             << (f.step_ns > 0 ? " (" + std::to_string(static_cast<int>(100.0 * f.saving_ns / f.step_ns + 0.5)) + " %" + " of it)" : "") << "\n";
    io.out << "   how: " << f.how << "\n";
    for (size_t i = 0; i < f.evidence.size() && i < 5; ++i) io.out << "   - " << f.evidence[i].what << "\n";
    io.out << "   action: " << f.action << "\n";
  }
  PrintDiagnostics(io, diags);
  return UnreadableInputs(bad);
}

}  // namespace

Command AddAdviseCommand(CLI::App& app) {
  auto args = std::make_shared<AdviseArgs>();
  CLI::App* cmd =
      app.add_subcommand("advise", "What to change, with the time it would save: ranked findings of a run");
  cmd->add_option("path", args->path, "The run: capture/run directory or trace(s)");
  cmd->add_option("--baseline", args->baseline, "A baseline run: its regressions are findings too");
  cmd->add_option("-j,--jobs", args->jobs, "Inputs analysed in parallel (default 2)")->check(CLI::Range(1, 256));
  AddAnalysisOptions(cmd, &args->analysis);
  cmd->add_flag("--json", args->json, "Print the findings as JSON (docs/advise.md, schema 1)");
  cmd->add_flag("--list-rules", args->list_rules, "Print the rule catalogue (Markdown) and exit");
  return {cmd, [args](Io& io) { return Run(*args, io); }};
}

}  // namespace rlprof::cli
