// The run pipeline: find → analyse in parallel → run tables, summary.json → files.
#include "src/analysis/run_pipeline.h"

#include <filesystem>
#include <system_error>

#include "src/analysis/readers/readers.h"
#include "src/base/files.h"
#include "src/format/capture.h"
#include "src/format/export.h"

namespace rlprof::analysis {
namespace {

namespace fs = std::filesystem;

// --export for rlprof captures: the format stage's exporters, next to the input's CSVs.
// IoError when a file cannot be written; the loader's Status when the capture cannot be read.
base::Status ExportCapture(const InputResult& r, const std::vector<std::string>& exports,
                           const std::string& dir, std::vector<std::string>* written) {
  std::error_code ec;
  const bool is_capture = fs::is_directory(r.input, ec) || r.input.ends_with(".rlp");
  if (!is_capture) return base::Status::Ok();
  RLPROF_ASSIGN_OR_RETURN(format::Capture c, format::LoadCapture(r.input));
  std::vector<format::Capture> one;
  one.push_back(std::move(c));
  for (const auto& e : exports) {
    std::string file;
    format::ExportFormat f;
    if (e == "text") {
      file = dir + "/trace.json.gz";
      f = format::ExportFormat::kChromeJson;
    } else if (e == "db") {
      file = dir + "/trace.db";
      f = format::ExportFormat::kSqlite;
    } else {
      file = dir + "/trace.pftrace";
      f = format::ExportFormat::kPftrace;
    }
    auto st = format::ExportCaptures(one, f, file);
    if (!st.ok()) return base::IoError(file + ": " + st.status().message());
    written->push_back(file);
  }
  return base::Status::Ok();
}

}  // namespace

base::StatusOr<AssignMode> ParseAssignMode(const std::string& name) {
  if (name == "clip") return AssignMode::kClip;
  if (name == "by_start") return AssignMode::kByStart;
  if (name == "by_launch") return AssignMode::kByLaunch;
  return base::InvalidArgument("assign '" + name + "' is not one of clip, by_start, by_launch");
}

base::StatusOr<CompatMode> ParseCompatMode(const std::string& name) {
  if (name == "native") return CompatMode::kNative;
  if (name == "hta") return CompatMode::kHta;
  return base::InvalidArgument("compat '" + name + "' is not one of native, hta");
}

base::StatusOr<RunConfig> MakeRunConfig(const RunSettings& s, size_t jobs) {
  RunConfig cfg;
  RLPROF_ASSIGN_OR_RETURN(cfg.options.assign, ParseAssignMode(s.assign));
  RLPROF_ASSIGN_OR_RETURN(cfg.options.compat, ParseCompatMode(s.compat));
  if (!s.step_marker.empty()) {
    RLPROF_RETURN_IF_ERROR(CompileStepMarker(s.step_marker).status());
    cfg.options.step_marker = s.step_marker;
  }
  if (jobs == 0) return base::InvalidArgument("jobs must be at least 1");
  cfg.jobs = jobs;
  if (!s.rules.empty()) {
    RLPROF_ASSIGN_OR_RETURN(cfg.classifier, Classifier::FromRulesFile(s.rules));
  }
  return cfg;
}

size_t RunAnalysis::analysed() const {
  size_t n = 0;
  for (const auto& r : inputs) n += r.status.ok();
  return n;
}

Diagnostics RunAnalysis::AllDiagnostics() const {
  Diagnostics d = found;
  for (const auto& r : inputs) {
    if (r.status.ok()) d.Merge(r.analysis.diagnostics);
    else d.Note("unreadable_inputs", r.input + ": " + r.status.message());
  }
  d.Merge(view.diagnostics);
  return d;
}

base::StatusOr<RunAnalysis> AnalyseRun(const std::vector<std::string>& paths, const RunConfig& cfg) {
  RunAnalysis run;
  run.paths = paths;
  run.options = cfg.options;
  RLPROF_ASSIGN_OR_RETURN(std::vector<std::string> inputs, FindTraceInputs(paths, &run.found));
  if (inputs.empty()) {
    std::string what = "no trace found under ";
    for (size_t i = 0; i < paths.size(); ++i) what += (i ? ", " : "") + paths[i];
    for (const auto& d : run.found.details) what += "\n" + d;  // why nothing was found
    return base::NotFound(what);
  }
  run.inputs = AnalyseInputs(inputs, cfg.classifier, cfg.options, cfg.jobs, cfg.progress);
  run.view = BuildRunView(run.inputs);
  return run;
}

RunAnalysis AssembleRun(std::vector<std::string> paths, const AnalysisOptions& options, Diagnostics found,
                        std::vector<InputResult> inputs) {
  RunAnalysis run;
  run.paths = std::move(paths);
  run.options = options;
  run.found = std::move(found);
  run.inputs = std::move(inputs);
  run.view = BuildRunView(run.inputs);
  return run;
}

std::vector<Table> RunTables(const RunAnalysis& run) {
  std::vector<std::vector<Table>> tables(run.inputs.size());
  size_t first = run.inputs.size();
  for (size_t i = 0; i < run.inputs.size(); ++i) {
    if (!run.inputs[i].status.ok()) continue;
    tables[i] = AllTables(run.inputs[i].analysis);
    if (first == run.inputs.size()) first = i;
  }
  std::vector<Table> merged;
  if (first < tables.size()) {
    for (size_t k = 0; k < tables[first].size(); ++k) {
      std::vector<std::pair<std::string, const Table*>> parts;
      for (size_t i = 0; i < run.inputs.size(); ++i)
        if (!tables[i].empty()) parts.push_back({run.inputs[i].name, &tables[i][k]});
      merged.push_back(ConcatWithInput(parts));
    }
  }
  merged.push_back(StageAcrossRanksTable(run.inputs));
  merged.push_back(RunViewTable(run.view));
  return merged;
}

nlohmann::json RunSummaryJson(const RunAnalysis& run) { return SummaryJson(run.inputs, run.options, &run.found); }

base::StatusOr<RunOutputs> WriteRunOutputs(const RunAnalysis& run, const std::string& dir,
                                           const RunWriteOptions& opts) {
  for (const auto& e : opts.exports)
    if (e != "text" && e != "db" && e != "pftrace")
      return base::InvalidArgument("export type '" + e + "' is not one of text, db, pftrace");
  RunOutputs out;
  for (const auto& r : run.inputs) {
    if (!r.status.ok()) continue;
    const std::string sub = dir + "/" + r.name;
    RLPROF_RETURN_IF_ERROR(base::MakeDirs(sub));
    for (const auto& t : AllTables(r.analysis))
      RLPROF_RETURN_IF_ERROR(base::WriteFileAtomic(sub + "/" + t.name + ".csv", ToCsv(t)));
    if (opts.exports.empty()) continue;
    if (base::Status s = ExportCapture(r, opts.exports, sub, &out.exported); !s.ok()) {
      if (s.code() == base::StatusCode::kIoError) return s;
      out.export_failures.emplace_back(r.input, s);
    }
  }
  out.summary = RunSummaryJson(run);
  out.summary["output"] = dir;
  std::vector<Table> tables = RunTables(run);
  RLPROF_RETURN_IF_ERROR(base::MakeDirs(dir));
  // The run view, the run's one table of steps × stages × ranks (also in summary.json).
  RLPROF_RETURN_IF_ERROR(base::WriteFileAtomic(dir + "/run_view.csv", ToCsv(tables.back())));
  // Paths and names from traces need not be UTF-8: invalid bytes become U+FFFD, never a throw.
  const std::string summary = out.summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  RLPROF_RETURN_IF_ERROR(base::WriteFileAtomic(dir + "/summary.json", summary + "\n"));
  RLPROF_RETURN_IF_ERROR(WriteSqlite(tables, dir + "/analysis.db"));
  out.written = {dir + "/run_view.csv", dir + "/summary.json", dir + "/analysis.db"};
  return out;
}

}  // namespace rlprof::analysis
