#include "src/cli/analysis_setup.h"

#include <functional>
#include <map>
#include <ostream>

#include "src/analysis/run/compare.h"
#include "src/analysis/run/run.h"
#include "src/analysis/run/run_pipeline.h"
#include "src/base/files.h"
#include "src/base/version.h"
#include "src/cli/cli.h"
#include "src/format/diagnostics.h"
#include "src/format/json_escape.h"

namespace rlprof::cli {

void AddAnalysisOptions(CLI::App* cmd, AnalysisArgs* args) {
  cmd->add_option("--rules", args->rules, "YAML classification rules, before the defaults");
  cmd->add_option("--assign", args->assign,
                  "clip (default) | by_start (torch_npu) | by_launch (msprof-analyze DB)")
      ->check(CLI::IsMember({"clip", "by_start", "by_launch"}));
  cmd->add_option("--step-marker", args->step_marker,
                  "Regex: host ranges whose name matches are the steps (number from group 1 or the name)");
  cmd->add_option("--compat", args->compat,
                  "native (default) | hta (µs rounding, last-step rule) | tracelens (flow-pair links, no GPU steps)")
      ->check(CLI::IsMember({"native", "hta", "tracelens"}));
}

base::Status PrepareAnalysis(const AnalysisArgs& args, analysis::AnalysisOptions* opts, analysis::Classifier* cls) {
  *opts = analysis::AnalysisOptions{};
  opts->assign = args.assign == "by_start"    ? analysis::AssignMode::kByStart
                 : args.assign == "by_launch" ? analysis::AssignMode::kByLaunch
                                              : analysis::AssignMode::kClip;
  opts->compat = args.compat == "hta"         ? analysis::CompatMode::kHta
                 : args.compat == "tracelens" ? analysis::CompatMode::kTraceLens
                                              : analysis::CompatMode::kNative;
  if (!args.step_marker.empty()) {
    auto re = analysis::CompileStepMarker(args.step_marker);
    if (!re.ok()) return base::UsageError(re.status().message());
    opts->step_marker = args.step_marker;
  }
  *cls = analysis::Classifier::Default();
  if (args.rules.empty()) return base::Status::Ok();
  auto c = analysis::Classifier::FromRulesFile(args.rules);
  if (!c.ok()) return base::InvalidArgument(c.status().message());  // a bad rules file is bad input
  *cls = std::move(*c);
  return base::Status::Ok();
}

base::Status AnalysePath(const std::string& path, const char* command, const std::string& side,
                         const analysis::Classifier& cls, const analysis::AnalysisOptions& opts, size_t jobs,
                         Io& io, std::vector<analysis::InputResult>* out, bool* bad_inputs,
                         analysis::Diagnostics* found, size_t activity_max_inputs,
                         const std::string& confine_to) {
  const std::string prefix = std::string("rlprof ") + command + ": " + (side.empty() ? "" : side + ": ");
  analysis::RunConfig cfg{.options = opts, .classifier = cls, .jobs = jobs, .progress = nullptr,
                          .activity_max_inputs = activity_max_inputs, .confine_to = confine_to};
  auto run = analysis::AnalyseRun({path}, cfg);
  if (!run.ok()) {
    // "no trace found under PATH" and, one per line, why (what the search passed over).
    return base::Status(run.status().code(), (side.empty() ? "" : side + ": ") + run.status().message());
  }
  found->Merge(run->found);
  *out = std::move(run->inputs);
  for (const auto& r : *out) {
    if (r.status.ok()) continue;
    io.err << prefix << r.input << ": " << r.status.message() << "\n";
    *bad_inputs = true;
  }
  return base::Status::Ok();
}

base::Status UnreadableInputs(bool bad_inputs) {
  return bad_inputs ? base::DataLoss("some inputs could not be read (see above); the others were analysed")
                    : base::Status::Ok();
}

void PrintDiagnostics(Io& io, const analysis::Diagnostics& d, const std::string& scope) {
  using format::Severity;
  std::map<Severity, std::string, std::greater<>> problems;  // worst first
  std::string notes;
  for (const auto& [k, v] : d.counts) {
    const Severity s = format::DiagnosticSeverity(k);
    std::string& line = s == Severity::kInfo ? notes : problems[s];
    line += " " + k + "=" + std::to_string(v);
  }
  io.out << "diagnostics" << (scope.empty() ? "" : " (" + scope + ")") << ":";
  if (problems.empty()) io.out << " none";
  for (const auto& [s, line] : problems) io.out << " [" << format::SeverityName(s) << "]" << line;
  io.out << "\n";
  if (!notes.empty()) io.out << "notes:" << notes << "\n";
  for (const auto& detail : d.details) io.out << "  " << detail << "\n";
}

analysis::Diagnostics MergedDiagnostics(const std::vector<analysis::InputResult>& results) {
  analysis::Diagnostics d;
  for (const auto& r : results)
    if (r.status.ok()) d.Merge(r.analysis.diagnostics);
  return d;
}

nlohmann::json DiagnosticsJson(const analysis::Diagnostics& d) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : d.counts) j[k] = v;
  return j;
}

nlohmann::json DiagnosticDetailsJson(const analysis::Diagnostics& d) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& detail : d.details) j.push_back(format::SanitizeUtf8(detail));  // paths may not be UTF-8
  return j;
}

base::Status WriteTableFiles(const std::string& dir, const std::vector<const analysis::Table*>& tables,
                             const std::string& json_name, const nlohmann::json& doc) {
  RLPROF_RETURN_IF_ERROR(base::MakeDirs(dir));
  for (const analysis::Table* t : tables)
    RLPROF_RETURN_IF_ERROR(base::WriteFileAtomic(dir + "/" + t->name + ".csv", analysis::ToCsv(*t)));
  // Paths and names from traces need not be UTF-8: invalid bytes become U+FFFD, never a throw.
  const std::string text = doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  return base::WriteFileAtomic(dir + "/" + json_name, text + "\n");
}

base::Status AnalyseForReport(const report::ReportRequest& request, const char* command, Io& io,
                              report::RunReport* out) {
  const base::Status s = report::BuildRunReport(request, out);
  for (const auto& u : out->unreadable)  // listed whether or not the other side was found
    io.err << "rlprof " << command << ": " << (u.side.empty() ? "" : u.side + ": ") << u.input << ": " << u.why
           << "\n";
  return s;
}

}  // namespace rlprof::cli
