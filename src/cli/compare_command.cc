// `rlprof compare BASELINE NEW [--top N] [-o DIR] [--json] [--jobs N] [--rules FILE]
//                  [--assign …] [--step-marker REGEX] [--compat …]`
// Analyses two runs (each a capture directory, run directory, trace file or folder of traces,
// like `rlprof summary`) and prints what changed: the step breakdown, every RL stage and the
// operators / kernels that moved most (docs/analysis.md "rlprof compare"). With -o, writes
// compare_{steps,stages,ops}.csv and compare.json. Exit codes: 2 bad input, 4 output error.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/analysis/run/compare.h"
#include "src/analysis/run/run.h"
#include "src/cli/analysis_setup.h"
#include "src/cli/cli.h"
#include "src/cli/command.h"

namespace rlprof::cli {
namespace {

struct CompareArgs {
  std::string baseline, test, output;
  AnalysisArgs analysis;
  size_t top = 30;
  size_t jobs = 2;
  bool json = false;
};

nlohmann::json ComparisonJson(const analysis::Comparison& c, const CompareArgs& a,
                              const analysis::AnalysisOptions& opts) {
  nlohmann::json j;
  j["format"] = "rlprof-compare";
  j["schema_version"] = 1;
  j["baseline"] = a.baseline;
  j["new"] = a.test;
  j["options"] = {{"assign", analysis::AssignModeName(opts.assign)},
                  {"compat", analysis::CompatModeName(opts.compat)},
                  {"step_marker", opts.step_marker},
                  {"top", a.top}};
  j.update(analysis::ComparisonToJson(c));
  if (!c.diagnostics.details.empty()) j["diagnostic_details"] = DiagnosticDetailsJson(c.diagnostics);
  return j;
}

base::Status Compare(const CompareArgs& a, const analysis::AnalysisOptions& opts,
                     const analysis::Classifier& cls, Io& io) {
  std::vector<analysis::InputResult> base, test;
  bool bad = false;
  analysis::Diagnostics found;
  RLPROF_RETURN_IF_ERROR(AnalysePath(a.baseline, "compare", "baseline", cls, opts, a.jobs, io, &base, &bad, &found));
  RLPROF_RETURN_IF_ERROR(AnalysePath(a.test, "compare", "new", cls, opts, a.jobs, io, &test, &bad, &found));
  analysis::Comparison c = analysis::CompareRuns(base, test, {.top_ops = a.top});
  // One sink: the comparison's own counts, what finding the inputs passed over, and what
  // reading and analysing each input counted (a damaged baseline must not go unnoticed).
  c.diagnostics.Merge(found);
  c.diagnostics.Merge(MergedDiagnostics(base));
  c.diagnostics.Merge(MergedDiagnostics(test));

  const nlohmann::json j = ComparisonJson(c, a, opts);
  if (!a.output.empty())
    RLPROF_RETURN_IF_ERROR(WriteTableFiles(a.output, c.Tables(), "compare.json", j));
  if (a.json) {
    io.out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return UnreadableInputs(bad);
  }
  io.out << "baseline: " << a.baseline << " (" << base.size() << " inputs)\n"
         << "new:      " << a.test << " (" << test.size() << " inputs)\n";
  for (const analysis::Table* t : c.Tables()) {
    const char* how = t == &c.ops                ? " (per rank-step, us"
                      : t == &c.async            ? " (the async run's figures"
                      : t == &c.async_versions   ? " (the k-th version interval of each run"
                                                 : " (median over rank-steps, us";
    io.out << "-- " << t->name << how << "; delta = new - baseline)\n" << analysis::ToText(*t);
  }
  PrintDiagnostics(io, c.diagnostics);
  if (!a.output.empty()) {
    std::string names;
    for (const analysis::Table* t : c.Tables()) names += (names.empty() ? "" : ",") + t->name;
    io.out << "wrote " << a.output << "/{" << names << "}.csv, compare.json\n";
  }
  return UnreadableInputs(bad);
}

base::Status Run(const CompareArgs& a, Io& io) {
  analysis::AnalysisOptions opts;
  analysis::Classifier cls;
  RLPROF_RETURN_IF_ERROR(PrepareAnalysis(a.analysis, &opts, &cls));
  return Compare(a, opts, cls, io);
}

}  // namespace

Command AddCompareCommand(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "What changed between two runs: steps, RL stages, operators (baseline vs new)");
  cmd->add_option("baseline", args->baseline, "The baseline run: capture/run directory or trace(s)")
      ->required();
  cmd->add_option("new", args->test, "The run to compare with it")->required();
  cmd->add_option("--top", args->top, "Operator rows shown, by |delta| (default 30)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("-o,--output", args->output, "Also write compare_*.csv and compare.json here");
  cmd->add_option("-j,--jobs", args->jobs, "Inputs analysed in parallel per side (default 2)")
      ->check(CLI::Range(1, 256));
  AddAnalysisOptions(cmd, &args->analysis);
  cmd->add_flag("--json", args->json, "Print compare.json to stdout");
  return {cmd, [args](Io& io) { return Run(*args, io); }};
}

}  // namespace rlprof::cli
