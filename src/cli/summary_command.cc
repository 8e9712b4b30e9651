// `rlprof summary PATH [--view msprof|hta|tracelens|rl|ops|kernels|comm|atoms|module|memory|stack|ranges|tb|all] [--json]
//                  [--per-capture] [--rules FILE] [--assign clip|by_start|by_launch]
//                  [--step-marker REGEX] [--compat native|hta]`
// Analyses the traces under PATH (like `rlprof analyse`, without writing files) and prints
// one view as aligned tables with units; --json prints the same tables as
// {"view": …, "inputs": [{"input", "name", "tables": {name: {columns, rows}}, "diagnostics"}]}.
// --view rl prints the run view, one table for the whole run (src/analysis/run/run_view.h);
// --per-capture adds each input's stage_time and stage_across_ranks before it.
#include <memory>
#include <optional>
#include <ostream>

#include "src/analysis/run/async_run.h"
#include "src/analysis/run/samples_run.h"
#include "src/analysis/run/run.h"
#include "src/analysis/run/run_pipeline.h"
#include "src/analysis/run/run_view.h"
#include "src/analysis/tables/tables.h"
#include "src/base/files.h"
#include "src/format/capture.h"
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
  bool per_capture = false;  // --view rl: each input's tables too, not only the run view
};

// The terminal shows this many ranks' columns of the run view; the rest are in --json.
constexpr size_t kRunViewLaneColumns = 8;

std::vector<analysis::Table> ViewTables(const std::string& view, const analysis::TraceAnalysis& a) {
  using namespace analysis;
  if (view == "msprof") return {StepTraceTimeTable(a)};
  if (view == "hta") return {HtaTemporalTable(a), HtaIdleTable(a), HtaKernelTypeTable(a)};
  if (view == "tracelens") return {GpuTimelineTable(a)};
  if (view == "rl") return {StageTimeTable(a)};
  if (view == "ops") return {OpStatisticTable(a)};
  if (view == "kernels") return {KernelDetailsTable(a)};
  if (view == "comm") return {CommByGroupTable(a)};
  if (view == "atoms") return {StepAtomsTable(a), ClassTable(a)};
  if (view == "module") return {ModuleViewTable(a)};
  if (view == "memory") return {MemoryPeakTable(a)};
  if (view == "stack") return {OpsByFrameTable(a)};
  if (view == "ranges") return {UserRangeTable(a)};
  if (view == "tb") return {TbStepTimeTable(a)};
  if (view == "async" || view == "samples") return {};  // run-level tables, printed after the inputs
  std::vector<Table> all{StepTraceTimeTable(a), StepAtomsTable(a), StageTimeTable(a), CommByGroupTable(a),
                         HtaTemporalTable(a), HtaIdleTable(a), HtaKernelTypeTable(a), GpuTimelineTable(a),
                         TbStepTimeTable(a), ClassTable(a)};
  // The framework-content views, where the capture has those contents.
  if (!a.modules.empty()) all.push_back(ModuleViewTable(a));
  if (!a.memory_peaks.empty()) all.push_back(MemoryPeakTable(a));
  if (!a.ops_by_frame.empty()) all.push_back(OpsByFrameTable(a));
  if (!a.user_ranges.empty()) all.push_back(UserRangeTable(a));
  return all;
}

// The manifest of an rlprof capture directory (nullopt for other inputs).
std::optional<format::Manifest> ManifestOf(const std::string& input) {
  auto text = base::ReadFile(input + "/manifest.json", base::kMaxManifestBytes);
  if (!text.ok()) return std::nullopt;
  std::vector<std::string> diag;
  return format::ParseManifest(*text, &diag);
}

