#include "src/cli/analysis_setup.h"

#include <ostream>

#include "src/analysis/run.h"

namespace rlprof::cli {

analysis::AnalysisOptions MakeAnalysisOptions(const std::string& assign, const std::string& compat) {
  analysis::AnalysisOptions opts;
  opts.assign = assign == "by_start"    ? analysis::AssignMode::kByStart
                : assign == "by_launch" ? analysis::AssignMode::kByLaunch
                                        : analysis::AssignMode::kClip;
  opts.compat = compat == "hta" ? analysis::CompatMode::kHta : analysis::CompatMode::kNative;
  return opts;
}

bool SetStepMarker(const std::string& pattern, const char* command, Io& io,
                   analysis::AnalysisOptions* opts) {
  if (pattern.empty()) return true;
  auto re = analysis::CompileStepMarker(pattern);
  if (!re.ok()) {
    io.err << "rlprof " << command << ": " << re.status().message() << "\n";
    return false;
  }
  opts->step_marker = pattern;
  return true;
}

bool LoadClassifier(const std::string& rules_file, const char* command, Io& io,
                    analysis::Classifier* out) {
  *out = analysis::Classifier::Default();
  if (rules_file.empty()) return true;
  auto c = analysis::Classifier::FromRulesFile(rules_file);
  if (!c.ok()) {
    io.err << "rlprof " << command << ": " << c.status().message() << "\n";
    return false;
  }
  *out = std::move(*c);
  return true;
}

}  // namespace rlprof::cli
