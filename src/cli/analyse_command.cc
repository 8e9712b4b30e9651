// `rlprof analyse PATH... [-o DIR] [--jobs N] [--export text,db,pftrace] [--rules FILE]
//                  [--assign clip|by_start|by_launch] [--step-marker REGEX] [--compat native|hta] [--json]`
// Finds every trace below PATH (rlprof captures, Kineto / torch JSON, Ascend trace_view),
// analyses the inputs in parallel and writes, per input, DIR/<name>/{step_trace_time,
// op_statistic, kernel_details, stage_time, …}.csv, and for the run DIR/summary.json and
// DIR/analysis.db (the same tables, with an `input` column) and DIR/report.html. Exit codes: 2 bad input (an
// unreadable input or rules file; the others are still analysed), 4 output error.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <ostream>
#include <set>

#include "src/analysis/readers/readers.h"
#include "src/analysis/run.h"
#include "src/analysis/tables.h"
#include "src/base/files.h"
#include "src/base/strings.h"
#include "src/cli/analysis_setup.h"
#include "src/cli/cli.h"
#include "src/cli/command.h"
#include "src/format/capture.h"
#include "src/format/export.h"
#include "src/report/html_report.h"

namespace rlprof::cli {
namespace {

namespace fs = std::filesystem;
using analysis::InputResult;

struct AnalyseArgs {
  std::vector<std::string> paths;
  std::string output = "rlprof-analysis";
  size_t jobs = 2;
  std::vector<std::string> exports;
  AnalysisArgs analysis;
  bool json = false;
};

base::Status WriteInputTables(const InputResult& r, const std::string& dir) {
  RLPROF_RETURN_IF_ERROR(base::MakeDirs(dir));
  for (const auto& t : analysis::AllTables(r.analysis))
    RLPROF_RETURN_IF_ERROR(base::WriteFileAtomic(dir + "/" + t.name + ".csv", analysis::ToCsv(t)));
  return base::Status::Ok();
}

// --export for rlprof captures: the format stage's exporters, next to the CSVs.
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

int Run(const AnalyseArgs& a, Io& io) {
  for (const auto& e : a.exports) {
    if (e != "text" && e != "db" && e != "pftrace") {
      io.err << "rlprof analyse: --export: unknown type '" << e << "' (text, db, pftrace)\n";
      return kExitUsage;
    }
  }
  analysis::AnalysisOptions opts;
  analysis::Classifier cls;
  if (int rc = PrepareAnalysis(a.analysis, "analyse", io, &opts, &cls); rc != kExitOk) return rc;
  analysis::Diagnostics found;
  auto inputs = analysis::FindTraceInputs(a.paths, &found);
  if (!inputs.ok()) {
    io.err << "rlprof analyse: " << inputs.status().message() << "\n";
    return kExitBadInput;
  }
  if (inputs->empty()) {
    io.err << "rlprof analyse: no trace found under the given paths\n";
    for (const auto& d : found.details) io.err << "rlprof analyse: " << d << "\n";
    return kExitBadInput;
  }
  // Progress on stderr, only for a terminal.
  const bool tty = &io.err == &std::cerr && isatty(STDERR_FILENO);
  analysis::ProgressFn progress;
  if (tty) {
    progress = [&io](size_t done, size_t total) {
      const size_t width = 30, filled = total ? done * width / total : width;
      io.err << "\r[" << std::string(filled, '#') << std::string(width - filled, ' ') << "] " << done
             << "/" << total << (done == total ? "\n" : "") << std::flush;
    };
  }
  std::vector<InputResult> results = analysis::AnalyseInputs(*inputs, cls, opts, a.jobs, progress);

  int exit = kExitOk;
  std::vector<std::vector<analysis::Table>> tables(results.size());
  std::vector<std::string> exported;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (!r.status.ok()) {
      io.err << "rlprof analyse: " << r.input << ": " << r.status.message() << "\n";
      exit = kExitBadInput;
      continue;
    }
    const std::string dir = a.output + "/" + r.name;
    if (auto s = WriteInputTables(r, dir); !s.ok()) {
      io.err << "rlprof analyse: " << s.message() << "\n";
      return kExitOutputError;
    }
    if (!a.exports.empty()) {
      if (auto s = ExportCapture(r, a.exports, dir, &exported); !s.ok()) {
        io.err << "rlprof analyse: export: " << s.message() << "\n";
        if (s.code() == base::StatusCode::kIoError) return kExitOutputError;
        exit = kExitBadInput;
      }
    }
    tables[i] = analysis::AllTables(r.analysis);
  }
  // Run level: summary.json and analysis.db (every table of every input, `input` column first).
  nlohmann::json summary = analysis::SummaryJson(results, opts, &found);
  summary["output"] = a.output;
  std::vector<analysis::Table> merged;
  if (!tables.empty()) {
    size_t first = 0;
    while (first < tables.size() && tables[first].empty()) ++first;
    if (first < tables.size()) {
      for (size_t k = 0; k < tables[first].size(); ++k) {
        std::vector<std::pair<std::string, const analysis::Table*>> parts;
        for (size_t i = 0; i < results.size(); ++i)
          if (!tables[i].empty()) parts.push_back({results[i].name, &tables[i][k]});
        merged.push_back(analysis::ConcatWithInput(parts));
      }
    }
  }
  merged.push_back(analysis::StageAcrossRanksTable(results));
  if (auto s = base::MakeDirs(a.output); !s.ok()) {
    io.err << "rlprof analyse: " << s.message() << "\n";
    return kExitOutputError;
  }
  if (auto s = base::WriteFileAtomic(a.output + "/summary.json", summary.dump(2) + "\n"); !s.ok()) {
    io.err << "rlprof analyse: " << s.message() << "\n";
    return kExitOutputError;
  }
  if (auto s = analysis::WriteSqlite(merged, a.output + "/analysis.db"); !s.ok()) {
    io.err << "rlprof analyse: " << s.message() << "\n";
    return kExitOutputError;
  }
  const std::string title = a.paths.size() == 1 ? a.paths[0] : std::to_string(a.paths.size()) + " paths";
  if (auto s = report::WriteHtmlReport(a.output + "/report.html",
                                       report::ReportData(results, summary, title, RLPROF_VERSION));
      !s.ok()) {
    io.err << "rlprof analyse: " << s.message() << "\n";
    return kExitOutputError;
  }
  if (a.json) {
    io.out << summary.dump(2) << "\n";
    return exit;
  }
  size_t ok = 0;
  for (const auto& r : results) {
    if (!r.status.ok()) continue;
    ++ok;
    io.out << "== " << r.name << "  (" << r.analysis.format
           << (r.analysis.cpu_only ? ", cpu-only: host threads" : "") << ", rank " << r.analysis.rank
           << ")\n";
    io.out << "-- step_trace_time (us)\n" << analysis::ToText(analysis::StepTraceTimeTable(r.analysis));
    PrintDiagnostics(io, r.analysis.diagnostics);
  }
  if (!found.empty()) PrintDiagnostics(io, found, "finding inputs");
  io.out << ok << "/" << results.size() << " inputs analysed; wrote " << a.output
         << "/{summary.json,analysis.db,report.html} and one folder of CSVs per input";
  if (!exported.empty()) io.out << "; exported " << exported.size() << " file(s)";
  io.out << "\n";
  return exit;
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
      ->delimiter(',');
  AddAnalysisOptions(cmd, &args->analysis);
  cmd->add_flag("--json", args->json, "Print summary.json to stdout");
  return {cmd, [args](Io& io) { return Run(*args, io); }};
}

}  // namespace rlprof::cli