// What a capture holds: "mini_batch 0", "decode 30-69 (cut: stage_end)", "whole stage".
std::string Holds(const format::Manifest& m) {
  if (m.sampling.unit.empty()) return m.mode == "discrete" ? "whole stage" : "whole step";
  std::string s = m.sampling.unit + " ";
  if (m.sampling.count <= 0) return s + "none (tail after the last)";
  s += std::to_string(m.sampling.first);
  if (m.sampling.count > 1) s += "-" + std::to_string(m.sampling.first + m.sampling.count - 1);
  if (!m.sampling.complete) s += " (cut: " + m.close_reason + ")";
  return s;
}

std::string StepsText(const std::vector<int64_t>& steps) {
  std::string s;
  for (int64_t v : steps) s += (s.empty() ? "" : ",") + std::to_string(v);
  return s;
}

// One input of `summary --json`: what it is, the capture it holds, its tables, diagnostics.
nlohmann::json InputJson(const analysis::InputResult& r, const std::optional<format::Manifest>& man,
                         const std::vector<analysis::Table>& tables) {
  nlohmann::json in{{"input", r.input}, {"name", r.name}, {"format", r.analysis.format},
                    {"rank", r.analysis.rank}, {"cpu_only", r.analysis.cpu_only}};
  if (man) {
    in["capture"] = {{"scope", man->scope}, {"stage", man->stage}, {"steps", man->steps},
                     {"close_reason", man->close_reason}, {"holds", Holds(*man)}};
    if (!man->sampling.unit.empty())
      in["capture"]["sub_steps"] = {{"unit", man->sampling.unit},
                                    {"first", man->sampling.first},
                                    {"count", man->sampling.count},
                                    {"complete", man->sampling.complete}};
  }
  in["tables"] = nlohmann::json::object();
  for (const auto& t : tables) in["tables"][t.name] = analysis::ToJson(t);
  in["diagnostics"] = DiagnosticsJson(r.analysis.diagnostics);
  if (!r.analysis.diagnostics.details.empty())
    in["diagnostic_details"] = DiagnosticDetailsJson(r.analysis.diagnostics);
  return in;
}

// --view async: the run's processes and pools, the verdict and the version intervals (async RL;
// rlprof.rl's records).
void PrintAsync(const SummaryArgs& a, const std::vector<analysis::InputResult>& results, nlohmann::json* out,
                Io& io) {
  nlohmann::json& j = *out;
  analysis::Table t = analysis::AsyncPoolsTable(results);
  analysis::Table v = analysis::AsyncVerdictTable(results);
  analysis::Table vi = analysis::AsyncVersionsTable(results);
  analysis::Table sy = analysis::AsyncSyncsTable(results);
  if (a.json) {
    j["async_pools"] = analysis::ToJson(t);
    j["async_verdict"] = analysis::ToJson(v);
    j["async_versions"] = analysis::ToJson(vi);
    j["async_syncs"] = analysis::ToJson(sy);
  } else {
    io.out << "== run: async pools (" << t.rows.size() << " row(s))\n-- " << t.name << "\n" << analysis::ToText(t);
    if (t.rows.empty()) io.out << "(no input holds rlprof.rl's records: see docs/python.md, \"Asynchronous RL\")\n";
    else io.out << "-- " << v.name << " (estimates from the measured rates)\n" << analysis::ToText(v);
    if (!vi.rows.empty()) io.out << "-- " << vi.name << " (from one publish to the next)\n" << analysis::ToText(vi);
    if (!sy.rows.empty()) io.out << "-- " << sy.name << " (each weight sync, joined across its processes)\n" << analysis::ToText(sy);
    PrintDiagnostics(io, MergedDiagnostics(results), "all inputs");
  }
}

