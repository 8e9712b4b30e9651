// The report pipeline: a run (and optionally a baseline run) found, analysed, compared and
// turned into the report's data — what `rlprof report` writes and `rlprof serve` shows.
//
//   ReportRequest req{.path = "runs/r2", .baseline = "runs/r1", .title = "r2", .baseline_label = "r1",
//                     .current_label = "r2", .classifier = analysis::Classifier::Default()};
//   RunReport r;
//   base::Status s = BuildRunReport(req, &r);  // r.unreadable is filled even when s fails
//   if (s.ok()) WriteHtmlReport("report.html", r.data);
//
// A side with no trace at all is the Status ("[baseline: ]no trace found under …" and why, one
// reason a line). Inputs that cannot be read are not: they are listed in `unreadable` (the
// caller says so) and in the page's diagnostics, and the others are analysed.
// Thread-safety: reentrant (each call analyses on its own threads).
#ifndef RLPROF_SRC_REPORT_REPORT_PIPELINE_H_
#define RLPROF_SRC_REPORT_REPORT_PIPELINE_H_

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/analysis/passes/analyse.h"
#include "src/analysis/passes/classify.h"
#include "src/base/status.h"
#include "src/format/diagnostics.h"

namespace rlprof::report {

struct ReportRequest {
  std::string path;      // the run
  std::string baseline;  // empty: no comparison
  std::string title, baseline_label, current_label;
  analysis::Classifier classifier;
  analysis::AnalysisOptions options;
  size_t jobs = 2;
  bool confine = false;  // each side read only below itself (serve: no symlinks out of a run)
};

struct UnreadableInput {
  std::string side;  // "" for the run, "baseline"
  std::string input;
  std::string why;
};

struct RunReport {
  nlohmann::json data;  // ReportData: what RenderHtmlReport draws
  size_t inputs = 0;
  bool compared = false;
  std::vector<UnreadableInput> unreadable;
  format::Diagnostics diagnostics;  // finding the inputs, every input and the comparison
};

base::Status BuildRunReport(const ReportRequest& request, RunReport* out);

}  // namespace rlprof::report

#endif  // RLPROF_SRC_REPORT_REPORT_PIPELINE_H_
