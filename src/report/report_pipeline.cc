#include "src/report/report_pipeline.h"

#include <cstdint>
#include <memory>
#include <utility>

#include "src/analysis/advise/advise.h"
#include "src/analysis/run/compare.h"
#include "src/analysis/run/run.h"
#include "src/analysis/run/run_pipeline.h"
#include "src/analysis/run/run_view.h"
#include "src/base/version.h"
#include "src/report/html_report.h"

namespace rlprof::report {
namespace {

// One side found and analysed; its unreadable inputs listed under `side`.
base::Status AnalyseSide(const std::string& path, const std::string& side, const ReportRequest& req,
                         const analysis::AnalysisOptions& opts, size_t activity_max_inputs,
                         std::vector<analysis::InputResult>* results, RunReport* out, format::Diagnostics* found) {
  analysis::RunConfig cfg{.options = opts, .classifier = req.classifier, .jobs = req.jobs, .progress = nullptr,
                          .activity_max_inputs = activity_max_inputs, .confine_to = req.confine ? path : ""};
  auto run = analysis::AnalyseRun({path}, cfg);
  if (!run.ok())  // "no trace found under PATH" and, one per line, why
    return base::Status(run.status().code(), (side.empty() ? "" : side + ": ") + run.status().message());
  found->Merge(run->found);
  *results = std::move(run->inputs);
  for (const auto& r : *results)
    if (!r.status.ok()) out->unreadable.push_back({side, r.input, r.status.message()});
  return base::Status::Ok();
}

format::Diagnostics Merged(const std::vector<analysis::InputResult>& results) {
  format::Diagnostics d;
  for (const auto& r : results)
    if (r.status.ok()) d.Merge(r.analysis.diagnostics);
  return d;
}

}  // namespace

base::Status BuildRunReport(const ReportRequest& req, RunReport* out) {
  std::vector<analysis::InputResult> results, base;
  format::Diagnostics found;
  // Device and host lanes for the timeline: only in runs whose page keeps per-input detail
  // (their memory grows with lanes × spans per input), never for the baseline.
  analysis::AnalysisOptions run_opts = req.options, base_opts = req.options;
  base_opts.activity_spans = 0;
  if (run_opts.activity_spans == 0) run_opts.activity_spans = kReportActivitySpansPerLane;
  RLPROF_RETURN_IF_ERROR(AnalyseSide(req.path, "", req, run_opts, kReportDetailInputs, &results, out, &found));
  if (!req.baseline.empty())
    RLPROF_RETURN_IF_ERROR(AnalyseSide(req.baseline, "baseline", req, base_opts, SIZE_MAX, &base, out, &found));
  std::unique_ptr<analysis::Comparison> cmp;
  if (!req.baseline.empty()) cmp = std::make_unique<analysis::Comparison>(analysis::CompareRuns(base, results, {}));
  out->data = ReportData(results, analysis::SummaryJson(results, req.options, &found, /*input_tables=*/false),
                         req.title, base::Version(), cmp.get(), req.baseline_label, req.current_label);
  if (!req.baseline.empty()) {  // the findings with the baseline's regressions
    const analysis::RunView now = analysis::BuildRunView(results), before = analysis::BuildRunView(base);
    out->data["findings"] = analysis::AdviceJson(analysis::Advise(results, now, &base, &before));
  }
  out->inputs = results.size();
  out->compared = cmp != nullptr;
  out->diagnostics = found;
  out->diagnostics.Merge(Merged(results));
  out->diagnostics.Merge(Merged(base));
  if (cmp) out->diagnostics.Merge(cmp->diagnostics);
  return base::Status::Ok();
}

}  // namespace rlprof::report