// --view samples: each sample's life (rlprof.sample, rlprof's vLLM source): the tail per step,
// what became of the samples, and the samples themselves (the longest first, --top of them).
void PrintSamples(const SummaryArgs& a, const std::vector<analysis::InputResult>& results, nlohmann::json* out,
                  Io& io) {
  nlohmann::json& j = *out;
  analysis::Table tail = analysis::SampleTailTable(results);
  analysis::Table outcomes = analysis::SampleOutcomesTable(results);
  analysis::Table samples = analysis::SamplesTable(results);
  if (a.json) {
    j["sample_tail"] = analysis::ToJson(tail);
    j["sample_outcomes"] = analysis::ToJson(outcomes);
    j["samples"] = analysis::ToJson(samples);
    return;
  }
  io.out << "== run: samples (" << samples.rows.size() << ")\n";
  if (samples.rows.empty()) {
    io.out << "(no input holds sample records: see docs/samples.md)\n";
    return;
  }
  io.out << "-- " << tail.name << " (µs from each step's first submit; what-ifs are estimates)\n" << analysis::ToText(tail);
  io.out << "-- " << outcomes.name << "\n" << analysis::ToText(outcomes);
  // The longest samples (e2e), a screenful.
  size_t e2e = 0;
  for (size_t c = 0; c < samples.columns.size(); ++c)
    if (samples.columns[c].name == "e2e") e2e = c;
  auto key = [&](const std::vector<analysis::Cell>& r) {
    const double* d = std::get_if<double>(&r[e2e]);
    return d != nullptr ? *d : -1.0;
  };
  std::stable_sort(samples.rows.begin(), samples.rows.end(),
                   [&](const auto& x, const auto& y) { return key(x) > key(y); });
  const size_t shown = std::min<size_t>(samples.rows.size(), 20);
  const size_t total = samples.rows.size();
  samples.rows.resize(shown);
  io.out << "-- samples (the " << shown << " longest of " << total << "; all: rlprof analyse → samples.csv)\n"
         << analysis::ToText(samples);
  PrintDiagnostics(io, MergedDiagnostics(results), "all inputs");
}

