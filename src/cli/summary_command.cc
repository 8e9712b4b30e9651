// `rlprof summary PATH [--view msprof|hta|tracelens|rl|ops|kernels|comm|atoms|all] [--json]
//                  [--rules FILE] [--assign clip|by_start|by_launch] [--step-marker REGEX] [--compat native|hta]`
// Analyses the traces under PATH (like `rlprof analyse`, without writing files) and prints
// one view as aligned tables with units; --json prints the same tables as
// {"view": …, "inputs": [{"input", "name", "tables": {name: {columns, rows}}, "diagnostics"}]}.
#include <memory>
#include <ostream>

#include "src/analysis/readers/readers.h"
#include "src/analysis/run.h"
#include "src/analysis/tables.h"
#include "src/cli/analysis_setup.h"
#include "src/cli/cli.h"
#include "src/cli/command.h"

namespace rlprof::cli {
namespace {

struct SummaryArgs {
  std::string path;
  std::string view = "msprof";
  AnalysisArgs analysis;
  bool json = false;
};

std::vector<analysis::Table> ViewTables(const std::string& view, const analysis::TraceAnalysis& a) {
  using namespace analysis;
  if (view == "msprof") return {StepTraceTimeTable(a)};
  if (view == "hta") return {HtaTemporalTable(a), HtaIdleTable(a)};
  if (view == "tracelens") return {GpuTimelineTable(a)};
  if (view == "rl") return {StageTimeTable(a)};
  if (view == "ops") return {OpStatisticTable(a)};
  if (view == "kernels") return {KernelDetailsTable(a)};
  if (view == "comm") return {CommByGroupTable(a)};
  if (view == "atoms") return {StepAtomsTable(a), ClassTable(a)};
  return {StepTraceTimeTable(a), StepAtomsTable(a), StageTimeTable(a), CommByGroupTable(a), HtaTemporalTable(a),
          HtaIdleTable(a), GpuTimelineTable(a), ClassTable(a)};
}

int Run(const SummaryArgs& a, Io& io) {
  analysis::AnalysisOptions opts;
  analysis::Classifier cls;
  if (int rc = PrepareAnalysis(a.analysis, "summary", io, &opts, &cls); rc != kExitOk) return rc;
  analysis::Diagnostics found;
  auto inputs = analysis::FindTraceInputs({a.path}, &found);
  if (!inputs.ok()) {
    io.err << "rlprof summary: " << inputs.status().message() << "\n";
    return kExitBadInput;
  }
  if (inputs->empty()) {
    io.err << "rlprof summary: no trace found under " << a.path << "\n";
    for (const auto& d : found.details) io.err << "rlprof summary: " << d << "\n";
    return kExitBadInput;
  }
  auto results = analysis::AnalyseInputs(*inputs, cls, opts, 2);
  int exit = kExitOk;
  nlohmann::json j;
  j["format"] = "rlprof-summary";
  j["schema_version"] = 1;
  j["view"] = a.view;
  j["options"] = {{"assign", analysis::AssignModeName(opts.assign)},
                  {"compat", analysis::CompatModeName(opts.compat)}};
  j["inputs"] = nlohmann::json::array();
  for (const auto& r : results) {
    if (!r.status.ok()) {
      io.err << "rlprof summary: " << r.input << ": " << r.status.message() << "\n";
      exit = kExitBadInput;
      j["inputs"].push_back({{"input", r.input}, {"name", r.name}, {"error", r.status.ToString()}});
      continue;
    }
    auto tables = ViewTables(a.view, r.analysis);
    if (a.json) {
      nlohmann::json in{{"input", r.input}, {"name", r.name}, {"format", r.analysis.format},
                        {"rank", r.analysis.rank}, {"cpu_only", r.analysis.cpu_only}};
      in["tables"] = nlohmann::json::object();
      for (const auto& t : tables) in["tables"][t.name] = analysis::ToJson(t);
      in["diagnostics"] = DiagnosticsJson(r.analysis.diagnostics);
      if (!r.analysis.diagnostics.details.empty())
        in["diagnostic_details"] = DiagnosticDetailsJson(r.analysis.diagnostics);
      j["inputs"].push_back(std::move(in));
      continue;
    }
    io.out << "== " << r.name << "  (" << r.analysis.format
           << (r.analysis.cpu_only ? ", cpu-only: host threads" : "") << ", rank " << r.analysis.rank
           << ")\n";
    for (const auto& t : tables) {
      const std::string unit = analysis::CommonUnit(t);
      io.out << "-- " << t.name << (unit.empty() ? "" : " (" + unit + ")") << "\n" << analysis::ToText(t);
    }
    PrintDiagnostics(io, r.analysis.diagnostics);
  }
  // The RL view across ranks, when several inputs (ranks) were analysed.
  if (a.view == "rl" && results.size() > 1) {
    analysis::Table t = analysis::StageAcrossRanksTable(results);
    if (a.json) j["stage_across_ranks"] = analysis::ToJson(t);
    else io.out << "== all inputs\n-- " << t.name << "\n" << analysis::ToText(t);
  }
  if (a.json) {
    j["diagnostics"] = DiagnosticsJson(found);  // finding inputs; each input has its own
    if (!found.details.empty()) j["diagnostic_details"] = DiagnosticDetailsJson(found);
    io.out << j.dump(2) << "\n";
  } else if (!found.empty()) {
    PrintDiagnostics(io, found, "finding inputs");
  }
  return exit;
}

}  // namespace

Command AddSummaryCommand(CLI::App& app) {
  auto args = std::make_shared<SummaryArgs>();
  auto* cmd = app.add_subcommand("summary", "Print a breakdown view of traces in the terminal");
  cmd->add_option("path", args->path, "Capture directory, trace file, or a folder of them")->required();
  cmd->add_option("--view", args->view, "msprof (default) | hta | tracelens | rl | ops | kernels | comm | atoms | all")
      ->check(CLI::IsMember({"msprof", "hta", "tracelens", "rl", "ops", "kernels", "comm", "atoms", "all"}));
  AddAnalysisOptions(cmd, &args->analysis);
  cmd->add_flag("--json", args->json, "Print the tables as JSON");
  return {cmd, [args](Io& io) { return Run(*args, io); }};
}

}  // namespace rlprof::cli
