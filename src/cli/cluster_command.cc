// `rlprof cluster PATH [-o DIR] [--json] [--top N] [--jobs N] [--rules FILE] [--assign …]
//                  [--step-marker REGEX] [--compat …]`
// The ranks of one run side by side (docs/analysis.md "rlprof cluster"): per-step balance of
// the msprof columns across ranks, slow ranks (Dixon's test on collective durations), and
// every collective instance's latency, waits, skew and bandwidth. With -o, writes
// cluster_step_trace_time.csv, cluster_balance.csv, slow_rank.csv, collectives.csv and
// cluster.json. Exit codes: 2 bad input, 4 output error.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/analysis/run/cluster.h"
#include "src/analysis/run/run.h"
#include "src/cli/analysis_setup.h"
#include "src/cli/cli.h"
#include "src/cli/command.h"

namespace rlprof::cli {
namespace {

struct ClusterArgs {
  std::string path, output;
  size_t jobs = 2, top = 20;
  bool json = false;
  AnalysisArgs analysis;
};

base::Status Cluster(const ClusterArgs& a, const analysis::AnalysisOptions& opts, const analysis::Classifier& cls,
                     Io& io) {
  std::vector<analysis::InputResult> results;
  bool bad = false;
  analysis::Diagnostics found;
  RLPROF_RETURN_IF_ERROR(AnalysePath(a.path, "cluster", "", cls, opts, a.jobs, io, &results, &bad, &found));
  analysis::ClusterResult c = analysis::AnalyseCluster(results);
  c.diagnostics.Merge(found);
  c.diagnostics.Merge(MergedDiagnostics(results));
  const std::vector<const analysis::Table*> tables = {&c.step_time, &c.balance, &c.slow_ranks,
                                                      &c.collectives};
  nlohmann::json j{{"format", "rlprof-cluster"}, {"schema_version", 1}, {"path", a.path}};
  for (const auto* t : tables) j[t->name] = analysis::ToJson(*t);
  j["diagnostics"] = DiagnosticsJson(c.diagnostics);
  if (!c.diagnostics.details.empty()) j["diagnostic_details"] = DiagnosticDetailsJson(c.diagnostics);
  if (!a.output.empty()) RLPROF_RETURN_IF_ERROR(WriteTableFiles(a.output, tables, "cluster.json", j));
  if (a.json) {
    io.out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return UnreadableInputs(bad);
  }
  // The terminal shows what needs attention: imbalanced columns, slow ranks, and the
  // collectives with the largest start skew.
  analysis::Table flagged{c.balance.name + " (imbalance > 5 %)", c.balance.columns, {}};
  for (const auto& row : c.balance.rows)
    if (std::get<int64_t>(row.back()) == 1) flagged.rows.push_back(row);
  analysis::Table skew{c.collectives.name + " (largest start skew first)", c.collectives.columns,
                       c.collectives.rows};
  std::stable_sort(skew.rows.begin(), skew.rows.end(), [](const auto& x, const auto& y) {
    return std::get<double>(x[8]) > std::get<double>(y[8]);
  });
  if (skew.rows.size() > a.top) skew.rows.resize(a.top);
  io.out << results.size() << " input(s) under " << a.path << "\n";
  for (const analysis::Table* t : {&flagged, &c.slow_ranks, &skew}) {
    io.out << "-- " << t->name << "\n"
           << (t->rows.empty() ? std::string("(none)\n") : analysis::ToText(*t));
  }
  PrintDiagnostics(io, c.diagnostics);
  if (!a.output.empty()) io.out << "wrote " << a.output << "/{cluster_step_trace_time,cluster_balance,slow_rank,collectives}.csv, cluster.json\n";
  return UnreadableInputs(bad);
}

base::Status Run(const ClusterArgs& a, Io& io) {
  analysis::AnalysisOptions opts;
  analysis::Classifier cls;
  RLPROF_RETURN_IF_ERROR(PrepareAnalysis(a.analysis, &opts, &cls));
  opts.kernel_rows = false;  // never shown here: memory grows with steps × stages, not kernels
  return Cluster(a, opts, cls, io);
}

}  // namespace

Command AddClusterCommand(CLI::App& app) {
  auto args = std::make_shared<ClusterArgs>();
  CLI::App* cmd = app.add_subcommand("cluster", "Ranks side by side: balance, slow ranks, collective skew");
  cmd->add_option("path", args->path, "A run directory or a folder of per-rank traces")->required();
  cmd->add_option("-o,--output", args->output, "Also write the cluster CSVs and cluster.json here");
  cmd->add_option("--top", args->top, "Collectives shown (default 20)")->check(CLI::Range(1, 100000));
  cmd->add_option("-j,--jobs", args->jobs, "Inputs analysed in parallel (default: 2)")
      ->check(CLI::Range(1, 256));
  AddAnalysisOptions(cmd, &args->analysis);
  cmd->add_flag("--json", args->json, "Print cluster.json to stdout");
  return {cmd, [args](Io& io) { return Run(*args, io); }};
}

}  // namespace rlprof::cli