base::Status Run(const SummaryArgs& a, Io& io) {
  analysis::RunConfig cfg;
  RLPROF_RETURN_IF_ERROR(PrepareAnalysis(a.analysis, &cfg.options, &cfg.classifier));
  cfg.options.kernel_rows = a.view == "kernels" || a.view == "all";  // one row per kernel: only when shown
  // Finding and analysing: the run pipeline (no trace under the path: its Status, exit 2).
  auto run = analysis::AnalyseRun({a.path}, cfg);
  RLPROF_RETURN_IF_ERROR(run.status());
  const analysis::AnalysisOptions& opts = cfg.options;
  analysis::Diagnostics found = std::move(run->found);
  const std::vector<analysis::InputResult>& results = run->inputs;
  const bool run_view_only = a.view == "rl" && !a.per_capture;  // one table for the run
  base::Status exit;  // an unreadable input (its reason printed): exit 2, the others shown
  bool any_sampled = false;  // some capture holds only the sub-steps a schedule kept
  // One row per rlprof capture: what it holds (the sub-steps a schedule kept).
  using analysis::Column;
  using analysis::ColumnType;
  analysis::Table captures{"captures",
                           {Column{"rank", ColumnType::kInt, ""}, Column{"steps", ColumnType::kText, ""},
                            Column{"scope", ColumnType::kText, ""}, Column{"stage", ColumnType::kText, ""},
                            Column{"holds", ColumnType::kText, ""},
                            Column{"close_reason", ColumnType::kText, ""}},
                           {}};
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
      exit = Silent(base::StatusCode::kInvalidArgument);
      j["inputs"].push_back({{"input", r.input}, {"name", r.name}, {"error", r.status.ToString()}});
      continue;
    }
    auto tables = ViewTables(a.view, r.analysis);
    const std::optional<format::Manifest> man = ManifestOf(r.input);
    if (man) {
      captures.rows.push_back({man->rank, StepsText(man->steps), man->scope, man->stage,
                               Holds(*man), man->close_reason});
      any_sampled = any_sampled || !man->sampling.unit.empty();
    }
    if (a.json) {
      j["inputs"].push_back(InputJson(r, man, tables));
      continue;
    }
    if (run_view_only || a.view == "async" || a.view == "samples") continue;
    io.out << "== " << r.name << "  (" << r.analysis.format
           << (r.analysis.cpu_only ? ", cpu-only: host threads" : "") << ", rank " << r.analysis.rank
           << ")\n";
    if (man && !man->sampling.unit.empty())
      io.out << "   holds " << Holds(*man) << " of its " << (man->stage.empty() ? "step window" : "stage call")
             << " (sampled by a schedule)\n";
    for (const auto& t : tables) {
      const std::string unit = analysis::CommonUnit(t);
      io.out << "-- " << t.name << (unit.empty() ? "" : " (" + unit + ")") << "\n" << analysis::ToText(t);
    }
    PrintDiagnostics(io, r.analysis.diagnostics);
  }
  if (a.view == "rl" && a.json && !captures.rows.empty()) j["captures"] = analysis::ToJson(captures);
  // The RL view across ranks, when several inputs (ranks) were analysed.
  if (a.view == "rl" && results.size() > 1 && (a.json || a.per_capture)) {
    analysis::Table t = analysis::StageAcrossRanksTable(results);
    if (a.json) j["stage_across_ranks"] = analysis::ToJson(t);
    else io.out << "== all inputs\n-- " << t.name << "\n" << analysis::ToText(t);
  }
  if (a.view == "async") PrintAsync(a, results, &j, io);
  if (a.view == "samples") PrintSamples(a, results, &j, io);
  analysis::Diagnostics run_diag;  // what building the run view counted
  if (a.view == "rl") {
    const analysis::RunView& v = run->view;
    run_diag = v.diagnostics;
    if (a.json) {
      j["run_view"] = analysis::ToJson(analysis::RunViewTable(v));
    } else {
      analysis::Table t = analysis::RunViewTable(v, kRunViewLaneColumns);
      size_t ok = 0;
      for (const auto& r : results) ok += r.status.ok();
      io.out << "== run: " << ok << " input(s), " << v.lanes.size() << " rank(s)\n-- " << t.name << " ("
             << analysis::CommonUnit(t) << ")\n" << analysis::ToText(t);
      if (v.lanes.size() > kRunViewLaneColumns)
        io.out << "(the first " << kRunViewLaneColumns << " of " << v.lanes.size()
               << " ranks shown; min / mean / max / critical_rank cover all; every rank in --json)\n";
      // What each capture holds, after the run's table: shown when a schedule sampled some
      // capture (which sub-steps it kept), or with --per-capture.
      if (!captures.rows.empty() && (any_sampled || a.per_capture))
        io.out << "== captures: what each holds\n-- " << captures.name << "\n" << analysis::ToText(captures);
      if (run_view_only) {
        analysis::Diagnostics all = MergedDiagnostics(results);
        all.Merge(run_diag);
        PrintDiagnostics(io, all, "all inputs");
      } else if (!run_diag.empty()) {
        PrintDiagnostics(io, run_diag, "run view");
      }
    }
  }
  if (a.json) {
    found.Merge(run_diag);
    j["diagnostics"] = DiagnosticsJson(found);  // finding inputs, run view; each input has its own
    if (!found.details.empty()) j["diagnostic_details"] = DiagnosticDetailsJson(found);
    io.out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
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
  cmd->add_option("--view", args->view, "msprof (default) | hta | tracelens | tb | rl | ops | kernels | comm | atoms | module | memory | stack | ranges | async | samples | all")
      ->check(CLI::IsMember({"msprof", "hta", "tracelens", "rl", "ops", "kernels", "comm", "atoms", "module", "memory", "stack", "ranges", "tb", "async", "samples", "all"}));
  AddAnalysisOptions(cmd, &args->analysis);
  cmd->add_flag("--json", args->json, "Print the tables as JSON");
  cmd->add_flag("--per-capture", args->per_capture,
                "--view rl: also each input's stage_time and the stages across ranks");
  return {cmd, [args](Io& io) { return Run(*args, io); }};
}

}  // namespace rlprof::cli
