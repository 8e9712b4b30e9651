// The self-contained HTML report (`rlprof report`): one page, no network, that draws an
// analysis — ReportData's compact model of a run (below), or, as older pages were written, the
// run's whole summary.json ({"summary": …}) — and, optionally, a comparison with a baseline.
//
//   nlohmann::json data = ReportData(results, SummaryJson(results, opts), "run 42", version);
//   RLPROF_RETURN_IF_ERROR(WriteHtmlReport("report.html", data));
//
// The data is embedded as JSON in a <script type="application/json"> element, with '<', '>'
// and '&' escaped, so no name in a trace can end the element or inject markup; the page's
// script inserts every string as text, never as HTML.
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_REPORT_HTML_REPORT_H_
#define RLPROF_SRC_REPORT_HTML_REPORT_H_

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "src/analysis/run/compare.h"
#include "src/analysis/run/run.h"
#include "src/base/status.h"

namespace rlprof::report {

// The page's data for an analysed run (src/report/report_model.cc), compact so that a
// 1,024-rank run's page stays a few MB: the run-level part of `summary` (the SummaryJson of
// `results`, passed in so a caller that already built it does not build it twice: options,
// run view with at most kReportRunViewLanes per-rank columns, stage_across_ranks,
// diagnostics); every input's stage_time and step_atoms rows as one columnar table each
// (strings dictionary-encoded in "dict"); communication per process group and the top
// kReportTopOps operators and kernels summed over the run; each input's own top operators only
// for runs of at most kReportDetailInputs inputs; the title, UTC time and version; with a
// baseline the comparison ("compare": ComparisonToJson plus "baseline" and "new"); the cluster
// view ("cluster": balance, slow_ranks and the kReportCollectives collectives of largest start skew);
// for runs of at most kReportDetailInputs inputs analysed with AnalysisOptions::activity_spans,
// each input's device and host activity lanes ("activity"), at most kReportActivitySpans spans
// in all (lanes coarsened further to fit: analysis/activity.h); for async runs ("async":
// rlprof.rl's records) the pools, verdict and version intervals, the publishes, and the split
// of at most kReportAsyncLanesPerPool processes of each pool as lanes; for runs with sample
// records ("samples": each sample's life) the tail per step, the outcomes, and per step its
// longest samples' phases (capped per step and per page, report_model.cc).
// Layout: docs/scale.md ("The report's data").
inline constexpr size_t kReportDetailInputs = 64;
inline constexpr size_t kReportInputTopOps = 12;
inline constexpr size_t kReportTopOps = 200;
inline constexpr size_t kReportRunViewLanes = 32;
inline constexpr size_t kReportCollectives = 50;
inline constexpr size_t kReportAsyncLanesPerPool = 32;
inline constexpr size_t kReportActivitySpansPerLane = 4000;  // what report/serve ask the analysis for
inline constexpr size_t kReportActivitySpans = 60000;        // in the whole page  // the cluster view's collectives, largest start skew first
nlohmann::json ReportData(const std::vector<analysis::InputResult>& results, nlohmann::json summary,
                          const std::string& title,
                          const std::string& version, const analysis::Comparison* compare = nullptr,
                          const std::string& baseline = "", const std::string& current = "");

// JSON text safe inside a <script> element: '<', '>', '&' and U+2028/2029 as \u escapes.
std::string ScriptSafeJson(const nlohmann::json& data);

std::string RenderHtmlReport(const nlohmann::json& data);

// Writes the page atomically (a failed write never leaves half a file).
base::Status WriteHtmlReport(const std::string& path, const nlohmann::json& data);

}  // namespace rlprof::report

#endif  // RLPROF_SRC_REPORT_HTML_REPORT_H_
